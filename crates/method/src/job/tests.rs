//! Unit tests of `job`.

use super::*;
use crate::background::Source;

/// The background is decoded once where the job is read: a job file's string, an override
/// and the default each become a [`Source`], and the saved job says what was given.
#[test]
fn the_background_is_typed_where_the_job_is_read() {
    let read = |text: &str| Job::from_toml(text, "t").unwrap().background;
    assert_eq!(read("background = \"\"\n"), Source::Wordfreq);
    assert_eq!(read("background = \"wordfreq\"\n"), Source::Wordfreq);
    assert_eq!(read("background = \"corpus\"\n"), Source::Corpus);
    assert_eq!(
        read("background = \"bg.txt\"\n"),
        Source::File("bg.txt".into())
    );
    assert_eq!(read(""), Source::Wordfreq);
    let overridden = Job::resolve(
        None,
        Overrides {
            background: Some("corpus".into()),
            ..Default::default()
        },
        &[],
    )
    .unwrap();
    assert_eq!(overridden.background, Source::Corpus);
    let saved = toml::to_string(&Job {
        background: Source::File("s3://b/bg.parquet".into()),
        ..Default::default()
    })
    .unwrap();
    assert!(
        saved.contains("background = \"s3://b/bg.parquet\""),
        "{saved}"
    );
    assert_eq!(
        Job::from_toml(&saved, "t").unwrap().background,
        Source::File("s3://b/bg.parquet".into())
    );
}

/// The GPU settings of `[encoder]` parse, validate, and are refused where they contradict
/// each other or are out of range.
#[test]
fn encoder_shape_and_precision_settings() {
    let base = "corpus = \"c\"\nbackground = \"b\"\nout = \"o\"\n[encoder]\n";
    let job = Job::from_toml(
        &format!(
            "{base}shapes = \"buckets\"\nprecision = \"bf16\"\nwarmup = true\n\
             kernel_cache = \"/k\"\nautotune = \"minimal\"\nbatch_size = 64\n"
        ),
        "job.toml",
    )
    .unwrap();
    job.validate().unwrap();
    let o = job.encoder.options();
    assert_eq!(
        (o.shapes, o.precision, o.batch_size),
        (ShapePolicy::Buckets, Precision::Bf16, 64)
    );
    assert_eq!(job.encoder.autotune, AutotuneLevel::Minimal);
    // The saved job reads back the same.
    assert_eq!(Job::from_toml(&job.to_toml(), "saved").unwrap(), job);
    let refused = |extra: &str, says: &str| {
        let err = Job::from_toml(&format!("{base}{extra}"), "job.toml")
            .and_then(|j| j.validate())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{extra}: {err}");
    };
    refused("batch_size = 0\n", "must be at least 1");
    refused("shapes = \"exact\"\nwarmup = true\n", "warmup needs");
    refused(
        "int8 = true\nprecision = \"f16\"\n",
        "int8 and precision f16",
    );
    refused("shapes = \"square\"\n", "square");
    refused("precision = \"f8\"\n", "f8");
}

#[test]
fn defaults_sets_and_unknown_keys() {
    let job = Job::from_toml("corpus = \"c\"\nbackground = \"b\"\nout = \"o\"\n", "t").unwrap();
    assert_eq!(job.episodes.top_articles, 0.25);
    assert_eq!(job.terms.expansion, 0.75);
    let job = job
        .with_sets(&[
            "episodes.top_articles=0.5".into(),
            "encoder.model=/models/x".into(),
            "cluster.workers=4".into(),
        ])
        .unwrap();
    assert_eq!(
        (
            job.episodes.top_articles,
            job.encoder.model.as_str(),
            job.cluster.workers
        ),
        (0.5, "/models/x", 4)
    );
    let err = Job::from_toml(
        "corpus = \"c\"\n[episodes]\ntop_article = 0.3\n",
        "job.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("job.toml") && err.contains("top_article"),
        "{err}"
    );
    let err = job
        .clone()
        .with_sets(&["episodes.prune=sometimes".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("sometimes"), "{err}");
    // The error names the --set and its key, not a line of a TOML the user never wrote.
    let err = job
        .clone()
        .with_sets(&["episodes.top_articles=abc".into()])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--set episodes.top_articles=abc: `episodes.top_articles`")
            && !err.contains("line"),
        "{err}"
    );
    let err = job
        .clone()
        .with_sets(&["episodes.top_article=0.3".into()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("top_article") && !err.contains("line"),
        "{err}"
    );
    assert!(job.clone().with_sets(&["nokey".into()]).is_err());
    // Significance against the event is a cohesion rule, not a core rule.
    let err = job
        .clone()
        .with_sets(&["episodes.core=\"significant\"".into()])
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("episodes.core"), "{err}");
    assert!(job
        .clone()
        .with_sets(&["episodes.cohesion=\"significant\"".into()])
        .unwrap()
        .validate()
        .is_ok());
    // The [llm] section: every key settable, checked.
    let llm = job
        .clone()
        .with_sets(&[
            "llm.backend=openai".into(),
            "llm.model=qwen".into(),
            "llm.base_url=http://127.0.0.1:8000/v1".into(),
            "llm.trials=3".into(),
            "llm.timeout=5".into(),
        ])
        .unwrap();
    assert_eq!(llm.llm.backend, crate::llm::Backend::Openai);
    assert_eq!((llm.llm.trials, llm.llm.timeout), (3, 5.0));
    llm.validate().unwrap();
    let no_model = job
        .clone()
        .with_sets(&["llm.backend=anthropic".into()])
        .unwrap();
    let err = no_model.validate().unwrap_err().to_string();
    assert!(err.contains("llm.model"), "{err}");
    assert!(job.clone().with_sets(&["llm.backend=gpt".into()]).is_err());
    assert!(job.clone().with_sets(&["llm.api_key=sk-1".into()]).is_err());
    // What is saved reads back the same.
    assert_eq!(Job::from_toml(&job.to_toml(), "saved").unwrap(), job);
}
