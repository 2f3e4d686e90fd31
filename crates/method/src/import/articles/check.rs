//! One row checked: its cells become an [`Article`] (key event, id, publication time, title,
//! text) or a [`RowError`](super::error::RowError) naming the column.

use super::error::{ArticlesError, RowError};
use super::read::{Cell, RawRow, FIELDS};

/// A checked article.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// Key event.
    pub key_event: String,
    /// Theme.
    pub theme: Option<String>,
    /// Source id.
    pub id: String,
    /// Publication time, seconds since 1970-01-01 UTC.
    pub published: Option<i64>,
    /// Its day, days since 1970-01-01: the date's own, in the offset it was written with (an
    /// evening story at 22:53 -04:00 stays on its evening's day), else the UTC day.
    pub day: Option<i32>,
    /// Title.
    pub title: Option<String>,
    /// Body.
    pub text: String,
    /// Where it came from (file, row) for messages.
    pub origin: (usize, usize),
}

/// Integers from this magnitude on are Unix milliseconds, below it Unix seconds: 10^11 seconds
/// is the year 5138, 10^11 milliseconds 1973-03-03, so every plausible date reads one way only.
pub const UNIX_MS_FROM: i64 = 100_000_000_000;

/// Unix seconds of an integer that is Unix seconds or milliseconds ([`UNIX_MS_FROM`]).
pub fn unix_seconds(n: i64) -> i64 {
    if n.unsigned_abs() >= UNIX_MS_FROM as u64 {
        n.div_euclid(1000)
    } else {
        n
    }
}

/// The forms a publication time may take, for messages.
pub const TIME_FORMS: &str = "ISO 8601 / RFC 3339 (2021-01-06, 2021-01-06T14:30:00Z, \
    2021-01-06T14:30:00+02:00), YYYY-MM-DD HH:MM[:SS], RFC 2822 as RSS writes it \
    (Wed, 06 Jan 2021 14:30:00 GMT), or Unix seconds or milliseconds";

/// Seconds since 1970-01-01 UTC of `text` read with the strftime `format` (chrono's): with an
/// offset (`%z`, `%:z`) as given, else as UTC; a format with no time reads midnight.
pub fn parse_time_with(text: &str, format: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_str(t, format) {
        return Some(dt.timestamp());
    }
    if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(t, format) {
        return Some(dt.and_utc().timestamp());
    }
    let date = chrono::NaiveDate::parse_from_str(t, format).ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

/// Seconds since 1970-01-01 UTC of an ISO 8601 / RFC 3339 date or date-time (with or without an
/// offset, `T` or a space, seconds optional), an RFC 2822 date-time (RSS's `pubDate`), or Unix
/// seconds or milliseconds written as digits ([`unix_seconds`]).
pub fn parse_time(text: &str) -> Option<i64> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
        || t.starts_with('-') && t[1..].bytes().all(|b| b.is_ascii_digit()) && t.len() > 1
    {
        return t.parse().ok().map(unix_seconds);
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(dt.timestamp());
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc2822(t) {
        return Some(dt.timestamp());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f%:z",
        "%Y-%m-%dT%H:%M%:z",
        "%Y-%m-%d %H:%M%:z",
    ] {
        if let Ok(dt) = chrono::DateTime::parse_from_str(t, f) {
            return Some(dt.timestamp());
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(t, f) {
            return Some(dt.and_utc().timestamp());
        }
    }
    let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp())
}

/// The first year a publication time may fall in.
pub const FIRST_YEAR: i32 = 1900;

/// Why Unix seconds `t` are no plausible publication time: before [`FIRST_YEAR`] or after next
/// year (by this machine's clock). None when plausible.
pub fn implausible(t: i64) -> Option<String> {
    use chrono::Datelike;
    let last = chrono::Utc::now().year() + 1;
    match chrono::DateTime::from_timestamp(t, 0) {
        Some(dt) if (FIRST_YEAR..=last).contains(&dt.year()) => None,
        Some(dt) => Some(format!(
            "{} is not a plausible date (years {FIRST_YEAR} to {last}; Unix \
             milliseconds are told from seconds by size, from {UNIX_MS_FROM} on)",
            dt.format("%Y-%m-%d")
        )),
        None => Some(format!(
            "{t} s is out of the range of dates (years {FIRST_YEAR} to {last})"
        )),
    }
}

/// How a row's publication time is read: `--date-format` and `--timezone`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Dates<'a> {
    /// `--date-format`.
    pub format: Option<&'a str>,
    /// `--timezone`.
    pub zone: Option<chrono_tz::Tz>,
}

