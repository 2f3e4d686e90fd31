//! One event's articles in order (publication time, then id), duplicates dropped, cut into
//! segments.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::check::{check_row, Article};
use super::config::ImportConfig;
use super::copies;
use super::error::{ArticlesError, RowError};
use super::read::{column_names, read_file, read_table, unit_of, ArticleTable, RawRow, FIELDS};
use crate::import::segment;
use crate::storage::Location;
use crate::tables::{ArticleParagraphs, Boilerplate, CopyArticle, Segment};

/// The JSON record of a row, for `rejected`.
pub(super) fn record_json(cells: &RawRow) -> String {
    let object: serde_json::Map<String, serde_json::Value> = FIELDS
        .iter()
        .zip(cells.iter())
        .map(|(f, c)| (f.to_string(), c.to_json()))
        .collect();
    serde_json::Value::Object(object).to_string()
}

/// Rows read and checked, file by file.
#[derive(Default)]
pub(super) struct Collected {
    /// The checked articles by event.
    pub(super) by_event: BTreeMap<String, Vec<Article>>,
    /// Rows that failed.
    pub(super) errors: Vec<RowError>,
    /// The input files as the user would write them.
    pub(super) files: Vec<String>,
    /// `row` or `line`, per file.
    pub(super) units: Vec<&'static str>,
    /// Rows read.
    pub(super) rows: usize,
    /// The columns of each file.
    pub(super) columns: Vec<Vec<String>>,
}

impl Collected {
    /// Reads and checks one file's rows; its bytes can be dropped afterwards (only the checked
    /// articles are kept).
    pub(super) fn add_file(
        &mut self,
        file: &str,
        data: &bytes::Bytes,
        config: &ImportConfig,
    ) -> Result<(), ArticlesError> {
        let unit = unit_of(file)?;
        self.add_rows(file, unit, config, &mut |sink| {
            read_file(file, data, &config.columns, sink)
        })
    }

    /// Reads and checks the rows of a table in memory, numbered as a Parquet file's.
    pub(super) fn add_table(
        &mut self,
        table: &ArticleTable,
        config: &ImportConfig,
    ) -> Result<(), ArticlesError> {
        let (file, schema) = (&table.name, &table.schema);
        self.add_rows(file, "row", config, &mut |sink| {
            read_table(file, schema, &table.batches, &config.columns, sink).map(|c| (Vec::new(), c))
        })
    }

    /// Checks the rows `read` hands over (and takes the rows it could not read at all).
    fn add_rows(
        &mut self,
        file: &str,
        unit: &'static str,
        config: &ImportConfig,
        read: Reader<'_>,
    ) -> Result<(), ArticlesError> {
        let file_idx = self.files.len();
        let (by_event, errors, rows) = (&mut self.by_event, &mut self.errors, &mut self.rows);
        let (bad, file_columns) = read(&mut |row, cells| {
            *rows += 1;
            let dates = super::check::Dates {
                format: config.date_format.as_deref(),
                zone: config.zone().ok().flatten(),
            };
            let checked = check_row(file_idx, row, &cells, dates)
                .and_then(|a| admit(a, file, unit, row, config.max_article_chars));
            match checked {
                Ok(a) => match by_event.get_mut(&a.key_event) {
                    Some(list) => list.push(a),
                    None => {
                        by_event.insert(a.key_event.clone(), vec![a]);
                    }
                },
                Err((column, reason)) => errors.push(RowError {
                    file: file.to_string(),
                    row,
                    unit,
                    column: column.map(|c| {
                        column_names(&config.columns)
                            [FIELDS.iter().position(|f| *f == c).unwrap_or(0)]
                        .to_string()
                    }),
                    reason,
                    record: Some(record_json(&cells)),
                }),
            }
        })?;
        self.rows += bad.len();
        self.errors.extend(bad);
        self.files.push(file.to_string());
        self.units.push(unit);
        self.columns.push(file_columns);
        Ok(())
    }
}

/// An article checked for what a text column may hold besides an article (issue 64, item 8):
/// text that is not prose is a bad row (set aside with `--on-error skip`), one longer than
/// `max` characters is cut there with a warning naming it.
fn admit(
    mut a: Article,
    file: &str,
    unit: &str,
    row: usize,
    max: usize,
) -> Result<Article, (Option<&'static str>, String)> {
    if let Some(why) = super::check::not_prose(&a.text) {
        return Err((Some("text"), why));
    }
    if let Some(cut) = super::check::capped(&a.text, max) {
        tracing::warn!(
            "{file} {unit} {row} (id {}): its text, {} characters, is cut to its first {} \
             (import.max_article_chars)",
            crate::error_line::printable(&a.id),
            a.text.chars().count(),
            cut.chars().count()
        );
        a.text = cut;
    }
    Ok(a)
}

