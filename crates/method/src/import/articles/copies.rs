//! What an import keeps of each article's paragraphs for the imports after it
//! (`paragraphs.parquet`, issue 64 item 6), and the articles made only of copies of earlier
//! articles' paragraphs (`copies.parquet`, issue 65 item 5): an outlet that carried agency copy
//! whole has no segment of its own, but it carried the story, and a run lists it with the
//! episodes of the segments it carries.

use std::collections::HashMap;

use super::check::Article;
use crate::import::segment::{EventCut, Mark};
use crate::tables::{ArticleParagraphs, CopyArticle};

/// A dropped paragraph's place in `seg_from` / `seg_to`.
const DROPPED: u32 = u32::MAX;

/// The marks of the event's articles of the earlier batches (for
/// [`crate::import::segment::cut_event_after`]).
pub(super) fn marks_of(earlier: &[ArticleParagraphs]) -> Vec<Vec<Mark>> {
    earlier
        .iter()
        .map(|r| {
            r.hashes
                .iter()
                .copied()
                .zip(r.words.iter().copied())
                .collect()
        })
        .collect()
}

/// Each article's `paragraphs` row: `doc_ids[a]` its `doc_id` (none for one left empty).
pub(super) fn paragraph_rows(
    key_event: &str,
    kept: &[Article],
    doc_ids: &[Option<u32>],
    cut: &EventCut,
) -> Vec<ArticleParagraphs> {
    cut.marks
        .iter()
        .zip(&cut.spans)
        .zip(doc_ids)
        .zip(kept)
        .map(|(((marks, spans), &doc_id), article)| ArticleParagraphs {
            key_event: key_event.to_string(),
            doc_id,
            hashes: marks.iter().map(|m| m.0).collect(),
            words: marks.iter().map(|m| m.1).collect(),
            seg_from: spans.iter().map(|s| s.map_or(DROPPED, |s| s.0)).collect(),
            seg_to: spans.iter().map(|s| s.map_or(DROPPED, |s| s.1)).collect(),
            published_at: instant(article),
        })
        .collect()
}

/// An article's publication instant in milliseconds (its `published`: Unix seconds).
fn instant(article: &Article) -> Option<i64> {
    article.published.and_then(|t| t.checked_mul(1000))
}

/// Where each paragraph kept in some article is: the first article keeping it (the earlier
/// batches' first, then this one's in order) and its segments there.
fn holders<'a>(
    earlier: &'a [ArticleParagraphs],
    here: &'a [ArticleParagraphs],
) -> HashMap<u64, (u32, u32, u32)> {
    let mut at = HashMap::new();
    for r in earlier.iter().chain(here) {
        let Some(doc) = r.doc_id else { continue };
        for ((&h, &from), &to) in r.hashes.iter().zip(&r.seg_from).zip(&r.seg_to) {
            if from != DROPPED {
                at.entry(h).or_insert((doc, from, to));
            }
        }
    }
    at
}

/// The articles of `kept` left with no segment that carried copies (`cut.carried`), each as a
/// `copies` row when the articles it copies are found: `doc_ids` gets the `doc_id` of each, from
/// `next_doc` on, in article order. `here`: this batch's `paragraphs` rows so far (the articles
/// with segments).
pub(super) fn copy_rows(
    key_event: &str,
    kept: &[Article],
    cut: &EventCut,
    earlier: &[ArticleParagraphs],
    here: &[ArticleParagraphs],
    doc_ids: &mut [Option<u32>],
    mut next_doc: u32,
) -> Vec<CopyArticle> {
    let at = holders(earlier, here);
    let mut rows = Vec::new();
    for (a, article) in kept.iter().enumerate() {
        if !cut.segments[a].is_empty() || cut.carried[a].is_empty() {
            continue;
        }
        // The articles it copies, with the segments holding what it carries of each.
        let mut of: HashMap<u32, Vec<u32>> = HashMap::new();
        for h in &cut.carried[a] {
            if let Some(&(doc, from, to)) = at.get(h) {
                of.entry(doc).or_default().extend(from..=to);
            }
        }
        let Some((copy_of, mut carried)) = of
            .into_iter()
            .max_by(|x, y| x.1.len().cmp(&y.1.len()).then(y.0.cmp(&x.0)))
        else {
            continue;
        };
        carried.sort_unstable();
        carried.dedup();
        doc_ids[a] = Some(next_doc);
        rows.push(CopyArticle {
            key_event: key_event.to_string(),
            doc_id: next_doc,
            source_id: Some(article.id.clone()),
            title: article.title.clone(),
            published: article.day,
            published_at: instant(article),
            copy_of,
            carried,
        });
        next_doc += 1;
    }
    rows
}

/// The `doc_id` of each article with segments, in order from `first_doc`; and the next free.
pub(super) fn doc_ids(cut: &EventCut, first_doc: u32) -> (Vec<Option<u32>>, u32) {
    let mut next = first_doc;
    let ids = cut
        .segments
        .iter()
        .map(|s| {
            (!s.is_empty()).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect();
    (ids, next)
}
