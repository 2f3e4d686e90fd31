//! The native module `epimine._epimine` of the Python package (python/epimine/): the library's
//! commands, each a thin call of what the CLI calls ([`commands`]), run with the GIL released
//! and interruptible by Ctrl-C ([`call`]); tables through the Arrow C stream interface
//! ([`table`]); errors as the package's exceptions ([`errors`]); the library's logs through
//! `logging` ([`logs`]) and its progress to a callback ([`watch`]).

mod call;
mod commands;
mod errors;
mod logs;
mod table;
mod watch;

use pyo3::prelude::*;

/// The native part of `epimine`; use the package (`import epimine`).
#[pymodule]
fn _epimine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logs::install();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<table::PyTable>()?;
    m.add_function(wrap_pyfunction!(commands::import_articles, m)?)?;
    m.add_function(wrap_pyfunction!(commands::import_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(commands::run, m)?)?;
    m.add_function(wrap_pyfunction!(commands::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(commands::report, m)?)?;
    m.add_function(wrap_pyfunction!(commands::build_background, m)?)?;
    m.add_function(wrap_pyfunction!(commands::synth, m)?)?;
    m.add_function(wrap_pyfunction!(commands::list_tables, m)?)?;
    m.add_function(wrap_pyfunction!(commands::read_table, m)?)?;
    m.add_function(wrap_pyfunction!(commands::read_batches, m)?)?;
    m.add_function(wrap_pyfunction!(commands::open_run, m)?)?;
    Ok(())
}