/// Checks one row's cells into an article.
pub(super) fn check_row(
    file_idx: usize,
    row: usize,
    cells: &RawRow,
    dates: Dates,
) -> Result<Article, (Option<&'static str>, String)> {
    let date_format = dates.format;
    let text_of = |k: usize,
                   required: bool|
     -> Result<Option<String>, (Option<&'static str>, String)> {
        match &cells[k] {
            Cell::Null => {
                if required {
                    Err((Some(FIELDS[k]), "empty".into()))
                } else {
                    Ok(None)
                }
            }
            Cell::Str(s) if s.trim().is_empty() => {
                if required {
                    Err((Some(FIELDS[k]), "empty".into()))
                } else {
                    Ok(None)
                }
            }
            Cell::Str(s) => Ok(Some(s.trim().to_string())),
            Cell::Int(i) if FIELDS[k] == "id" => Ok(Some(i.to_string())),
            Cell::BadUtf8 => Err((Some(FIELDS[k]), "invalid UTF-8".into())),
            Cell::Int(i) | Cell::Time(i) => Err((
                Some(FIELDS[k]),
                format!("expected a string, found the number {i}"),
            )),
            Cell::Other(what) => Err((Some(FIELDS[k]), format!("expected a string, found {what}"))),
        }
    };
    // A key event, id or theme names folders, table rows and lines of the summary: a control
    // character there (ESC, BEL, NUL from a scraped feed) would reach the operator's terminal,
    // so the row is refused, the character named, not printed.
    let name_of = |k: usize, required: bool| {
        let value = text_of(k, required)?;
        if let Some((at, c)) = value
            .as_deref()
            .and_then(|v| v.chars().enumerate().find(|(_, c)| c.is_control()))
        {
            return Err((
                Some(FIELDS[k]),
                format!(
                    "holds a control character (U+{:04X}, character {})",
                    c as u32,
                    at + 1
                ),
            ));
        }
        Ok(value)
    };
    let key_event = name_of(0, true)?.unwrap_or_default();
    let id = name_of(1, true)?.unwrap_or_default();
    let published = published_of(&cells[2], date_format)?;
    if let Some(why) = published.and_then(implausible) {
        return Err((Some("published"), why));
    }
    let (published, day) = match dates.zone {
        None => (
            published,
            match &cells[2] {
                Cell::Str(s) => local_day(s, date_format),
                _ => None,
            }
            .or_else(|| published.and_then(utc_day)),
        ),
        Some(zone) => in_zone(&cells[2], date_format, published, zone),
    };
    let title =
        text_of(3, false)?.map(|t| crate::import::segment::strip_controls(&t).0.into_owned());
    let text = match &cells[4] {
        Cell::Str(s) if !s.trim().is_empty() => s.clone(),
        _ => text_of(4, true)?.unwrap_or_default(),
    };
    let theme = name_of(5, false)?;
    Ok(Article {
        key_event,
        theme,
        id,
        published,
        day,
        title,
        text,
        origin: (file_idx, row),
    })
}

/// The UTC day of Unix seconds `t`, as days since 1970-01-01.
fn utc_day(t: i64) -> Option<i32> {
    i32::try_from(t.div_euclid(86_400)).ok()
}

/// Days since 1970-01-01 of a calendar date.
fn days_of(date: chrono::NaiveDate) -> Option<i32> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((date - epoch).num_days()).ok()
}

