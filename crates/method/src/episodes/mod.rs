//! The per-event episode stages (docs/method.md §3–§6): segment salience and partitioning,
//! candidate clusters from the top articles, no-LLM episode vectors and confidence
//! classification. For one key event, [`prepare()`] runs §3–§4 and [`episodes_without_llm`] §5
//! (no LLM) and §6; with an LLM, `run` classifies against its episodes with [`assign()`].
//!
//! Each stage is a plain function in a module of its own, the modules in rooms by stage:
//! - [`terms`] (§1–§3): term expansion and synonym groups ([`expand`]), the words told on days
//!   of their own ([`dated_words`]), the salient term space ([`termspace`]);
//! - [`clusters`] (§3–§4): salience and partitioning ([`partition`]), candidate clusters
//!   ([`candidates`]) and §3–§4's glue ([`preparation`]);
//! - [`classification`] (§5–§6): §5 without an LLM and §6's glue ([`assignment`]) over
//!   [`classify`] and [`selection`], the optional rules that keep an episode ([`keep_rules`]),
//!   the episode floor and the core split ([`episode_floor`]), the optional joining of kept
//!   episodes ([`join`]), the episodes of tight groups no episode covers ([`uncovered_groups`]),
//!   candidates that come back ([`dated_candidates`], [`distinct_candidates`]) and the phases
//!   ([`phases`]);
//! - [`naming`]: keywords and headline titles without an LLM ([`names`], [`headlines`]);
//! - [`following`]: the novelty view of a followed run ([`novelty`]).
//!
//! The settings are in [`params`], and the types the stages share (one event's input and what
//! comes of it) in [`event`]. Each stage's module is also at `crate::episodes::<stage>`, the
//! path it had before the rooms.

pub mod classification;
pub mod clusters;
pub mod event;
pub mod following;
pub mod naming;
pub mod params;
pub mod terms;

// Each stage's module at the path it had before the rooms (`crate::episodes::classify`).
pub use classification::{
    assignment, classify, dated_candidates, distinct_candidates, episode_floor, join, keep_rules,
    phases, selection, uncovered_groups,
};
pub use clusters::{candidates, partition, preparation};
pub use following::novelty;
pub use naming::{headlines, names};
pub use terms::{dated_words, expand, termspace};

