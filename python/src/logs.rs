//! The library's logs (`tracing`) through Python's `logging`: a layer queues every event at or
//! above the level the `epimine` logger lets through, and the thread that waits for a command
//! ([`crate::call`]) hands the queue to `logging.getLogger(…)` (`epimine.run.event`, …) while
//! it waits. The library's threads never take the GIL to log.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// At most this many records wait in the queue; the oldest beyond it are dropped (and counted).
const QUEUE: usize = 10_000;

/// One log record: Python's level, the logger's name, the message.
struct Record {
    level: u8,
    logger: String,
    message: String,
}

static RECORDS: Mutex<VecDeque<Record>> = Mutex::new(VecDeque::new());
static DROPPED: AtomicUsize = AtomicUsize::new(0);
/// The lowest Python level let through (`logging.WARNING` until a command reads the logger's).
static THRESHOLD: AtomicU8 = AtomicU8::new(30);

/// Python's number for a tracing level (`logging.DEBUG` … `logging.ERROR`; trace is 5).
fn python_level(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        Level::TRACE => 5,
    }
}

/// The logger of a tracing target: `epimine::run::event` → `epimine.run.event`, the library's
/// layer crates under `epimine.` by their modules' old paths (`epimine_engines::run::event` →
/// `epimine.run.event`); other crates' under `epimine.`.
fn logger_name(target: &str) -> String {
    const LAYERS: [&str; 4] = [
        "epimine_base",
        "epimine_method",
        "epimine_run_folder",
        "epimine_engines",
    ];
    let module = LAYERS.iter().find_map(|layer| {
        let rest = target.strip_prefix(layer)?;
        (rest.is_empty() || rest.starts_with("::")).then_some(rest)
    });
    let dotted = match module {
        Some(rest) => format!("epimine{}", rest.replace("::", ".")),
        None => target.replace("::", "."),
    };
    if dotted == "epimine" || dotted.starts_with("epimine.") {
        dotted
    } else {
        format!("epimine.{dotted}")
    }
}

/// The message and the other fields (`key=value`) of an event, as `tracing`'s own format has them.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

/// The layer that queues events for `logging`.
struct ToPython;

impl<S: Subscriber> Layer<S> for ToPython {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // The threshold changes with the logger's level: ask at every event.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        python_level(metadata.level()) >= THRESHOLD.load(Ordering::Relaxed)
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let metadata = event.metadata();
        let record = Record {
            level: python_level(metadata.level()),
            logger: logger_name(metadata.target()),
            message: text.message + &text.fields,
        };
        let mut queue = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
        if queue.len() >= QUEUE {
            queue.pop_front();
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        queue.push_back(record);
    }
}

/// Makes the layer the process's subscriber (once; when another one is already set, the
/// library's logs go there instead).
pub(crate) fn install() {
    let _ = tracing_subscriber::registry().with(ToPython).try_init();
}

/// Reads the level the `epimine` logger lets through now (called as a command starts).
pub(crate) fn read_threshold(py: Python<'_>) -> PyResult<()> {
    let level: i64 = py
        .import("logging")?
        .call_method1("getLogger", ("epimine",))?
        .call_method0("getEffectiveLevel")?
        .extract()?;
    THRESHOLD.store(level.clamp(1, 50) as u8, Ordering::Relaxed);
    Ok(())
}

/// Hands the queued records to `logging`.
pub(crate) fn drain(py: Python<'_>) -> PyResult<()> {
    let records: Vec<Record> = {
        let mut queue = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
        queue.drain(..).collect()
    };
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    if records.is_empty() && dropped == 0 {
        return Ok(());
    }
    let get_logger = py.import("logging")?.getattr("getLogger")?;
    if dropped > 0 {
        get_logger.call1(("epimine",))?.call_method1(
            "log",
            (
                30,
                "%d log records were dropped (too many at once)",
                dropped,
            ),
        )?;
    }
    for r in records {
        get_logger
            .call1((r.logger,))?
            .call_method1("log", (r.level, "%s", r.message))?;
    }
    Ok(())
}

/// A warning on the `epimine` logger, from the package itself.
pub(crate) fn warn(py: Python<'_>, message: &str) {
    let logged = py
        .import("logging")
        .and_then(|l| l.call_method1("getLogger", ("epimine",)))
        .and_then(|l| l.call_method1("warning", ("%s", message)));
    if let Err(e) = logged {
        e.print(py);
    }
}