/// The instant (Unix seconds) and day of a publication time with `--timezone zone` (issue 65
/// item 3): a date written with an offset other than UTC's keeps its own day; one in UTC (`Z`,
/// `+00:00`, `GMT`), Unix seconds or milliseconds, or a Parquet timestamp falls on its day in
/// `zone`; a date without an offset is `zone`'s local time (its day as written, its instant
/// `zone`'s; a time the clocks skip reads as the next valid one). `published`: the instant as
/// read without a zone (UTC for a date without an offset).
fn in_zone(
    cell: &Cell,
    date_format: Option<&str>,
    published: Option<i64>,
    zone: chrono_tz::Tz,
) -> (Option<i64>, Option<i32>) {
    use chrono::TimeZone;
    let Some(t) = published else {
        return (None, None);
    };
    let zone_day = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .and_then(|d| days_of(d.with_timezone(&zone).date_naive()))
    };
    let Cell::Str(s) = cell else {
        return (Some(t), zone_day(t));
    };
    match with_offset(s, date_format) {
        Some(d) if d.offset().local_minus_utc() != 0 => (Some(t), days_of(d.date_naive())),
        Some(_) => (Some(t), zone_day(t)),
        None => {
            // Read as UTC wall time: the same wall time in `zone`.
            let Some(wall) = chrono::DateTime::from_timestamp(t, 0).map(|d| d.naive_utc()) else {
                return (Some(t), None);
            };
            let instant = match zone.from_local_datetime(&wall) {
                chrono::LocalResult::Single(d) | chrono::LocalResult::Ambiguous(d, _) => {
                    d.timestamp()
                }
                // In a gap the clocks skip (spring forward): an hour on, a valid local time.
                chrono::LocalResult::None => zone
                    .from_local_datetime(&(wall + chrono::Duration::hours(1)))
                    .earliest()
                    .map_or(t, |d| d.timestamp()),
            };
            (Some(instant), days_of(wall.date()))
        }
    }
}

/// The day of a date written with an offset (RFC 3339, RFC 2822, ISO 8601 with `+hh:mm`, or
/// `date_format` with `%z`), in that offset, as days since 1970-01-01 (issue 65, item 3: the
/// newsroom's day, not UTC's); `None` for a date without one.
pub fn local_day(text: &str, date_format: Option<&str>) -> Option<i32> {
    days_of(with_offset(text, date_format)?.date_naive())
}

/// A date written with an offset (RFC 3339, RFC 2822, ISO 8601 with `+hh:mm`, or
/// `date_format` with `%z`), as written; `None` for a date without one.
fn with_offset(
    text: &str,
    date_format: Option<&str>,
) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    let t = text.trim();
    date_format
        .and_then(|f| chrono::DateTime::parse_from_str(t, f).ok())
        .or_else(|| chrono::DateTime::parse_from_rfc3339(t).ok())
        .or_else(|| chrono::DateTime::parse_from_rfc2822(t).ok())
        .or_else(|| {
            [
                "%Y-%m-%dT%H:%M:%S%.f%:z",
                "%Y-%m-%d %H:%M:%S%.f%:z",
                "%Y-%m-%dT%H:%M%:z",
                "%Y-%m-%d %H:%M%:z",
            ]
            .iter()
            .find_map(|f| chrono::DateTime::parse_from_str(t, f).ok())
        })
}

/// What a row error says when its date reads only with `%d` and `%m` swapped: the whole
/// import stops on it ([`super::import_from`]), since the rows that did read were read the wrong
/// way round.
pub(super) const DAY_FIRST: &str = "the day and the month are the other way round";

/// `format` with `%d` and `%m` swapped, when `text` is a date that way and not `format`'s.
pub(super) fn day_month_swapped(text: &str, format: &str) -> Option<String> {
    if !(format.contains("%d") && format.contains("%m")) {
        return None;
    }
    let swapped = format
        .replace("%d", "\u{0}")
        .replace("%m", "%d")
        .replace('\u{0}', "%m");
    parse_time_with(text, &swapped).map(|_| swapped)
}

