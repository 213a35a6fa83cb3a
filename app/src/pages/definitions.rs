//! `/definitions`: every metric the tables show, one sentence each, with an anchor per
//! metric (metric headers link here).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::glossary::columns;

/// `/definitions`.
#[component]
pub fn DefinitionsPage() -> impl IntoView {
    view! {
        <Title text="Definitions"/>
        <h1>"Definitions"</h1>
        <p class="muted">"What each column of the leaderboard, the plots, the heatmaps and the report means. Every rate keeps failed trials in its denominator, except the claim rates, which read the trials that claim something (failures are counted beside them); intervals are 95 % intervals over task families (t on the design's degrees of freedom; Korn–Graubard for rates), with their measured coverage in the book."</p>
        <dl class="definitions">
            {columns().map(|c| {
                let (key, (name, text)) = (c.key(), c.text());
                view! {
                    <dt id=key>{name}" "<code>{key}</code></dt>
                    <dd>{text}</dd>
                }
            }).collect_view()}
        </dl>
    }
}
