//! Articles cut into segments like the benchmark's (one to a few sentences; a paragraph when
//! paragraphs are marked), and boilerplate lines dropped.
//!
//! The cut, per article:
//! 1. Paragraphs: the text split at line breaks (a blank line or a single newline); whitespace
//!    inside a paragraph collapsed to single spaces.
//! 2. Paragraphs found in several articles of the same key event ([`repeated`]) are of two
//!    kinds. Site furniture (bylines, "Read more", photo credits, copyright lines) is dropped
//!    from every article: a short line (at most `boilerplate_max_words` words) found in at
//!    least `boilerplate_min_articles` articles, or a longer one found that often that stands
//!    alone at the head or the tail of every article holding it (no long shared paragraph
//!    beside it, and some other long paragraph in the article: a copyright notice beside a
//!    story, not an agency story's lead, nor the one paragraph of wire copy an outlet carries
//!    under its own byline). A longer news paragraph
//!    found that often otherwise (syndicated agency copy, a statement quoted whole) is
//!    content: kept once, in the first article holding it, and dropped from the later ones as
//!    a copy. A paragraph in fewer articles stays in each.
//! 3. A paragraph longer than `max_chars` is split at sentence boundaries (Unicode UAX #29
//!    sentences, from the `unicode-segmentation` crate: well kept, already in the dependency
//!    tree through the tokenizers, and it needs no model as Punkt does), and its sentences are
//!    packed, in order, into pieces of about `target_chars` (a piece is closed when adding the
//!    next sentence would pass `target_chars` and it already holds one).
//! 4. A piece shorter than `min_chars` is merged with the next piece of the article (the last
//!    one with the previous), so that no segment is a stray fragment.
//! 5. A piece still longer than [`MAX_SEGMENT_CHARS`] (a "sentence" with no sentence break, e.g.
//!    a table or a run-on text) is cut at the last space before that length (or at the length
//!    itself where there is no space), and the import warns how many were cut.
//!
//! Before all this, C0 control characters (NUL, BEL, ESC, …) other than tab, line feed and
//! carriage return, and DEL, are removed ([`strip_controls`]); the import says how many.
//!
//! The development set's segments have a median of ~290 characters (10% under ~135, 90% under
//! ~540); the defaults aim there: pieces packed up to 360 characters have a median of ~290 on its
//! articles joined into one paragraph each (`scripts/quality/segment-quality.sh`).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

/// The longest segment (characters): a longer piece is cut at its last space before this
/// length. The encoders read at most a few hundred tokens (~1,000 characters) of a segment, so
/// nothing they would read is lost.
pub const MAX_SEGMENT_CHARS: usize = 2_000;

/// `text` without its C0 control characters (U+0000–U+001F) other than tab, line feed and
/// carriage return, and without DEL (U+007F), and how many were removed. The C1 codes
/// (U+0080–U+009F) stay: the benchmark's texts carry Windows-1252 punctuation read as Latin-1
/// there (U+0092 for an apostrophe), and removing it would change their words.
pub fn strip_controls(text: &str) -> (std::borrow::Cow<'_, str>, usize) {
    let unwanted = |c: char| c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r');
    let n = text.chars().filter(|&c| unwanted(c)).count();
    if n == 0 {
        return (std::borrow::Cow::Borrowed(text), 0);
    }
    (text.chars().filter(|&c| !unwanted(c)).collect(), n)
}

