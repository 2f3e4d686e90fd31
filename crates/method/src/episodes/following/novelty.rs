//! The novelty view of a followed run (issue 63): the articles that arrived since the previous
//! run of the same `--out` are judged on their own, not only against the event's whole history.
//! Not part of the paper (docs/method.md §6 "Following"), which mines one batch; it is the
//! first-story detection of TDT and the story discovery of USTORY applied after §6: each new
//! segment either belongs to an episode already told, or joins today's other unmatched
//! segments, and a coherent group of them becomes an episode of its own.
//!
//! Over the episodes §6 kept (a fresh run's, unchanged before this step):
//! 0a. **Kept whole.** A previous run's episode that the fresh run cut into pieces made mostly
//!    of it (a piece holds at least two of its segments, they are most of the piece's old
//!    segments, and they are at least [`crate::lineage::MIN_SHARE`] of the piece or the piece
//!    [continues](continuation) it) is one episode again: the pieces are joined into the one
//!    holding most of it. The relative cuts, judged against an event that grew, split a
//!    development told yesterday into pure pieces (on the fed stories, most phases found one day
//!    and lost the next were split so, and a development that grew threefold in a day into
//!    pieces mostly of today's articles); a reader following it keeps one episode and one id. A
//!    piece made mostly of another episode's old segments, or of today's articles that do not
//!    continue it, is not joined, so today's developments stay apart (1.–3.). It is done again
//!    after 3.: once today's groups are episodes of their own, what a piece has left may be
//!    yesterday's episode's segments alone (its recaps, or a piece cut with today's articles of
//!    another development), and it joins too.
//! 0. **Told on.** A previous run's episode that no kept episode continues (none shares
//!    [`crate::lineage::MIN_SHARE`] of either's segments with it, the lineage's own link) is
//!    told on as an episode (`source = "carried"`) of its segments that are left out or lie
//!    closer to its centre than to their episode's, when they come from at least
//!    `novelty_min_articles` articles and are as tight as the loosest kept episode (mean
//!    pairwise cosine): a development told yesterday does not vanish today because the
//!    relative rules judged it against more.
//! 1. **Matched.** An episode's *old core* is its members from articles that were there at the
//!    previous run; its centre is their unit mean, and its members' closeness the cosine of each
//!    to that centre. A new segment (its article arrived since) is *matched* to an episode when
//!    it is at least as close to the episode's centre as the episode's median old member is
//!    (an absolute test: as close as its own members are). A new segment of an episode with
//!    fewer than two old members (one of today's articles only) is judged with today's.
//! 2. **Today's articles.** Every unmatched new segment — in an episode it does not match, in
//!    one of today's, or left out — is judged with the others of its article: each article that
//!    has some is a vector (their unit mean), and those articles are grouped by average linkage
//!    of their cosine distances, cut at the mean cohesion of the kept episodes' articles (each
//!    episode's mean pairwise cosine of its articles' vectors): a group of today's articles is
//!    as tight as the articles of an episode of the event. A group is two developments when
//!    the two sides at the top of its linkage (each of `novelty_min_articles` or more) lie
//!    further apart than half-way from how far the event's developments lie from each other
//!    (the median, over the kept episodes, of the cosine of each one's centre to its nearest
//!    other's) up to the group's own level (the cosine of its halves, [`continuation`]): it is
//!    cut in two (two phases of one coup arriving on one day, whose articles share its words).
//! 3. **Today's episodes.** A group of at least `novelty_min_articles` articles (and
//!    `min_segments` segments) becomes an episode (`source = "novelty"`) of those segments,
//!    taken out of the episodes they were in or out of `left_out`. A kept episode left with
//!    fewer than `min_segments` (one of today's, regrouped) is dropped, its segments left out
//!    (`episode-dropped-by-novelty`). Old segments move only to an episode kept whole (0a.) or
//!    told on (0.): the followed run differs from the fresh one by keeping yesterday's
//!    developments whole and telling today's articles on their own.
//!
//! Costs: one pass over the event's segments, then the linkage over today's articles with
//! unmatched segments (quadratic in them: one day's articles of one event, not the event's), and
//! once more over each group of twice `novelty_min_articles` or more (no more than the first).
//! The same rows for any worker or process layout: a plain function of one event's rows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::episodes::classification::classify::{self, dot64 as dot, unit_centre as centre};
use crate::episodes::event::EventInput;
use crate::episodes::params::EpisodeParams;
use crate::tables::{Assignment, Episode, EpisodeSpan, LeftOut};
use today::{article_cohesion, article_groups, two_developments};

