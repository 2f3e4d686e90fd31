//! Text on the page: escaping, clipping, days, numbers and headings.

use crate::tables::Episode;

/// Days since 1970-01-01 as `YYYY-MM-DD`.
pub fn iso_day(days: i32) -> String {
    chrono::NaiveDate::from_num_days_from_ce_opt(days + 719_163)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("day {days}"))
}

/// HTML-escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The first `n` characters of `text`, with `…` when cut.
pub(super) fn clip(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Writes a number with at most one decimal, without a trailing `.0`.
pub(super) fn num(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A confidence with three significant digits (they are small: a share of the event's gaps),
/// written as a plain decimal a reader can compare (`0.0000370`, not `3.7e-5`).
pub(super) fn conf(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || x.abs() >= 0.01 {
        return format!("{x:.3}");
    }
    let digits = (2 - x.abs().log10().floor() as i64).clamp(3, 17) as usize;
    format!("{x:.digits$}")
}

/// An episode's heading: its title (the LLM's, or its article's headline, or an extract of its
/// top passage), else its first keywords.
pub(super) fn episode_heading(e: &Episode) -> String {
    if !e.title.is_empty() {
        e.title.clone()
    } else if !e.keywords.is_empty() {
        e.keywords
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        e.title.clone()
    }
}

/// A day as `YYYY-MM-DD`, or `–` without one.
pub(super) fn date_or_dash(d: Option<i32>) -> String {
    d.map(iso_day).unwrap_or_else(|| "–".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_formats_days() {
        assert_eq!(
            escape("<script>a & 'b' \"c\"</script>"),
            "&lt;script&gt;a &amp; &#39;b&#39; &quot;c&quot;&lt;/script&gt;"
        );
        assert_eq!(iso_day(0), "1970-01-01");
        assert_eq!(iso_day(14_621), "2010-01-12");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(2.25), "2.3");
        assert_eq!(conf(0.000177), "0.000177");
        assert_eq!(conf(0.000037), "0.0000370");
        assert_eq!(conf(0.5), "0.500");
    }
}