pub use assignment::{
    assign, assign_explained, cluster_episodes, episodes_without_llm, left_out_counts, WithoutLlm,
};
pub use episode_floor::split_cores;
pub use event::{EpisodeSpec, EventCounts, EventError, EventInput};
pub use params::{Candidates, EpisodeParams, CORE_TOP, DEFAULT_MAX_FRAGMENTS, DEFAULT_MAX_RANKED};
pub use preparation::{prepare, Prepared};
pub use selection::Dropped;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::classify::ConfidenceRule;
    use super::episode_floor::restore_floor;
    use super::*;
    use crate::progress::steps::Steps;
    use crate::tables::Segment;

    fn spec(vector: Vec<f32>) -> EpisodeSpec {
        EpisodeSpec {
            vector,
            title: String::new(),
            title_fields: Vec::new(),
            keywords: Vec::new(),
            example_sentences: Vec::new(),
            source: "clusters",
        }
    }

    /// `n` segments of event "e", one per article.
    fn one_per_article(n: usize) -> Vec<Segment> {
        (0..n)
            .map(|i| Segment {
                key_event: "e".into(),
                theme: None,
                doc_id: i as u32,
                doc_date: None,
                seg_idx: 0,
                text: String::new(),
                source_id: None,
                title: None,
            })
            .collect()
    }

    /// An event input of segments and embeddings only.
    fn input_of<'a>(
        segments: &'a [Segment],
        vectors: &'a HashMap<String, Vec<f32>>,
        embeddings: &'a [Vec<f32>],
    ) -> EventInput<'a> {
        EventInput {
            segments,
            terms: Vec::new(),
            pairs: Vec::new(),
            word_vectors: vectors,
            embeddings,
            carried: &[],
        }
    }

    /// 30, 20 and 12 segments along three axes and 2 along the diagonal, with an episode vector
    /// along each axis and the diagonal.
    fn size_rule_event() -> (Vec<Vec<f32>>, Vec<EpisodeSpec>) {
        let mut embeddings = Vec::new();
        for (axis, n) in [(0usize, 30usize), (1, 20), (2, 12)] {
            for i in 0..n {
                let mut v = vec![0.05 * (i % 3) as f32; 3];
                v[axis] = 1.0;
                embeddings.push(v);
            }
        }
        embeddings.extend([vec![0.6, 0.6, 0.61], vec![0.61, 0.6, 0.6]]);
        let specs = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0; 3]]
            .iter()
            .map(|v| spec(v.to_vec()))
            .collect();
        (embeddings, specs)
    }

    #[test]
    fn the_size_rule_drops_the_small_tail_after_classification() {
        // 30, 20 and 12 segments along three axes, 2 along the diagonal: ln sizes 3.40, 3.00,
        // 2.48, 0.69 → μ − σ ≈ 1.35 (≈ 3.9 segments): the diagonal episode is dropped.
        let (embeddings, specs) = size_rule_event();
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: keep_rules::CohesionRule::All,
            ..EpisodeParams::default()
        };
        let sizes = |p: &EpisodeParams| {
            let (episodes, assignments) = assign(&input, "e", &specs, p, 0, &Steps::quiet());
            assert_eq!(
                assignments.len() as u32,
                episodes.iter().map(|e| e.n_segments).sum::<u32>()
            );
            episodes.iter().map(|e| e.n_segments).collect::<Vec<_>>()
        };
        // The default floor (5) does not bring the diagonal back: it has no whole top.
        assert_eq!(sizes(&params), vec![30, 20, 12]);
        let all = EpisodeParams {
            size: keep_rules::SizeRule::All,
            ..params
        };
        assert_eq!(sizes(&all), vec![30, 20, 12, 2]);
        // At most two episodes, the largest by `cap_by = "size"`: the two largest stay, in
        // their order.
        let capped = EpisodeParams {
            size: keep_rules::SizeRule::All,
            max_episodes: 2,
            cap_by: params::CapBy::Size,
            ..params
        };
        assert_eq!(sizes(&capped), vec![30, 20]);
    }

    #[test]
    fn the_cap_keeps_the_tightest_episodes_and_by_size_the_largest() {
        // 30 segments spread on a cone around x, 20 tight along y, 12 tight along z: with a cap
        // of 2, `core` keeps the two tight ones (a small, tight phase is not the first out),
        // `size` the two largest.
        let mut embeddings: Vec<Vec<f32>> = (0..30)
            .map(|i| {
                let a = i as f32 * 0.7;
                vec![1.0, 0.6 * a.sin(), 0.6 * a.cos()]
            })
            .collect();
        embeddings.extend((0..20).map(|i| vec![0.01 * (i % 4) as f32, 1.0, 0.01 * i as f32]));
        embeddings.extend((0..12).map(|i| vec![0.01 * i as f32, 0.01 * (i % 3) as f32, 1.0]));
        let specs: Vec<EpisodeSpec> = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
            .iter()
            .map(|v| spec(v.to_vec()))
            .collect();
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let sizes = |cap_by| {
            let params = EpisodeParams {
                confidence: ConfidenceRule::All,
                cohesion: keep_rules::CohesionRule::All,
                size: keep_rules::SizeRule::All,
                max_episodes: 2,
                cap_by,
                ..EpisodeParams::default()
            };
            let (episodes, _) = assign(&input, "e", &specs, &params, 0, &Steps::quiet());
            episodes.iter().map(|e| e.n_segments).collect::<Vec<_>>()
        };
        assert_eq!(EpisodeParams::default().cap_by, params::CapBy::Core);
        assert_eq!(sizes(params::CapBy::Core), vec![20, 12]);
        assert_eq!(sizes(params::CapBy::Size), vec![30, 20]);
    }

    #[test]
    fn an_episode_of_the_previous_run_is_carried_past_the_rules() {
        // The cap of 2 drops the 12 segments along z (indices 50..62); carried on from a
        // previous run that held them, they stay; a previous episode that the kept ones
        // continue changes nothing; with `carry` off, or nothing carried, the cap holds.
        let (embeddings, specs) = size_rule_event();
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let sizes_with = |carried: &[Vec<usize>], carry: bool, min_segments: usize| {
            let input = EventInput {
                carried,
                ..input_of(&segments, &vectors, &embeddings)
            };
            let params = EpisodeParams {
                confidence: ConfidenceRule::All,
                cohesion: keep_rules::CohesionRule::All,
                max_episodes: 2,
                min_segments,
                carry,
                ..EpisodeParams::default()
            };
            let (episodes, _) = assign(&input, "e", &specs, &params, 0, &Steps::quiet());
            episodes.iter().map(|e| e.n_segments).collect::<Vec<_>>()
        };
        let min = EpisodeParams::default().min_segments;
        let sizes = |carried: &[Vec<usize>], carry: bool| sizes_with(carried, carry, min);
        let z: Vec<usize> = (50..62).collect();
        assert_eq!(sizes(&[], true), vec![30, 20]);
        assert_eq!(sizes(std::slice::from_ref(&z), true), vec![30, 20, 12]);
        assert_eq!(sizes(std::slice::from_ref(&z), false), vec![30, 20]);
        assert_eq!(sizes(&[(0..10).collect()], true), vec![30, 20]);
        // Four of the twelve still there (a third of them): linked as lineage links, carried.
        assert_eq!(sizes(&[z[..4].to_vec()], true), vec![30, 20, 12]);
        // The diagonal (2 segments, dropped by the size rule before the cap): carried too,
        // unless under min_segments.
        assert_eq!(sizes(&[vec![62, 63]], true), vec![30, 20, 2]);
        assert_eq!(sizes_with(&[vec![62, 63]], true, 3).len(), 2);
    }

    #[test]
    fn every_left_out_segment_has_the_reason_of_its_rule() {
        // The size rule's event: the diagonal episode (2 segments) is dropped by the size rule.
        let (embeddings, specs) = size_rule_event();
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: keep_rules::CohesionRule::All,
            ..EpisodeParams::default()
        };
        let (_, assignments, rows) =
            assign_explained(&input, "e", &specs, &params, 0, &Steps::quiet());
        assert_eq!(assignments.len(), 62);
        assert_eq!(
            assignment::left_out_counts(&rows, 0)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![("episode-dropped-by-size".to_string(), 2)]
        );
        // The table's rows name the two segments, neither of them among the assignments.
        for r in &rows {
            assert_eq!((r.key_event.as_str(), r.trial), ("e", 0));
            assert!(!assignments
                .iter()
                .any(|a| (a.doc_id, a.seg_idx) == (r.doc_id, r.seg_idx)));
        }
        // With the paper's confidence bound, the diagonal segments (gap ≈ 0) are below it
        // instead, and every segment is accounted for once.
        let strict = EpisodeParams {
            confidence: ConfidenceRule::MeanMinusStd,
            ..params
        };
        let selection = selection::select_episodes(&input, &specs, &strict, &Steps::quiet());
        let rows = assignment::left_out(&input, "e", &selection, 0);
        let why = assignment::left_out_counts(&rows, 0);
        let covered = (0..segments.len())
            .filter(|&s| selection.covered(s))
            .count();
        assert_eq!(covered + why.values().sum::<usize>(), segments.len());
        assert_eq!(covered + rows.len(), segments.len());
        assert!(why.contains_key("below-confidence"), "{why:?}");
    }

    #[test]
    fn coverage_makes_an_episode_of_a_tight_group_no_episode_holds() {
        // Tight groups along x (10 segments) and y (10), and 8 along z that the candidates
        // (x and y only) miss: their gap between x and y is 0, so their confidence is under the
        // bound and they are in no episode.
        let mut embeddings = Vec::new();
        for axis in [0usize, 1, 2] {
            for i in 0..if axis == 2 { 8 } else { 10 } {
                let mut v = vec![0.0f32; 4];
                v[axis] = 1.0;
                // z a little tighter than x and y: as tight as the loosest kept episode.
                v[3] = if axis == 2 { 0.01 } else { 0.02 } * (i % 2) as f32;
                embeddings.push(v);
            }
        }
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs: Vec<EpisodeSpec> = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
            .iter()
            .map(|v| spec(v.to_vec()))
            .collect();
        let params = EpisodeParams {
            rank_neighbors: 3,
            min_episodes: 0,
            ..EpisodeParams::default()
        };
        let mut selection = selection::select_episodes(&input, &specs, &params, &Steps::quiet());
        assert_eq!(
            assignment::left_out_counts(&assignment::left_out(&input, "e", &selection, 0), 0)
                .get("below-confidence"),
            Some(&8)
        );
        let scores = vec![1.0; segments.len()];
        let groups = uncovered_groups::dense_uncovered_groups(&input, &scores, &selection, &params);
        assert_eq!(groups, vec![(20..28).collect::<Vec<usize>>()]);
        let added = vec![spec(vec![0.0, 0.0, 1.0, 0.0])];
        selection.add_kept(&input, &added, &groups, &params);
        let all: Vec<EpisodeSpec> = specs.into_iter().chain(added).collect();
        let (episodes, assignments) = assignment::emit(&input, "e", &all, &selection, &params, 0);
        assert_eq!(
            episodes.iter().map(|e| e.n_segments).collect::<Vec<_>>(),
            vec![10, 10, 8]
        );
        assert_eq!(assignments.len(), 28);
        assert!(assignment::left_out(&input, "e", &selection, 0).is_empty());
        // A group from fewer than MIN_ARTICLES articles is not an episode: all 8 in 2 articles.
        let mut two = segments.clone();
        for (i, s) in two.iter_mut().enumerate().skip(20) {
            s.doc_id = 100 + (i % 2) as u32;
        }
        let input = input_of(&two, &vectors, &embeddings);
        let selection = selection::select_episodes(&input, &all[..2], &params, &Steps::quiet());
        assert!(
            uncovered_groups::dense_uncovered_groups(&input, &scores, &selection, &params)
                .is_empty()
        );
    }

    #[test]
    fn the_floor_stops_the_merge_and_brings_back_the_largest_dropped_episodes() {
        // Distances 1, 2, 9 under a bound of 10: complete linkage joins all three; a floor of 2
        // stops after the first merge, a floor of 3 merges nothing.
        let d = [1.0, 2.0, 9.0];
        let cut = |floor| {
            crate::grouping::linkage::linkage_cut_floor(
                &d,
                3,
                kodama::Method::Complete,
                10.0,
                floor,
            )
        };
        assert_eq!(cut(0), vec![0, 0, 0]);
        assert_eq!(cut(2), vec![0, 0, 1]);
        assert_eq!(cut(3), vec![0, 1, 2]);
        // Kept: episode 0 only; floor 3 brings back the largest dropped ones with at least two
        // segments (3, then 1; never 2, with one segment), when their cores are as dense as
        // episode 0's.
        let members: Vec<Vec<u8>> = vec![vec![0; 9], vec![0; 3], vec![0; 1], vec![0; 5]];
        let cores = [0.5, 0.6, 0.9, 0.5];
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 3);
        assert_eq!(kept, vec![true, true, false, true]);
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 10);
        assert_eq!(kept, vec![true, true, false, true]);
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &cores, 2, 0);
        assert_eq!(kept, vec![true, false, false, false]);
        // A looser core than the loosest kept episode's stays out: episode 3 (0.4 < 0.5).
        let looser = [0.5, 0.6, 0.9, 0.4];
        let mut kept = vec![true, false, false, false];
        restore_floor(&mut kept, &members, &looser, 2, 3);
        assert_eq!(kept, vec![true, true, false, false]);
        // Nothing kept: the largest dropped ones come back whatever their cores.
        let mut kept = vec![false; 4];
        restore_floor(&mut kept, &members, &looser, 2, 2);
        assert_eq!(kept, vec![true, false, false, true]);
    }

    #[test]
    fn split_cores_separates_two_tight_groups_and_leaves_one_alone() {
        // Six segments near x, six near y: two cores at cosine distance ≈ 1.
        let mut embeddings = Vec::new();
        for i in 0..6 {
            embeddings.push(vec![1.0, 0.02 * i as f32, 0.0]);
            embeddings.push(vec![0.02 * i as f32, 1.0, 0.0]);
        }
        let members: Vec<usize> = (0..12).collect();
        let (a, b) = split_cores(&embeddings, &members, 0.5).expect("two cores");
        assert_eq!(a, [0, 2, 4, 6, 8, 10]);
        assert_eq!(b, [1, 3, 5, 7, 9, 11]);
        // Farther apart than the bound only: with a bound above their distance, no split.
        assert!(split_cores(&embeddings, &members, 1.5).is_none());
        // Fewer than CORE_TOP on a side: no split.
        assert!(split_cores(&embeddings, &members[..9], 0.5).is_none());
        // One core: the parts lie close, no split.
        let one: Vec<Vec<f32>> = (0..12).map(|i| vec![1.0, 0.01 * i as f32, 0.0]).collect();
        assert!(split_cores(&one, &members, 0.1).is_none());
    }

    #[test]
    fn the_core_rule_drops_episodes_whose_top_segments_are_loose() {
        // Three tight episodes (identical segments) and one loose one (spread segments), each
        // of 8 segments along its own axis of a 6-dimensional space.
        let mut embeddings = Vec::new();
        for axis in 0..3 {
            for _ in 0..8 {
                let mut v = vec![0.0f32; 6];
                v[axis] = 1.0;
                embeddings.push(v);
            }
        }
        for i in 0..8 {
            let mut v = vec![0.0f32; 6];
            v[3] = 1.0;
            v[4 + i % 2] = if i < 4 { 1.0 } else { -1.0 };
            embeddings.push(v);
        }
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs: Vec<EpisodeSpec> = (0..4)
            .map(|axis| {
                let mut v = vec![0.0f32; 6];
                v[axis] = 1.0;
                spec(v)
            })
            .collect();
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: keep_rules::CohesionRule::All,
            size: keep_rules::SizeRule::All,
            rank_neighbors: 3,
            ..EpisodeParams::default()
        };
        let count = |p: &EpisodeParams| assign(&input, "e", &specs, p, 0, &Steps::quiet()).0.len();
        assert_eq!(count(&params), 4);
        let core = EpisodeParams {
            core: keep_rules::CohesionRule::MeanMinusStd,
            ..params
        };
        assert_eq!(count(&core), 3);
    }

    #[test]
    fn density_ranking_puts_the_tight_core_before_loose_but_similar_segments() {
        // One episode along x. Five identical core segments at cosine 0.9 to it; four loose
        // ones at cosine ≈ 0.95 to it but spread apart from each other.
        let mut embeddings = vec![vec![0.9f32, 0.435_889_9, 0.0]; 5];
        embeddings.extend([
            vec![0.95, 0.0, 0.312],
            vec![0.95, 0.0, -0.312],
            vec![0.95, -0.22, 0.22],
            vec![0.95, -0.3, -0.1],
        ]);
        let segments = one_per_article(embeddings.len());
        let vectors = HashMap::new();
        let input = input_of(&segments, &vectors, &embeddings);
        let specs = vec![spec(vec![1.0, 0.0, 0.0])];
        let params = EpisodeParams {
            confidence: ConfidenceRule::All,
            cohesion: keep_rules::CohesionRule::All,
            size: keep_rules::SizeRule::All,
            rank_neighbors: 4,
            ..EpisodeParams::default()
        };
        let order = |rank| {
            let p = EpisodeParams {
                rank,
                ..params.clone()
            };
            let (_, assignments) = assign(&input, "e", &specs, &p, 0, &Steps::quiet());
            assignments.iter().map(|a| a.doc_id).collect::<Vec<u32>>()
        };
        assert_eq!(order(classify::RankBy::Density)[..5], [0, 1, 2, 3, 4]);
        let by_similarity = order(classify::RankBy::Similarity);
        assert!(
            by_similarity[..4].iter().all(|&d| d >= 5),
            "{by_similarity:?}"
        );
    }
}