/// The source of an episode the novelty view made of today's articles (`episodes.source`).
pub const SOURCE: &str = "novelty";

/// The source of a previous run's episode that the novelty view told on (`episodes.source`).
pub const CARRIED: &str = "carried";

/// What the novelty view did to one event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoveltyReport {
    /// New segments (their articles arrived since the previous run).
    pub new_segments: usize,
    /// Of them, those no kept episode matched.
    pub unmatched: usize,
    /// Episodes it added of today's articles.
    pub added: usize,
    /// Previous episodes it told on (none of the kept ones continued them).
    pub carried: usize,
    /// Kept episodes joined into another because both were pieces of one previous episode.
    pub rejoined: usize,
    /// Segments those episodes took out of other episodes.
    pub moved: usize,
    /// Segments those episodes took out of `left_out`.
    pub rescued: usize,
    /// The loosest kept episode's cohesion among its segments and among its articles.
    pub cohesion: (f64, f64),
    /// The sizes (articles) of today's groups, largest first.
    pub groups: Vec<usize>,
    /// Kept episodes left with fewer than `min_segments` segments (today's, regrouped), their
    /// segments left out.
    pub dropped: usize,
}

/// One event's rows after §6 (trial `trial`), changed in place by [`novelty_view`].
pub struct Rows<'a> {
    /// The kept episodes.
    pub episodes: &'a mut Vec<Episode>,
    /// Their segments.
    pub assignments: &'a mut Vec<Assignment>,
    /// The segments in no episode.
    pub left_out: &'a mut Vec<LeftOut>,
}

/// The keywords of each of some groups of segments, most telling first
/// ([`crate::episodes::clusters::preparation::Prepared::keywords`] in a run).
pub type Keywords<'a> = dyn Fn(&[Vec<usize>]) -> Vec<Vec<String>> + 'a;

/// The median of `values` (the lower of the two middle ones; `values` not empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

