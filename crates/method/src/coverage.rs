//! What a key event's episodes hold, for people to read: each episode's articles
//! (`episode_articles`: source id or URL, title, date, its segments in the episode, its best
//! passage and the episode's top one), and how much of the event the episodes cover — segments
//! and articles in some episode, and left out — per trial.
//!
//! Plain functions over one event's segments and its `episodes` and `assignments` rows, so that
//! `epimine run` and the baselines describe their episodes the same way.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::corpus::ArticleFacts;
use crate::tables::{Assignment, CopyArticle, Episode, EpisodeArticle, Segment};

/// How much of one key event one trial's episodes cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// The estimation trial.
    pub trial: u32,
    /// Segments assigned to some episode.
    pub segments_assigned: usize,
    /// Segments in no episode.
    pub segments_left_out: usize,
    /// Articles with at least one segment in some episode.
    pub articles_assigned: usize,
    /// Articles with no segment in any episode.
    pub articles_left_out: usize,
}

impl Coverage {
    /// `467 of 581 segments (80%) and 280 of 300 articles in an episode`.
    pub fn describe(&self) -> String {
        let segments = self.segments_assigned + self.segments_left_out;
        let articles = self.articles_assigned + self.articles_left_out;
        format!(
            "{} of {segments} segments ({}) and {} of {articles} articles in an episode",
            self.segments_assigned,
            percent(self.segments_assigned, segments),
            self.articles_assigned,
        )
    }
}

/// `80%` (rounded down, so that 99.6% is not 100%).
pub fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "0%".into();
    }
    format!("{}%", part * 100 / whole)
}

/// The number of articles (distinct `doc_id`) of an event's segments.
pub fn articles(segments: &[Segment]) -> usize {
    segments
        .iter()
        .map(|s| s.doc_id)
        .collect::<BTreeSet<_>>()
        .len()
}

/// Per trial of `episodes` (every trial that has an episode), the coverage of one event's
/// `segments` by its `assignments`.
pub fn coverage(
    segments: &[Segment],
    episodes: &[Episode],
    assignments: &[Assignment],
) -> Vec<Coverage> {
    let total_articles = articles(segments);
    let trials: BTreeSet<u32> = episodes.iter().map(|e| e.trial).collect();
    trials
        .into_iter()
        .map(|trial| {
            let mut segs: BTreeSet<(u32, u32)> = BTreeSet::new();
            let mut docs: BTreeSet<u32> = BTreeSet::new();
            for a in assignments.iter().filter(|a| a.trial == trial) {
                segs.insert((a.doc_id, a.seg_idx));
                docs.insert(a.doc_id);
            }
            Coverage {
                trial,
                segments_assigned: segs.len(),
                segments_left_out: segments.len().saturating_sub(segs.len()),
                articles_assigned: docs.len(),
                articles_left_out: total_articles.saturating_sub(docs.len()),
            }
        })
        .collect()
}