/// Reads one input's rows into a sink; returns the rows it could not read at all, and the
/// input's columns.
type Reader<'a> = &'a mut dyn FnMut(
    &mut dyn FnMut(usize, RawRow),
) -> Result<(Vec<RowError>, Vec<String>), ArticlesError>;

/// One event's articles in the documented order, with rows of an id seen before (in that order)
/// and duplicate texts left out: (kept, summary so far, rejected rows as (file, row) and why).
pub(super) fn order_event(
    key_event: &str,
    mut list: Vec<Article>,
    c: &Collected,
    config: &ImportConfig,
) -> (Vec<Article>, ArticleSummary, Vec<RowError>) {
    list.sort_by(|a, b| {
        (
            a.published.is_none(),
            a.published,
            &a.id,
            &a.title,
            &a.text,
            &a.theme,
        )
            .cmp(&(
                b.published.is_none(),
                b.published,
                &b.id,
                &b.title,
                &b.text,
                &b.theme,
            ))
    });
    let mut ids: HashMap<String, (usize, usize)> = HashMap::new();
    let mut texts: HashSet<String> = HashSet::new();
    let mut kept: Vec<Article> = Vec::new();
    let mut errors = Vec::new();
    let mut summary = ArticleSummary {
        key_event: key_event.to_string(),
        ..Default::default()
    };
    for a in list {
        if let Some(&(f, r)) = ids.get(&a.id) {
            let (file, row) = a.origin;
            errors.push(RowError {
                file: c.files[file].clone(),
                row,
                unit: c.units[file],
                column: Some(config.columns.id.clone()),
                reason: format!(
                    "id `{}` appears twice in key event `{key_event}` (also at {} {} {r})",
                    a.id, c.files[f], c.units[f]
                ),
                // Filled in by `fill_records` (it is needed only when rows are skipped).
                record: None,
            });
            summary.rejected += 1;
            continue;
        }
        ids.insert(a.id.clone(), a.origin);
        let normal = a.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !texts.insert(normal) {
            summary.duplicates += 1;
            continue;
        }
        kept.push(a);
    }
    (kept, summary, errors)
}

/// What an import writes beside the segments of its events.
#[derive(Debug, Default)]
pub(super) struct Sides {
    /// The boilerplate paragraphs dropped (`boilerplate`).
    pub boilerplate: Vec<Boilerplate>,
    /// Each article's paragraphs (`paragraphs`).
    pub paragraphs: Vec<ArticleParagraphs>,
    /// The articles made only of copies (`copies`).
    pub copies: Vec<CopyArticle>,
}

/// Cuts one event's kept articles into its segments (doc_id dense in their order, from
/// `first_doc`: 0, or after the articles already in the corpus with `--append`; the articles
/// made only of copies after them, `super::copies`); the boilerplate paragraphs dropped, each
/// article's paragraphs and the copies go to `sides`. The repeated paragraphs are found over
/// the event's articles of the corpus's earlier batches too (`earlier`, their `paragraphs`
/// rows).
pub(super) fn cut_articles(
    key_event: &str,
    first_doc: u32,
    kept: &[Article],
    summary: &mut ArticleSummary,
    config: &ImportConfig,
    earlier: &[ArticleParagraphs],
    sides: &mut Sides,
) -> Vec<Segment> {
    let texts: Vec<&str> = kept.iter().map(|a| a.text.as_str()).collect();
    let cut = segment::cut_event_after(&texts, &config.segment, &copies::marks_of(earlier));
    let (mut doc_ids, next) = copies::doc_ids(&cut, first_doc);
    let mut here = copies::paragraph_rows(key_event, kept, &doc_ids, &cut);
    let copied = copies::copy_rows(key_event, kept, &cut, earlier, &here, &mut doc_ids, next);
    summary.carriers = copied.len();
    sides.copies.extend(copied);
    // The copies' rows with the doc_ids they were just given.
    for (row, &doc_id) in here.iter_mut().zip(&doc_ids) {
        row.doc_id = doc_id;
    }
    sides.paragraphs.extend(here);
    let boilerplate = &mut sides.boilerplate;
    if cut.late_furniture > 0 {
        tracing::info!(
            "key event `{key_event}`: {} line(s) of site furniture found over the corpus's \
             batches, dropped from this batch on (the earlier batches' segments keep them: \
             their keys hold the episodes)",
            cut.late_furniture
        );
    }
    summary.boilerplate = cut.boilerplate_dropped;
    summary.copies = cut.copies_dropped;
    summary.copied = cut.copied_articles;
    boilerplate.extend(cut.boilerplate.into_iter().map(|(text, kind, n)| {
        Boilerplate {
            key_event: key_event.to_string(),
            text,
            dropped: u32::try_from(n).unwrap_or(u32::MAX),
            kind: match kind {
                segment::Repeated::Furniture => "furniture",
                segment::Repeated::Copy => "copy",
            }
            .to_string(),
        }
    }));
    if cut.controls_stripped > 0 {
        tracing::warn!(
            "key event `{key_event}`: removed {} control character(s) from the articles' text",
            cut.controls_stripped
        );
    }
    if cut.long_cut > 0 {
        tracing::warn!(
            "key event `{key_event}`: {} piece(s) with no sentence break were longer than {} \
             characters, cut there into several segments",
            cut.long_cut,
            segment::MAX_SEGMENT_CHARS
        );
    }
    let mut segments = Vec::new();
    for ((a, segs), doc_id) in kept.iter().zip(cut.segments).zip(doc_ids) {
        let Some(doc_id) = doc_id.filter(|_| !segs.is_empty()) else {
            summary.empty += 1;
            continue;
        };
        let doc_date = a.day;
        for (seg_idx, text) in segs.into_iter().enumerate() {
            segments.push(Segment {
                key_event: key_event.to_string(),
                theme: a.theme.clone(),
                doc_id,
                doc_date,
                seg_idx: seg_idx as u32,
                text,
                source_id: Some(a.id.clone()),
                title: a.title.clone(),
            });
            summary.segments += 1;
        }
        summary.articles += 1;
    }
    // Removal that empties many articles is worth a look (the rule may have taken content).
    if summary.empty > 0 && summary.empty * 4 > kept.len() {
        tracing::warn!(
            "key event `{key_event}`: {} of {} articles have nothing left after boilerplate \
             removal ({} of them only copies of earlier articles' paragraphs, kept there): \
             see boilerplate.parquet; import.segment.boilerplate_min_articles = 0 keeps every \
             paragraph",
            summary.empty,
            kept.len(),
            summary.copied
        );
    }
    segments
}

