//! The commands that read a run: `eval` (paper appendix C) and `report` (the HTML page).

use std::fmt;

use super::outcome::{location, CommandError, CommandOutcome};
use crate::cli;
use crate::{eval as scoring, report as html};

/// `epimine eval`'s scores, as a table or (`--json`) as JSON.
pub struct Evaluated {
    report: scoring::Report,
    json: bool,
}

impl fmt::Display for Evaluated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.json {
            let json = serde_json::to_string(&self.report).map_err(|_| fmt::Error)?;
            writeln!(f, "{json}")
        } else {
            write!(f, "{}", scoring::format_report(&self.report))
        }
    }
}

impl CommandOutcome for Evaluated {}

impl Evaluated {
    /// The scores.
    pub fn report(&self) -> &scoring::Report {
        &self.report
    }
}

/// `epimine eval`.
pub async fn eval(args: cli::EvalArgs) -> Result<Evaluated, CommandError> {
    let corpus = location(&args.corpus, false, "the corpus (--corpus)")?;
    let run = location(&args.run, false, "the run (--run)")?;
    let report = scoring::eval(&corpus, &run, args.k).await?;
    Ok(Evaluated {
        report,
        json: args.json,
    })
}

/// What `epimine report` wrote.
pub struct Reported(pub html::ReportFiles);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.0;
        writeln!(
            f,
            "{} key events, {} episodes, {} bytes; wrote {}",
            w.events, w.episodes, w.bytes, w.location
        )
    }
}

impl CommandOutcome for Reported {}

/// `epimine report`: the HTML page of a run.
pub async fn report(args: cli::ReportArgs) -> Result<Reported, CommandError> {
    let run = location(&args.run, false, "the run (--run)")?;
    let corpus = location(&args.corpus, false, "the corpus (--corpus)")?;
    let order = match args.order.as_str() {
        "rank" => html::SegmentOrder::Rank,
        "confidence" => html::SegmentOrder::Confidence,
        other => {
            return Err(CommandError::Usage(format!(
                "the order of segments (--order): `{other}` is neither `rank` nor `confidence`"
            )))
        }
    };
    let options = html::ReportOptions {
        top_segments: args.top_segments,
        order,
        trial: args.trial,
    };
    let written = html::report(&run, &corpus, &args.out, &options).await?;
    Ok(Reported(written))
}