/// Each episode's articles ([`EpisodeArticle`]), from one event's segments, episodes and
/// assignments; rows by trial, episode, then the rank of each article's best segment, each with
/// its instant (`facts.instants`, issue 65 item 3). Then, under each episode, the articles made
/// only of copies (`facts.copies`, issue 65 item 5) that carry
/// one of its segments, by the rank of the best of them, marked `copy_of`: an outlet that
/// carried the story in agency copy is one of its articles.
pub fn episode_articles(
    segments: &[Segment],
    facts: &ArticleFacts,
    episodes: &[Episode],
    assignments: &[Assignment],
) -> Vec<EpisodeArticle> {
    // (article copied, segment) → the copies carrying it.
    let mut carriers: HashMap<(u32, u32), Vec<&CopyArticle>> = HashMap::new();
    for c in &facts.copies {
        for &seg in &c.carried {
            carriers.entry((c.copy_of, seg)).or_default().push(c);
        }
    }
    let by_key: HashMap<(u32, u32), &Segment> = segments
        .iter()
        .map(|s| ((s.doc_id, s.seg_idx), s))
        .collect();
    let mut per_article: HashMap<u32, u32> = HashMap::new();
    for s in segments {
        *per_article.entry(s.doc_id).or_default() += 1;
    }
    // (trial, episode) → its assignments.
    let mut members: BTreeMap<(u32, u32), Vec<&Assignment>> = BTreeMap::new();
    for a in assignments {
        members.entry((a.trial, a.episode_id)).or_default().push(a);
    }
    let mut ordered: Vec<&Episode> = episodes.iter().collect();
    ordered.sort_by_key(|e| (e.trial, e.episode_id));
    let mut rows = Vec::new();
    for episode in ordered {
        let Some(list) = members.get_mut(&(episode.trial, episode.episode_id)) else {
            continue;
        };
        list.sort_by_key(|a| (a.rank, a.doc_id, a.seg_idx));
        let text = |a: &Assignment| {
            by_key
                .get(&(a.doc_id, a.seg_idx))
                .map(|s| s.text.clone())
                .unwrap_or_default()
        };
        let episode_passage = text(list[0]);
        // Each article once, at its best segment; with how many of its segments are members.
        let mut best: Vec<&Assignment> = Vec::new();
        let mut count: HashMap<u32, u32> = HashMap::new();
        for a in list.iter() {
            let n = count.entry(a.doc_id).or_default();
            if *n == 0 {
                best.push(a);
            }
            *n += 1;
        }
        let best_count = best.len();
        for (article_rank, a) in best.into_iter().enumerate() {
            let s = by_key.get(&(a.doc_id, a.seg_idx));
            rows.push(EpisodeArticle {
                key_event: episode.key_event.clone(),
                trial: episode.trial,
                episode_id: episode.episode_id,
                stable_id: None,
                status: None,
                episode_title: episode.title.clone(),
                article_rank: article_rank as u32,
                doc_id: a.doc_id,
                source_id: s.and_then(|s| s.source_id.clone()),
                title: s.and_then(|s| s.title.clone()),
                published: s.and_then(|s| s.doc_date),
                published_at: facts.instants.get(&a.doc_id).copied(),
                segments: count[&a.doc_id],
                article_segments: per_article.get(&a.doc_id).copied().unwrap_or(0),
                best_rank: a.rank,
                passage: text(a),
                episode_passage: episode_passage.clone(),
                copy_of: None,
                echo_of: None,
            });
        }
        let own = rows.len() - best_count;
        mark_echoes(&mut rows[own..]);
        rows.extend(copy_rows(
            episode,
            list,
            &carriers,
            best_count,
            &text,
            &episode_passage,
        ));
    }
    rows
}

/// The rows of the articles made only of copies that carry one of `episode`'s segments
/// (`list`, its assignments in rank order; `carriers`: by (article copied, segment)), each once
/// at the best of them, ranked from `first` by that segment's rank.
fn copy_rows(
    episode: &Episode,
    list: &[&Assignment],
    carriers: &HashMap<(u32, u32), Vec<&CopyArticle>>,
    first: usize,
    text: &dyn Fn(&Assignment) -> String,
    episode_passage: &str,
) -> Vec<EpisodeArticle> {
    let mut carried: BTreeMap<u32, (&CopyArticle, &Assignment, u32)> = BTreeMap::new();
    for a in list {
        for c in carriers.get(&(a.doc_id, a.seg_idx)).into_iter().flatten() {
            carried.entry(c.doc_id).or_insert((c, a, 0)).2 += 1;
        }
    }
    let mut carried: Vec<_> = carried.into_values().collect();
    carried.sort_by_key(|(c, a, _)| (a.rank, c.doc_id));
    carried
        .into_iter()
        .enumerate()
        .map(|(i, (c, a, n))| EpisodeArticle {
            key_event: episode.key_event.clone(),
            trial: episode.trial,
            episode_id: episode.episode_id,
            stable_id: None,
            status: None,
            episode_title: episode.title.clone(),
            article_rank: (first + i) as u32,
            doc_id: c.doc_id,
            source_id: c.source_id.clone(),
            title: c.title.clone(),
            published: c.published,
            published_at: c.published_at,
            segments: n,
            article_segments: 0,
            best_rank: a.rank,
            passage: text(a),
            episode_passage: episode_passage.to_string(),
            copy_of: Some(c.copy_of),
            echo_of: None,
        })
        .collect()
}

/// A passage's words, lowercased, without punctuation: what two copies of one paragraph share
/// whatever their outlets' quotes and spacing.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether two passages are near-copies: at least 80% of their words shared (Jaccard).
pub fn near_copy(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let shared = a.intersection(b).count();
    let all = a.len() + b.len() - shared;
    all > 0 && shared * 5 >= all * 4
}

