//! What the agent of a trajectory received, turn by turn: pages of the sites as the site
//! renders them (checked against the file's observations), other pages as the file shows
//! them, manipulated spans kept apart, and gold facts from the turn that visits their page.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};

use memchr::memmem;

use super::Received;
use crate::corpus::urls::{normalise, normalised};
use crate::corpus::{Domain, Task};
use crate::env::World;
use crate::judge::{SpanMark, Trajectory};
/// Stands in for an original the trial's manipulation replaced while a page is rendered,
/// then becomes a space: like a cut-out span, it neither splits nor joins the page's lines.
const CUT: char = '\u{1}';

/// The observation text of a page of `world` as the site renders it (no episode chrome),
/// with each of `cut` (originals the trial's manipulation replaced there) cut out; `None`
/// when `norm` is no page (a listing, an index, an unknown URL). Text only: rendering the
/// HTML too, as `render_path` does, would double the cost for nothing the checker reads.
fn page_text(world: &World, norm: &str, cut: &[&str]) -> Option<String> {
    use crate::env::Resolved;
    use crate::env::render::{View, observation};
    let domain = crate::env::site::domain_of(norm)?;
    // The sites show their listings at these paths whatever a task defines there.
    if crate::corpus::urls::SITE_LISTINGS.contains(&norm) {
        return None;
    }
    let Some(Resolved::Page(p)) = world.resolve(norm) else { return None };
    if p.domain != domain {
        return None;
    }
    let mut text = Cow::Borrowed(p.page.text.as_str());
    for original in cut.iter().filter(|o| !o.is_empty()) {
        text = Cow::Owned(text.replacen(original, &CUT.to_string(), 1));
    }
    let links = p.page.links.iter().map(|l| (l.label.clone(), l.url.clone())).collect();
    let view = View { domain, path: norm, title: &p.page.title, text: &text, links, episode: None };
    let rendered = observation(&view);
    Some(if cut.is_empty() { rendered } else { rendered.replace(CUT, " ") })
}

/// `text` with its manipulated spans cut out (each becomes a space): by their text, or by
/// their offsets where they carry none.
fn cut_spans<'a>(text: &'a str, spans: &[SpanMark]) -> Cow<'a, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    let mut ranges: Vec<Range<usize>> = spans
        .iter()
        .filter(|s| s.text.is_empty())
        .filter_map(|s| Some(s.start?..s.end?))
        .filter(|r| r.start <= r.end && text.get(r.clone()).is_some())
        .collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.start));
    let mut below = out.len();
    for r in ranges {
        if r.end <= below {
            below = r.start;
            out.replace_range(r, " ");
        }
    }
    for s in spans {
        if let Some(cut) = crate::judge::labels::cut_out(&out, &s.text) {
            out = cut;
        }
    }
    Cow::Owned(out)
}

/// A line of the action list a site appends to every page of an episode.
fn is_action(line: &str) -> bool {
    crate::agent::protocol::is_footer_line(line)
}

/// `s` with its whitespace collapsed (words joined by one space), written into `out`.
fn collapse_into(s: &str, out: &mut String) {
    out.clear();
    for (i, w) in s.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
}

/// `s` with episode prefixes (`/ep/<id>/`) taken out of its paths.
fn without_episodes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("/ep/") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 4..];
        match after.find('/') {
            Some(j) if !after[..j].contains(char::is_whitespace) => rest = &after[j..],
            _ => {
                out.push_str("/ep/");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// What of a file's observation of a world page (`rendering`: the site's text there, the
/// trial's manipulated originals cut out) the checker takes as received, or `None` when
/// the file shows something the site does not. It agrees when every line outside its
/// manipulated spans, the site's leading note, its action list and a defense's withheld
/// notices occurs in the rendering, in order, whitespace collapsed. Then the lines it
/// shows are taken, and nothing the chrome around them says.
fn agrees<'r>(observation: &str, spans: &[SpanMark], rendering: &'r str, norm: &str) -> Option<Cow<'r, str>> {
    const ACTIONS: &str = "\nActions:\n";
    // Built once: every observation is searched for the heading.
    static HEADING: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(ACTIONS));
    static LAST_HEADING: LazyLock<memmem::FinderRev<'static>> = LazyLock::new(|| memmem::FinderRev::new(ACTIONS));
    let shown = cut_spans(observation, spans);
    let mut body: &str = &shown;
    if body.starts_with("Note: ") {
        body = body.split_once("\n\n").map_or("", |(_, rest)| rest);
    }
    // The action list closes the page: its last heading, looked for only when there is one.
    let found = HEADING.find(body.as_bytes()).is_some();
    let (page, actions) = found
        .then(|| LAST_HEADING.rfind(body.as_bytes()))
        .flatten()
        .map_or((body, ""), |i| (&body[..i], &body[i + ACTIONS.len()..]));
    if !actions.lines().all(is_action) {
        return None;
    }
    // Mirage's own trials: the page exactly as rendered.
    if page == rendering {
        return Some(Cow::Borrowed(rendering));
    }
    let mut whole = String::with_capacity(rendering.len());
    collapse_into(rendering, &mut whole);
    let mut kept = String::with_capacity(page.len());
    let mut at = 0;
    let mut l = String::new();
    for line in page.lines() {
        collapse_into(line, &mut l);
        if l.is_empty() || l.starts_with("[withheld: ") && l.ends_with(']') {
            continue;
        }
        if let Some(url) = l.strip_prefix("URL: ") {
            if normalise(url) != norm {
                return None;
            }
            continue;
        }
        let find = |needle: &str| {
            let n = needle.as_bytes();
            memmem::find(&whole.as_bytes()[at..], n)
                .map(|p| at + p + n.len())
                .or_else(|| memmem::find(whole.as_bytes(), n).map(|p| p + n.len()))
        };
        let end = find(&l).or_else(|| l.contains("/ep/").then(|| find(&without_episodes(&l))).flatten())?;
        at = end;
        kept.push_str(&l);
        kept.push('\n');
    }
    Some(Cow::Owned(kept))
}