/// The novelty view over one event's rows of `trial` (see the module's header): `arrived[s]`
/// says whether segment `s`'s article arrived since the previous run; `previous` holds the
/// previous run's episodes as indices of this run's segments (those still there). Returns what
/// it did; the rows are unchanged when no group qualifies, or when no article (or every one)
/// arrived.
pub fn novelty_view(
    input: &EventInput,
    keywords: &Keywords,
    params: &EpisodeParams,
    arrived: &[bool],
    previous: &[Vec<usize>],
    trial: u32,
    rows: Rows,
) -> NoveltyReport {
    let segs = input.segments;
    let mut report = NoveltyReport {
        new_segments: arrived.iter().filter(|&&a| a).count(),
        ..NoveltyReport::default()
    };
    if arrived.len() != segs.len()
        || report.new_segments == 0
        || report.new_segments == segs.len()
        || input.embeddings.len() != segs.len()
    {
        return report;
    }
    let (mut members, mut home) = members_of(segs, trial, &rows);
    let every: Vec<usize> = (0..segs.len()).collect();
    let units = classify::unit_vectors(input.embeddings, &every);
    let Some((cohesion, article_cohesion)) = cohesions(input, &units, &members) else {
        return report;
    };
    report.cohesion = (cohesion, article_cohesion);
    let kept = members.len();
    let enough = |g: &[usize]| {
        let articles: BTreeSet<u32> = g.iter().map(|&s| segs[s].doc_id).collect();
        g.len() >= params.min_segments.max(2)
            && articles.len() >= params.novelty_min_articles.max(1)
    };
    // 0a. Yesterday's episodes that the fresh run cut into pieces made mostly of them are one
    // again.
    report.rejoined = rejoin(segs, &units, previous, &mut members, &mut home, arrived);
    // 0. Yesterday's episodes that no kept episode continues are told on.
    for g in restored(previous, &members, &home, &units) {
        if enough(&g) && classify::mean_pairwise_cosine(input.embeddings, &g) >= cohesion {
            take(&mut members, &mut home, g);
            report.carried += 1;
        }
    }
    // 1. The new segments that no episode's old core matches.
    let unmatched = unmatched(&units, &members, &home, arrived);
    report.unmatched = unmatched.len();
    // 2. Today's articles grouped by their unmatched segments, cut at the loosest kept
    // episode's cohesion among its articles; 3. the groups of enough articles become episodes.
    let apart = continuation::apart(&continuation::told(segs, &units, &members));
    let groups = article_groups(segs, &units, &unmatched, article_cohesion)
        .into_iter()
        .flat_map(|g| two_developments(segs, &units, g, apart, params.novelty_min_articles));
    for g in groups {
        report.groups.push(
            g.iter()
                .map(|&s| segs[s].doc_id)
                .collect::<BTreeSet<_>>()
                .len(),
        );
        if enough(&g) {
            report.moved += g.iter().filter(|&&s| home[s].is_some()).count();
            report.rescued += g.iter().filter(|&&s| home[s].is_none()).count();
            take(&mut members, &mut home, g);
            report.added += 1;
        }
    }
    report.groups.sort_unstable_by(|a, b| b.cmp(a));
    // 0a again: with today's groups taken out, a piece of yesterday's episode may now be made
    // mostly of it.
    report.rejoined += rejoin(segs, &units, previous, &mut members, &mut home, arrived);
    if members.len() > kept || report.rejoined > 0 {
        report.dropped = members[..kept]
            .iter()
            .filter(|m| !m.is_empty() && m.len() < params.min_segments.max(1))
            .count();
        rebuild(
            input,
            keywords,
            params,
            trial,
            rows,
            members,
            kept,
            report.carried,
            &units,
        );
    }
    report
}

/// The loosest kept episode's cohesion among its segments (mean pairwise cosine), and where
/// today's articles are cut: the mean of the kept episodes' cohesions among their articles (one
/// loose episode does not set it; μ − σ joined two phases of one day, the median and μ told as
/// many, docs/quality.md). `None` when either is undefined.
fn cohesions(input: &EventInput, units: &[Vec<f64>], members: &[Vec<usize>]) -> Option<(f64, f64)> {
    let cohesion = members
        .iter()
        .filter(|m| m.len() >= 2)
        .map(|m| classify::mean_pairwise_cosine(input.embeddings, m))
        .fold(f64::INFINITY, f64::min);
    let of_articles: Vec<f64> = members
        .iter()
        .filter_map(|m| article_cohesion(input.segments, units, m))
        .collect();
    if of_articles.is_empty() || !cohesion.is_finite() {
        return None;
    }
    let articles = crate::episodes::terms::termspace::Cut::Mean.bound(&of_articles);
    articles.is_finite().then_some((cohesion, articles))
}

/// The new segments (`arrived`) that no episode matches: each episode's old core (its members
/// from articles that were there before, two or more) has a centre, the unit mean of their
/// vectors, and a bound, the median of their cosines to it; a new segment in an episode is
/// matched when its cosine to that centre reaches the bound, a left-out one when it reaches some
/// episode's.
fn unmatched(
    units: &[Vec<f64>],
    members: &[Vec<usize>],
    home: &[Option<usize>],
    arrived: &[bool],
) -> Vec<usize> {
    let cores: Vec<Option<(Vec<f64>, f64)>> = members
        .iter()
        .map(|m| {
            let old: Vec<usize> = m.iter().copied().filter(|&s| !arrived[s]).collect();
            if old.len() < 2 {
                return None;
            }
            let c = centre(units, &old)?;
            let closeness = old.iter().map(|&s| dot(&units[s], &c)).collect();
            Some((c, median(closeness)))
        })
        .collect();
    let matches = |s: usize, e: usize| {
        cores[e]
            .as_ref()
            .is_some_and(|(c, bound)| dot(&units[s], c) >= *bound)
    };
    (0..arrived.len())
        .filter(|&s| arrived[s])
        .filter(|&s| match home[s] {
            Some(e) => !matches(s, e),
            None => !(0..members.len()).any(|e| matches(s, e)),
        })
        .collect()
}

