//! `epimine synth`: a synthetic corpus of key events with planted episodes, for scale tests and
//! the built-in demo.
//!
//! Each key event has a few episodes, each with its own vocabulary (made-up words, so they are
//! rare in any background), a few event-wide words, and general filler drawn from common English
//! words with Zipfian frequencies. Articles cover a few episodes in order, a few segments each,
//! with some general (`M`) and off-topic (`X`) segments between. The corpus is written as the
//! `segments`, `labels` and `gold_episodes` tables, with `background.txt` (filler documents, one a
//! line) beside them. Same arguments, same bytes.

use crate::storage::{Location, StorageError};
use crate::tables::{GoldEpisode, Label, Segment};

/// Common English words (no stop words) for filler, most frequent first.
const FILLER: &[&str] = &[
    "said",
    "year",
    "people",
    "time",
    "new",
    "government",
    "told",
    "week",
    "day",
    "city",
    "officials",
    "state",
    "country",
    "news",
    "say",
    "report",
    "local",
    "public",
    "world",
    "national",
    "president",
    "police",
    "family",
    "years",
    "including",
    "percent",
    "according",
    "group",
    "members",
    "life",
    "months",
    "work",
    "know",
    "home",
    "help",
    "need",
    "make",
    "took",
    "going",
    "end",
    "come",
    "area",
    "place",
    "early",
    "later",
    "long",
    "right",
    "number",
    "million",
    "school",
    "children",
    "women",
    "men",
    "old",
    "water",
    "water",
    "health",
    "told",
    "high",
    "court",
    "law",
    "office",
    "plan",
    "power",
    "support",
    "house",
    "building",
    "street",
    "center",
    "road",
    "weekend",
    "morning",
    "night",
    "hours",
    "minutes",
    "statement",
    "media",
    "video",
    "photos",
    "online",
    "social",
    "community",
    "residents",
    "team",
    "leader",
    "party",
    "security",
    "force",
    "service",
    "system",
    "program",
    "question",
    "issue",
    "information",
    "business",
    "money",
    "market",
    "company",
    "price",
    "cost",
    "job",
    "result",
    "change",
    "history",
    "future",
    "experience",
    "situation",
    "view",
    "case",
    "point",
    "fact",
    "idea",
    "reason",
    "effort",
    "decision",
    "attention",
    "response",
    "concern",
    "interest",
    "level",
    "position",
    "role",
    "effect",
    "series",
    "period",
    "moment",
    "chance",
    "series",
    "region",
    "province",
    "capital",
    "border",
    "international",
    "foreign",
    "official",
    "major",
    "small",
    "large",
    "big",
    "little",
    "good",
    "best",
    "better",
    "important",
    "different",
    "possible",
    "clear",
    "recent",
    "current",
    "general",
    "special",
    "certain",
    "free",
    "open",
    "known",
    "called",
    "asked",
    "added",
    "noted",
    "described",
    "expected",
    "reported",
    "confirmed",
];

const EVENT_NOUNS: &[&str] = &[
    "crisis", "incident", "disaster", "attack", "standoff", "unrest",
];

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A pronounceable made-up word.
fn pseudo_word(rng: &mut Rng) -> String {
    const C: &[&str] = &[
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "sh", "tr", "br",
    ];
    const V: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou"];
    let syllables = rng.range(2, 4);
    (0..syllables)
        .map(|_| format!("{}{}", C[rng.below(C.len())], V[rng.below(V.len())]))
        .collect()
}

/// Zipfian draw over `n` ranks (exponent 1).
fn zipf(rng: &mut Rng, n: usize) -> usize {
    let h: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
    let mut x = rng.unit() * h;
    for k in 1..=n {
        x -= 1.0 / k as f64;
        if x <= 0.0 {
            return k - 1;
        }
    }
    n - 1
}

/// A synthetic corpus.
#[derive(Debug, Default)]
pub struct Synthetic {
    /// Segments, ordered by (key_event, doc_id, seg_idx).
    pub segments: Vec<Segment>,
    /// Labels of every segment.
    pub labels: Vec<Label>,
    /// Planted episodes.
    pub gold_episodes: Vec<GoldEpisode>,
    /// Background documents, one a line.
    pub background: Vec<String>,
}

fn sentence(rng: &mut Rng, words: &[&str], n_filler: usize) -> String {
    let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    for _ in 0..n_filler {
        out.push(FILLER[zipf(rng, FILLER.len())].to_string());
    }
    // Shuffle, then sprinkle stop words, so that order carries nothing.
    for i in (1..out.len()).rev() {
        let j = rng.below(i + 1);
        out.swap(i, j);
    }
    let mut text = String::from("The");
    for (i, w) in out.iter().enumerate() {
        text.push(' ');
        text.push_str(w);
        if i % 4 == 3 {
            text.push_str(if rng.below(2) == 0 { " of the" } else { " and" });
        }
    }
    text.push('.');
    text
}

