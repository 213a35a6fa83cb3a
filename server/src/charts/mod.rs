//! Pure data → SVG: the robustness–utility plot and the GEO track's NRG-against-AUROC
//! scatter, drawn by plotters on the server. Text that
//! came from users (configuration names) is escaped by plotters and by maud.

use plotters::prelude::*;
use vocab::{Est, ParetoPoint};

/// Size of the plot in pixels.
pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 480;

/// Which of `coords` (higher is better on both axes) no other point matches on both and
/// beats on one.
fn undominated(coords: &[(f64, f64)]) -> Vec<bool> {
    coords
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            !coords.iter().enumerate().any(|(j, &(a2, b2))| j != i && a2 >= a && b2 >= b && (a2 > a || b2 > b))
        })
        .collect()
}

/// Marks which points lie on the Pareto frontier: no other point is at least as good on
/// both axes and strictly better on one.
pub fn mark_frontier(points: &mut [ParetoPoint]) {
    let coords: Vec<(f64, f64)> = points.iter().map(|p| (p.utility.mean, p.robustness.mean)).collect();
    for (p, on) in points.iter_mut().zip(undominated(&coords)) {
        p.frontier = on;
    }
}

/// A point of a scatter: its label, both coordinates with intervals, and whether it is
/// drawn in the accent colour.
pub struct Dot {
    pub label: String,
    pub x: Est,
    pub y: Est,
    pub accent: bool,
    /// The hover title.
    pub title: String,
}

/// The axes of a scatter: captions and the range the values may take.
pub struct Axes<'a> {
    pub caption: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub x_bounds: (f64, f64),
    pub y_bounds: (f64, f64),
    /// A line through the accent points, with this legend.
    pub accent_line: Option<&'a str>,
}

fn axis_range(values: impl Iterator<Item = f64>, (min, max): (f64, f64)) -> std::ops::Range<f64> {
    // A margin around the points (labels of points at the top stay inside), never far
    // beyond the bounds.
    let span = max - min;
    let (lo, hi) = values.fold((max, min), |(l, h), v| (l.min(v), h.max(v)));
    let (lo, hi) = ((lo - 0.05 * span).max(min - 0.02 * span), (hi + 0.08 * span).min(max + 0.1 * span));
    if hi - lo < 0.2 * span {
        (lo - 0.1 * span).max(min - 0.02 * span)..(hi + 0.1 * span).min(max + 0.1 * span)
    } else {
        lo..hi
    }
}

/// A scatter with 95 % intervals as error bars on both axes, labels beside the points,
/// the accent points optionally joined, and a hover title on every point.
pub fn scatter_svg(dots: &[Dot], axes: &Axes<'_>) -> anyhow::Result<String> {
    let e = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let mut svg = String::new();
    let mut hover = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let xs = axis_range(dots.iter().flat_map(|p| [p.x.lo, p.x.hi]), axes.x_bounds);
        let ys = axis_range(dots.iter().flat_map(|p| [p.y.lo, p.y.hi]), axes.y_bounds);
        let mut chart = ChartBuilder::on(&root)
            .caption(axes.caption, ("sans-serif", 18))
            .margin(16)
            .margin_right(110)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(xs, ys)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc(axes.x_desc)
            .y_desc(axes.y_desc)
            .draw()
            .map_err(|x| e(&x))?;
        let bar = RGBColor(90, 90, 90);
        for p in dots {
            let (x, y) = (p.x.mean, p.y.mean);
            // A figure without an interval gets no bar (not a zero-length one).
            let bars = [
                (!p.x.no_interval).then(|| PathElement::new(vec![(p.x.lo, y), (p.x.hi, y)], bar.stroke_width(1))),
                (!p.y.no_interval).then(|| PathElement::new(vec![(x, p.y.lo), (x, p.y.hi)], bar.stroke_width(1))),
            ];
            chart.draw_series(bars.into_iter().flatten()).map_err(|x| e(&x))?;
        }
        let accent = RGBColor(196, 62, 28);
        if let Some(legend) = axes.accent_line {
            let mut line: Vec<(f64, f64)> = dots.iter().filter(|p| p.accent).map(|p| (p.x.mean, p.y.mean)).collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(line, accent.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(legend)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], accent.stroke_width(2)));
        }
        for p in dots {
            let (x, y) = (p.x.mean, p.y.mean);
            let colour = if p.accent { accent } else { RGBColor(40, 90, 160) };
            chart.draw_series([Circle::new((x, y), 5, colour.filled())]).map_err(|x| e(&x))?;
            // The label sits up and to the right of its point, clear of the marker.
            chart
                .draw_series([
                    EmptyElement::at((x, y)) + Text::new(p.label.clone(), (7, -15), ("sans-serif", 13).into_font())
                ])
                .map_err(|x| e(&x))?;
            hover.push((chart.backend_coord(&(x, y)), p.title.as_str()));
        }
        if axes.accent_line.is_some() {
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()
                .map_err(|x| e(&x))?;
        }
        root.present().map_err(|x| e(&x))?;
    }
    // plotters has no titles; transparent circles over the points carry them (maud escapes).
    let titles = maud::html! {
        g class="hover" {
            @for ((x, y), title) in &hover {
                circle cx=(x) cy=(y) r="9" fill="transparent" { title { (title) } }
            }
        }
    };
    let end = svg.rfind("</svg>").ok_or_else(|| anyhow::anyhow!("plot: no closing tag"))?;
    svg.insert_str(end, &titles.into_string());
    Ok(svg)
}

