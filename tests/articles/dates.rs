//! Dates and columns: RSS, unix seconds and milliseconds, offsets, day-first refused.

use super::*;

/// RSS dates, Unix milliseconds and seconds and a date-time without seconds are read; a date
/// before 1900 is refused, naming its row and column.
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
}

/// Any other form with --date-format (strftime): European day-first dates with a time, and a
/// written-out month; a row in neither form names the format and the flag, and a format chrono
/// cannot read is refused before any row.
#[test]
fn other_date_forms_are_read_with_date_format_and_a_bad_format_is_refused_before_any_row() {
    let dir = scratch();
    let input = dir.path().join("feed.csv");
    let body = "The river rose above the old levee and the lower town was evacuated overnight.";
    // Without the flag, the day-first date is refused, naming it and the flag.
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