/// Each kept episode's members of `trial` in rank order (by position among the trial's rows of
/// `rows.episodes`) and each segment's episode.
fn members_of(
    segs: &[crate::tables::Segment],
    trial: u32,
    rows: &Rows,
) -> (Vec<Vec<usize>>, Vec<Option<usize>>) {
    let at: HashMap<(u32, u32), usize> = segs
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.doc_id, s.seg_idx), i))
        .collect();
    let ids: BTreeMap<u32, usize> = rows
        .episodes
        .iter()
        .filter(|e| e.trial == trial)
        .enumerate()
        .map(|(i, e)| (e.episode_id, i))
        .collect();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    let mut home: Vec<Option<usize>> = vec![None; segs.len()];
    let mut ranked: Vec<&Assignment> = rows
        .assignments
        .iter()
        .filter(|a| a.trial == trial)
        .collect();
    ranked.sort_by_key(|a| (a.episode_id, a.rank));
    for a in ranked {
        if let (Some(&e), Some(&s)) = (ids.get(&a.episode_id), at.get(&(a.doc_id, a.seg_idx))) {
            members[e].push(s);
            home[s] = Some(e);
        }
    }
    (members, home)
}

/// The previous run's episodes (`previous`, indices of this run's segments) that no kept
/// episode continues — none shares [`crate::lineage::MIN_SHARE`] of either's segments with it,
/// the lineage's own link — each as the segments of it that are left out or lie closer to its
/// centre than to their episode's.
fn restored(
    previous: &[Vec<usize>],
    members: &[Vec<usize>],
    home: &[Option<usize>],
    units: &[Vec<f64>],
) -> Vec<Vec<usize>> {
    let centres: Vec<Option<Vec<f64>>> = members.iter().map(|m| centre(units, m)).collect();
    let mut out = Vec::new();
    for p in previous {
        let held: BTreeSet<usize> = p.iter().copied().collect();
        let continued = members.iter().any(|m| {
            let shared = m.iter().filter(|s| held.contains(s)).count() as f64;
            shared > 0.0
                && (shared >= crate::lineage::MIN_SHARE * p.len() as f64
                    || shared >= crate::lineage::MIN_SHARE * m.len() as f64)
        });
        let Some(c) = centre(units, p).filter(|_| !continued) else {
            continue;
        };
        let g: Vec<usize> = held
            .into_iter()
            .filter(|&s| match home[s].and_then(|e| centres[e].as_ref()) {
                Some(e) => dot(&units[s], &c) > dot(&units[s], e),
                None => true,
            })
            .collect();
        out.push(g);
    }
    out
}

/// Joins the kept episodes that are pieces of one previous episode (in `previous` order, each
/// kept episode joined at most once): a piece holds at least two of its segments, they are most
/// of the piece's old segments (from articles there before), and they are at least
/// [`crate::lineage::MIN_SHARE`] of the piece or the piece continues it ([`continuation`]: a
/// development grown with today's articles). The pieces go into the one holding most of it
/// (the first on ties), in rank order after its own. Returns how many were joined into another.
fn rejoin(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    previous: &[Vec<usize>],
    members: &mut [Vec<usize>],
    home: &mut [Option<usize>],
    arrived: &[bool],
) -> usize {
    let told = continuation::told(segs, units, previous);
    let continues = |m: &[usize], p: usize| continuation::closest(units, &told, m) == Some(p);
    let mut joined = 0;
    let mut taken = vec![false; members.len()];
    // Each episode's old segments; only taken episodes change below, and they are not pieces.
    let old: Vec<usize> = members
        .iter()
        .map(|m| m.iter().filter(|&&s| !arrived[s]).count())
        .collect();
    for (i, p) in previous.iter().enumerate() {
        // How many of p's segments each episode holds, through `home`: linear in p.
        let mut from_p: BTreeMap<usize, usize> = BTreeMap::new();
        for &s in p {
            if let Some(e) = home[s] {
                *from_p.entry(e).or_default() += 1;
            }
        }
        let mut pieces: Vec<(usize, usize)> = from_p
            .into_iter()
            .filter(|&(e, n)| {
                !taken[e]
                    && n >= 2
                    && n * 2 > old[e]
                    && (n as f64 >= crate::lineage::MIN_SHARE * members[e].len() as f64
                        || continues(&members[e], i))
            })
            .map(|(e, n)| (n, e))
            .collect();
        if pieces.len() < 2 {
            continue;
        }
        pieces.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let main = pieces[0].1;
        taken[main] = true;
        for &(_, e) in &pieces[1..] {
            let moved = std::mem::take(&mut members[e]);
            for &s in &moved {
                home[s] = Some(main);
            }
            members[main].extend(moved);
            taken[e] = true;
            joined += 1;
        }
    }
    joined
}