/// The site a normalised path belongs to (`domain_of` without normalising again).
fn site_of(norm: &str) -> Option<Domain> {
    Domain::ALL.into_iter().find(|d| {
        let prefix = d.url_prefix();
        norm.starts_with(prefix) || norm == prefix.trim_end_matches('/')
    })
}

/// Pages of a world as the sites render them. A scorer of many trajectories keeps each
/// page's rendering from its first need on ([`Renderings::kept`]): a page is then rendered
/// once, not once per trajectory that visits it. Pages a trial's manipulation touched are
/// rendered for that trajectory alone.
pub struct Renderings<'w> {
    world: &'w World,
    /// Every page of the world by normalised URL, its rendering made on first need; the
    /// index itself is built on first need too. `None`: render every time.
    kept: Option<OnceLock<rustc_hash::FxHashMap<String, OnceLock<Option<Kept>>>>>,
    /// Pages with the party's text cut out, by page and cut texts (kept with `kept`, within
    /// a bound in bytes).
    cut: RwLock<CutPages>,
    /// What the sites answer at addresses that are no page of the world, by site of the
    /// trial and address as the file wrote it (kept with `kept`, within a bound in bytes).
    served: RwLock<ServedPages>,
}

/// What the sites answer at addresses that are no page of the world, by site and address.
type ServedPages = crate::judge::bounded::Kept<(Domain, Box<str>), Arc<str>>;

/// Pages with text cut out, by page and the texts cut.
type CutPages = crate::judge::bounded::Kept<(String, Vec<String>), Arc<Kept>>;

/// The hashes of a page's words, as the paste check reads them.
type Words = std::sync::Arc<[u64]>;

/// A page's rendering as kept, with the hashes of its words for the paste check.
struct Kept {
    text: String,
    words: Words,
}

