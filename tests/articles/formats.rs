//! Every format, row order, codec and store gives the same corpus.

use super::*;

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