/// The records of rows rejected after reading (an id seen before): their files are read again
/// (rare: only when such rows are skipped), so that no row's record is held in the meantime.
pub(super) async fn fill_records(
    loc: &Location,
    names: &[String],
    errors: &mut [RowError],
    config: &ImportConfig,
) -> Result<(), ArticlesError> {
    for name in names {
        let file = loc.display_child(name);
        if !errors.iter().any(|e| e.file == file) {
            continue;
        }
        let data = loc.get(name).await?;
        fill_from(&file, errors, &mut |sink| {
            read_file(&file, &data, &config.columns, sink)
        })?;
    }
    Ok(())
}

/// [`fill_records`] of a table in memory.
pub(super) fn fill_table_records(
    table: &ArticleTable,
    errors: &mut [RowError],
    config: &ImportConfig,
) -> Result<(), ArticlesError> {
    let (file, schema) = (&table.name, &table.schema);
    fill_from(file, errors, &mut |sink| {
        read_table(file, schema, &table.batches, &config.columns, sink).map(|c| (Vec::new(), c))
    })
}

/// The records of `file`'s rows named in `errors`, from its rows as `read` hands them over.
fn fill_from(file: &str, errors: &mut [RowError], read: Reader<'_>) -> Result<(), ArticlesError> {
    let rows: HashSet<usize> = errors
        .iter()
        .filter(|e| e.file == file)
        .map(|e| e.row)
        .collect();
    let mut wanted: HashMap<usize, String> = HashMap::new();
    read(&mut |row, cells| {
        if rows.contains(&row) {
            wanted.insert(row, record_json(&cells));
        }
    })?;
    for e in errors.iter_mut().filter(|e| e.file == file) {
        e.record = wanted.get(&e.row).cloned();
    }
    Ok(())
}

/// What was imported for one key event.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArticleSummary {
    /// Key event.
    pub key_event: String,
    /// Articles kept (with at least one segment).
    pub articles: usize,
    /// Segments written.
    pub segments: usize,
    /// Articles dropped as duplicates of another article's text.
    pub duplicates: usize,
    /// Boilerplate paragraphs dropped (occurrences).
    pub boilerplate: usize,
    /// Copies of news paragraphs shared by several articles dropped (each kept once, in the
    /// first article holding it).
    pub copies: usize,
    /// Articles with nothing left after the boilerplate and the copies.
    pub empty: usize,
    /// Of `empty`, those whose paragraphs were all copies of earlier articles'.
    pub copied: usize,
    /// Of `copied`, those kept as carriers of the copy (`copies.parquet`: the articles they
    /// copy found).
    pub carriers: usize,
    /// Rows of this event rejected (duplicate ids, with `--on-error skip`).
    pub rejected: usize,
    /// `--append`: articles left out because the corpus already holds their id in this event.
    pub already: usize,
}
