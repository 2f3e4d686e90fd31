//! `epimine demo`: the built-in default run — a synthetic corpus with planted episodes, the
//! whole episode pipeline on it, and the evaluation against the planted episodes. Also a small
//! hand-written example dataset with a hand-made run, whose scores are computed by hand (used by
//! the storage and evaluation tests).

use crate::eval::{self, EvalError, Report};
use crate::import::{self, ImportError};
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode};

/// Errors of the demo.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Import failed.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// Evaluation failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The run failed.
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    /// No async runtime could be started.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// The run returned no outcome: the demo runs in one process, which is process 0.
    #[error("model: the demo runs in one process")]
    NotProcessZero,
}

/// One example event: theme, name, dates, articles of (label, text), gold episodes.
struct ExampleEvent {
    theme: &'static str,
    key_event: &'static str,
    dates: &'static [&'static str],
    articles: &'static [&'static [(&'static str, &'static str)]],
    episodes: &'static [&'static str],
}

const EXAMPLE: &[ExampleEvent] = &[
    ExampleEvent {
        theme: "natural_disasters",
        key_event: "example_river_flood",
        dates: &["3/2/2024", "3/3/2024", "3/5/2024", "3/9/2024"],
        episodes: &[
            "Heavy rain | bursts | river banks | 1 March 2024 | Riverton",
            "Residents | evacuate | to shelters | 2 March 2024 | Riverton",
            "Government | announces | relief fund | 8 March 2024 | capital",
        ],
        articles: &[
            &[
                ("M", "Floods hit the town of Riverton after days of storms."),
                (
                    "0",
                    "Torrential rain on Friday pushed the river over its banks.",
                ),
                (
                    "0",
                    "Water from the swollen river poured into low streets overnight.",
                ),
                (
                    "1",
                    "Hundreds of residents fled their homes as the water rose.",
                ),
                ("X", "The town hosts a music festival every summer."),
            ],
            &[
                (
                    "0",
                    "The river burst its banks near the old bridge after record rainfall.",
                ),
                (
                    "1",
                    "Families spent the night in a school turned into an emergency shelter.",
                ),
                (
                    "1",
                    "Rescue boats carried elderly residents from flooded houses to shelters.",
                ),
                (
                    "0",
                    "Meteorologists said the rainfall was the heaviest in forty years.",
                ),
            ],
            &[
                (
                    "1",
                    "Evacuation centres filled up as more residents left the valley.",
                ),
                (
                    "0",
                    "Flood water covered farmland along the river for miles.",
                ),
                (
                    "1",
                    "Volunteers handed out blankets and food at the shelters.",
                ),
                (
                    "2",
                    "Officials said aid money would be discussed by the cabinet.",
                ),
            ],
            &[
                (
                    "2",
                    "The government announced a relief fund of 50 million for flood victims.",
                ),
                (
                    "2",
                    "The prime minister said the relief fund would rebuild homes and roads.",
                ),
                (
                    "2",
                    "Farmers will receive grants from the relief fund for lost crops.",
                ),
                (
                    "1",
                    "Some evacuated residents began returning home as the water receded.",
                ),
                (
                    "M",
                    "The floods were the worst the region has seen in decades.",
                ),
            ],
        ],
    },
    ExampleEvent {
        theme: "politics",
        key_event: "example_city_protest",
        dates: &["6/1/2024", "6/2/2024", "6/2/2024"],
        episodes: &[
            "Protesters | march | on parliament | 1 June 2024 | city centre",
            "Police | fire | tear gas | 1 June 2024 | parliament square",
        ],
        articles: &[
            &[
                (
                    "0",
                    "Thousands of protesters marched on parliament on Saturday.",
                ),
                (
                    "0",
                    "Marchers carried banners demanding the minister resign.",
                ),
                (
                    "1",
                    "Police fired tear gas as the crowd reached the square.",
                ),
                ("M", "The protest was the largest in the city for years."),
            ],
            &[
                ("0", "The march began peacefully at the central station."),
                (
                    "1",
                    "Officers used tear gas and water cannon to clear the square.",
                ),
                ("1", "Dozens were treated for the effects of tear gas."),
                (
                    "0",
                    "Protesters chanted slogans as they walked towards parliament.",
                ),
            ],
            &[
                (
                    "1",
                    "Riot police pushed the crowd back from the parliament gates.",
                ),
                (
                    "0",
                    "Organisers said the march drew people from across the country.",
                ),
                (
                    "1",
                    "Police defended the use of tear gas against the crowd.",
                ),
                ("X", "Shops in the city centre reopened on Monday."),
            ],
        ],
    },
];