impl<'w> Renderings<'w> {
    /// Renderings kept across trajectories (for a scorer).
    pub fn kept(world: &'w World) -> Renderings<'w> {
        Renderings { world, kept: Some(OnceLock::new()), cut: RwLock::default(), served: RwLock::default() }
    }

    /// Renderings made for each trajectory (one-off scoring: no index of the world to build).
    pub fn each_time(world: &'w World) -> Renderings<'w> {
        Renderings { world, kept: None, cut: RwLock::default(), served: RwLock::default() }
    }

    /// The page at `norm` as shown in a trial on `site`, `cut` out of it; `None` when it is
    /// no page of that site (a trial is not shown another site's pages).
    fn page(&self, site: Domain, norm: &str, cut: &[&str]) -> Option<(Cow<'_, str>, Option<Words>)> {
        if site_of(norm) != Some(site) {
            return None;
        }
        match &self.kept {
            Some(kept) if cut.is_empty() => {
                let index = kept.get_or_init(|| {
                    let urls = self.world.tasks().flat_map(|t| t.pages.keys());
                    urls.map(|u| (normalise(u), OnceLock::new())).collect()
                });
                let cell = index.get(norm)?;
                let kept = cell.get_or_init(|| {
                    let text = page_text(self.world, norm, &[])?;
                    let words = super::paste::word_hashes(&super::fold(&text)).into();
                    Some(Kept { text, words })
                });
                kept.as_ref().map(|k| (Cow::Borrowed(k.text.as_str()), Some(k.words.clone())))
            }
            Some(_) => {
                let key = (norm.to_string(), cut.iter().map(|c| (*c).to_string()).collect::<Vec<_>>());
                let kept = self.cut.read().ok().and_then(|c| c.get(&key).cloned());
                let kept = match kept {
                    Some(k) => k,
                    None => {
                        let text = page_text(self.world, norm, cut)?;
                        let words: Words = super::paste::word_hashes(&super::fold(&text)).into();
                        let bytes =
                            key.0.len() + key.1.iter().map(String::len).sum::<usize>() + text.len() + 8 * words.len();
                        let k = Arc::new(Kept { text, words });
                        if let Ok(mut c) = self.cut.write() {
                            c.insert(key, k.clone(), bytes);
                        }
                        k
                    }
                };
                Some((Cow::Owned(kept.text.clone()), Some(kept.words.clone())))
            }
            None => page_text(self.world, norm, cut).map(|t| (Cow::Owned(t), None)),
        }
    }

    /// What the site of a trial on `site` answers at `raw` (normalised `norm`) when that is
    /// no page of the world (a listing, a search page), if it answers with a page at all: a
    /// 404, an invented path, another site's page or a URL no site serves verifies nothing,
    /// whatever the file shows for it. Kept by address with the renderings: listings come
    /// back in trajectory after trajectory.
    fn served(&self, site: Domain, raw: &str, norm: &str) -> Arc<str> {
        let render = || {
            let pattern = raw.split_once('?').and_then(|(_, q)| {
                url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "pattern").map(|(_, v)| v.into_owned())
            });
            let rendered = crate::env::site::render_path(self.world, raw, pattern.as_deref(), None);
            let on_site = crate::env::site::domain_of(norm) == Some(site);
            let text: Arc<str> =
                if on_site && (200..300).contains(&rendered.status) { rendered.text.into() } else { "".into() };
            text
        };
        // A very long address is rendered each time: most of its room would go to the key.
        if self.kept.is_none() || raw.len() > 2048 {
            return render();
        }
        let key = (site, Box::<str>::from(raw));
        if let Some(text) = self.served.read().ok().and_then(|s| s.get(&key).cloned()) {
            return text;
        }
        let text = render();
        if let Ok(mut s) = self.served.write() {
            let bytes = key.1.len() + text.len() + 64;
            s.insert(key, text.clone(), bytes);
        }
        text
    }
}

/// Whether two normalised paths are one: most differ in their last bytes (an id), which
/// are compared first.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().last() == b.as_bytes().last() && a == b
}

/// The distinct pages the trial visited, each rendered once by the sites (the party's marked
/// text cut out), and for every step the index of its page.
fn visited_pages<'v, 'r>(
    pages_of: &'r Renderings<'_>,
    task: &Task,
    traj: &Trajectory,
    visits: &'v [String],
) -> (Vec<Page<'v, 'r>>, Vec<usize>) {
    let marked: Vec<&str> = traj.steps.iter().flat_map(|s| &s.spans).map(|s| s.injection.as_str()).collect();
    let cuts: Vec<(String, &str)> = task
        .injection_points
        .iter()
        .filter(|p| marked.contains(&p.id.as_str()))
        .map(|p| (normalise(&p.url), p.text.as_str()))
        .collect();
    let mut pages: Vec<Page<'_, '_>> = Vec::new();
    let mut which: Vec<usize> = Vec::with_capacity(visits.len());
    for (step, url) in traj.steps.iter().zip(visits) {
        let i = pages.iter().position(|p| same(p.url, url)).unwrap_or_else(|| {
            let cut: Vec<&str> = cuts.iter().filter(|(u, _)| u == url).map(|(_, t)| *t).collect();
            let (site, words) = pages_of.page(task.domain, url, &cut).map_or((None, None), |(t, w)| (Some(t), w));
            pages.push(Page { url, site, words, fallback: None });
            pages.len() - 1
        });
        if pages[i].site.is_none() && pages[i].fallback.is_none() {
            pages[i].fallback = Some(pages_of.served(task.domain, &step.url, url));
        }
        which.push(i);
    }
    (pages, which)
}

/// Whether `a` and `b` are the same text in memory.
fn same_text(a: &str, b: &str) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}

/// One distinct page of a trajectory.
struct Page<'v, 'r> {
    /// Its normalised URL.
    url: &'v str,
    /// The site's rendering, when the world has a page there.
    site: Option<Cow<'r, str>>,
    /// The hashes of its words, when the rendering was kept.
    words: Option<Words>,
    /// What the sites answer there otherwise, for steps the file gave no observation.
    fallback: Option<Arc<str>>,
}

