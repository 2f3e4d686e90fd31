//! `epimine import --articles`: Parquet, JSON Lines and CSV articles become the same corpus,
//! whatever the row order; bad rows are named (file, line or row, column) and either fail the
//! import (nothing written) or go to `rejected.parquet`; duplicate articles are dropped.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::util::*;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampSecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use epimine::storage::Location;
use epimine::tables::{Rejected, Segment};

mod bad_input;
mod dates;
mod formats;

/// (key_event, id, published, title, text).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    String,
);

fn articles() -> Vec<Row> {
    let long = "The river rose through the night and flooded the lower town. ".repeat(12);
    vec![
        ("flood", "b", "2021-07-02T10:00:00Z", "Second", format!("Rescuers reached the villages on the hills before dawn, officials said.\n\n{long}\nPhoto: Staff")),
        ("flood", "a", "2021-07-01", "First", "Heavy rain fell over the valley for three days in a row, and the river burst its banks.\nPhoto: Staff".into()),
        ("flood", "c", "1625313600", "Third", "Shelters opened in schools across the county as the water kept rising.\nPhoto: Staff".into()),
        ("flood", "d", "2021-07-04T12:00:00+02:00", "Syndicated", "Shelters opened in schools across the county as the water kept  rising.\n  Photo: Staff".into()),
        ("fire", "x", "2022-01-01", "Fire", "A fire broke out in the old mill on Sunday night and burned until morning.\nPhoto: Staff".into()),
    ]
}

fn jsonl(rows: &[Row]) -> String {
    rows.iter()
        .map(|(e, id, p, t, text)| {
            serde_json::json!({"key_event": e, "id": id, "published": p, "title": t, "text": text})
                .to_string()
                + "\n"
        })
        .collect()
}

fn csv_text(rows: &[Row]) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = "key_event,id,published,title,text\n".to_string();
    for (e, id, p, t, text) in rows {
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            q(e),
            q(id),
            q(p),
            q(t),
            q(text)
        ));
    }
    out
}

fn write_parquet(path: &Path, rows: &[Row]) {
    let batch = batch(rows);
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The rows as one Arrow record batch (published as a UTC timestamp).
fn batch(rows: &[Row]) -> RecordBatch {
    let secs: Vec<i64> = rows
        .iter()
        .map(|r| epimine::import::articles::parse_time(r.2).unwrap())
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("key_event", DataType::Utf8, false),
        Field::new("id", DataType::Utf8, false),
        Field::new(
            "published",
            DataType::Timestamp(TimeUnit::Second, Some("UTC".into())),
            true,
        ),
        Field::new("title", DataType::Utf8, true),
        Field::new("text", DataType::Utf8, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(TimestampSecondArray::from(secs).with_timezone("UTC")),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.3))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.4.as_str()),
        )),
    ];
    RecordBatch::try_new(schema, cols).unwrap()
}

fn import(input: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["import", "--articles", s(input), "--out", s(out)];
    args.extend(extra);
    epimine(&args)
}

/// `import`, which must succeed (its stderr otherwise), then the corpus's segments.
fn import_ok(input: &Path, out: &Path, extra: &[&str]) -> Vec<Segment> {
    let result = import(input, out, extra);
    assert!(
        result.status.success(),
        "{}: {}",
        input.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    segments(out)
}

fn segments(corpus: &Path) -> Vec<Segment> {
    block_on(async {
        Location::parse(s(corpus), false)
            .unwrap()
            .read_table::<Segment>()
            .await
            .unwrap()
    })
}

/// 1,000 CSV rows whose row `bad` (0-based) opens a quote in its text it never closes; with
/// `quoted_every`, every such row's text is quoted (so the open quote "closes" at the next one).
fn csv_with_an_open_quote(bad: usize, quoted_every: Option<usize>) -> String {
    let mut out = "key_event,id,published,title,text\n".to_string();
    for i in 0..1000 {
        let text = format!("Article {i} tells how the river rose over the town street by street.");
        let text = if i == bad {
            format!("\"{text} A quote opens here")
        } else if quoted_every.is_some_and(|n| i % n == n - 1) {
            format!("\"{text}, quoted\"")
        } else {
            text
        };
        out.push_str(&format!("flood,{i},2021-01-01,Title {i},{text}\n"));
    }
    out
}