/// Makes `g` an episode of its own after the others, taking its segments out of theirs.
fn take(members: &mut Vec<Vec<usize>>, home: &mut [Option<usize>], g: Vec<usize>) {
    let e = members.len();
    for &s in &g {
        if let Some(h) = home[s] {
            members[h].retain(|&x| x != s);
        }
        home[s] = Some(e);
    }
    members.push(g);
}

/// Each segment of `trial`'s rows (by index) with its confidence and similarity as the rows
/// give them (similarity 0 for an assigned one).
fn confidences(
    segs: &[crate::tables::Segment],
    trial: u32,
    rows: &Rows,
) -> HashMap<usize, (f64, f64)> {
    let mut out = HashMap::new();
    for a in rows.assignments.iter().filter(|a| a.trial == trial) {
        if let Some(s) = at(segs, a.doc_id, a.seg_idx) {
            out.insert(s, (a.confidence, 0.0));
        }
    }
    for r in rows.left_out.iter().filter(|r| r.trial == trial) {
        if let Some(s) = at(segs, r.doc_id, r.seg_idx) {
            out.insert(s, (r.confidence, r.similarity));
        }
    }
    out
}

/// The index of segment (`doc_id`, `seg_idx`) among `segs` (in that order).
fn at(segs: &[crate::tables::Segment], doc_id: u32, seg_idx: u32) -> Option<usize> {
    segs.binary_search_by_key(&(doc_id, seg_idx), |s| (s.doc_id, s.seg_idx))
        .ok()
}

/// `trial`'s `left_out` rows again: a kept episode (the first `kept` of `members`) left with
/// fewer than `min_segments` is emptied, its segments left out as `episode-dropped-by-novelty`;
/// the segments now in an episode leave.
fn leave_out(
    segs: &[crate::tables::Segment],
    params: &EpisodeParams,
    trial: u32,
    rows: &mut Rows,
    members: &mut [Vec<usize>],
    kept: usize,
    confidence: &HashMap<usize, (f64, f64)>,
) {
    let min = params.min_segments.max(1);
    for m in members[..kept].iter_mut().filter(|m| m.len() < min) {
        for s in m.drain(..) {
            let (confidence, similarity) = confidence.get(&s).copied().unwrap_or_default();
            rows.left_out.push(LeftOut {
                key_event: segs[s].key_event.clone(),
                trial,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                reason: "episode-dropped-by-novelty".into(),
                confidence,
                similarity,
            });
        }
    }
    let assigned: BTreeSet<usize> = members.iter().flatten().copied().collect();
    rows.left_out.retain(|r| {
        r.trial != trial || !at(segs, r.doc_id, r.seg_idx).is_some_and(|s| assigned.contains(&s))
    });
    rows.left_out
        .sort_by_key(|r| (r.trial, r.doc_id, r.seg_idx));
}

