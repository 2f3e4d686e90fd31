"""Type stubs of the native module `epimine._epimine` (python/src/): the library's commands,
each returning JSON text that the package (epimine/_api.py) turns into its objects. Use the
package, not this module."""

from typing import Any, Callable

Progress = Callable[[list[dict[str, Any]]], None] | None

__version__: str

class Table:
    """A table read whole; a new Arrow C stream over its batches at each call."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def schema_text(self) -> list[str]: ...

def import_articles(
    out: str,
    *,
    articles: str | None = None,
    table: object | None = None,
    table_name: str | None = None,
    job: str | None = None,
    key_event_column: str | None = None,
    id_column: str | None = None,
    published_column: str | None = None,
    title_column: str | None = None,
    text_column: str | None = None,
    theme_column: str | None = None,
    on_error: str | None = None,
    target_chars: int | None = None,
    append: bool = False,
    progress: Progress = None,
    date_format: str | None = None,
) -> str: ...
def import_dataset(dataset_dir: str, out: str, *, progress: Progress = None) -> str: ...
def run(
    *,
    job: str | None = None,
    corpus: str | None = None,
    background: str | None = None,
    out: str | None = None,
    model: str | None = None,
    sets: list[str] = ...,
    workers: int | None = None,
    fresh: bool = False,
    overwrite: bool = False,
    run_time: str | None = None,
    progress: Progress = None,
) -> str: ...
def evaluate(corpus: str, run: str, k: int = 5, *, progress: Progress = None) -> str: ...
def report(
    run: str,
    corpus: str,
    out: str,
    *,
    top_segments: int = 5,
    order: str = "rank",
    trial: int = 0,
    progress: Progress = None,
) -> str: ...
def build_background(text: str, out: str, *, progress: Progress = None) -> tuple[int, int]: ...
def synth(
    out: str,
    *,
    events: int = 4,
    docs_per_event: int = 40,
    seed: int = 7,
    progress: Progress = None,
) -> tuple[int, int]: ...
def list_tables(location: str) -> list[str]: ...
def read_table(location: str, name: str) -> Table: ...
def read_batches(location: str, name: str) -> Table: ...
def open_run(location: str) -> str | None: ...