/// Cuts `piece` into parts of at most [`MAX_SEGMENT_CHARS`] characters, each at the last space
/// before that length (at the length where there is none), onto `out`. Returns whether it was
/// cut.
fn cut_long(piece: String, out: &mut Vec<String>) -> bool {
    if piece.char_indices().nth(MAX_SEGMENT_CHARS).is_none() {
        out.push(piece);
        return false;
    }
    let mut rest = piece.as_str();
    while let Some((limit, _)) = rest.char_indices().nth(MAX_SEGMENT_CHARS) {
        let at = match rest[..limit].rfind(' ') {
            Some(space) if space > 0 => space,
            _ => limit,
        };
        out.push(rest[..at].trim_end().to_string());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
    true
}

/// How articles are cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SegmentConfig {
    /// The length (characters) a long paragraph's pieces aim at.
    pub target_chars: usize,
    /// A paragraph up to this length stays one segment.
    pub max_chars: usize,
    /// A piece shorter than this is merged with its neighbour.
    pub min_chars: usize,
    /// A short paragraph (at most `boilerplate_max_words` words) found in at least this many
    /// articles of one key event is boilerplate and dropped (0: keep every paragraph, copies
    /// included).
    pub boilerplate_min_articles: usize,
    /// A paragraph of at most this many words is a line (site furniture when repeated); a
    /// longer one repeated is news copy, kept once, unless it stands alone at the head or tail
    /// of every article holding it.
    pub boilerplate_max_words: usize,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        Self {
            target_chars: 360,
            max_chars: 540,
            min_chars: 80,
            boilerplate_min_articles: 3,
            boilerplate_max_words: 12,
        }
    }
}

impl SegmentConfig {
    /// Checks the settings' relations.
    pub fn validate(&self) -> Result<(), String> {
        if self.target_chars == 0 {
            return Err("segment.target_chars must be above 0".into());
        }
        if self.max_chars < self.target_chars {
            return Err(format!(
                "segment.max_chars ({}) is below segment.target_chars ({})",
                self.max_chars, self.target_chars
            ));
        }
        if self.min_chars > self.target_chars {
            return Err(format!(
                "segment.min_chars ({}) is above segment.target_chars ({})",
                self.min_chars, self.target_chars
            ));
        }
        Ok(())
    }
}

/// The paragraphs of a text: split at line breaks, whitespace collapsed, empty ones dropped.
pub fn paragraphs(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect()
}

/// What a paragraph found in several articles of one key event is ([`repeated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeated {
    /// Site furniture: dropped from every article.
    Furniture,
    /// News copy shared by several articles: kept in the first article holding it only.
    Copy,
}

/// One paragraph as the corpus keeps it for the imports after this one (`paragraphs.parquet`,
/// issue 64 item 6): the fixed-seed hash of its text ([`crate::sharding::hash_str`]) and its
/// words.
pub type Mark = (u64, u32);

/// The [`Mark`]s of an article's paragraphs, in order.
pub fn marks(paragraphs: &[String]) -> Vec<Mark> {
    paragraphs
        .iter()
        .map(|p| {
            let words = p.split_whitespace().count();
            (
                crate::sharding::hash_str(p),
                u32::try_from(words).unwrap_or(u32::MAX),
            )
        })
        .collect()
}

/// The paragraphs of one key event's articles (each article given as its paragraphs) found in
/// more than one article, and what each is: [`Repeated::Furniture`] when it is a short line
/// (at most `config.boilerplate_max_words` words) found in at least
/// `config.boilerplate_min_articles` articles, or a longer paragraph found that often that sits
/// first or last in every article holding it with no long shared paragraph beside it;
/// [`Repeated::Copy`] when it is longer and found that often otherwise. A paragraph in fewer
/// articles than the bound is left alone in each (as before copies were told apart: only what
/// used to be dropped from every article is now kept once). `boilerplate_min_articles = 0`
/// finds nothing.
pub fn repeated(articles: &[Vec<String>], config: &SegmentConfig) -> HashMap<String, Repeated> {
    let marked: Vec<Vec<Mark>> = articles.iter().map(|a| marks(a)).collect();
    let refs: Vec<&[Mark]> = marked.iter().map(Vec::as_slice).collect();
    let kinds = repeated_marks(&refs, config);
    let mut out = HashMap::new();
    for (article, marks) in articles.iter().zip(&marked) {
        for (p, m) in article.iter().zip(marks) {
            if let Some(&kind) = kinds.get(&m.0) {
                out.insert(p.clone(), kind);
            }
        }
    }
    out
}