/// The row of an added episode `id` of `members` (ranked here by closeness to their centre,
/// closest first), `source` and `keywords` (the first three its title).
fn added_row(
    segs: &[crate::tables::Segment],
    units: &[Vec<f64>],
    trial: u32,
    id: u32,
    members: &mut Vec<usize>,
    source: &str,
    keywords: Vec<String>,
) -> Episode {
    let c = centre(units, members).unwrap_or_else(|| units[members[0]].clone());
    let mut by: Vec<(f64, usize)> = members.iter().map(|&s| (dot(&units[s], &c), s)).collect();
    by.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    *members = by.into_iter().map(|(_, s)| s).collect();
    Episode {
        key_event: segs[members[0]].key_event.clone(),
        trial,
        episode_id: id,
        stable_id: None,
        status: None,
        title: crate::episodes::naming::names::title_of(&keywords),
        title_fields: Vec::new(),
        keywords,
        example_sentences: Vec::new(),
        n_segments: 0,
        source: source.into(),
        n_articles: 0,
        first_date: None,
        peak_date: None,
        last_date: None,
        phase_id: id,
        phase_stable_id: None,
    }
}

/// The rows of `trial` again from `members`: the first `kept` are the kept episodes (their
/// segments in the order they had, those taken out gone; one left with fewer than
/// `min_segments` is dropped, [`leave_out`]), then `carried` episodes told on from the previous
/// run, then today's, each ranked by closeness to its centre. Episode ids count from 0 again in
/// that order, and the phases are formed again over them all; segments in an episode leave
/// `left_out`.
#[allow(clippy::too_many_arguments)]
fn rebuild(
    input: &EventInput,
    keywords: &Keywords,
    params: &EpisodeParams,
    trial: u32,
    mut rows: Rows,
    mut members: Vec<Vec<usize>>,
    kept: usize,
    carried: usize,
    units: &[Vec<f64>],
) {
    let segs = input.segments;
    let confidence = confidences(segs, trial, &rows);
    leave_out(
        segs,
        params,
        trial,
        &mut rows,
        &mut members,
        kept,
        &confidence,
    );
    let words = keywords(&members);
    // The episodes of `trial` in their new order: the kept ones left, then the added ones.
    let (mut old, mut others): (Vec<Episode>, Vec<Episode>) =
        rows.episodes.drain(..).partition(|e| e.trial == trial);
    let mut old: Vec<Option<Episode>> = old.drain(..).map(Some).collect();
    let mut episodes: Vec<Episode> = Vec::new();
    let mut order: Vec<Vec<usize>> = Vec::new();
    for (e, (m, words)) in members.iter_mut().zip(words).enumerate() {
        if m.is_empty() {
            continue;
        }
        let id = episodes.len() as u32;
        let mut row = match old.get_mut(e).and_then(Option::take) {
            Some(row) => row,
            None => {
                let source = if e < kept + carried { CARRIED } else { SOURCE };
                added_row(segs, units, trial, id, m, source, words)
            }
        };
        let span = EpisodeSpan::of(m.iter().map(|&s| (segs[s].doc_id, segs[s].doc_date)));
        row.episode_id = id;
        row.n_segments = m.len() as u32;
        row.n_articles = span.n_articles;
        row.first_date = span.first_date;
        row.peak_date = span.peak_date;
        row.last_date = span.last_date;
        episodes.push(row);
        order.push(std::mem::take(m));
    }
    // The phases again, over every episode (`crate::episodes::classification::phases`, as §6 groups its own): one of
    // today's that tells the same phase as an older one reads as a part of it.
    let dates: Vec<Option<i32>> = segs.iter().map(|s| s.doc_date).collect();
    for (episode, phase) in
        episodes
            .iter_mut()
            .zip(crate::episodes::classification::phases::phases(
                input.embeddings,
                &dates,
                &order,
            ))
    {
        episode.phase_id = phase as u32;
    }
    rows.assignments.retain(|a| a.trial != trial);
    for (episode, m) in episodes.iter().zip(&order) {
        for (rank, &s) in m.iter().enumerate() {
            rows.assignments.push(Assignment {
                key_event: episode.key_event.clone(),
                trial,
                episode_id: episode.episode_id,
                stable_id: None,
                status: None,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                rank: rank as u32,
                confidence: confidence.get(&s).map_or(0.0, |c| c.0),
            });
        }
    }
    others.extend(episodes);
    others.sort_by_key(|e| (e.trial, e.episode_id));
    *rows.episodes = others;
    rows.assignments
        .sort_by_key(|a| (a.trial, a.episode_id, a.rank));
}

pub mod continuation;
#[cfg(test)]
mod tests;
mod today;
