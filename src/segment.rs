//! Articles cut into segments like the benchmark's (one to a few sentences; a paragraph when
//! paragraphs are marked), and boilerplate lines dropped.
//!
//! The cut, per article:
//! 1. Paragraphs: the text split at line breaks (a blank line or a single newline); whitespace
//!    inside a paragraph collapsed to single spaces.
//! 2. Boilerplate: a paragraph whose text occurs in at least `boilerplate_min_articles`
//!    articles of the same key event (bylines, "Read more", photo credits, copyright lines) is
//!    dropped ([`boilerplate`]).
//! 3. A paragraph longer than `max_chars` is split at sentence boundaries (Unicode UAX #29
//!    sentences, from the `unicode-segmentation` crate: well kept, already in the dependency
//!    tree through the tokenizers, and it needs no model as Punkt does), and its sentences are
//!    packed, in order, into pieces of about `target_chars` (a piece is closed when adding the
//!    next sentence would pass `target_chars` and it already holds one).
//! 4. A piece shorter than `min_chars` is merged with the next piece of the article (the last
//!    one with the previous), so that no segment is a stray fragment.
//!
//! The development set's segments have a median of ~290 characters (10% under ~135, 90% under
//! ~540); the defaults aim there: pieces packed up to 360 characters have a median of ~290 on its
//! articles joined into one paragraph each (`scripts/segment-quality.sh`).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

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
    /// A paragraph found in at least this many articles of one key event is boilerplate and
    /// dropped (0: keep every paragraph).
    pub boilerplate_min_articles: usize,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        Self {
            target_chars: 360,
            max_chars: 540,
            min_chars: 80,
            boilerplate_min_articles: 3,
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

/// The boilerplate paragraphs of one key event's articles (each article given as its
/// paragraphs): those found in at least `min_articles` distinct articles.
pub fn boilerplate(articles: &[Vec<String>], min_articles: usize) -> HashSet<String> {
    if min_articles == 0 {
        return HashSet::new();
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for article in articles {
        let distinct: HashSet<&str> = article.iter().map(String::as_str).collect();
        for p in distinct {
            *seen.entry(p).or_default() += 1;
        }
    }
    seen.into_iter()
        .filter(|&(_, n)| n >= min_articles)
        .map(|(p, _)| p.to_string())
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
    let mut pieces: Vec<String> = Vec::new();
    for p in paragraphs {
        if chars(p) <= config.max_chars {
            pieces.push(p.clone());
        } else {
            pieces.extend(pack(p, config));
        }
    }
    // Short pieces join the next one (the last one joins the previous).
    let mut out: Vec<String> = Vec::new();
    let mut carry = String::new();
    for piece in pieces {
        let piece = if carry.is_empty() {
            piece
        } else {
            format!("{} {piece}", std::mem::take(&mut carry))
        };
        if chars(&piece) < config.min_chars {
            carry = piece;
        } else {
            out.push(piece);
        }
    }
    if !carry.is_empty() {
        match out.last_mut() {
            Some(last) => {
                last.push(' ');
                last.push_str(&carry);
            }
            None => out.push(carry),
        }
    }
    out
}

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
}

/// Cuts one key event's articles (their texts, in article order).
pub fn cut_event(texts: &[&str], config: &SegmentConfig) -> EventCut {
    let paras: Vec<Vec<String>> = texts.iter().map(|t| paragraphs(t)).collect();
    let boiler = boilerplate(&paras, config.boilerplate_min_articles);
    let mut dropped = 0;
    let segments = paras
        .into_iter()
        .map(|article| {
            let kept: Vec<String> = article
                .into_iter()
                .filter(|p| {
                    let b = boiler.contains(p);
                    dropped += usize::from(b);
                    !b
                })
                .collect();
            cut(&kept, config)
        })
        .collect();
    EventCut {
        segments,
        boilerplate_dropped: dropped,
        boilerplate_lines: boiler.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_sentences_merge_and_boilerplate() {
        let config = SegmentConfig {
            target_chars: 60,
            max_chars: 80,
            min_chars: 20,
            boilerplate_min_articles: 2,
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
        assert!(cut.segments.iter().flatten().all(|s| !s.contains("Photo")));
    }
}
