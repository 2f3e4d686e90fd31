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

#[test]
fn every_format_and_row_order_gives_the_same_corpus() {
    let dir = scratch();
    let rows = articles();
    let mut reversed = rows.clone();
    reversed.reverse();
    std::fs::write(dir.path().join("a.jsonl"), jsonl(&rows)).unwrap();
    std::fs::write(dir.path().join("b.csv"), csv_text(&reversed)).unwrap();
    write_parquet(&dir.path().join("c.parquet"), &reversed);
    // A prefix over two files (the rows split between them, in another order).
    std::fs::create_dir_all(dir.path().join("split")).unwrap();
    std::fs::write(dir.path().join("split/feed-1.jsonl"), jsonl(&rows[2..])).unwrap();
    std::fs::write(dir.path().join("split/feed-2.jsonl"), jsonl(&rows[..2])).unwrap();
    std::fs::write(dir.path().join("split/other.txt"), "not an input").unwrap();

    let mut corpora = Vec::new();
    for (name, input) in [
        ("jsonl", dir.path().join("a.jsonl")),
        ("csv", dir.path().join("b.csv")),
        ("parquet", dir.path().join("c.parquet")),
        ("prefix", dir.path().join("split/feed-")),
    ] {
        let out = dir.path().join(format!("corpus-{name}"));
        let result = import(&input, &out, &[]);
        let stdout = String::from_utf8_lossy(&result.stdout);
        assert!(
            result.status.success(),
            "{name}: {}{stdout}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert!(stdout.contains("1 duplicate articles dropped"), "{stdout}");
        assert!(stdout.contains("3 boilerplate lines dropped"), "{stdout}");
        corpora.push(std::fs::read(out.join("segments.parquet")).unwrap());
    }
    for c in &corpora[1..] {
        assert!(c == &corpora[0], "corpora differ between formats or orders");
    }

    let segs = segments(&dir.path().join("corpus-jsonl"));
    // Events in name order; articles by publication time, then id; the duplicate of `c`
    // (published later) dropped; `Photo: Staff` (in 3 articles) dropped.
    let docs: Vec<(&str, u32, &str, Option<&str>)> = segs
        .iter()
        .filter(|s| s.seg_idx == 0)
        .map(|s| {
            (
                s.key_event.as_str(),
                s.doc_id,
                s.source_id.as_deref().unwrap(),
                s.title.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        docs,
        vec![
            ("fire", 0, "x", Some("Fire")),
            ("flood", 0, "a", Some("First")),
            ("flood", 1, "b", Some("Second")),
            ("flood", 2, "c", Some("Third")),
        ]
    );
    // Boilerplate is counted per event: the one `fire` article keeps its line.
    assert!(segs
        .iter()
        .filter(|s| s.key_event == "flood")
        .all(|s| !s.text.contains("Photo: Staff")));
    assert!(segs.iter().any(|s| s.text.contains("Photo: Staff")));
    // 2021-07-01 is day 18809; 1625313600 is 2021-07-03T12:00Z.
    let date = |id: &str| {
        segs.iter()
            .find(|s| s.source_id.as_deref() == Some(id))
            .unwrap()
            .doc_date
    };
    assert_eq!((date("a"), date("c")), (Some(18809), Some(18811)));
    // The long paragraph of `b` is cut at sentence ends into pieces under max_chars.
    let b: Vec<&Segment> = segs
        .iter()
        .filter(|s| s.source_id.as_deref() == Some("b"))
        .collect();
    assert!(b.len() >= 3, "{b:?}");
    assert!(b
        .iter()
        .all(|s| s.text.chars().count() <= 540 && s.text.ends_with('.')));
}

#[test]
fn a_table_in_memory_gives_the_corpus_of_its_parquet_file_and_is_named_in_errors() {
    use epimine::import::articles::{self, ArticleTable, ImportConfig, OnError};
    let dir = scratch();
    let rows = articles();
    write_parquet(&dir.path().join("a.parquet"), &rows);
    let from_file = dir.path().join("from-file");
    let result = import(&dir.path().join("a.parquet"), &from_file, &[]);
    assert!(result.status.success(), "{result:?}");
    // The same rows handed over in memory (as the Python package hands a DataFrame), split
    // into two batches.
    let whole = batch(&rows);
    let table = |batch: &RecordBatch| ArticleTable {
        name: "polars DataFrame".into(),
        schema: batch.schema(),
        batches: vec![batch.slice(0, 2), batch.slice(2, batch.num_rows() - 2)],
    };
    let from_table = dir.path().join("from-table");
    let out = Location::parse(s(&from_table), true).unwrap();
    let imported = block_on(articles::import_table(
        &table(&whole),
        &out,
        &ImportConfig::default(),
    ))
    .unwrap();
    assert_eq!((imported.files, imported.rows), (1, rows.len()));
    assert_eq!(
        std::fs::read(from_table.join("segments.parquet")).unwrap(),
        std::fs::read(from_file.join("segments.parquet")).unwrap(),
        "a table and its Parquet file give different corpora"
    );

    // A bad row (no text) is named by the table's name, row (from 1, across batches) and
    // column; with `skip`, `rejected` names it the same way.
    let mut bad = rows.clone();
    bad[3].4 = String::new();
    let bad = batch(&bad);
    let failed = block_on(articles::import_table(
        &table(&bad),
        &Location::parse(s(&dir.path().join("failed")), true).unwrap(),
        &ImportConfig::default(),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        failed.contains("polars DataFrame: row 4, column `text`"),
        "{failed}"
    );
    assert!(!dir.path().join("failed/segments.parquet").exists());
    let skip = ImportConfig {
        on_error: OnError::Skip,
        ..Default::default()
    };
    let skipped = block_on(articles::import_table(
        &table(&bad),
        &Location::parse(s(&dir.path().join("skipped")), true).unwrap(),
        &skip,
    ))
    .unwrap();
    assert_eq!(skipped.rejected.len(), 1);
    let r = &skipped.rejected[0];
    assert_eq!(
        (r.file.as_str(), r.row, r.column.as_deref()),
        ("polars DataFrame", 4, Some("text"))
    );
    assert!(r.record.as_deref().unwrap().contains("Syndicated"), "{r:?}");

    // A missing column is named with the table.
    let no_text = whole.project(&[0, 1, 2, 3]).unwrap();
    let missing = block_on(articles::import_table(
        &table(&no_text),
        &Location::parse(s(&dir.path().join("missing")), true).unwrap(),
        &ImportConfig::default(),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        missing.starts_with("polars DataFrame: 1 required column(s) missing:")
            && missing.contains("no column `text` (name it with --text-column")
            && missing.contains("`key_event`, `id`, `published`, `title`"),
        "{missing}"
    );
}

#[test]
fn bad_rows_are_named_and_fail_or_are_set_aside() {
    let dir = scratch();
    let input = dir.path().join("feed.jsonl");
    let lines = [
        r#"{"key_event": "e", "id": "1", "published": "2021-01-01", "text": "A good article about the event, long enough to keep."}"#,
        r#"{"key_event": "e", "id": "2", "published": "last tuesday", "text": "Dated oddly."}"#,
        r#"{"key_event": "", "id": "3", "text": "No event."}"#,
        r#"{"key_event": "e", "id": "4", "text": "   "}"#,
        r#"{"key_event": "e", "id": "1", "published": "2021-01-02", "text": "The same id again, with other text."}"#,
        r#"{"key_event": "e", "id": "5", "text": 42}"#,
        r#"not json"#,
    ];
    let mut data = lines.join("\n").into_bytes();
    data.extend(b"\n{\"key_event\": \"e\", \"id\": \"6\", \"text\": \"bad \xff byte\"}\n");
    std::fs::write(&input, &data).unwrap();

    let out = dir.path().join("fail");
    let result = import(&input, &out, &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success(), "{err}");
    assert_eq!(files_in(&out), Vec::<String>::new(), "nothing written");
    for expect in [
        "7 bad row(s)",
        "feed.jsonl: line 2, column `published`: `last tuesday` is not a date",
        "feed.jsonl: line 3, column `key_event`: empty",
        "feed.jsonl: line 4, column `text`: empty",
        "feed.jsonl: line 5, column `id`: id `1` appears twice in key event `e`",
        "feed.jsonl: line 6, column `text`: expected a string, found the number 42",
        "feed.jsonl: line 7: not JSON",
        "feed.jsonl: line 8: invalid UTF-8",
    ] {
        assert!(err.contains(expect), "missing `{expect}` in:\n{err}");
    }

    let out = dir.path().join("skip");
    let result = import(&input, &out, &["--on-error", "skip"]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(stdout.contains("7 rows rejected"), "{stdout}");
    let segs = segments(&out);
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].source_id.as_deref(), Some("1"));
    let rejected: Vec<Rejected> = block_on(async {
        Location::parse(s(&out), false)
            .unwrap()
            .read_table::<Rejected>()
            .await
            .unwrap()
    });
    let rows: Vec<(u32, Option<&str>)> = rejected
        .iter()
        .map(|r| (r.row, r.column.as_deref()))
        .collect();
    assert_eq!(
        rows,
        vec![
            (2, Some("published")),
            (3, Some("key_event")),
            (4, Some("text")),
            (5, Some("id")),
            (6, Some("text")),
            (7, None),
            (8, None),
        ]
    );
    assert!(rejected[0]
        .record
        .as_deref()
        .unwrap()
        .contains("last tuesday"));
    // The row of a repeated id (found after reading, its record read again) keeps its record.
    let repeated: serde_json::Value =
        serde_json::from_str(rejected[3].record.as_deref().unwrap()).unwrap();
    assert_eq!(repeated["text"], "The same id again, with other text.");
    assert_eq!(repeated["published"], "2021-01-02");
}

#[test]
fn parquet_files_of_every_codec_pyarrow_writes_are_read() {
    // tests/fixtures/codecs: the same three articles, written by pyarrow with each codec
    // (polars writes zstd by default; issue 46).
    let dir = scratch();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codecs");
    let mut texts = None;
    for codec in ["snappy", "zstd", "lz4", "gzip", "brotli", "none"] {
        let input = fixtures.join(format!("articles-{codec}.parquet"));
        let got: Vec<(String, Option<String>)> = import_ok(&input, &dir.path().join(codec), &[])
            .into_iter()
            .map(|s| (s.text, s.source_id))
            .collect();
        assert_eq!(got.len(), 3, "{codec}: {got:?}");
        match &texts {
            None => texts = Some(got),
            Some(first) => assert_eq!(&got, first, "{codec}"),
        }
    }
}

#[test]
fn rss_dates_and_unix_milliseconds_are_read_and_implausible_dates_named_by_row() {
    let dir = scratch();
    // RSS's pubDate (RFC 2822), Unix milliseconds and seconds, a date-time without seconds: all
    // 2024-09-02 (day 19968 since 1970).
    let input = dir.path().join("feed.csv");
    let body = "The river rose above the old levee and the lower town was evacuated overnight.";
    std::fs::write(
        &input,
        format!(
            "key_event,id,published,text\n\
             flood,1,\"Mon, 02 Sep 2024 15:45:00 GMT\",{body} One.\n\
             flood,2,1725291900000,{body} Two.\n\
             flood,3,1725291900,{body} Three.\n\
             flood,4,2024-09-02 15:45,{body} Four.\n"
        ),
    )
    .unwrap();
    let segs = import_ok(&input, &dir.path().join("corpus"), &[]);
    assert_eq!(segs.len(), 4, "{segs:?}");
    assert!(segs.iter().all(|s| s.doc_date == Some(19968)), "{segs:?}");
    // Milliseconds of another year would have been year 56157 read as seconds: now 2024-03-09.
    // A date before 1900 is refused, naming its row and column.
    std::fs::write(
        &input,
        format!(
            "key_event,id,published,text\nflood,1,1710000000000,{body}\nflood,2,1850-01-01,{body} Old.\n"
        ),
    )
    .unwrap();
    let result = import(&input, &dir.path().join("old"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert!(
        err.contains("1850-01-01") && err.contains("plausible") && err.contains("published"),
        "{err}"
    );
    assert!(!err.contains("56157"), "{err}");
    // Any other form with --date-format (strftime): European day-first dates with a time, and
    // a written-out month; a row in neither form names the format and the flag.
    std::fs::write(
        &input,
        format!(
            "key_event,id,published,text\n\
             flood,1,02/09/2024 15:45,{body} One.\n\
             flood,2,2024-09-02,{body} Two.\n"
        ),
    )
    .unwrap();
    let result = import(&input, &dir.path().join("eu-refused"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success()
            && err.contains("02/09/2024 15:45")
            && err.contains("--date-format"),
        "{err}"
    );
    // A format chrono cannot read is refused before any row, naming it (issue 64: `%Q` failed
    // every row, one at a time), and nothing is written.
    let result = import(
        &input,
        &dir.path().join("q"),
        &["--date-format", "%d/%Q/%Y"],
    );
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success()
            && err.contains("--date-format `%d/%Q/%Y` is not a date format")
            && !err.contains("02/09/2024"),
        "{err}"
    );
    assert!(!dir.path().join("q").exists());
    let segs = import_ok(
        &input,
        &dir.path().join("eu"),
        &["--date-format", "%d/%m/%Y %H:%M"],
    );
    assert_eq!(segs.len(), 2, "{segs:?}");
    assert!(segs.iter().all(|s| s.doc_date == Some(19968)), "{segs:?}");
    std::fs::write(
        &input,
        format!("key_event,id,published,text\nflood,1,\"September 2, 2024\",{body}\nflood,2,yesterday,{body} Two.\n"),
    )
    .unwrap();
    let result = import(
        &input,
        &dir.path().join("words"),
        &["--date-format", "%B %d, %Y"],
    );
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success()
            && err.contains("`yesterday` is not a date (expected `%B %d, %Y` (--date-format), or"),
        "{err}"
    );
    let segs = import_ok(
        &input,
        &dir.path().join("words-skip"),
        &["--date-format", "%B %d, %Y", "--on-error", "skip"],
    );
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].doc_date, Some(19968));
}

/// Control characters of a scraped feed never reach the terminal (issue 47 item 8): in a key
/// event, id or theme the row is refused, the character named by code, not printed; in a title
/// or a date they are removed or escaped.
#[test]
fn control_characters_are_named_never_printed() {
    let dir = scratch();
    let input = dir.path().join("feed.csv");
    let body = "The river rose above the old levee and the lower town was evacuated overnight.";
    std::fs::write(
        &input,
        format!(
            "key_event,id,published,title,text\n\
             flood\u{1b}[31m,1,2024-09-02,t,{body}\n\
             flood,2\u{7},2024-09-02,t,{body} Two.\n\
             flood,3,2024\u{1b}[2J,t,{body} Three.\n\
             flood,4,2024-09-02,Levee \u{1b}[5mbreach\u{0},{body} Four.\n"
        ),
    )
    .unwrap();
    let result = import(&input, &dir.path().join("corpus"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(
        err.contains("key_event") && err.contains("U+001B, character 6"),
        "{err}"
    );
    assert!(err.contains("U+0007"), "{err}");
    assert!(err.contains("2024\\u{1b}[2J"), "{err}");
    // Skipped, the good row stays, its title without the controls.
    let result = import(&input, &dir.path().join("skip"), &["--on-error", "skip"]);
    let out = String::from_utf8_lossy(&result.stdout);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{err}");
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{out}{err}"
    );
    let segs = segments(&dir.path().join("skip"));
    assert!(!segs.is_empty() && segs.iter().all(|s| s.source_id.as_deref() == Some("4")));
    assert_eq!(segs[0].title.as_deref(), Some("Levee [5mbreach"));
}

#[test]
fn columns_by_flag_unix_seconds_and_typed_errors() {
    let dir = scratch();
    // Other column names, an integer id and Unix seconds, in CSV.
    let input = dir.path().join("feed.csv");
    std::fs::write(
        &input,
        "event,url,ts,body\nquake,101,86400,The ground shook for a full minute in the capital city.\n",
    )
    .unwrap();
    let out = dir.path().join("corpus");
    let args = [
        "--key-event-column",
        "event",
        "--id-column",
        "url",
        "--published-column",
        "ts",
        "--text-column",
        "body",
    ];
    let result = import(&input, &out, &args);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let segs = segments(&out);
    assert_eq!(
        (
            segs[0].key_event.as_str(),
            segs[0].source_id.as_deref(),
            segs[0].doc_date
        ),
        ("quake", Some("101"), Some(1))
    );
    // Without the flags the key event column is missing: named, with the flag to use.
    let result = import(&input, &dir.path().join("x"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(err.contains("no column `key_event` (name it with --key-event-column or key_event = … in [import.columns])"), "{err}");

    // A Parquet text column of the wrong type.
    let schema = Arc::new(Schema::new(vec![
        Field::new("key_event", DataType::Utf8, false),
        Field::new("id", DataType::Utf8, false),
        Field::new("text", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["e"])),
            Arc::new(StringArray::from(vec!["1"])),
            Arc::new(Int64Array::from(vec![7])),
        ],
    )
    .unwrap();
    let path = dir.path().join("typed.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let result = import(&path, &dir.path().join("y"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        err.contains("typed.parquet: column `text` is Int64, expected a string"),
        "{err}"
    );
}

#[test]
fn the_example_job_documents_the_default_import_settings() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("jobs/example.toml");
    let job = epimine::job::Job::from_file(&path).unwrap();
    assert_eq!(
        job.import,
        epimine::import::articles::ImportConfig::default()
    );
}

#[test]
fn a_prefix_on_s3_gives_the_same_corpus_as_a_local_file() {
    let Some(root) = s3_root("articles") else {
        return;
    };
    let dir = scratch();
    let rows = articles();
    std::fs::write(dir.path().join("all.jsonl"), jsonl(&rows)).unwrap();
    let local = dir.path().join("local");
    let result = import(&dir.path().join("all.jsonl"), &local, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    // The rows split over two objects under a prefix, plus an object the prefix leaves out.
    let feeds = Location::parse(&format!("{root}/feeds"), true).unwrap();
    block_on(async {
        feeds
            .put("day-2.jsonl", jsonl(&rows[..3]).into_bytes().into())
            .await
            .unwrap();
        feeds
            .put("day-1.jsonl", jsonl(&rows[3..]).into_bytes().into())
            .await
            .unwrap();
        feeds
            .put("other.csv", b"not,an\ninput,here\n".to_vec().into())
            .await
            .unwrap();
    });
    let out = dir.path().join("from-s3");
    let spec = format!("{root}/feeds/day-");
    let result = epimine(&["import", "--articles", &spec, "--out", s(&out)]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{}{stdout}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(stdout.contains("5 rows in 2 file(s)"), "{stdout}");
    assert!(
        std::fs::read(out.join("segments.parquet")).unwrap()
            == std::fs::read(local.join("segments.parquet")).unwrap()
    );
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

#[test]
fn an_unmatched_csv_quote_is_a_bad_row_not_the_rest_of_the_file() {
    let dir = scratch();
    for (name, data, reason) in [
        (
            "never-closed.csv",
            csv_with_an_open_quote(0, None),
            "line 2, column `text`: a quote opens this field and is never closed (it ran on over 1000 lines",
        ),
        (
            "closed-by-another.csv",
            csv_with_an_open_quote(3, Some(100)),
            "line 5, column `text`: an unmatched quote: text follows the quote that closes this field (it ran on over 97 lines",
        ),
    ] {
        let input = dir.path().join(name);
        std::fs::write(&input, data).unwrap();
        // --on-error fail: the import fails, naming the line and column, and writes nothing.
        let out = dir.path().join(format!("{name}-fail"));
        let result = import(&input, &out, &[]);
        let err = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("1 bad row(s)") && err.contains(&format!("{name}: {reason}")),
            "{name}: {err}"
        );
        assert!(files_in(&out).is_empty(), "{name}: {:?}", files_in(&out));
        // --on-error skip: the row is rejected, every other row imported.
        let out = dir.path().join(format!("{name}-skip"));
        let result = import(&input, &out, &["--on-error", "skip"]);
        let stdout = String::from_utf8_lossy(&result.stdout);
        assert!(
            result.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert!(
            stdout.contains("1000 rows in 1 file(s): 1 events, 999 articles"),
            "{name}: {stdout}"
        );
        assert!(stdout.contains("1 rows rejected"), "{name}: {stdout}");
        let articles: std::collections::BTreeSet<String> = segments(&out)
            .into_iter()
            .map(|s| s.source_id.unwrap())
            .collect();
        assert_eq!(articles.len(), 999, "{name}");
        let rejected: Vec<Rejected> = block_on(
            Location::parse(s(&out), false)
                .unwrap()
                .read_table::<Rejected>(),
        )
        .unwrap();
        assert_eq!(rejected.len(), 1, "{name}: {rejected:?}");
        assert_eq!(rejected[0].column.as_deref(), Some("text"), "{name}");
        assert!(!articles.contains(if name.starts_with("never") { "0" } else { "3" }));
    }
    // With \r\n line ends, lines are counted as with \n (the reader puts a record's start at
    // the line break before it): the unmatched quote of row 3, and a bad date on line 8.
    let crlf = csv_with_an_open_quote(3, Some(100))
        .replace("flood,6,2021-01-01", "flood,6,soon")
        .replace('\n', "\r\n");
    let input = dir.path().join("crlf.csv");
    std::fs::write(&input, crlf).unwrap();
    let result = import(&input, &dir.path().join("crlf"), &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        err.contains("2 bad row(s)")
            && err.contains("crlf.csv: line 5, column `text`: an unmatched quote")
            && err.contains("crlf.csv: line 8, column `published`"),
        "{err}"
    );
    // Quotes used well (commas and line breaks inside, doubled quotes) are no fault.
    let input = dir.path().join("good.csv");
    std::fs::write(
        &input,
        "key_event,id,title,text\nflood,1,\"A, title\",\"First line of the first article.\nA \"\"quoted\"\" second line, with a comma.\"\nflood,2,Plain,A second article with no quotes at all in it.\n",
    )
    .unwrap();
    let segs = import_ok(&input, &dir.path().join("good"), &[]);
    assert!(segs
        .iter()
        .any(|s| s.text.contains("A \"quoted\" second line")));
    assert_eq!(segs.iter().filter(|s| s.seg_idx == 0).count(), 2);
}

#[test]
fn an_import_writes_a_whole_corpus_and_leaves_no_stale_labels() {
    let dir = scratch();
    // A dataset import first: segments, labels and gold episodes.
    let dataset = dir.path().join("dataset/theme/flood");
    std::fs::create_dir_all(&dataset).unwrap();
    std::fs::write(
        dataset.join("segments.txt"),
        "The river rose over the town.\nWater filled the streets.\n\nShelters opened in the schools.\n",
    )
    .unwrap();
    std::fs::write(
        dataset.join("groundtruth.tsv"),
        "1\tThe river rose over the town.\n2\tShelters opened in the schools.\n",
    )
    .unwrap();
    std::fs::write(
        dataset.join("episodes.tsv"),
        "1\tthe river | rose | the town | - | -\n2\tshelters | opened | schools | - | -\n",
    )
    .unwrap();
    let corpus = dir.path().join("corpus");
    let result = epimine(&[
        "import",
        s(&dir.path().join("dataset")),
        "--out",
        s(&corpus),
    ]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(corpus.join("labels.parquet").exists());
    // Articles into the same folder: its labels and gold episodes were another corpus's.
    let input = dir.path().join("feed.jsonl");
    std::fs::write(&input, jsonl(&articles())).unwrap();
    let result = import(&input, &corpus, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    // (boilerplate.parquet: what the import dropped as boilerplate, written by every import;
    // paragraphs.parquet and copies.parquet: its articles' paragraphs for the appends, and
    // those made only of copies; import.toml: the settings it read with, for its appends;
    // batches.json: its segments files with their sha256.)
    assert_eq!(
        files_in(&corpus),
        vec![
            "batches.json".to_string(),
            "boilerplate.parquet".to_string(),
            "copies.parquet".to_string(),
            "import.toml".to_string(),
            "paragraphs.parquet".to_string(),
            "segments.parquet".to_string()
        ]
    );
    // A folder with another segments file is refused before anything is read or written.
    std::fs::copy(
        corpus.join("segments.parquet"),
        corpus.join("segments-old.parquet"),
    )
    .unwrap();
    let before = std::fs::read(corpus.join("segments.parquet")).unwrap();
    let result = import(&input, &corpus, &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(
        err.contains("segments-old.parquet") && err.contains("would join"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(corpus.join("segments.parquet")).unwrap(),
        before
    );
}

/// A missing file, or a prefix of file names, is looked up among the files of its folder only:
/// the folders below are never walked (a listing of `/` walked the whole file system, and a
/// folder with a link back to itself failed on the loop instead of saying what was missing).
#[test]
fn a_missing_file_is_named_without_walking_the_folders_below() {
    let dir = scratch();
    let feed = dir.path().join("feed");
    std::fs::create_dir_all(feed.join("archive/2024")).unwrap();
    std::fs::write(feed.join("archive/2024/old.jsonl"), jsonl(&articles())).unwrap();
    std::fs::write(feed.join("day-1.jsonl"), jsonl(&articles())).unwrap();
    // A link back to the folder itself: walking below it never ends.
    std::os::unix::fs::symlink(&feed, feed.join("archive/loop")).unwrap();
    let out = dir.path().join("corpus");
    let result = import(&feed.join("nope.jsonl"), &out, &[]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{err}");
    assert!(err.contains("nope.jsonl: no file found"), "{err}");
    assert!(!out.exists());
    // A prefix takes the files of the folder that start with it, not those below.
    let result = import(&feed.join("day-"), &out, &[]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(!segments(&out).is_empty());
}

#[test]
fn wire_copy_is_kept_once_and_site_furniture_dropped() {
    // One story of 60 articles as scrapers hand it over: every article opens with one of three
    // desks' bylines and ends with one of seven sites' "Read more"; 40 carry two agency
    // paragraphs after a paragraph of their own, 20 are the agency's copy alone. Before, every shared paragraph was boilerplate:
    // the 20 were lost and the 40 kept only their own paragraph.
    let wire1 = "Floodwater breached the eastern levee before dawn on Tuesday, forcing hundreds \
                 of families from their homes in the low-lying districts of the city.";
    let wire2 = "Emergency crews worked through the night to plug the breach with sandbags \
                 while helicopters lifted stranded residents from the rooftops of flooded homes.";
    let mut lines = String::new();
    for i in 0..60 {
        let own = if i < 40 {
            format!(
                "Reporter {i} writes that street number {i} of the old quarter saw water at \
                 the doorsteps by noon, and that neighbours carried furniture upstairs.\n"
            )
        } else {
            String::new()
        };
        let text = format!(
            "By the desk {}\n{own}{wire1}\n{wire2}\nRead more at news{}",
            i % 3,
            i % 7
        );
        let row = serde_json::json!({
            "key_event": "levee_breach",
            "id": format!("https://news{}.example/{i}", i % 7),
            "published": format!("2024-09-{:02}", 1 + i % 20),
            "title": format!("Levee {i}"),
            "text": text,
        });
        lines.push_str(&format!("{row}\n"));
    }
    let dir = scratch();
    let input = dir.path().join("feed.jsonl");
    std::fs::write(&input, lines).unwrap();
    let out = dir.path().join("corpus");
    let result = import(&input, &out, &[]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(result.status.success(), "{stderr}");
    let segs = segments(&out);
    // Each agency paragraph once (in the first article in publication order), each article's
    // own paragraph kept, no furniture.
    let levee = segs
        .iter()
        .filter(|s| s.text.contains("eastern levee"))
        .count();
    assert_eq!(levee, 1, "{segs:?}");
    let sandbags = segs.iter().filter(|s| s.text.contains("sandbags")).count();
    assert_eq!(sandbags, 1);
    let own = segs
        .iter()
        .filter(|s| s.text.contains("old quarter"))
        .count();
    assert_eq!(own, 40);
    assert!(segs
        .iter()
        .all(|s| !s.text.contains("By the desk") && !s.text.contains("Read more")));
    // The pure copies (the first holder of the agency's paragraphs, in publication order, is
    // an article with its own): said as copies, and a warning since they are over a quarter.
    let articles: BTreeSet<u32> = segs.iter().map(|s| s.doc_id).collect();
    assert_eq!(articles.len(), 40);
    assert!(
        stdout.contains("118 copies of shared paragraphs dropped (2 distinct, each kept once)")
            && stdout
                .contains("20 articles empty after both (20 of them copies of earlier articles, 20 kept as carriers of the copy in copies.parquet)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("key event `levee_breach`: 20 of 60 articles have nothing left"),
        "{stderr}"
    );
    let table: Vec<epimine::tables::Boilerplate> =
        block_on(Location::parse(s(&out), false).unwrap().read_table()).unwrap();
    let copies: Vec<u32> = table
        .iter()
        .filter(|b| b.kind == "copy")
        .map(|b| b.dropped)
        .collect();
    assert_eq!(copies, [59, 59], "{table:?}");
    let furniture: u32 = table
        .iter()
        .filter(|b| b.kind == "furniture")
        .map(|b| b.dropped)
        .sum();
    assert_eq!(furniture, 120, "{table:?}");
}

/// Issue 64's minor items: a folder of feeds holding `feed1 copy%20.csv` (the store lists it
/// percent-encoded) imports like any file; ESC and BEL in a CSV header and in a file's name are
/// printed as escapes, never raw.
#[test]
fn odd_file_names_and_headers_are_read_and_printed_safely() {
    let dir = scratch();
    let feeds = dir.path().join("feeds");
    std::fs::create_dir_all(&feeds).unwrap();
    std::fs::write(feeds.join("feed1 copy%20.csv"), csv_text(&articles())).unwrap();
    let from_folder = import_ok(&feeds, &dir.path().join("corpus"), &[]);
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, csv_text(&articles())).unwrap();
    assert_eq!(
        from_folder,
        import_ok(&plain, &dir.path().join("plain"), &[])
    );

    let odd = dir.path().join("feed\u{1b}[31m\u{7}.csv");
    let text = csv_text(&articles()).replacen("text", "te\u{1b}[2Jxt\u{7}", 1);
    std::fs::write(&odd, text).unwrap();
    let result = import(&odd, &dir.path().join("odd"), &[]);
    let (out, err) = (
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr),
    );
    assert!(!result.status.success(), "{out}{err}");
    assert!(
        !out.contains('\u{1b}') && !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "{out:?}{err:?}"
    );
    assert!(err.contains("\\x1b"), "{err}");
}

/// Issue 64, item 8: a base64 blob in the text column is not prose — a bad row named with why
/// (set aside with `--on-error skip`, into `rejected.parquet`) — and an article longer than
/// `import.max_article_chars` is cut there with a warning naming it, so neither costs the run
/// thousands of segments.
#[test]
fn blobs_are_set_aside_and_oversized_articles_cut() {
    let dir = scratch();
    let mut rows = articles();
    let blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLz0x".repeat(40_000);
    rows.push(("flood", "blob", "2021-07-03", "Attachment", blob));
    let sentence = "Volunteers filled sandbags along the river road as the water kept rising. ";
    rows.push((
        "flood",
        "huge",
        "2021-07-03",
        "Live blog",
        sentence.repeat(20_000),
    ));
    let input = dir.path().join("feed.jsonl");
    std::fs::write(&input, jsonl(&rows)).unwrap();
    let failed = import(&input, &dir.path().join("failed"), &[]);
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "{err}");
    assert!(
        err.contains("line 6") && err.contains("not prose") && err.contains("base64"),
        "{err}"
    );
    let out = dir.path().join("skip");
    let result = import(&input, &out, &["--on-error", "skip"]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{err}");
    assert!(
        err.contains("line 7 (id huge): its text, 1480000 characters, is cut to its first")
            && err.contains("import.max_article_chars"),
        "{err}"
    );
    let rejected: Vec<epimine::tables::Rejected> = block_on(
        Location::parse(s(&out), false)
            .unwrap()
            .read_table::<epimine::tables::Rejected>(),
    )
    .unwrap();
    assert_eq!(rejected.len(), 1);
    assert!(
        rejected[0].reason.contains("not prose"),
        "{:?}",
        rejected[0].reason
    );
    let segs = segments(&out);
    let huge: usize = segs
        .iter()
        .filter(|s| s.source_id.as_deref() == Some("huge"))
        .map(|s| s.text.len())
        .sum();
    assert!(huge > 900_000 && huge <= 1_000_000, "{huge}");
    assert!(!segs.iter().any(|s| s.source_id.as_deref() == Some("blob")));
}

/// Issue 65, item 3: a date's own offset decides its day — the evening story (22:53 at -04:00,
/// 02:53 UTC the next day) stays on its evening — and a date without one is read as UTC.
#[test]
fn an_evening_story_stays_on_its_evening() {
    let dir = scratch();
    let text = "The river rose above the old levee and the lower town was evacuated overnight.";
    let rows = vec![
        (
            "flood",
            "evening",
            "Mon, 13 Oct 2025 22:53:10 -0400",
            "Evening",
            text.to_string(),
        ),
        (
            "flood",
            "iso",
            "2025-10-13T23:10:00-04:00",
            "Late",
            format!("{text} Later."),
        ),
        (
            "flood",
            "utc",
            "2025-10-14T02:53:10Z",
            "Night",
            format!("{text} At night."),
        ),
        (
            "flood",
            "naive",
            "2025-10-13 22:53",
            "Plain",
            format!("{text} Plain."),
        ),
    ];
    let input = dir.path().join("feed.csv");
    std::fs::write(&input, csv_text(&rows)).unwrap();
    let segs = import_ok(&input, &dir.path().join("corpus"), &[]);
    let day = |y, m, d| {
        (chrono::NaiveDate::from_ymd_opt(y, m, d).unwrap()
            - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
        .num_days() as i32
    };
    let of = |id: &str| {
        segs.iter()
            .find(|s| s.source_id.as_deref() == Some(id))
            .and_then(|s| s.doc_date)
    };
    assert_eq!(of("evening"), Some(day(2025, 10, 13)));
    assert_eq!(of("iso"), Some(day(2025, 10, 13)));
    assert_eq!(of("utc"), Some(day(2025, 10, 14)));
    assert_eq!(of("naive"), Some(day(2025, 10, 13)));
    // The newsroom's zone (--timezone): the UTC instant falls on New York's evening too; a name
    // that is no IANA zone is refused before any row, naming it, and nothing is written.
    let corpus = dir.path().join("ny");
    let segs = import_ok(&input, &corpus, &["--timezone", "America/New_York"]);
    let of = |id: &str| {
        segs.iter()
            .find(|s| s.source_id.as_deref() == Some(id))
            .and_then(|s| s.doc_date)
    };
    assert_eq!(of("utc"), Some(day(2025, 10, 13)));
    assert_eq!(of("evening"), Some(day(2025, 10, 13)));
    assert_eq!(of("naive"), Some(day(2025, 10, 13)));
    // The corpus remembers it for its appends.
    let saved = std::fs::read_to_string(corpus.join("import.toml")).unwrap();
    assert!(saved.contains("timezone = \"America/New_York\""), "{saved}");
    let bad = import(
        &input,
        &dir.path().join("mars"),
        &["--timezone", "Mars/Olympus"],
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--timezone `Mars/Olympus` is not an IANA time zone"),
        "{err}"
    );
    assert!(!dir.path().join("mars").exists());
}

/// Issue 64's minor item: `--date-format %m/%d/%Y` on day-first dates is refused, even with
/// `--on-error skip` — the dates with a day up to 12 would be read with the day and the month
/// swapped — naming a date that reads the other way round.
#[test]
fn day_first_dates_read_month_first_are_refused() {
    let dir = scratch();
    let text = "The river rose above the old levee and the lower town was evacuated overnight.";
    let rows = vec![
        ("flood", "a", "05/10/2025", "A", text.to_string()),
        ("flood", "b", "13/10/2025", "B", format!("{text} Two.")),
        ("flood", "c", "14/10/2025", "C", format!("{text} Three.")),
    ];
    let input = dir.path().join("feed.csv");
    std::fs::write(&input, csv_text(&rows)).unwrap();
    for extra in [
        &["--date-format", "%m/%d/%Y"][..],
        &["--date-format", "%m/%d/%Y", "--on-error", "skip"],
    ] {
        let result = import(&input, &dir.path().join("corpus"), extra);
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{extra:?}: {err}");
        assert!(
            err.contains("2 date(s) are not dates with --date-format but are with the day and the month swapped")
                && err.contains("`13/10/2025`")
                && err.contains("`%d/%m/%Y`"),
            "{err}"
        );
    }
    let segs = import_ok(
        &input,
        &dir.path().join("right"),
        &["--date-format", "%d/%m/%Y"],
    );
    assert_eq!(
        segs.iter().filter(|s| s.doc_date.is_some()).count(),
        segs.len()
    );
}