/// Generates `events` key events of `docs_per_event` articles each.
pub fn generate(events: usize, docs_per_event: usize, seed: u64) -> Synthetic {
    let mut rng = Rng(seed ^ 0x5EED);
    let mut out = Synthetic::default();
    let width = events.to_string().len().max(3);
    let mut names: Vec<String> = (0..events)
        .map(|e| format!("synth_event_{e:0width$}"))
        .collect();
    names.sort();
    for name in &names {
        let n_episodes = rng.range(3, 6);
        let event_words: Vec<String> = (0..4).map(|_| pseudo_word(&mut rng)).collect();
        let noun = EVENT_NOUNS[rng.below(EVENT_NOUNS.len())];
        let episodes: Vec<Vec<String>> = (0..n_episodes)
            .map(|_| (0..10).map(|_| pseudo_word(&mut rng)).collect())
            .collect();
        for (i, words) in episodes.iter().enumerate() {
            out.gold_episodes.push(GoldEpisode {
                key_event: name.clone(),
                episode_id: i as u32,
                description: format!(
                    "{} | {} | {} | day {} | {}",
                    words[0],
                    words[1],
                    words[2],
                    i + 1,
                    event_words[0]
                ),
            });
        }
        let start_day = 19_000 + rng.below(1000) as i32;
        for doc in 0..docs_per_event {
            let first = rng.below(n_episodes);
            let covered = rng.range(1, 3).min(n_episodes - first);
            let mut seg_idx = 0u32;
            let mut push = |rng: &mut Rng, text: String, label: String| {
                let _ = rng;
                out.segments.push(Segment {
                    key_event: name.clone(),
                    theme: Some("synthetic".into()),
                    doc_id: doc as u32,
                    doc_date: Some(start_day + (first + covered) as i32),
                    seg_idx,
                    text,
                    source_id: None,
                    title: None,
                });
                out.labels.push(Label {
                    key_event: name.clone(),
                    doc_id: doc as u32,
                    seg_idx,
                    label,
                });
                seg_idx += 1;
            };
            // A general opening segment.
            let words = [event_words[0].as_str(), event_words[1].as_str(), noun];
            let text = sentence(&mut rng, &words, 8);
            push(&mut rng, text, "M".into());
            for (ep, vocabulary) in episodes.iter().enumerate().skip(first).take(covered) {
                for _ in 0..rng.range(2, 5) {
                    let k = rng.range(3, 6);
                    let mut words: Vec<&str> = (0..k)
                        .map(|_| vocabulary[zipf(&mut rng, 10)].as_str())
                        .collect();
                    if rng.below(3) == 0 {
                        words.push(event_words[rng.below(event_words.len())].as_str());
                    }
                    let n_filler = rng.range(6, 12);
                    let text = sentence(&mut rng, &words, n_filler);
                    push(&mut rng, text, ep.to_string());
                }
            }
            if rng.below(3) == 0 {
                let text = sentence(&mut rng, &[], 12);
                push(&mut rng, text, "X".into());
            }
        }
    }
    for _ in 0..500 {
        let n = rng.range(30, 80);
        let words: Vec<&str> = (0..n)
            .map(|_| FILLER[zipf(&mut rng, FILLER.len())])
            .collect();
        out.background.push(words.join(" "));
    }
    out
}

/// `epimine synth`: writes the synthetic corpus and `background.txt` under `out`.
pub async fn write(out: &Location, synthetic: &Synthetic) -> Result<(), StorageError> {
    out.write_table(&synthetic.segments).await?;
    out.write_table(&synthetic.labels).await?;
    out.write_table(&synthetic.gold_episodes).await?;
    let mut background = synthetic.background.join("\n");
    background.push('\n');
    out.put("background.txt", background.into_bytes().into())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_corpus_and_planted_labels() {
        let a = generate(3, 10, 1);
        let b = generate(3, 10, 1);
        assert_eq!(a.segments, b.segments);
        assert_eq!(a.segments.len(), a.labels.len());
        let events: std::collections::BTreeSet<&str> =
            a.segments.iter().map(|s| s.key_event.as_str()).collect();
        assert_eq!(events.len(), 3);
        assert!(a.labels.iter().any(|l| l.label == "0"));
        assert_ne!(generate(3, 10, 2).segments, a.segments);
    }
}