/// Strict against Default Acc_dec of each configuration on one domain (`points`: name,
/// Strict, Default). A point above the diagonal gains from verdicts the task accepts
/// without being the optimal one: the adequacy lift.
pub fn adequacy_svg(domain: &str, points: &[(String, Est, Est)]) -> anyhow::Result<String> {
    let dots: Vec<Dot> = points
        .iter()
        .map(|(agent, strict, default)| Dot {
            label: agent.clone(),
            x: *strict,
            y: *default,
            accent: default.mean - strict.mean > 1e-9,
            title: format!(
                "{agent} on {domain}: Strict {:.3} {}, Default {:.3} {}, lift {:+.3}",
                strict.mean,
                strict.bracket(3),
                default.mean,
                default.bracket(3),
                default.mean - strict.mean
            ),
        })
        .collect();
    scatter_svg(
        &dots,
        &Axes {
            caption: &format!("Default against Strict Acc_dec, {domain}"),
            x_desc: "Strict Acc_dec (the optimal verdict only)",
            y_desc: "Default Acc_dec (acceptable verdicts earn part)",
            x_bounds: (0.0, 1.0),
            y_bounds: (0.0, 1.0),
            accent_line: None,
        },
    )
}

/// The robustness–utility plot: utility (Default Acc_dec on L0) across, robustness
/// (1 − susceptibility, paired with clean twins) up, the frontier joined by a line.
pub fn pareto_svg(points: &[ParetoPoint], caption: &str) -> anyhow::Result<String> {
    let dots: Vec<Dot> = points
        .iter()
        .map(|p| Dot {
            label: p.agent.clone(),
            x: p.utility,
            y: p.robustness,
            accent: p.frontier,
            title: format!(
                "{}: utility {:.3} {} (n={}), robustness {:.3} {} (n={}){}",
                p.agent,
                p.utility.mean,
                p.utility.bracket(3),
                p.utility.n,
                p.robustness.mean,
                p.robustness.bracket(3),
                p.robustness.n,
                if p.frontier { ", on the frontier" } else { "" }
            ),
        })
        .collect();
    scatter_svg(
        &dots,
        &Axes {
            caption,
            x_desc: "utility: Default Acc_dec on L0",
            y_desc: "robustness: 1 − susceptibility (paired with clean twins)",
            x_bounds: (0.0, 1.0),
            // Robustness passes 1 where the text backfires.
            y_bounds: (0.0, points.iter().map(|p| p.robustness.hi).fold(1.0, f64::max)),
            accent_line: Some("Pareto frontier"),
        },
    )
}

