//! Unit tests of `segment`.

use super::*;

#[test]
fn paragraphs_sentences_merge_and_boilerplate() {
    let config = SegmentConfig {
        target_chars: 60,
        max_chars: 80,
        min_chars: 20,
        boilerplate_min_articles: 2,
        ..SegmentConfig::default()
    };
    // A short paragraph stays whole; a long one is packed at sentence ends; a fragment joins
    // its neighbour.
    let long = "The river rose overnight. Residents fled to the hills. \
                Officials opened three shelters. Mr. Smith said more rain is coming.";
    let text = format!("Flood hits the town of Riverside today.\n\n{long}\nOK.\n");
    let paras = paragraphs(&text);
    assert_eq!(paras.len(), 3);
    let segs = cut(&paras, &config);
    assert_eq!(segs[0], "Flood hits the town of Riverside today.");
    assert!(segs.iter().all(|s| s.chars().count() >= 20), "{segs:?}");
    assert!(segs[1].starts_with("The river rose overnight."), "{segs:?}");
    // Every word kept, in order.
    let joined = segs.join(" ");
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(&joined), words(&text));
    // Boilerplate: a line in two articles goes, and is counted.
    let a = "Photo: AP\nThe first article tells of the flood in the valley.";
    let b = "Photo: AP\nThe second article tells of the rescue in the hills.";
    let cut = cut_event(&[a, b], &config);
    assert_eq!((cut.boilerplate_dropped, cut.boilerplate_lines), (2, 1));
    assert_eq!(cut.boilerplate.len(), 1);
    assert_eq!(cut.boilerplate[0].1, Repeated::Furniture);
    assert_eq!(cut.boilerplate[0].2, 2);
    assert!(cut.segments.iter().flatten().all(|s| !s.contains("Photo")));
}

#[test]
fn site_furniture_goes_and_shared_news_copy_is_kept_once() {
    let config = SegmentConfig::default();
    // Three articles of one story: the same byline at the head and "Read more" at the
    // tail (furniture), a copyright paragraph of 16 words standing alone at the tail
    // (furniture), and two agency paragraphs in a row that all three carry (copy), each
    // with a paragraph of its own.
    let wire1 = "Floodwater breached the eastern levee before dawn, forcing hundreds of families \
                 from their homes in the low-lying districts.";
    let wire2 = "Emergency crews worked through the night to plug the breach with sandbags \
                 while helicopters lifted stranded residents from rooftops.";
    let rights = "Copyright 2024 The Agency. All rights reserved. This material may not be \
                  published or broadcast without permission.";
    let article =
        |own: &str| format!("By Staff Reporter\n{own}\n{wire1}\n{wire2}\nRead more\n{rights}");
    let texts = [
        article("Local officials in Riverside said the shelters were full by noon."),
        article("In Millbrook the school gym opened its doors to evacuees."),
        article("Farmers upstream counted the cost of the drowned harvest."),
    ];
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let cut = cut_event(&refs, &config);
    let all: Vec<&String> = cut.segments.iter().flatten().collect();
    for gone in ["By Staff Reporter", "Read more", "Copyright"] {
        assert!(all.iter().all(|s| !s.contains(gone)), "{gone}: {all:?}");
    }
    // Each agency paragraph once, in the first article; every article keeps its own.
    for wire in [wire1, wire2] {
        let wire = paragraphs(wire).remove(0);
        assert_eq!(all.iter().filter(|s| s.contains(&wire)).count(), 1);
        assert!(cut.segments[0].iter().any(|s| s.contains(&wire)));
    }
    assert!(cut.segments.iter().all(|a| !a.is_empty()));
    assert_eq!((cut.boilerplate_dropped, cut.boilerplate_lines), (9, 3));
    assert_eq!((cut.copies_dropped, cut.shared_paragraphs), (4, 2));
    assert_eq!(cut.copied_articles, 0);
    let kinds: Vec<(Repeated, usize)> = cut.boilerplate.iter().map(|b| (b.1, b.2)).collect();
    assert_eq!(kinds.iter().filter(|k| k.0 == Repeated::Copy).count(), 2);
    assert!(kinds.contains(&(Repeated::Copy, 2)));
    // An article made only of the agency's copy (and furniture) is a copy: nothing left,
    // and counted as such; a paragraph in two articles only, under the bound, stays in both.
    let only_wire = format!("By Staff Reporter\n{wire1}\n{wire2}\nRead more");
    let mut refs = refs.clone();
    refs.push(&only_wire);
    let cut = cut_event(&refs, &config);
    assert!(cut.segments[3].is_empty());
    assert_eq!(cut.copied_articles, 1);
    let two = cut_event(&[texts[0].as_str(), texts[1].as_str()], &config);
    assert_eq!((two.shared_paragraphs, two.boilerplate_lines), (0, 0));
    assert!(two
        .segments
        .iter()
        .all(|a| a.iter().any(|s| s.contains("levee"))));
    // Boilerplate off: every paragraph of every article stays.
    let off = SegmentConfig {
        boilerplate_min_articles: 0,
        ..config
    };
    let cut = cut_event(&refs, &off);
    assert_eq!(cut.copies_dropped + cut.boilerplate_dropped, 0);
    assert!(cut.segments[3].iter().any(|s| s.contains("levee")));
}