/// [`repeated`] over articles given as their paragraphs' [`Mark`]s: what each repeated
/// paragraph (by its hash) is.
pub fn repeated_marks(articles: &[&[Mark]], config: &SegmentConfig) -> HashMap<u64, Repeated> {
    let min_articles = config.boilerplate_min_articles;
    if min_articles == 0 {
        return HashMap::new();
    }
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for article in articles {
        let distinct: HashSet<u64> = article.iter().map(|m| m.0).collect();
        for p in distinct {
            *seen.entry(p).or_default() += 1;
        }
    }
    let long = |m: &Mark| m.1 as usize > config.boilerplate_max_words;
    let shared = |m: &Mark| seen.get(&m.0).is_some_and(|&n| n >= 2);
    // A long shared paragraph's place in each article holding it: alone at an edge (no long
    // shared paragraph beside it), or not.
    let mut not_alone_at_an_edge: HashSet<u64> = HashSet::new();
    for article in articles {
        let last = article.len().saturating_sub(1);
        for (i, p) in article.iter().enumerate() {
            if !shared(p) || !long(p) {
                continue;
            }
            let copy_beside = |q: &Mark| shared(q) && long(q);
            let at_edge = i == 0 || i == last;
            let shared_neighbour = (i > 0 && copy_beside(&article[i - 1]))
                || (i < last && copy_beside(&article[i + 1]));
            // The article's only long paragraph (beside its own byline, say): what it carries,
            // one paragraph of wire copy, not a notice beside a story (issue 64, item 7).
            let only_one = article.iter().enumerate().all(|(j, q)| j == i || !long(q));
            if !at_edge || shared_neighbour || only_one {
                not_alone_at_an_edge.insert(p.0);
            }
        }
    }
    let words: HashMap<u64, u32> = articles
        .iter()
        .flat_map(|a| a.iter())
        .map(|m| (m.0, m.1))
        .collect();
    seen.iter()
        .filter(|&(_, &n)| n >= 2 && n >= min_articles)
        .map(|(&p, _)| {
            let kind = if !long(&(p, words[&p])) || !not_alone_at_an_edge.contains(&p) {
                Repeated::Furniture
            } else {
                Repeated::Copy
            };
            (p, kind)
        })
        .collect()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The sentences of a paragraph (UAX #29), trimmed, empty ones dropped.
pub fn sentences(paragraph: &str) -> Vec<&str> {
    paragraph
        .split_sentence_bounds()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Packs a long paragraph's sentences into pieces of about `target` characters.
fn pack(paragraph: &str, config: &SegmentConfig) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    for sentence in sentences(paragraph) {
        if !current.is_empty() && chars(&current) + 1 + chars(sentence) > config.target_chars {
            pieces.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(sentence);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Cuts one article (its paragraphs, boilerplate already removed) into segments.
pub fn cut(paragraphs: &[String], config: &SegmentConfig) -> Vec<String> {
    cut_counting(paragraphs, config).0
}

/// [`cut`], and how many pieces were longer than [`MAX_SEGMENT_CHARS`] (and cut).
fn cut_counting(paragraphs: &[String], config: &SegmentConfig) -> (Vec<String>, usize) {
    let (cut, _, long) = cut_traced(paragraphs, config);
    (cut, long)
}

/// [`cut_counting`], and for each paragraph the first and last segment holding some of it.
fn cut_traced(paragraphs: &[String], config: &SegmentConfig) -> (Vec<String>, Vec<Span>, usize) {
    // Each piece with the paragraphs it holds.
    let mut pieces: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, p) in paragraphs.iter().enumerate() {
        if chars(p) <= config.max_chars {
            pieces.push((p.clone(), vec![i]));
        } else {
            pieces.extend(pack(p, config).into_iter().map(|x| (x, vec![i])));
        }
    }
    // Short pieces join the next one (the last one joins the previous).
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    let mut carry: Option<(String, Vec<usize>)> = None;
    for (text, from) in pieces {
        let piece = match carry.take() {
            None => (text, from),
            Some((c, mut cf)) => {
                cf.extend(from);
                (format!("{c} {text}"), cf)
            }
        };
        if chars(&piece.0) < config.min_chars {
            carry = Some(piece);
        } else {
            out.push(piece);
        }
    }
    if let Some((c, cf)) = carry {
        match out.last_mut() {
            Some(last) => {
                last.0.push(' ');
                last.0.push_str(&c);
                last.1.extend(cf);
            }
            None => out.push((c, cf)),
        }
    }
    let mut cut = Vec::with_capacity(out.len());
    let mut spans: Vec<Span> = vec![None; paragraphs.len()];
    let mut long = 0;
    for (text, from) in out {
        let first = cut.len() as u32;
        long += usize::from(cut_long(text, &mut cut));
        let last = cut.len().saturating_sub(1) as u32;
        for i in from {
            spans[i] = Some(match spans[i] {
                Some((a, _)) => (a, last),
                None => (first, last),
            });
        }
    }
    (cut, spans, long)
}

/// The first and last segment (`seg_idx`) of its article holding some of a paragraph; `None`
/// for a paragraph dropped (furniture, a copy).
pub type Span = Option<(u32, u32)>;

/// What cutting one key event's articles gave.
#[derive(Debug, Default)]
pub struct EventCut {
    /// Segments per article, in article order (an article may end with none, when it was
    /// all boilerplate).
    pub segments: Vec<Vec<String>>,
    /// Boilerplate paragraphs dropped (occurrences).
    pub boilerplate_dropped: usize,
    /// Distinct boilerplate paragraphs.
    pub boilerplate_lines: usize,
    /// Each dropped paragraph, what it is and how often it was dropped, sorted by text:
    /// furniture (from every article) or a copy (from every article but the first holding it).
    pub boilerplate: Vec<(String, Repeated, usize)>,
    /// Copies of shared news paragraphs dropped (the first article holding each keeps it).
    pub copies_dropped: usize,
    /// Distinct shared news paragraphs, each kept once.
    pub shared_paragraphs: usize,
    /// Articles left with no segment because every paragraph they had after the furniture
    /// was a copy of an earlier article's.
    pub copied_articles: usize,
    /// Control characters removed ([`strip_controls`]).
    pub controls_stripped: usize,
    /// Pieces longer than [`MAX_SEGMENT_CHARS`], cut there.
    pub long_cut: usize,
    /// Each article's paragraphs as [`Mark`]s (for the imports after this one).
    pub marks: Vec<Vec<Mark>>,
    /// Each article's paragraphs (as in `marks`): the segments holding it ([`Span`]).
    pub spans: Vec<Vec<Span>>,
    /// Each article's paragraphs dropped as copies of an earlier article's, by hash.
    pub carried: Vec<Vec<u64>>,
    /// Distinct furniture lines found now that articles of earlier batches hold too, and kept
    /// (their segments are never rewritten: their keys hold the episodes).
    pub late_furniture: usize,
}

/// Cuts one key event's articles (their texts, in article order).
pub fn cut_event(texts: &[&str], config: &SegmentConfig) -> EventCut {
    cut_event_after(texts, config, &[])
}

/// Cuts one key event's articles (their texts, in article order) that come after `earlier`
/// ones (the event's articles of the corpus's earlier batches, as their paragraphs' [`Mark`]s):
/// the repeated paragraphs are found over all of them, so a batch of two articles drops the
/// furniture that one import of every batch would (issue 64 item 6), and a paragraph of news
/// copy an earlier article holds is a copy in each of these.
pub fn cut_event_after(texts: &[&str], config: &SegmentConfig, earlier: &[Vec<Mark>]) -> EventCut {
    let mut controls_stripped = 0;
    let paras: Vec<Vec<String>> = texts
        .iter()
        .map(|t| {
            let (clean, n) = strip_controls(t);
            controls_stripped += n;
            paragraphs(&clean)
        })
        .collect();
    let marked: Vec<Vec<Mark>> = paras.iter().map(|a| marks(a)).collect();
    let every: Vec<&[Mark]> = earlier.iter().chain(&marked).map(Vec::as_slice).collect();
    let kinds = repeated_marks(&every, config);
    let before: HashSet<u64> = earlier.iter().flatten().map(|m| m.0).collect();
    let (mut dropped, mut copies, mut copied_articles, mut long_cut) = (0, 0, 0, 0);
    let mut dropped_by_text: HashMap<String, (Repeated, usize)> = HashMap::new();
    // The shared paragraphs already kept, by the first article holding them (usize::MAX: one
    // of an earlier batch).
    let mut told: HashMap<u64, usize> = before.iter().map(|&h| (h, usize::MAX)).collect();
    let mut segments = Vec::with_capacity(paras.len());
    let mut spans = Vec::with_capacity(paras.len());
    let mut carried = Vec::with_capacity(paras.len());
    for (a, (article, marks)) in paras.iter().zip(&marked).enumerate() {
        let mut kept: Vec<String> = Vec::new();
        // Each kept paragraph's place among the article's.
        let mut kept_at: Vec<usize> = Vec::new();
        let mut copied: Vec<u64> = Vec::new();
        let mut dropped_a_copy = false;
        for (at, (p, m)) in article.iter().zip(marks).enumerate() {
            match kinds.get(&m.0) {
                Some(Repeated::Furniture) => {
                    dropped += 1;
                    dropped_by_text
                        .entry(p.clone())
                        .or_insert((Repeated::Furniture, 0))
                        .1 += 1;
                    continue;
                }
                Some(Repeated::Copy) if *told.entry(m.0).or_insert(a) != a => {
                    dropped_a_copy = true;
                    copied.push(m.0);
                    copies += 1;
                    dropped_by_text
                        .entry(p.clone())
                        .or_insert((Repeated::Copy, 0))
                        .1 += 1;
                    continue;
                }
                _ => {}
            }
            kept.push(p.clone());
            kept_at.push(at);
        }
        if kept.is_empty() && dropped_a_copy {
            copied_articles += 1;
        }
        let (segs, kept_spans, long) = cut_traced(&kept, config);
        let mut article_spans: Vec<Span> = vec![None; article.len()];
        for (at, span) in kept_at.into_iter().zip(kept_spans) {
            article_spans[at] = span;
        }
        long_cut += long;
        segments.push(segs);
        spans.push(article_spans);
        carried.push(copied);
    }
    let mut boilerplate: Vec<(String, Repeated, usize)> = dropped_by_text
        .into_iter()
        .map(|(text, (kind, n))| (text, kind, n))
        .collect();
    boilerplate.sort_by(|a, b| a.0.cmp(&b.0));
    // The distinct repeated paragraphs of each kind that these articles hold.
    let held: HashSet<u64> = marked.iter().flatten().map(|m| m.0).collect();
    let here = |kind: Repeated| held.iter().filter(|h| kinds.get(h) == Some(&kind)).count();
    let late_furniture = found_late(earlier, &before, &held, &kinds, config);
    EventCut {
        segments,
        boilerplate_dropped: dropped,
        boilerplate_lines: here(Repeated::Furniture),
        boilerplate,
        copies_dropped: copies,
        shared_paragraphs: here(Repeated::Copy),
        copied_articles,
        controls_stripped,
        long_cut,
        marks: marked,
        spans,
        carried,
        late_furniture,
    }
}

/// How many furniture lines (`kinds`) of these articles (`held`) articles of the earlier
/// batches hold too (`before`) in fewer than `boilerplate_min_articles` of them, so that those
/// batches alone did not make them furniture: lines that an import before this one kept in its
/// segments. One pass over the earlier articles, counting only those lines.
fn found_late(
    earlier: &[Vec<Mark>],
    before: &HashSet<u64>,
    held: &HashSet<u64>,
    kinds: &HashMap<u64, Repeated>,
    config: &SegmentConfig,
) -> usize {
    let mut counts: HashMap<u64, usize> = held
        .iter()
        .filter(|h| kinds.get(h) == Some(&Repeated::Furniture) && before.contains(h))
        .map(|&h| (h, 0))
        .collect();
    if counts.is_empty() {
        return 0;
    }
    for article in earlier {
        let distinct: HashSet<u64> = article.iter().map(|m| m.0).collect();
        for h in distinct {
            if let Some(n) = counts.get_mut(&h) {
                *n += 1;
            }
        }
    }
    counts
        .values()
        .filter(|&&n| n < config.boilerplate_min_articles)
        .count()
}

#[cfg(test)]
mod tests;