/// Marks the utility–cost frontier: no other point is as cheap or cheaper and at least as
/// useful, and strictly better on one (HAL's accuracy–cost frontier).
pub fn mark_cost_frontier(points: &mut [vocab::CostPoint]) {
    // Cheaper is better: the rule above on (−cost, utility).
    let coords: Vec<(f64, f64)> = points.iter().map(|p| (-p.cost.mean, p.utility.mean)).collect();
    for (p, on) in points.iter_mut().zip(undominated(&coords)) {
        p.frontier = on;
    }
}

/// The utility–cost plot: dollars per trial across, utility up, the frontier joined.
pub fn cost_svg(points: &[vocab::CostPoint], caption: &str) -> anyhow::Result<String> {
    let dots: Vec<Dot> = points
        .iter()
        .map(|p| Dot {
            label: p.agent.clone(),
            x: p.cost,
            y: p.utility,
            accent: p.frontier,
            title: format!(
                "{}: {} per trial {}, utility {:.3} {}{}",
                p.agent,
                vocab::dollars(p.cost.mean),
                p.cost.bracket_by(vocab::dollars),
                p.utility.mean,
                p.utility.bracket(3),
                if p.frontier { ", on the frontier" } else { "" }
            ),
        })
        .collect();
    let most = points.iter().map(|p| p.cost.hi).fold(0.0, f64::max);
    scatter_svg(
        &dots,
        &Axes {
            caption,
            x_desc: "cost: US$ per trial (the agent's tokens × its price)",
            y_desc: "utility: Default Acc_dec on L0",
            x_bounds: (0.0, if most > 0.0 { most } else { 1e-6 }),
            y_bounds: (0.0, 1.0),
            accent_line: Some("utility–cost frontier"),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(agent: &str, u: f64, r: f64) -> ParetoPoint {
        ParetoPoint {
            agent: agent.into(),
            utility: Est { mean: u, lo: u - 0.05, hi: u + 0.05, n: 10, no_interval: false, coverage: None },
            robustness: Est { mean: r, lo: r - 0.1, hi: r + 0.1, n: 8, no_interval: false, coverage: None },
            frontier: false,
        }
    }

    #[test]
    fn the_cost_frontier_holds_what_nothing_cheaper_beats() {
        let at = |agent: &str, cost: f64, utility: f64| vocab::CostPoint {
            agent: agent.into(),
            utility: Est { mean: utility, lo: utility, hi: utility, n: 10, no_interval: false, coverage: None },
            cost: Est { mean: cost, lo: cost, hi: cost, n: 10, no_interval: false, coverage: None },
            frontier: false,
        };
        // A free baseline, a dear model that is better, a dearer one that is worse, and one
        // as dear as the first and as good (ties do not dominate).
        let mut ps = vec![at("free", 0.0, 0.4), at("good", 0.01, 0.8), at("worse", 0.02, 0.7), at("twin", 0.01, 0.8)];
        mark_cost_frontier(&mut ps);
        let on: Vec<&str> = ps.iter().filter(|p| p.frontier).map(|p| p.agent.as_str()).collect();
        assert_eq!(on, ["free", "good", "twin"]);
        assert!(cost_svg(&ps, "t").expect("svg").contains("utility–cost frontier"));
    }

    #[test]
    fn the_frontier_holds_the_undominated_points() {
        let mut ps = vec![point("a", 0.9, 0.2), point("b", 0.5, 0.8), point("c", 0.4, 0.7), point("d", 0.9, 0.2)];
        mark_frontier(&mut ps);
        let on: Vec<bool> = ps.iter().map(|p| p.frontier).collect();
        assert_eq!(on, vec![true, true, false, true]);
    }

    #[test]
    fn the_plot_escapes_names_and_titles_every_point() {
        let mut ps = vec![point("<script>alert(1)</script>", 0.8, 0.3), point("explorer+keyword", 0.6, 0.9)];
        mark_frontier(&mut ps);
        let svg = pareto_svg(&ps, "run-x, pooled").expect("svg");
        assert!(svg.starts_with("<svg"));
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"));
        assert_eq!(svg.matches("<title>").count(), 2);
        assert!(svg.contains("explorer+keyword: utility 0.600 [0.550, 0.650] (n=10)"));
    }
}
