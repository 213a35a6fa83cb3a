//! The forms a claim's number, date or address may take on a page: separators, ISO dates,
//! hosts.

/// A number as written without separators and with thousands separators, so that
/// "1,240.50" and "1240.50" find each other.
pub(super) fn number_forms(number: &str) -> [String; 2] {
    let plain: String = number.chars().filter(|c| *c != ',').collect();
    let (int, frac) = plain.split_once('.').map_or((plain.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if let Some(f) = frac {
        grouped.push('.');
        grouped.push_str(f);
    }
    [plain, grouped]
}

/// The host of an absolute URL, lowercase and without its port or user.
pub(super) fn host_of(url: &str) -> Option<String> {
    let (_, rest) = crate::corpus::urls::split_scheme(url)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or_default()
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Hosts that name this machine: where Mirage serves its sites unless told otherwise.
pub(super) fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "0.0.0.0")
}

/// The ways a page may print the date a claim writes: as written, and as the ISO dates it
/// can mean (`02/04/2019` is 2019-04-02 or 2019-02-04; `March 5, 2024` is 2024-03-05).
pub(super) fn date_forms(date: &str) -> Vec<String> {
    let mut forms = vec![date.to_string()];
    let iso = |y: u32, m: u32, d: u32| {
        ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| format!("{y:04}-{m:02}-{d:02}"))
    };
    let digits: Vec<u32> =
        date.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).filter_map(|p| p.parse().ok()).collect();
    let month = MONTHS.iter().position(|m| date.to_ascii_lowercase().contains(m)).map(|i| i as u32 + 1);
    // A two-digit year is of this century.
    let year = |y: u32| if y < 100 { 2000 + y } else { y };
    match (month, digits.as_slice()) {
        (Some(m), [y]) if *y >= 1000 => forms.push(format!("{y:04}-{m:02}-")),
        (Some(m), [d, y]) | (Some(m), [y, d]) if *y >= 1000 => forms.extend(iso(*y, m, *d)),
        (None, [compact]) if *compact >= 10_000_000 => {
            forms.extend(iso(compact / 10_000, compact / 100 % 100, compact % 100));
        }
        (None, [y, m, d]) if *y >= 1000 => forms.extend(iso(*y, *m, *d)),
        (None, [a, b, y]) => {
            forms.extend(iso(year(*y), *b, *a));
            forms.extend(iso(year(*y), *a, *b));
        }
        _ => {}
    }
    forms.dedup();
    forms
}

/// Month names as the date pattern reads them (their first three letters).
const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// An amount with its thousands or millions suffix written out (`$5K` is 5000).
pub(super) fn scaled(digits: &str, written: &str) -> String {
    let factor = match written.trim_end().chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => 1_000.0,
        Some('m') => 1_000_000.0,
        _ => return digits.to_string(),
    };
    let value: f64 = digits.replace(',', "").parse().unwrap_or(0.0);
    format!("{}", (value * factor).round())
}

/// A cited address as the URL check reads it: a protocol-relative or bare-domain address
/// gets a scheme (so that its host is checked), a site path without its slash gets one.
pub(super) fn absolute(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || url.starts_with('/') && !url.starts_with("//") {
        url.to_string()
    } else if let Some(rest) = url.strip_prefix("//") {
        format!("http://{rest}")
    } else if ["shop/", "forum/", "wiki/"].iter().any(|p| lower.starts_with(p)) {
        format!("/{url}")
    } else {
        format!("http://{url}")
    }
}

/// Whether `hay` shows the record number `digits` standing alone, with or without leading
/// zeros (`#000009999` shows 9999), in prose or in an address.
pub(super) fn shows_id(hay: &[u8], digits: &str) -> bool {
    let bare = digits.trim_start_matches('0');
    if bare.is_empty() {
        return false;
    }
    memchr::memmem::find_iter(hay, bare.as_bytes()).any(|i| {
        let zeros = hay[..i].iter().rev().take_while(|b| **b == b'0').count();
        let before = i.checked_sub(zeros + 1).map(|p| hay[p]);
        let after = hay.get(i + bare.len()).copied();
        !before.is_some_and(|b| b.is_ascii_alphanumeric()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}