/// The example run: per event, episodes as (title, keywords, segments as (doc_id, seg_idx) in
/// rank order). Some are right, some are not, so the scores show what the metrics do. At k = 5:
/// - flood: episode 0's top five are all labelled 0 (hit); episode 1's are 1 1 1 2 2 (hit 1);
///   episode 2 has four segments and does not count: prec 2/2, recall 2/3, F1 0.80;
/// - protest: episode 0's top five are 0 1 0 1 M (no majority); episode 1's are all 1 (hit):
///   prec 1/2, recall 1/2, F1 0.50.
#[allow(clippy::type_complexity)]
const EXAMPLE_RUN: &[(&str, &[(&str, &[&str], &[(u32, u32)])])] = &[
    (
        "example_river_flood",
        &[
            (
                "River bursts its banks",
                &["river", "rain", "banks"],
                &[(0, 1), (1, 0), (0, 2), (1, 3), (2, 1), (0, 0)],
            ),
            (
                "Residents move to shelters",
                &["shelters", "residents", "evacuation"],
                &[(1, 1), (1, 2), (2, 0), (3, 0), (3, 1), (2, 2)],
            ),
            (
                "Relief fund",
                &["relief", "fund"],
                &[(3, 0), (3, 1), (3, 2), (2, 3)],
            ),
        ],
    ),
    (
        "example_city_protest",
        &[
            (
                "March on parliament",
                &["march", "parliament", "protesters"],
                &[(0, 0), (0, 2), (1, 0), (1, 1), (0, 3)],
            ),
            (
                "Tear gas in the square",
                &["tear", "gas", "police"],
                &[(1, 1), (1, 2), (0, 2), (2, 0), (2, 2)],
            ),
        ],
    ),
];

/// Writes the built-in example dataset as files under `dir`.
pub async fn write_example_dataset(dir: &Location) -> Result<(), StorageError> {
    for event in EXAMPLE {
        let base = format!("{}/{}", event.theme, event.key_event);
        let mut segments = String::new();
        let mut groundtruth = String::new();
        for article in event.articles {
            for (label, text) in article.iter() {
                segments.push_str(text);
                segments.push('\n');
                groundtruth.push_str(&format!("{label}\t{text}\n"));
            }
            segments.push('\n');
        }
        let dates: String = event.dates.iter().map(|d| format!("{d}\n")).collect();
        let episodes: String = event
            .episodes
            .iter()
            .enumerate()
            .map(|(i, e)| format!("{i}\t{e}\n"))
            .collect();
        for (file, text) in [
            (import::SEGMENTS_FILE, segments),
            (import::DATES_FILE, dates),
            (import::GROUNDTRUTH_FILE, groundtruth),
            (import::EPISODES_FILE, episodes),
        ] {
            dir.put(&format!("{base}/{file}"), text.into_bytes().into())
                .await?;
        }
    }
    Ok(())
}

/// The example run's tables.
pub fn example_run() -> (Vec<Episode>, Vec<Assignment>) {
    let mut episodes = Vec::new();
    let mut assignments = Vec::new();
    for (key_event, eps) in EXAMPLE_RUN {
        for (episode_id, (title, keywords, segs)) in eps.iter().enumerate() {
            let episode_id = episode_id as u32;
            episodes.push(Episode {
                key_event: key_event.to_string(),
                trial: 0,
                episode_id,
                stable_id: None,
                status: None,
                title: title.to_string(),
                title_fields: Vec::new(),
                keywords: keywords.iter().map(|k| k.to_string()).collect(),
                example_sentences: Vec::new(),
                n_segments: segs.len() as u32,
                source: "clusters".into(),
                n_articles: crate::tables::EpisodeSpan::of(segs.iter().map(|&(d, _)| (d, None)))
                    .n_articles,
                first_date: None,
                peak_date: None,
                last_date: None,
                phase_id: episode_id,
                phase_stable_id: None,
            });
            for (rank, &(doc_id, seg_idx)) in segs.iter().enumerate() {
                assignments.push(Assignment {
                    key_event: key_event.to_string(),
                    trial: 0,
                    episode_id,
                    stable_id: None,
                    status: None,
                    doc_id,
                    seg_idx,
                    rank: rank as u32,
                    confidence: 1.0 / (rank as f64 + 1.0),
                });
            }
        }
    }
    (episodes, assignments)
}

/// What the demo produced.
#[derive(Debug)]
pub struct DemoOutcome {
    /// The run's report (`run.json`).
    pub report: crate::run_folder::manifest::RunReport,
    /// The evaluation against the planted episodes.
    pub eval: Report,
    /// The synthetic corpus.
    pub corpus: String,
    /// The run's outputs.
    pub run: String,
}

/// `epimine demo`: a synthetic corpus with planted episodes (`epimine synth`), the episode
/// pipeline on it (`epimine run`, default model fetched if missing), and `epimine eval` against
/// the planted episodes. Writes `<out>/corpus` and `<out>/run`.
pub fn demo(
    out: &str,
    model: &str,
    events: usize,
    docs_per_event: usize,
    workers: usize,
) -> Result<DemoOutcome, DemoError> {
    let out = out.trim_end_matches('/');
    let corpus_path = format!("{out}/corpus");
    let run_path = format!("{out}/run");
    let runtime = crate::runtime::current_thread()?;
    let corpus = Location::parse(&corpus_path, true)?;
    let synthetic = crate::synth::generate(events, docs_per_event, 7);
    runtime.block_on(crate::synth::write(&corpus, &synthetic))?;
    let mut job = crate::job::Job {
        corpus: corpus_path.clone(),
        background: crate::background::Source::File(format!("{corpus_path}/background.txt")),
        out: run_path.clone(),
        ..crate::job::Job::default()
    };
    job.encoder.model = model.to_string();
    job.cluster.workers = workers.max(1);
    let outcome = crate::run::run(&job)?.ok_or(DemoError::NotProcessZero)?;
    let run = Location::parse(&run_path, false)?;
    let eval = runtime.block_on(eval::eval(&corpus, &run, eval::DEFAULT_K))?;
    Ok(DemoOutcome {
        report: outcome.report,
        eval,
        corpus: corpus.display().to_string(),
        run: run.display().to_string(),
    })
}