/// What the agent of `traj` received, turn by turn (`visits`: the steps' normalised URLs),
/// and the turns whose observation disagrees with the site (see [`agrees`]).
///
/// A step on a page of the world on the task's site counts the site's rendering of it
/// (from `pages_of`), never the file's text: the lines the file shows when it agrees with
/// the site, the whole rendering when it does not (a forged observation verifies nothing).
/// A step on any other URL counts what the task's site serves there when that is a page
/// (a listing, a search), and nothing otherwise: the file's text of a 404, an invented path,
/// another site's page or an outside URL verifies nothing. Manipulated spans are cut out of both and kept apart; at a page the trial's
/// spans mark as manipulated, the original texts they replaced are cut out of the
/// rendering as well. Gold facts count from the turn that first visits their page.
/// About how many bytes the received text of a trajectory takes, so it is allocated once.
fn capacity(pages: &[Page<'_, '_>], task: &Task, traj: &Trajectory, which: &[usize]) -> usize {
    let rendered: usize = pages.iter().filter_map(|p| p.site.as_deref().or(p.fallback.as_deref())).map(str::len).sum();
    let observed: usize = traj
        .steps
        .iter()
        .zip(which)
        .filter(|(_, i)| pages[**i].site.is_none())
        .filter_map(|(s, _)| s.observation.as_ref().map(String::len))
        .sum();
    let facts: usize = task.gold_facts.iter().map(|f| f.text.len() + 1).sum();
    rendered + observed + facts + 2 * pages.len()
}

pub fn received_of<'v>(
    pages_of: &Renderings<'_>,
    task: &Task,
    traj: &Trajectory,
    ticket: &str,
    visits: &'v [String],
) -> (Received<'v>, Vec<usize>) {
    let (pages, which) = visited_pages(pages_of, task, traj, visits);

    let fact_urls: Vec<Cow<'_, str>> = task.gold_facts.iter().map(|f| normalised(&f.url)).collect();
    let mut received = Received::new(ticket, visits).with_hosts(traj.steps.iter().map(|s| s.url.as_str()));
    received.text.reserve(capacity(&pages, task, traj, &which));
    let mut mismatch = Vec::new();
    // Agents revisit pages: each distinct text goes in once.
    let mut shown: Vec<Cow<'_, str>> = Vec::new();
    let mut checked: Vec<(usize, &str, bool)> = Vec::new();
    let mut injected_seen: Vec<&str> = Vec::new();
    for (t, (step, &i)) in traj.steps.iter().zip(&which).enumerate() {
        let page = &pages[i];
        let text = match (&page.site, step.observation.as_deref()) {
            (Some(site), Some(obs)) => match checked.iter().find(|(j, o, _)| *j == i && *o == obs) {
                Some(&(_, _, ok)) => {
                    if !ok {
                        mismatch.push(t);
                    }
                    None
                }
                None => {
                    let seen = agrees(obs, &step.spans, site.as_ref(), page.url);
                    checked.push((i, obs, seen.is_some()));
                    if seen.is_none() {
                        mismatch.push(t);
                    }
                    Some(seen.unwrap_or(Cow::Borrowed(site.as_ref())))
                }
            },
            (Some(site), None) => Some(Cow::Borrowed(site.as_ref())),
            // Not a page of the world: what the site serves there, never the file's text.
            (None, _) => Some(Cow::Borrowed(page.fallback.as_deref().unwrap_or_default())),
        };
        // A page shown again is the same rendering: same address, no need to read it.
        let text = text.filter(|t| !shown.iter().any(|s| same_text(s, t) || s == t));
        let mut fresh: Vec<&str> = Vec::new();
        for s in step.spans.iter().map(|s| s.text.as_str()).filter(|s| !s.is_empty()) {
            if !injected_seen.contains(&s) {
                injected_seen.push(s);
                fresh.push(s);
            }
        }
        let first_visit = !which[..t].contains(&i);
        let facts = task
            .gold_facts
            .iter()
            .zip(&fact_urls)
            .filter(|(_, u)| first_visit && *u == page.url)
            .map(|(f, _)| f.text.as_str());
        match text {
            Some(text) => {
                // The site's kept rendering, as it is: its words' hashes come with it.
                let words =
                    page.words.as_ref().filter(|_| page.site.as_deref().is_some_and(|s| same_text(s, &text))).cloned();
                shown.push(text);
                received.push_turn(shown.last().map(AsRef::as_ref), fresh, facts);
                if let Some(words) = words {
                    received.page_words(words);
                }
            }
            None => received.push_turn(None, fresh, facts),
        }
    }
    (received, mismatch)
}