/// The most distinct passages of an episode a passage is held against
/// (`episode_articles.echo_of`): an episode of thousands of articles costs at most this many
/// comparisons a row.
pub const ECHO_LEADERS: usize = 64;

/// Marks each row of one episode's own articles (`rows`, in rank order) whose passage is a
/// near-copy ([`near_copy`]) of a higher-ranked row's (issue 65 item 2: the same sentence from
/// five outlets): `echo_of` is that row's `doc_id`, so `echo_of is null` reads the episode's
/// distinct passages. A passage is held against the first [`ECHO_LEADERS`] distinct ones.
fn mark_echoes(rows: &mut [EpisodeArticle]) {
    let mut leaders: Vec<(u32, BTreeSet<String>)> = Vec::new();
    for r in rows.iter_mut() {
        let bag = words(&r.passage);
        match leaders.iter().find(|(_, b)| near_copy(&bag, b)) {
            Some((doc, _)) => r.echo_of = Some(*doc),
            None if leaders.len() < ECHO_LEADERS => leaders.push((r.doc_id, bag)),
            None => {}
        }
    }
}

/// Adds to each episode's `n_articles` the articles made only of copies that carry one of its
/// segments (the rows of `articles` with `copy_of`).
pub fn count_copies(episodes: &mut [Episode], articles: &[EpisodeArticle]) {
    let mut copies: HashMap<(u32, u32), u32> = HashMap::new();
    for r in articles.iter().filter(|r| r.copy_of.is_some()) {
        *copies.entry((r.trial, r.episode_id)).or_default() += 1;
    }
    for e in episodes {
        e.n_articles += copies.get(&(e.trial, e.episode_id)).copied().unwrap_or(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(doc: u32, idx: u32, text: &str) -> Segment {
        Segment {
            key_event: "e".into(),
            theme: None,
            doc_id: doc,
            doc_date: Some(100 + doc as i32),
            seg_idx: idx,
            text: text.into(),
            source_id: Some(format!("https://news.example/{doc}")),
            title: Some(format!("Article {doc}")),
        }
    }

    fn asg(episode: u32, doc: u32, idx: u32, rank: u32) -> Assignment {
        Assignment {
            key_event: "e".into(),
            trial: 0,
            episode_id: episode,
            stable_id: None,
            status: None,
            doc_id: doc,
            seg_idx: idx,
            rank,
            confidence: 0.5,
        }
    }

    /// Episode `id` of trial 0 of event `e`, titled `title`.
    fn episode(id: u32, title: &str) -> Episode {
        Episode {
            key_event: "e".into(),
            trial: 0,
            episode_id: id,
            stable_id: None,
            status: None,
            title: title.into(),
            title_fields: vec![],
            keywords: vec![],
            example_sentences: vec![],
            n_segments: 0,
            source: "clusters".into(),
            n_articles: 0,
            first_date: None,
            peak_date: None,
            last_date: None,
            phase_id: id,
            phase_stable_id: None,
        }
    }

    /// Five segments of four articles; episode 0 holds b0 (its top passage), a1, a0 (article
    /// 0 twice), episode 1 c0.
    fn fixture() -> (Vec<Segment>, Vec<Episode>, Vec<Assignment>) {
        let segments = vec![
            seg(0, 0, "a0"),
            seg(0, 1, "a1"),
            seg(1, 0, "b0"),
            seg(2, 0, "c0"),
            seg(3, 0, "d0"),
        ];

        let episodes = vec![episode(0, "episode 0"), episode(1, "episode 1")];
        let assignments = vec![
            asg(0, 0, 0, 2),
            asg(0, 0, 1, 1),
            asg(0, 1, 0, 0),
            asg(1, 2, 0, 0),
        ];
        (segments, episodes, assignments)
    }

    #[test]
    fn articles_of_episodes_and_what_is_left_out() {
        let (segments, episodes, assignments) = fixture();
        let rows = episode_articles(&segments, &ArticleFacts::default(), &episodes, &assignments);
        let got: Vec<(u32, u32, u32, u32, u32, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r.episode_id,
                    r.article_rank,
                    r.doc_id,
                    r.segments,
                    r.best_rank,
                    r.passage.as_str(),
                    r.episode_passage.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 1, 1, 0, "b0", "b0"),
                (0, 1, 0, 2, 1, "a1", "b0"),
                (1, 0, 2, 1, 0, "c0", "c0"),
            ]
        );
        assert_eq!(rows[1].article_segments, 2);
        assert_eq!(rows[1].source_id.as_deref(), Some("https://news.example/0"));
        assert_eq!(rows[1].published, Some(100));
        assert!(rows.iter().all(|r| r.copy_of.is_none()));
        let c = coverage(&segments, &episodes, &assignments);
        assert_eq!(
            c,
            [Coverage {
                trial: 0,
                segments_assigned: 4,
                segments_left_out: 1,
                articles_assigned: 3,
                articles_left_out: 1,
            }]
        );
        assert_eq!(
            c[0].describe(),
            "4 of 5 segments (80%) and 3 of 4 articles in an episode"
        );
    }

    #[test]
    fn outlets_that_carried_an_episode_s_passages_whole_are_its_articles() {
        let (segments, episodes, assignments) = fixture();
        // Two outlets carried article 0's paragraphs whole (a0 and a1; a1 only), one carried
        // article 3's (in no episode): the first two are articles of episode 0, after its own,
        // by the rank of the best segment they carry, and counted in its `n_articles`.
        let copy = |doc_id: u32, copy_of: u32, carried: Vec<u32>| CopyArticle {
            key_event: "e".into(),
            doc_id,
            source_id: Some(format!("https://wire.example/{doc_id}")),
            title: None,
            published: Some(200),
            published_at: Some(200 * 86_400_000),
            copy_of,
            carried,
        };
        let copies = [
            copy(4, 0, vec![0, 1]),
            copy(5, 0, vec![1]),
            copy(6, 3, vec![0]),
        ];
        let facts = ArticleFacts {
            copies: copies.to_vec(),
            instants: [(0, 1_700_000_000_000)].into(),
        };
        let with = episode_articles(&segments, &facts, &episodes, &assignments);
        let got: Vec<(u32, u32, u32, u32, u32, Option<u32>)> = with
            .iter()
            .map(|r| {
                (
                    r.episode_id,
                    r.article_rank,
                    r.doc_id,
                    r.segments,
                    r.best_rank,
                    r.copy_of,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, 1, 1, 0, None),
                (0, 1, 0, 2, 1, None),
                (0, 2, 4, 2, 1, Some(0)),
                (0, 3, 5, 1, 1, Some(0)),
                (1, 0, 2, 1, 0, None),
            ]
        );
        assert_eq!(with[2].passage, "a1");
        // The instants: the corpus's for an article with segments, the copy's own for a copy.
        assert_eq!(with[1].published_at, Some(1_700_000_000_000));
        assert_eq!(with[0].published_at, None);
        assert_eq!(with[2].published_at, Some(200 * 86_400_000));
        assert_eq!(with[2].article_segments, 0);
        let mut counted = episodes.clone();
        count_copies(&mut counted, &with);
        assert_eq!(
            counted.iter().map(|e| e.n_articles).collect::<Vec<_>>(),
            [2, 0]
        );
    }

    #[test]
    fn the_same_passage_from_other_outlets_is_marked_as_an_echo() {
        let segments = vec![
            seg(
                0,
                0,
                "Flood water stood a metre deep on the high street by dawn.",
            ),
            seg(
                1,
                0,
                "Flood water stood a metre deep on the high street by dawn!",
            ),
            seg(2, 0, "Police opened shelters in two schools overnight."),
            seg(
                3,
                0,
                "\"Flood water stood a metre deep on the high street\" by dawn.",
            ),
        ];
        let episode = episode(0, "flood");
        let assignments = vec![
            asg(0, 0, 0, 0),
            asg(0, 1, 0, 1),
            asg(0, 2, 0, 2),
            asg(0, 3, 0, 3),
        ];
        let rows = episode_articles(
            &segments,
            &ArticleFacts::default(),
            &[episode],
            &assignments,
        );
        let echoes: Vec<(u32, Option<u32>)> = rows.iter().map(|r| (r.doc_id, r.echo_of)).collect();
        assert_eq!(echoes, [(0, None), (1, Some(0)), (2, None), (3, Some(0))]);
    }
}
