"""epimine: the episodes of large news events (EpiMine, ACL 2025), from Python.

Given many articles about one key event, epimine finds the handful of sub-events that make it
up and the text segments that tell each one, with no labels. The commands are the command
line's, run by the same Rust library with the GIL released; tables go in and out through the
Arrow C stream interface, so pandas, polars, pyarrow and DuckDB all take them::

    import epimine
    import polars as pl

    corpus = epimine.import_articles(articles_df, out="corpus")   # or a CSV / Parquet path
    run = epimine.run(corpus, background="background.txt", out="my-run", workers=2)
    pl.DataFrame(run.episodes)

Or in one call, with a temporary work folder: ``run = epimine.detect(articles_df,
background="background.txt")``. Errors are :class:`EpimineError` subclasses with the command
line's messages; Ctrl-C raises ``KeyboardInterrupt`` and the same call again resumes; progress
shows with tqdm when it is installed; the library logs to the ``epimine`` logger. Details:
docs/python.md.
"""

from ._api import (
    Corpus,
    Evaluation,
    Run,
    build_background,
    detect,
    evaluate,
    import_articles,
    import_dataset,
    open_corpus,
    open_run,
    report,
    run,
    synth,
)
from ._epimine import __version__
from ._tables import Table
from .exceptions import (
    ClusterError,
    EpimineError,
    InputError,
    LLMError,
    PartialRunWarning,
    StorageError,
)

__all__ = [
    "ClusterError",
    "Corpus",
    "EpimineError",
    "Evaluation",
    "InputError",
    "LLMError",
    "PartialRunWarning",
    "Run",
    "StorageError",
    "Table",
    "__version__",
    "build_background",
    "detect",
    "evaluate",
    "import_articles",
    "import_dataset",
    "open_corpus",
    "open_run",
    "report",
    "run",
    "synth",
]
