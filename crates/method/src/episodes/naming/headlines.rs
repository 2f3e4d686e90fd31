//! Titles that read as headlines without an LLM (issue 65, item 1). Not part of the paper, whose
//! episodes are named by the LLM (§5); without one an episode was titled by its first three
//! keywords ("appointments outpatient week"), which a reader has to decode. Every article
//! already has a headline an editor wrote, so an episode not titled by an LLM takes the
//! headline of its most representative article: the one with the most of its segments in the
//! episode (ties: the better rank, then the lower `doc_id`), cleaned of an outlet's name and a
//! label ("Flood waters rise - The Courier" → "Flood waters rise"; "LIVE: …"), and distinct
//! across the episodes of its event and trial (the larger episode chooses first; one whose best
//! headline is taken has its next article's). Where none of its articles has one (a corpus
//! without titles, as the development set's), the title is a short extract of its top-ranked
//! passage. The keywords stay in `keywords`. A plain function of one event's rows: the same
//! bytes for any layout.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::tables::{Assignment, Episode, Segment};

/// The longest extract of a passage used as a title, in characters.
pub const MAX_EXTRACT_CHARS: usize = 90;

/// Labels a headline may open with that say nothing of the story.
const LABELS: [&str; 10] = [
    "breaking",
    "live",
    "update",
    "updated",
    "watch",
    "video",
    "exclusive",
    "opinion",
    "analysis",
    "photos",
];

/// `title` cleaned for use as an episode's title: a trailing outlet's name after ` | `, ` - `,
/// ` – ` or ` — ` (at most four capitalised words, after a headline of at least three) and an opening label
/// (`LIVE:`, `Breaking -`) dropped, whitespace collapsed; `None` when fewer than two words are
/// left.
pub fn clean_headline(title: &str) -> Option<String> {
    let mut t = title.split_whitespace().collect::<Vec<_>>().join(" ");
    for sep in [" | ", " — ", " – ", " - "] {
        if let Some(at) = t.rfind(sep) {
            let (head, tail) = (&t[..at], &t[at + sep.len()..]);
            // An outlet's name: a few capitalised words ("The Courier", "Times of India").
            let named = tail.split_whitespace().all(|w| {
                w.chars()
                    .next()
                    .is_some_and(|c| c.is_uppercase() || c.is_numeric())
                    || ["of", "the", "and", "&", "de"].contains(&w)
            });
            if named && tail.split_whitespace().count() <= 4 && head.split_whitespace().count() >= 3
            {
                t = head.trim().to_string();
            }
        }
    }
    if let Some((label, rest)) = t.split_once([':', '-', '|']) {
        let label = label.trim().to_lowercase();
        if LABELS.contains(&label.as_str()) && rest.split_whitespace().count() >= 2 {
            t = rest.trim().to_string();
        }
    }
    (t.split_whitespace().count() >= 2).then_some(t)
}

/// A short extract of `passage` as a title: its first sentence, cut at a word to at most
/// [`MAX_EXTRACT_CHARS`] characters with `…` where it was cut.
pub fn extract(passage: &str) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let first = passage
        .unicode_sentences()
        .next()
        .unwrap_or(passage)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if first.chars().count() <= MAX_EXTRACT_CHARS {
        return first.trim_end_matches(['.', ' ']).to_string();
    }
    let mut out = String::new();
    for word in first.split(' ') {
        if out.chars().count() + word.chars().count() + 1 > MAX_EXTRACT_CHARS - 1 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = first.chars().take(MAX_EXTRACT_CHARS - 1).collect();
    }
    format!("{}…", out.trim_end_matches([',', ';', ':', ' ']))
}

