//! A corpus fed in small batches cuts as one import of them all (issue 64 item 6): the site
//! furniture found over every batch is dropped from each batch from then on; and an article
//! made only of copies of earlier articles' paragraphs is an article of the episodes holding
//! them (issue 65 item 5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use epimine::storage::Location;
use epimine::tables::{Assignment, Segment};

use crate::util::{block_on, epimine_ok, s, scratch, tiny_model, COLUMN_FLAGS};

/// The furniture lines of `examples/articles.csv`.
const FURNITURE: [&str; 2] = [
    "Reporting by the Valley Courier",
    "Read more: our live page",
];

fn import(batch: &Path, corpus: &Path, append: bool) -> String {
    let mut args = vec!["import", "--articles", s(batch), "--out", s(corpus)];
    args.extend(COLUMN_FLAGS);
    if append {
        args.push("--append");
    }
    epimine_ok(&args)
}

/// The segments of `corpus`, by article id.
fn by_article(corpus: &Path) -> BTreeMap<String, Vec<String>> {
    let loc = Location::parse(s(corpus), false).unwrap();
    let segments: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc)).unwrap();
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for g in segments {
        by.entry(g.source_id.unwrap()).or_default().push(g.text);
    }
    by
}

#[test]
fn hourly_batches_of_two_articles_drop_the_furniture_one_import_drops() {
    let dir = scratch();
    // The first event's first 24 articles with both lines, as one file and as twelve batches of
    // two.
    let (header, rows) = example_rows(150);
    let rows: Vec<csv::StringRecord> = rows
        .into_iter()
        .filter(|r| FURNITURE.iter().all(|f| r[4].contains(f)))
        .take(24)
        .collect();
    assert_eq!(rows.len(), 24);
    let write =
        |name: &str, rows: &[csv::StringRecord]| write_csv(&dir.path().join(name), &header, rows);
    let whole = dir.path().join("whole");
    import(&write("all.csv", &rows), &whole, false);
    let fed = dir.path().join("fed");
    for (i, batch) in rows.chunks(2).enumerate() {
        let said = import(&write(&format!("hour{i}.csv"), batch), &fed, i > 0);
        // From the second batch on, the lines are found over the earlier batches' articles
        // and dropped from the batch's two (alone, two articles are under the bound of three).
        if i > 0 {
            assert!(
                said.contains("4 boilerplate lines dropped (2 distinct)"),
                "{said}"
            );
        }
    }
    // One import drops them all; so does every batch after the first, whose articles were cut
    // before the lines were furniture (their segments are never rewritten: their keys hold
    // episodes). The articles of the later batches are cut as one import cuts them.
    let (whole, fed) = (by_article(&whole), by_article(&fed));
    let furnished =
        |segs: &Vec<String>| segs.iter().any(|t| FURNITURE.iter().any(|f| t.contains(f)));
    assert!(whole.values().all(|segs| !furnished(segs)));
    let first: Vec<&str> = rows[..2].iter().map(|r| &r[1]).collect();
    for (id, segs) in &fed {
        if first.contains(&id.as_str()) {
            assert!(furnished(segs), "{id}: the first batch keeps its lines");
        } else {
            assert!(!furnished(segs), "{id}: {segs:?}");
            assert_eq!(segs, &whole[id], "{id}: not cut as one import cuts it");
        }
    }
    assert_eq!(fed.len(), 24);
    // A run over the batches: no episode holds a segment of the later batches with a line.
    let fed_dir = dir.path().join("fed");
    let out = dir.path().join("out");
    epimine_ok(&[
        "run",
        "--corpus",
        s(&fed_dir),
        "--out",
        s(&out),
        "--model",
        &tiny_model(),
        "--background",
        "corpus",
    ]);
    let assigned: Vec<Assignment> = crate::util::read_rows(&out);
    assert!(!assigned.is_empty());
    let loc = Location::parse(s(&fed_dir), false).unwrap();
    let segments: Vec<Segment> = block_on(epimine::corpus::read_segments(&loc)).unwrap();
    let at: BTreeMap<(u32, u32), &Segment> = segments
        .iter()
        .map(|g| ((g.doc_id, g.seg_idx), g))
        .collect();
    let furnished_later = assigned
        .iter()
        .map(|a| at[&(a.doc_id, a.seg_idx)])
        .filter(|g| !first.contains(&g.source_id.as_deref().unwrap()))
        .filter(|g| FURNITURE.iter().any(|f| g.text.contains(f)))
        .count();
    assert_eq!(furnished_later, 0);
}

/// `rows` under `header` as the CSV file `path`; returns it.
fn write_csv(path: &Path, header: &csv::StringRecord, rows: &[csv::StringRecord]) -> PathBuf {
    let mut w = csv::Writer::from_path(path).unwrap();
    w.write_record(header).unwrap();
    for r in rows {
        w.write_record(r).unwrap();
    }
    w.flush().unwrap();
    path.to_path_buf()
}

/// `n` articles of `riverside_flood_2024` from `examples/articles.csv` with the header.
fn example_rows(n: usize) -> (csv::StringRecord, Vec<csv::StringRecord>) {
    let example =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/articles.csv");
    let mut reader = csv::Reader::from_path(&example).unwrap();
    let header = reader.headers().unwrap().clone();
    let rows = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| r[0] == *"riverside_flood_2024")
        .take(n)
        .collect();
    (header, rows)
}