/// The `published` cell of a row: none when empty, else a date read by `date_format` (when
/// given) or one of [`TIME_FORMS`], or Unix seconds or milliseconds.
fn published_of(
    cell: &Cell,
    date_format: Option<&str>,
) -> Result<Option<i64>, (Option<&'static str>, String)> {
    Ok(match cell {
        Cell::Null => None,
        Cell::Str(s) if s.trim().is_empty() => None,
        Cell::Str(s) => Some(
            date_format
                .and_then(|f| parse_time_with(s, f))
                .or_else(|| parse_time(s))
                .ok_or_else(|| {
                    if let Some(swapped) = date_format.and_then(|f| day_month_swapped(s, f)) {
                        return (
                            Some("published"),
                            format!(
                                "`{}` is not a date with --date-format `{}`, but is with \
                                 `{swapped}` ({DAY_FIRST})",
                                s.escape_debug(),
                                date_format.unwrap_or_default().escape_debug()
                            ),
                        );
                    }
                    let given = date_format
                        .map(|f| format!("`{}` (--date-format), or ", f.escape_debug()))
                        .unwrap_or_default();
                    (
                        Some("published"),
                        format!(
                            "`{}` is not a date (expected {given}{TIME_FORMS}; \
                             --date-format reads other forms)",
                            s.escape_debug()
                        ),
                    )
                })?,
        ),
        Cell::Int(i) => Some(unix_seconds(*i)),
        Cell::Time(i) => Some(*i),
        Cell::BadUtf8 => return Err((Some("published"), "invalid UTF-8".into())),
        Cell::Other(what) => {
            return Err((
                Some("published"),
                format!("expected a date or Unix seconds or milliseconds, found {what}"),
            ))
        }
    })
}

/// The error of `--on-error fail` listing the bad rows (the first 20, and how many more).
pub(super) fn bad_rows(errors: &mut [RowError]) -> ArticlesError {
    errors.sort_by(|a, b| (&a.file, a.row).cmp(&(&b.file, b.row)));
    let shown = 20;
    let mut listed: Vec<String> = errors.iter().take(shown).map(|e| e.to_string()).collect();
    if errors.len() > shown {
        listed.push(format!("… and {} more", errors.len() - shown));
    }
    ArticlesError::BadRows {
        count: errors.len(),
        listed: listed.join("\n"),
    }
}

/// Why `text` is not prose (issue 64, item 8), if it is not: most of it in runs of 40 or more
/// ASCII characters without a space (base64, hex, a minified blob: prose has a space every few
/// characters, and CJK prose is not ASCII), or a tenth of it U+FFFD (binary read as text).
/// Texts under 200 characters are left alone.
pub(super) fn not_prose(text: &str) -> Option<String> {
    let total = text.len();
    if total < 200 {
        return None;
    }
    let blobs: usize = text
        .split_whitespace()
        .filter(|t| t.len() >= 40 && t.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::len)
        .sum();
    if blobs * 2 > total {
        return Some(format!(
            "not prose: {blobs} of its {total} bytes are runs of 40 or more characters without \
             a space (base64 or other encoded data?); set aside"
        ));
    }
    let replaced = text.chars().filter(|&c| c == '\u{fffd}').count();
    if replaced * 10 > text.chars().count() {
        return Some(format!(
            "not prose: {replaced} of its characters are U+FFFD (binary data read as text?); \
             set aside"
        ));
    }
    None
}