#[test]
fn one_paragraph_of_wire_copy_is_copy_not_a_notice() {
    // Three outlets carry the same 31-word agency paragraph, each under its own byline.
    let wire = "Floodwater breached the eastern levee before dawn on Tuesday, forcing \
                hundreds of families from their homes in the low-lying districts as \
                emergency crews worked through the night to plug the gap.";
    assert_eq!(wire.split_whitespace().count(), 31);
    let texts: Vec<String> = [
        "By Ann Lee, Riverside Post",
        "By Tom Ito, The Courier",
        "Staff, Valley News",
    ]
    .iter()
    .map(|byline| format!("{byline}\n{wire}"))
    .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let cut = cut_event(&refs, &SegmentConfig::default());
    let all: Vec<&String> = cut.segments.iter().flatten().collect();
    assert_eq!(
        all.iter().filter(|s| s.contains("eastern levee")).count(),
        1,
        "{all:?}"
    );
    assert_eq!((cut.copies_dropped, cut.shared_paragraphs), (2, 1));
    assert_eq!(cut.boilerplate_lines, 0);
}

#[test]
fn over_long_pieces_are_cut_and_control_characters_stripped() {
    // No sentence break in 5,000 words: pieces of at most MAX_SEGMENT_CHARS, cut at spaces.
    let text = vec!["word"; 5_000].join(" ");
    let cut = cut_event(&[&text], &SegmentConfig::default());
    let segs = &cut.segments[0];
    assert!(segs.len() > 1, "{}", segs.len());
    assert!(segs.iter().all(|s| s.chars().count() <= MAX_SEGMENT_CHARS));
    assert!(segs
        .iter()
        .all(|s| !s.starts_with(' ') && !s.ends_with(' ')));
    assert_eq!(segs.join(" "), text);
    assert_eq!(cut.long_cut, 1);
    // No space at all: cut at the limit itself.
    let mut out = Vec::new();
    assert!(cut_long("x".repeat(MAX_SEGMENT_CHARS * 2 + 1), &mut out));
    assert_eq!(
        out.iter().map(|s| s.len()).collect::<Vec<_>>(),
        [MAX_SEGMENT_CHARS, MAX_SEGMENT_CHARS, 1]
    );
    // C0 controls and DEL: gone and counted; tab and newline stay, and so do C1 codes
    // (the benchmark's Windows-1252 apostrophe, U+0092).
    let (clean, n) = strip_controls("a\u{0}b\u{1b}[1mc\u{7f}\td\ne\u{92}s");
    assert_eq!((clean.as_ref(), n), ("ab[1mc\td\ne\u{92}s", 3));
    let cut = cut_event(&["Bell\u{7} rings.\u{0}"], &SegmentConfig::default());
    assert_eq!(cut.segments[0], ["Bell rings."]);
    assert_eq!(cut.controls_stripped, 2);
}

#[test]
fn small_batches_drop_the_furniture_one_import_drops() {
    // Six articles with the same two furniture lines, fed as three batches of two: each
    // batch alone holds the lines twice (under the bound of three) and keeps them; over the
    // batches, as in one import of all six, they go, and the agency paragraph an earlier
    // batch carried is a copy.
    let config = SegmentConfig::default();
    let wire = "The regional agency reported that the water level at the main gauge had \
                passed the record set in the great flood of the previous century overnight.";
    let texts: Vec<String> = (0..6)
        .map(|i| {
            let own = format!(
                "Article {i} tells its own part of the flood in the valley, with the \
                 names of streets and people only this outlet reported on day {i}."
            );
            let wire = if i == 1 || i == 4 { wire } else { "" };
            format!("{own}\n{wire}\nReporting by Jane Doe\nRead more")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let whole = cut_event(&refs, &config);
    assert_eq!(whole.boilerplate_lines, 2);
    let mut earlier: Vec<Vec<Mark>> = Vec::new();
    let mut kept = Vec::new();
    let mut late = 0;
    for batch in refs.chunks(2) {
        let alone = cut_event(batch, &config);
        assert_eq!(
            alone.boilerplate_lines, 0,
            "a batch of two alone keeps them"
        );
        let cut = cut_event_after(batch, &config, &earlier);
        late += cut.late_furniture;
        earlier.extend(cut.marks.iter().cloned());
        kept.extend(cut.segments);
    }
    // The second batch finds them (the first batch's two articles and its own), and says
    // the first batch holds them; the third drops them too.
    assert_eq!(late, 2);
    for (i, segs) in kept.iter().enumerate().skip(2) {
        assert!(
            segs.iter()
                .all(|s| !s.contains("Reporting by") && !s.contains("Read more")),
            "article {i}: {segs:?}"
        );
    }
    assert_eq!(kept[2..], whole.segments[2..]);
    // Under the bound over every batch: nothing is furniture.
    let few = cut_event_after(&refs[..1], &config, &earlier[..1]);
    assert_eq!((few.boilerplate_lines, few.late_furniture), (0, 0));
}