#[test]
fn outlets_that_carried_agency_copy_whole_are_articles_of_its_episodes() {
    let dir = scratch();
    let (header, rows) = example_rows(60);
    let wire = wire_copies(&rows);
    let write =
        |name: &str, rows: &[csv::StringRecord]| write_csv(&dir.path().join(name), &header, rows);
    let corpus = dir.path().join("corpus");
    let said = import(&write("day1.csv", &rows), &corpus, false);
    assert!(said.contains("(0 articles made only of copies"), "{said}");
    // The wire articles come the next day, as an append: the paragraphs they copy are in the
    // first batch.
    let said = import(&write("day2.csv", &wire), &corpus, true);
    assert!(said.contains("(12 articles made only of copies"), "{said}");
    assert_the_copies_carry_their_paragraphs(&corpus, &rows);
    // Run: each outlet's article is listed with the episodes holding what it carries, as a
    // copy of its source, beside that source, and counted in the episode's articles.
    let out = dir.path().join("out");
    epimine_ok(&[
        "run",
        "--corpus",
        s(&corpus),
        "--out",
        s(&out),
        "--model",
        &tiny_model(),
        "--background",
        "corpus",
    ]);
    assert_the_copies_are_articles_of_the_episodes(&out);
    // The page says which episodes outlets carried whole.
    let page = dir.path().join("report.html");
    epimine_ok(&[
        "report",
        "--run",
        s(&out),
        "--corpus",
        s(&corpus),
        "--out",
        s(&page),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("carried whole by"), "no carriers on the page");
}

/// The second paragraph of an article (of more than 12 words a line).
fn paragraph(r: &csv::StringRecord) -> String {
    r[4].lines()
        .map(str::trim)
        .filter(|l| l.split_whitespace().count() > 12)
        .nth(1)
        .unwrap()
        .to_string()
}

/// Two outlets carry the second paragraph of each of articles 0–5 whole under their own
/// byline line: with the article holding it first, three articles hold it, so it is copy,
/// kept in the first, and each outlet's article is made only of copies.
fn wire_copies(rows: &[csv::StringRecord]) -> Vec<csv::StringRecord> {
    let mut wire = Vec::new();
    for (k, r) in rows.iter().take(6).enumerate() {
        for outlet in ["Daily Ledger", "Morning Post"] {
            let mut w = r.clone();
            let fields: Vec<String> = vec![
                r[0].to_string(),
                format!("https://{}.example/wire-{k}", outlet.replace(' ', "-")),
                r[2].to_string(),
                format!("{outlet}: {}", &r[3]),
                format!("{}\n\nBy {outlet} wire desk", paragraph(r)),
            ];
            w.clear();
            for f in &fields {
                w.push_field(f);
            }
            wire.push(w);
        }
    }
    wire
}

/// The append recorded 12 articles of `corpus` as copies, each of its paragraph of `rows`.
fn assert_the_copies_carry_their_paragraphs(corpus: &Path, rows: &[csv::StringRecord]) {
    let copies: Vec<epimine::tables::CopyArticle> = {
        let loc = Location::parse(s(corpus), false).unwrap();
        let batches = block_on(loc.read_parquet(
            "copies-000002.parquet",
            &<epimine::tables::CopyArticle as epimine::tables::Table>::schema(),
        ))
        .unwrap();
        <epimine::tables::CopyArticle as epimine::tables::Table>::from_batches(&batches).unwrap()
    };
    assert_eq!(copies.len(), 12);
    let segments = block_on(epimine::corpus::read_segments(
        &Location::parse(s(corpus), false).unwrap(),
    ))
    .unwrap();
    let text = |doc: u32, seg: u32| {
        segments
            .iter()
            .find(|g| g.doc_id == doc && g.seg_idx == seg)
            .map(|g| g.text.clone())
            .unwrap()
    };
    let max_doc = segments.iter().map(|g| g.doc_id).max().unwrap();
    for c in &copies {
        // Each copy has a doc_id of its own after the corpus's, and the segments it carries
        // are its paragraph, in the article holding it first.
        assert!(c.doc_id > max_doc);
        let carried: String = c.carried.iter().map(|&g| text(c.copy_of, g)).collect();
        let source = c.source_id.as_deref().unwrap();
        let k: usize = source.rsplit('-').next().unwrap().parse().unwrap();
        let first_words: String = paragraph(&rows[k])
            .split_whitespace()
            .take(8)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(carried.contains(&first_words), "{c:?}: {carried}");
    }
}

/// In the run `out`, the outlets' articles are listed with the episodes holding what they
/// carry, as copies of their sources, beside them, and counted in the episodes' articles.
fn assert_the_copies_are_articles_of_the_episodes(out: &Path) {
    let articles: Vec<epimine::tables::EpisodeArticle> = crate::util::read_rows(out);
    // Every row has its article's instant beside its day (issue 65 item 3).
    for r in &articles {
        let at = r.published_at.expect("an instant");
        let day = r.published.expect("a day");
        assert!(
            (at.div_euclid(86_400_000) - i64::from(day)).abs() <= 1,
            "{r:?}"
        );
    }
    let copied: Vec<_> = articles.iter().filter(|r| r.copy_of.is_some()).collect();
    assert!(!copied.is_empty(), "no copy among the episodes' articles");
    for r in &copied {
        assert_eq!(r.article_segments, 0);
        assert!(
            articles.iter().any(|o| o.episode_id == r.episode_id
                && o.trial == r.trial
                && Some(o.doc_id) == r.copy_of
                && o.copy_of.is_none()),
            "{r:?}: its source is not in the episode"
        );
        assert!(r.source_id.as_deref().unwrap().contains("wire-"));
    }
    let episodes: Vec<epimine::tables::Episode> = crate::util::read_rows(out);
    for e in &episodes {
        let listed = articles
            .iter()
            .filter(|r| r.trial == e.trial && r.episode_id == e.episode_id)
            .count();
        assert_eq!(e.n_articles as usize, listed, "{}", e.title);
    }
}