/// `text` cut to its first `max` characters, at the last space before them when there is one
/// in its last tenth; `None` when it is not longer.
pub(super) fn capped(text: &str, max: usize) -> Option<String> {
    let (end, _) = text.char_indices().nth(max)?;
    let head = &text[..end];
    let cut = head
        .rfind(char::is_whitespace)
        .filter(|&at| at >= end - end / 10)
        .unwrap_or(end);
    Some(head[..cut].trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_not_prose_and_prose_of_any_script_is() {
        let prose = "The river rose above the old levee overnight and the lower town was \
                     evacuated before dawn, officials said. "
            .repeat(5);
        assert_eq!(not_prose(&prose), None);
        let cjk = "河水在夜间上涨，漫过了旧堤坝，官员说下城区在黎明前已经疏散。".repeat(10);
        assert_eq!(not_prose(&cjk), None);
        let base64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLz0x".repeat(40);
        assert!(not_prose(&base64).unwrap().contains("base64"));
        // MIME base64: lines of 76 characters.
        let mime = format!(
            "{}\n",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLz0xQUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
        )
        .repeat(20);
        assert!(not_prose(&mime).is_some());
        let binary = "\u{fffd}\u{fffd}ab\u{fffd} ".repeat(60);
        assert!(not_prose(&binary).unwrap().contains("U+FFFD"));
        // A short text is never judged.
        assert_eq!(not_prose(&"x".repeat(150)), None);
    }

    #[test]
    fn a_date_s_own_offset_decides_its_day() {
        let day = |y, m, d| {
            (chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap()
                - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
            .num_days() as i32
        };
        // 22:53 in New York is 02:53 UTC the next day: the evening's day stays.
        assert_eq!(
            local_day("Mon, 13 Oct 2025 22:53:10 -0400", None),
            Some(day(2025, 10, 13))
        );
        assert_eq!(
            local_day("2025-10-13T22:53:10-04:00", None),
            Some(day(2025, 10, 13))
        );
        assert_eq!(
            local_day("13/10/2025 23:30 +0200", Some("%d/%m/%Y %H:%M %z")),
            Some(day(2025, 10, 13))
        );
        // No offset: the UTC day (the caller's).
        assert_eq!(local_day("2025-10-13 22:53", None), None);
        assert_eq!(local_day("2025-10-13", None), None);
    }

    #[test]
    fn a_long_text_is_cut_at_a_space() {
        let text = "word ".repeat(300);
        let cut = capped(&text, 1000).unwrap();
        assert!(cut.len() <= 1000 && cut.len() > 900, "{}", cut.len());
        assert!(cut.ends_with("word"));
        assert_eq!(capped("short", 1000), None);
        let one = "é".repeat(2000);
        assert_eq!(capped(&one, 1000).unwrap().chars().count(), 1000);
    }

    #[test]
    fn the_newsroom_s_zone_gives_the_day_of_dates_that_carry_none() {
        let day = |y, m, d| days_of(chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap()).unwrap();
        let ny: chrono_tz::Tz = "America/New_York".parse().unwrap();
        let read = |cell: Cell, format: Option<&str>| {
            let published = published_of(&cell, format).unwrap();
            in_zone(&cell, format, published, ny)
        };
        let text = |t: &str| Cell::Str(t.to_string());
        // An instant in UTC at 02:53 on the 14th is the 13th's evening in New York (EDT, -4).
        let utc = read(text("2025-10-14T02:53:10Z"), None);
        assert_eq!(utc.1, Some(day(2025, 10, 13)));
        assert_eq!(
            read(text("Tue, 14 Oct 2025 02:53:10 GMT"), None).1,
            Some(day(2025, 10, 13))
        );
        // Unix seconds and a Parquet timestamp: the same instant, the same day.
        let t = utc.0.unwrap();
        assert_eq!(read(Cell::Int(t), None), (Some(t), Some(day(2025, 10, 13))));
        assert_eq!(
            read(Cell::Time(t), None),
            (Some(t), Some(day(2025, 10, 13)))
        );
        // Another offset keeps its own day (a Paris date stays Paris's).
        assert_eq!(
            read(text("2025-10-14T01:00:00+02:00"), None).1,
            Some(day(2025, 10, 14))
        );
        // No offset: New York's local time: its day as written, its instant four hours on.
        let naive = read(text("2025-10-13 22:53:10"), None);
        assert_eq!(naive.1, Some(day(2025, 10, 13)));
        assert_eq!(naive.0, Some(t));
        let formatted = read(text("13/10/2025 22:53"), Some("%d/%m/%Y %H:%M"));
        assert_eq!(formatted.1, Some(day(2025, 10, 13)));
        // A time the clocks skip (02:30 on 9 March 2025 in New York) still reads, an hour on.
        let gap = read(text("2025-03-09 02:30:00"), None);
        assert_eq!(gap.1, Some(day(2025, 3, 9)));
        assert!(gap.0.is_some());
        // An empty cell: nothing.
        assert_eq!(read(Cell::Null, None), (None, None));
    }
}