/// Titles the episodes of one event's rows that no LLM titled (`source` other than `llm`), as
/// the module's header says. `segs`: the event's segments; `assignments`: its episodes'
/// segments with their ranks.
pub fn retitle(segs: &[Segment], episodes: &mut [Episode], assignments: &[Assignment]) {
    let at: HashMap<(u32, u32), usize> = segs
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.doc_id, s.seg_idx), i))
        .collect();
    // Per (trial, episode): per article, its segments there and their best rank; its segments
    // by rank.
    let mut articles: HashMap<(u32, u32), BTreeMap<u32, (usize, u32)>> = HashMap::new();
    let mut ranked: HashMap<(u32, u32), Vec<(u32, usize)>> = HashMap::new();
    for a in assignments {
        let Some(&s) = at.get(&(a.doc_id, a.seg_idx)) else {
            continue;
        };
        let entry = articles
            .entry((a.trial, a.episode_id))
            .or_default()
            .entry(a.doc_id)
            .or_insert((0, u32::MAX));
        entry.0 += 1;
        entry.1 = entry.1.min(a.rank);
        ranked
            .entry((a.trial, a.episode_id))
            .or_default()
            .push((a.rank, s));
    }
    let headline: HashMap<u32, String> = segs
        .iter()
        .filter_map(|s| Some((s.doc_id, clean_headline(s.title.as_deref()?)?)))
        .collect();
    // The larger episode chooses first.
    let mut order: Vec<usize> = (0..episodes.len()).collect();
    order.sort_by_key(|&i| {
        let e = &episodes[i];
        (e.trial, std::cmp::Reverse(e.n_segments), e.episode_id)
    });
    let mut taken: HashSet<(u32, String)> = HashSet::new();
    for &i in &order {
        let e = &episodes[i];
        if e.source == "llm" {
            taken.insert((e.trial, e.title.to_lowercase()));
        }
    }
    for i in order {
        let key = (episodes[i].trial, episodes[i].episode_id);
        if episodes[i].source == "llm" {
            continue;
        }
        let mut candidates: Vec<(u32, usize, u32)> = articles
            .get(&key)
            .map(|m| m.iter().map(|(&doc, &(n, rank))| (doc, n, rank)).collect())
            .unwrap_or_default();
        candidates.sort_by_key(|&(doc, n, rank)| (std::cmp::Reverse(n), rank, doc));
        let trial = key.0;
        let mut free = |t: &str| taken.insert((trial, t.to_lowercase()));
        let from_headline = candidates
            .iter()
            .filter_map(|(doc, _, _)| headline.get(doc))
            .find(|t| free(t))
            .cloned();
        let title = from_headline.or_else(|| {
            let mut passages = ranked.get(&key).cloned().unwrap_or_default();
            passages.sort_unstable();
            passages
                .iter()
                .map(|&(_, s)| extract(&segs[s].text))
                .find(|t| !t.is_empty() && free(t))
        });
        if let Some(t) = title {
            episodes[i].title = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outlets_and_labels_are_dropped_from_headlines() {
        assert_eq!(
            clean_headline("Flood waters rise in Riverside - The Courier").as_deref(),
            Some("Flood waters rise in Riverside")
        );
        assert_eq!(
            clean_headline("LIVE: Levee breach forces evacuations | Valley News").as_deref(),
            Some("Levee breach forces evacuations")
        );
        // A dash inside the headline stays; one word is no title.
        assert_eq!(
            clean_headline("Mayor - in tears - thanks volunteers").as_deref(),
            Some("Mayor - in tears - thanks volunteers")
        );
        assert_eq!(clean_headline("  Update  "), None);
    }

    #[test]
    fn a_passage_gives_its_first_sentence_cut_at_a_word() {
        assert_eq!(
            extract("Shelters opened in schools. The water kept rising."),
            "Shelters opened in schools"
        );
        let long = "Emergency crews worked through the night to plug the breach with sandbags \
                    while helicopters lifted stranded residents from the rooftops of the town.";
        let t = extract(long);
        assert!(
            t.ends_with('…') && t.chars().count() <= MAX_EXTRACT_CHARS,
            "{t}"
        );
        assert!(t.starts_with("Emergency crews worked through the night"));
    }

    fn segment(doc: u32, idx: u32, title: Option<&str>, text: &str) -> Segment {
        Segment {
            key_event: "flood".into(),
            theme: None,
            doc_id: doc,
            doc_date: None,
            seg_idx: idx,
            text: text.into(),
            source_id: None,
            title: title.map(str::to_string),
        }
    }

    fn episode(id: u32, n: u32, source: &str) -> Episode {
        Episode {
            key_event: "flood".into(),
            trial: 0,
            episode_id: id,
            stable_id: None,
            status: None,
            title: "kw1 kw2 kw3".into(),
            title_fields: vec![],
            keywords: vec!["kw1".into()],
            example_sentences: vec![],
            n_segments: n,
            source: source.into(),
            n_articles: 1,
            first_date: None,
            peak_date: None,
            last_date: None,
            phase_id: id,
            phase_stable_id: None,
        }
    }

    fn assigned(id: u32, doc: u32, idx: u32, rank: u32) -> Assignment {
        Assignment {
            key_event: "flood".into(),
            trial: 0,
            episode_id: id,
            stable_id: None,
            status: None,
            doc_id: doc,
            seg_idx: idx,
            rank,
            confidence: 1.0,
        }
    }

    #[test]
    fn the_most_representative_headline_distinct_across_episodes_else_a_passage() {
        let segs = vec![
            segment(
                0,
                0,
                Some("Levee breaks in Riverside - Courier"),
                "The levee broke.",
            ),
            segment(
                0,
                1,
                Some("Levee breaks in Riverside - Courier"),
                "Water rushed in.",
            ),
            segment(
                1,
                0,
                Some("Town evacuated as river rises"),
                "Families left.",
            ),
            segment(
                2,
                0,
                Some("Levee breaks in Riverside - Post"),
                "Officials confirmed it.",
            ),
            segment(
                3,
                0,
                None,
                "Volunteers filled sandbags on the river road. More came.",
            ),
            segment(4, 0, None, "Schools opened as shelters."),
        ];
        let mut episodes = vec![
            episode(0, 3, "clusters"),
            episode(1, 2, "clusters"),
            episode(2, 2, "clusters"),
            episode(3, 1, "llm"),
        ];
        episodes[3].title = "An LLM's title".into();
        let assignments = vec![
            // Episode 0: two segments of article 0, one of article 1.
            assigned(0, 1, 0, 0),
            assigned(0, 0, 0, 1),
            assigned(0, 0, 1, 2),
            // Episode 1: article 2 (the same headline, once cleaned) and article 1.
            assigned(1, 2, 0, 0),
            assigned(1, 1, 0, 1),
            // Episode 2: no headlines.
            assigned(2, 4, 0, 1),
            assigned(2, 3, 0, 0),
            assigned(3, 4, 0, 0),
        ];
        retitle(&segs, &mut episodes, &assignments);
        let titles: Vec<&str> = episodes.iter().map(|e| e.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Levee breaks in Riverside",
                "Town evacuated as river rises",
                "Volunteers filled sandbags on the river road",
                "An LLM's title"
            ]
        );
    }
}
