//! Which of the configured columns a file has: every required one missing is named in one
//! error, with the file's own columns and a guess at the one meant; the optional ones missing
//! (no dates, no titles) are said in the import's summary.

use super::config::Columns;
use super::error::ArticlesError;

/// The fields of a row, in the order of its cells.
pub(super) const FIELDS: [&str; 6] = ["key_event", "id", "published", "title", "text", "theme"];

/// The configured column names, in [`FIELDS`] order.
pub(super) fn column_names(c: &Columns) -> [&str; 6] {
    [
        &c.key_event,
        &c.id,
        &c.published,
        &c.title,
        &c.text,
        &c.theme,
    ]
}

/// The flag that names each field's column, in [`FIELDS`] order.
const FLAGS: [&str; 6] = [
    "--key-event-column",
    "--id-column",
    "--published-column",
    "--title-column",
    "--text-column",
    "--theme-column",
];

/// Whether each field is required, in [`FIELDS`] order.
const REQUIRED: [bool; 6] = [true, true, false, false, true, false];

/// What an absent optional column costs, in [`FIELDS`] order.
const COST: [&str; 6] = [
    "",
    "",
    "its articles have no date: episodes get no dates and the report no timeline",
    "its articles have no title: the report and episode_articles name them by id",
    "",
    "no themes (optional)",
];

/// Column names often used for each field, in [`FIELDS`] order (compared case-insensitively).
const USUAL: [&[&str]; 6] = [
    &[
        "key_event",
        "event",
        "event_id",
        "story",
        "topic",
        "cluster",
    ],
    &["id", "url", "link", "uri", "article_id", "doc_id", "guid"],
    &[
        "published",
        "date",
        "published_at",
        "publish_date",
        "pub_date",
        "pubdate",
        "date_published",
        "published_date",
        "datetime",
        "timestamp",
        "time",
        "created_at",
    ],
    &["title", "headline", "heading", "article_title"],
    &[
        "text",
        "body",
        "content",
        "article",
        "article_text",
        "full_text",
        "maintext",
    ],
    &["theme", "category", "section"],
];

/// One configured column absent from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// The field (`published`, `title`, …).
    pub field: &'static str,
    /// The column name it was looked for under.
    pub column: String,
    /// A column of the file that looks like the one meant.
    pub guess: Option<String>,
}

impl Absent {
    /// The flag that names the field's column.
    pub fn flag(&self) -> &'static str {
        FLAGS[FIELDS.iter().position(|f| *f == self.field).unwrap_or(0)]
    }

    /// What the absent column costs (optional fields).
    pub fn cost(&self) -> &'static str {
        COST[FIELDS.iter().position(|f| *f == self.field).unwrap_or(0)]
    }

    /// `` — `date` looks like it: --published-column date`` or nothing.
    fn hint(&self) -> String {
        match &self.guess {
            Some(g) => format!(" — `{g}` looks like it: {} {g}", self.flag()),
            None => String::new(),
        }
    }
}

/// The configured columns a file lacks: (required, optional).
pub fn absent(file_columns: &[String], columns: &Columns) -> (Vec<Absent>, Vec<Absent>) {
    let names = column_names(columns);
    let has = |name: &str| file_columns.iter().any(|c| c == name);
    // A guess is a column no field reads already.
    let unused: Vec<&String> = file_columns
        .iter()
        .filter(|c| !names.contains(&c.as_str()))
        .collect();
    let (mut required, mut optional) = (Vec::new(), Vec::new());
    for k in 0..FIELDS.len() {
        if has(names[k]) {
            continue;
        }
        let guess = USUAL[k].iter().find_map(|usual| {
            unused
                .iter()
                .find(|c| c.eq_ignore_ascii_case(usual))
                .map(|c| c.to_string())
        });
        let a = Absent {
            field: FIELDS[k],
            column: names[k].to_string(),
            guess,
        };
        if REQUIRED[k] {
            required.push(a);
        } else {
            optional.push(a);
        }
    }
    (required, optional)
}

/// The text of the error for a file without some required columns: each one with its flag and
/// a guess, the optional ones missing too, and the file's columns.
pub fn missing_message(
    file_columns: &[String],
    required: &[Absent],
    optional: &[Absent],
) -> String {
    let mut parts: Vec<String> = required
        .iter()
        .map(|a| {
            format!(
                "no column `{}` (name it with {} or {} = … in [import.columns]){}",
                a.column,
                a.flag(),
                a.field,
                a.hint()
            )
        })
        .collect();
    let optional: Vec<String> = optional
        .iter()
        .filter(|a| a.field != "theme" || a.guess.is_some())
        .map(|a| format!("`{}` ({}){}", a.column, a.flag(), a.hint()))
        .collect();
    if !optional.is_empty() {
        parts.push(format!("optional, also not found: {}", optional.join(", ")));
    }
    let listed = if file_columns.is_empty() {
        "none".to_string()
    } else {
        file_columns
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    parts.push(format!("the file's columns: {listed}"));
    format!(
        "{} required column(s) missing:\n  {}",
        required.len(),
        parts.join("\n  ")
    )
}

/// Every required column of `columns` in `file_columns`, else one error naming all that are
/// missing (optional ones too) and the file's columns.
pub(super) fn required(
    file: &str,
    file_columns: &[String],
    columns: &Columns,
) -> Result<(), ArticlesError> {
    let (required, optional) = absent(file_columns, columns);
    if required.is_empty() {
        return Ok(());
    }
    Err(ArticlesError::MissingColumns {
        file: file.into(),
        message: missing_message(file_columns, &required, &optional),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_columns_with_guesses() {
        let file: Vec<String> = ["event", "url", "date", "headline", "body"]
            .map(String::from)
            .to_vec();
        let columns = Columns {
            key_event: "event".into(),
            id: "url".into(),
            text: "body".into(),
            ..Columns::default()
        };
        let (required, optional) = absent(&file, &columns);
        assert!(required.is_empty());
        let got: Vec<(&str, Option<&str>)> = optional
            .iter()
            .map(|a| (a.field, a.guess.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("published", Some("date")),
                ("title", Some("headline")),
                ("theme", None)
            ]
        );
        let (required, optional) = absent(&file, &Columns::default());
        assert_eq!(required.len(), 3);
        let text = missing_message(&file, &required, &optional);
        assert!(
            text.starts_with("3 required column(s) missing:\n  no column `key_event`")
                && text.contains("no column `key_event` (name it with --key-event-column or key_event = … in [import.columns]) — `event` looks like it: --key-event-column event")
                && text.contains("no column `text` (name it with --text-column or text = … in [import.columns]) — `body` looks like it: --text-column body")
                && text.contains("optional, also not found: `published` (--published-column) — `date` looks like it: --published-column date")
                && text.ends_with("the file's columns: `event`, `url`, `date`, `headline`, `body`"),
            "{text}"
        );
    }
}
