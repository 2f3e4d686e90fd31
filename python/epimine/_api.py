"""The commands of epimine from Python, each the command line's (same arguments, same
checks, same outputs, same messages), run by the library with the GIL released."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
import warnings
from collections.abc import Mapping
from typing import Any, Union

from . import _epimine
from ._progress import Progress, Shown
from ._tables import Table
from .exceptions import InputError, PartialRunWarning

PathLike = Union[str, "os.PathLike[str]"]

_log = logging.getLogger("epimine")


def _path(value: Any, what: str) -> str:
    """A path or URI argument as text (``Corpus`` and ``Run`` are path-like)."""
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{what}: expected a path or URI (str or os.PathLike), not {type(value).__name__}")


def _optional_path(value: Any, what: str) -> str | None:
    return None if value is None else _path(value, what)


class _Folder:
    """A folder of tables (a corpus or a run): its tables by name, read when first asked for."""

    def __init__(self, location: str) -> None:
        #: The folder, as given (a local path, ``file://…`` or ``s3://…``).
        self.location = location
        self._tables: dict[str, Table] = {}
        # Where the tables lie inside the folder ("" for its top).
        self._prefix = ""

    def __fspath__(self) -> str:
        return self.location

    @property
    def tables(self) -> list[str]:
        """The names of the tables in the folder (each ``<name>.parquet``)."""
        return [n.removesuffix(".parquet") for n in _epimine.list_tables(self.location)]

    def table(self, name: str) -> Table:
        """The table ``name`` (``episodes``, or ``episodes.parquet``), read whole once."""
        name = name.removesuffix(".parquet")
        if name not in self._tables:
            native = _epimine.read_table(self.location, f"{self._prefix}{name}.parquet")
            self._tables[name] = Table(native, name, self.location)
        return self._tables[name]


class Corpus(_Folder):
    """A corpus folder (what ``epimine import`` writes): ``segments``; from articles,
    ``boilerplate``, ``copies`` and ``paragraphs`` (and ``rejected`` with
    ``on_error="skip"``); from a dataset folder, ``labels`` and ``gold_episodes``. Path-like:
    pass it wherever a path goes."""

    #: The tables each import writes a file of (``--append`` adds ``<name>-<n>.parquet``): read
    #: over every batch.
    _BATCHED = ("segments", "boilerplate", "paragraphs", "copies", "rejected")

    def __init__(self, location: str, summary: dict[str, Any] | None = None) -> None:
        super().__init__(location)
        #: What the import reported (``None`` for a corpus opened with :func:`open_corpus`):
        #: per event counts under ``events``, and ``summary``, the command line's table.
        self.summary = summary

    def table(self, name: str) -> Table:
        """The table ``name``, read whole once; one an import writes a file of a batch
        (``segments``, ``boilerplate``, ``paragraphs``, ``copies``, ``rejected``) is every
        batch's, in the order a run reads them."""
        name = name.removesuffix(".parquet")
        if name not in self._BATCHED:
            return super().table(name)
        if name not in self._tables:
            native = _epimine.read_batches(self.location, name)
            self._tables[name] = Table(native, name, self.location)
        return self._tables[name]

    @property
    def segments(self) -> Table:
        """One row a segment: key event, article, position, text, date, source id, title;
        every batch's (``import_articles(…, append=True)`` adds one)."""
        return self.table("segments")

    @property
    def labels(self) -> Table:
        """Gold labels of segments (from a dataset folder)."""
        return self.table("labels")

    @property
    def gold_episodes(self) -> Table:
        """Described gold episodes (from a dataset folder)."""
        return self.table("gold_episodes")

    @property
    def boilerplate(self) -> Table:
        """Paragraphs ``import_articles`` dropped as boilerplate (found in many articles of one
        key event: bylines, "Read more"), with how often."""
        return self.table("boilerplate")

    @property
    def copies(self) -> Table:
        """Articles made only of copies of earlier articles' paragraphs (agency copy an outlet
        carried whole): no segment of their own; ``copy_of`` is the article they copy. A run
        lists them with the episodes holding what they carry (``episode_articles.copy_of``)."""
        return self.table("copies")

    @property
    def rejected(self) -> Table:
        """Rows left out by ``import_articles(…, on_error="skip")``, with file, row, column
        and why."""
        return self.table("rejected")

    def __repr__(self) -> str:
        return f"<epimine.Corpus {self.location}>"


class Evaluation:
    """What ``epimine eval`` reports: k-precision, k-recall and k-F1 per key event (the mean
    over the run's LLM trials) and per theme. ``str()`` is the command line's table."""

    def __init__(self, report: dict[str, Any], text: str) -> None:
        #: The whole report, as ``epimine eval --json`` prints it.
        self.report = report
        self._text = text

    @property
    def k(self) -> int:
        """The k of the top-k segments scored per episode."""
        return int(self.report["k"])

    @property
    def events(self) -> list[dict[str, Any]]:
        """Per key event: ``key_event``, ``theme``, ``k_prec``, ``k_recall``, ``k_f1``,
        ``counted``, ``hits``, ``gold``, ``trials``, ``split`` and ``absorbed`` (gold episodes
        two or more episodes are about, and none is), ``name_overlap`` (how much its episodes'
        names overlap, 0–1; ``None`` without the run's episodes) — ``pd.DataFrame(
        evaluation.events)`` makes a table of it."""
        return list(self.report["events"])

    @property
    def all(self) -> dict[str, Any] | None:
        """All scored events together: the per-event means, with ``k_f1_interval``, the
        bootstrap 90% interval of the mean k-F1 over events; ``None`` when no event was
        scored."""
        return self.report.get("all")

    @property
    def themes(self) -> list[dict[str, Any]]:
        """Per theme: the means of its events."""
        return list(self.report["themes"])

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """Events that could not be scored, with why."""
        return list(self.report["skipped"])

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"<epimine.Evaluation k={self.k}: {len(self.events)} events>\n{self._text}"


class Run(_Folder):
    """The output folder of a run (what ``epimine run`` writes), its tables read on first use.
    Path-like: pass it wherever a path goes (``epimine.open_run``, DuckDB, …)."""

    def __init__(
        self,
        location: str,
        manifest: dict[str, Any] | None,
        workdir: tempfile.TemporaryDirectory[str] | None = None,
        summary: str | None = None,
    ) -> None:
        super().__init__(location)
        # The tables are read in the run's own version folder (``run.json``'s ``version``)
        # while it is kept: a run committing meanwhile does not mix its tables in.
        version = (manifest or {}).get("version")
        if isinstance(version, str) and version.startswith("_versions/"):
            self._prefix = version + "/"
        #: What ``epimine run`` prints last (events done, what the episodes hold and leave out
        #: and why, the history, what failed), for a run made by :func:`run` or :func:`detect`;
        #: ``None`` for a folder opened with :func:`open_run`.
        self.summary = summary
        #: ``run.json``: the resolved job, the layout, the model, per event its status and
        #: counts, every table with its sha256 (``None`` for a folder of tables without one,
        #: e.g. a baseline's).
        self.manifest = manifest
        # The temporary work folder of `detect`, kept as long as the run is.
        self._workdir = workdir

    @property
    def corpus(self) -> Corpus | None:
        """The corpus the run read (from its job)."""
        if not self.manifest:
            return None
        return Corpus(self.manifest["job"]["corpus"])

    @property
    def partial(self) -> bool:
        """Whether some key event was skipped or fell back to no-LLM episodes."""
        return bool(self.manifest and self.manifest.get("partial"))

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """The key events that failed, each ``run.json``'s status with its ``error``."""
        events = self.manifest["events"] if self.manifest else []
        return [e for e in events if e.get("status") != "ok"]

    @property
    def episodes(self) -> Table:
        """Per key event and trial, each episode: title, keywords, size, confidence, dates."""
        return self.table("episodes")

    @property
    def assignments(self) -> Table:
        """The segments of each episode, in rank order (what ``evaluate`` scores)."""
        return self.table("assignments")

    @property
    def episode_articles(self) -> Table:
        """Each episode's articles, for people to read: rank, id, title, date, the passage
        that put it there."""
        return self.table("episode_articles")

    @property
    def left_out(self) -> Table:
        """Each segment in no episode, with why (``below-confidence`` or
        ``episode-dropped-by-<rule>``), its confidence and similarity to its nearest candidate."""
        return self.table("left_out")

    @property
    def lineage(self) -> Table:
        """This run's episodes in the history of ``out``: each episode's id across runs and
        what changed since the previous run (new, found, continued, grown, shrunk, split, merged,
        ended; ``new_articles``: its articles that arrived since);
        every run's is kept in ``out/history/``."""
        return self.table("lineage")

    @property
    def developments(self) -> Table:
        """What happened in this run (``developments.parquet``): each episode that is new,
        grown with articles that arrived since the previous run, split, merged or ended, with
        ``today_articles`` (its articles that arrived since), its title and the ids it came
        from; on a first run every episode is new."""
        return self.table("developments")

    @property
    def fragments(self) -> Table:
        """The fragments of each key event (§3)."""
        return self.table("fragments")

    @property
    def terms(self) -> Table:
        """Each key event's terms: salience, expansion, synonym groups (§1)."""
        return self.table("terms")

    @property
    def pairs(self) -> Table:
        """Discriminative co-occurring term pairs (§2)."""
        return self.table("pairs")

    @property
    def segments(self) -> Table:
        """The corpus's segments (the run's input), to join with ``assignments``."""
        corpus = self.corpus
        if corpus is None:
            raise ValueError(f"{self.location}: no run.json, so the corpus is not known")
        return corpus.segments

    def evaluate(self, corpus: Corpus | PathLike | None = None, k: int = 5,
                 *, progress: Progress = True) -> Evaluation:
        """``epimine eval``: scores the run's assignments against the corpus's gold labels
        (by default the corpus the run read)."""
        corpus = corpus if corpus is not None else self.corpus
        return evaluate(corpus, self, k=k, progress=progress)

    def report(self, out: PathLike, corpus: Corpus | PathLike | None = None, *,
               top_segments: int = 5, order: str = "rank", trial: int = 0,
               progress: Progress = True) -> str:
        """``epimine report``: one self-contained HTML page of the run at ``out`` (a file
        ending in ``.html``, or a folder that gets ``report.html``); returns where."""
        corpus = corpus if corpus is not None else self.corpus
        return report(self, corpus, out, top_segments=top_segments, order=order,
                      trial=trial, progress=progress)

    def __repr__(self) -> str:
        if not self.manifest:
            return f"<epimine.Run {self.location} (no run.json)>"
        events = self.manifest["events"]
        ok = sum(1 for e in events if e.get("status") == "ok")
        episodes = sum(e["counts"]["episodes"] for e in events)
        return (f"<epimine.Run {self.location}: {ok} of {len(events)} key events done, "
                f"{episodes} episodes>")


def _settings(settings: Mapping[str, Any] | None) -> list[str]:
    """``{"episodes.max_episodes": 10}`` as the command line's ``--set`` values
    (``episodes.max_episodes=10``), each value written as TOML so its type is kept."""
    if settings is None:
        return []
    if not isinstance(settings, Mapping):
        raise TypeError(f"settings: expected a mapping of setting to value, not {type(settings).__name__}")
    return [f"{key}={_toml(value, key)}" for key, value in settings.items()]


def _toml(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return json.dumps(os.fspath(value), ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v, key) for v in value) + "]"
    raise TypeError(f"settings[{key!r}]: a {type(value).__name__} is not a setting's value "
                    "(expected a bool, number, string or list)")


def _table_name(source: Any) -> str:
    """What messages call a table handed over: ``polars DataFrame``, ``pyarrow Table``, …"""
    kind = type(source)
    return f"{kind.__module__.split('.')[0]} {kind.__name__}"


# In the command line's message for missing columns: the flag that names a column, and the
# column of the table that looks like it.
_FLAG = re.compile(r"\(name it with --([a-z-]+)-column ")
_GUESS = re.compile(r"looks like it: --[a-z-]+-column (.+)$")


class _ColumnArguments:
    """Adds to the command line's message for missing columns the keyword arguments that name
    them from Python (``--text-column body`` is ``text_column="body"``)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if not isinstance(error, InputError) or "required column(s) missing" not in str(error):
            return
        message = str(error)
        named: dict[str, str] = {}
        for line in message.splitlines():
            if not line.strip().startswith("no column"):
                continue
            flag, guess = _FLAG.search(line), _GUESS.search(line)
            if flag:
                named[flag.group(1).replace("-", "_") + "_column"] = (
                    f'"{guess.group(1)}"' if guess else "…")
        if named:
            hint = ", ".join(f"{k}={v}" for k, v in named.items())
            error.args = (f"{message}\n  from Python: import_articles(…, {hint})",)


def import_articles(
    source: Any,
    out: PathLike,
    *,
    job: PathLike | None = None,
    key_event_column: str | None = None,
    id_column: str | None = None,
    published_column: str | None = None,
    title_column: str | None = None,
    text_column: str | None = None,
    theme_column: str | None = None,
    on_error: str | None = None,
    target_chars: int | None = None,
    append: bool = False,
    progress: Progress = True,
    date_format: str | None = None,
    timezone: str | None = None,
) -> Corpus:
    """``epimine import --articles``: articles (one row an article: key event, id or URL,
    publication time, title, text) cut into segments, written as the corpus ``out``.

    ``source``: a table with ``__arrow_c_stream__`` (a pyarrow Table, a polars DataFrame, a
    pandas DataFrame (pandas >= 2.2 with pyarrow)), or a Parquet, JSON Lines or CSV file, a
    folder of them, or a prefix of their names (local, ``file://`` or ``s3://``). A table's
    rows are numbered from 1 in messages, as a Parquet file's are.

    The column arguments name the columns (defaults ``key_event``, ``id``, ``published``,
    ``title``, ``text``, ``theme``); ``job``: a job file whose ``[import]`` section sets them
    (the arguments win). ``on_error="fail"`` (the default) writes nothing when a row is bad
    and raises :class:`InputError` listing them; ``"skip"`` writes the good rows and the bad
    ones to ``rejected``. ``target_chars``: the length long paragraphs are cut to (360).
    ``date_format``: a strftime format (chrono's, e.g. ``"%d/%m/%Y %H:%M"``) for publication
    times in another form than ISO 8601 / RFC 3339, RFC 2822 or Unix seconds / milliseconds.
    ``timezone``: the newsroom's IANA zone (``"America/New_York"``) for dates that carry none:
    a date without an offset is its local time, one in UTC (``Z``, ``GMT``, Unix seconds) falls
    on its day there; a date with another offset keeps its own day.
    ``append=True`` adds the articles to the corpus already in ``out`` (``import --articles
    … --append``): those whose id its key event holds are left out, the rest written as one
    more segments file; the segments already there never change, so a re-run keeps their
    episodes' ids (see :attr:`Run.lineage`).
    """
    arguments: dict[str, Any] = {}
    if isinstance(source, (str, os.PathLike)):
        arguments["articles"] = os.fspath(source)
    elif hasattr(source, "__arrow_c_stream__"):
        arguments["table"] = source
        arguments["table_name"] = _table_name(source)
    else:
        raise TypeError(
            f"source: expected a path or URI, or a table with __arrow_c_stream__ (pyarrow, "
            f"polars, pandas >= 2.2 with pyarrow), not {type(source).__name__}"
        )
    out = _path(out, "out")
    with Shown(progress) as callback, _ColumnArguments():
        summary = _epimine.import_articles(
            out,
            job=_optional_path(job, "job"),
            key_event_column=key_event_column,
            id_column=id_column,
            published_column=published_column,
            title_column=title_column,
            text_column=text_column,
            theme_column=theme_column,
            on_error=on_error,
            target_chars=target_chars,
            append=append,
            progress=callback,
            date_format=date_format,
            timezone=timezone,
            **arguments,
        )
    corpus = Corpus(out, json.loads(summary))
    _log.info("%s", corpus.summary["summary"].rstrip())
    return corpus


def import_dataset(dataset_dir: PathLike, out: PathLike, *, progress: Progress = True) -> Corpus:
    """``epimine import DATASET_DIR``: a dataset folder (``<theme>/<event>/segments.txt``,
    ``doc_dates.txt``, ``groundtruth.tsv``, ``episodes.tsv``) into the corpus ``out``, with
    its gold labels (so that :meth:`Run.evaluate` scores a run of it)."""
    out = _path(out, "out")
    with Shown(progress) as callback:
        summary = _epimine.import_dataset(_path(dataset_dir, "dataset_dir"), out,
                                          progress=callback)
    corpus = Corpus(out, json.loads(summary))
    _log.info("%s", corpus.summary["summary"].rstrip())
    return corpus


def open_corpus(location: PathLike) -> Corpus:
    """A corpus folder written before (its tables are read when first asked for)."""
    return Corpus(_path(location, "location"))


def run(
    corpus: Corpus | PathLike | None = None,
    *,
    background: PathLike | None = None,
    out: PathLike | None = None,
    job: PathLike | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    workers: int | None = None,
    fresh: bool = False,
    overwrite: bool = False,
    run_time: str | None = None,
    progress: Progress = True,
) -> Run:
    """``epimine run``: the episodes of every key event of ``corpus``, written to ``out``.

    As on the command line, the job file ``job`` is read first, then the arguments
    (``corpus``, ``background``, ``out``, ``model``, ``workers``), then ``settings``, each
    ``{"section.key": value}`` as ``--set section.key=value`` (``{"episodes.max_episodes":
    10}``); an unknown setting raises :class:`InputError` naming it. ``background``: text
    (one document a line), a table from :func:`build_background`, ``"corpus"`` (the corpus's
    own articles) or ``"wordfreq"``; the job file may give it instead; without one, general
    English from the ``wordfreq`` package is the background, fetched once into the model cache
    (a general-news text does better). ``workers``: threads (one process: several are the command line's).

    Run again on the same ``out`` it resumes: every key event whose checkpoint still matches
    is reused (``fresh=True`` computes everything, and follows this corpus in an ``out`` whose last run followed another). An ``out`` holding files of anything else
    is refused unless ``overwrite=True``. Ctrl-C stops the run at the next event, keeps what
    is done, and raises ``KeyboardInterrupt``: the same call again resumes.

    ``run_time``: the run's time in the history of ``out`` (``lineage``, ``history/``), ISO
    8601 (``"2024-05-01T06:00:00Z"``) or Unix seconds as a string; default: when it commits.

    When some key events were skipped or fell back to no-LLM episodes (the command line's exit
    code 3), a :class:`PartialRunWarning` lists them.
    """
    sets = _settings(settings)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"workers: expected an int, not {type(workers).__name__}")
    with Shown(progress) as callback:
        result = json.loads(_epimine.run(
            job=_optional_path(job, "job"),
            corpus=_optional_path(corpus, "corpus"),
            background=_optional_path(background, "background"),
            out=_optional_path(out, "out"),
            model=model,
            sets=sets,
            workers=workers,
            fresh=fresh,
            overwrite=overwrite,
            run_time=run_time,
            progress=callback,
        ))
    done = Run(result["out"], result["report"], summary=result["summary"])
    _summarise(done)
    return done


def _summarise(done: Run) -> None:
    """The command line's summary lines, on the ``epimine`` logger; a warning for a partial
    run."""
    # The summary the command line prints (the same function writes it: `Run.summary`).
    for line in (done.summary or "").splitlines():
        _log.info("%s", line)
    if not done.partial:
        return
    lines = [f"skipped {e['key_event']}: {e.get('error')}" for e in done.skipped]
    for e in (done.manifest or {}).get("events", []):
        for f in (e.get("llm") or {}).get("fallbacks", []):
            lines.append(f"fell back {e['key_event']} (trial {f['trial']}): {f['error']}")
    warnings.warn(PartialRunWarning(f"{done.location}: a partial run:\n" + "\n".join(lines)),
                  stacklevel=3)


def open_run(location: PathLike) -> Run:
    """The output folder of a run written before: refused (:class:`InputError`) unless it is
    one whole finished run (its ``run.json`` there, and every file it lists matching), as
    ``epimine eval`` refuses it. A folder of tables without ``run.json`` (a baseline's) opens
    with ``manifest`` ``None``."""
    location = _path(location, "location")
    manifest = _epimine.open_run(location)
    return Run(location, None if manifest is None else json.loads(manifest))


def evaluate(corpus: Corpus | PathLike, run: Run | PathLike, k: int = 5, *,
             progress: Progress = True) -> Evaluation:
    """``epimine eval``: k-precision, k-recall and k-F1 of ``run``'s assignments against the
    gold labels of ``corpus`` (a corpus imported from a dataset folder)."""
    with Shown(progress) as callback:
        result = json.loads(_epimine.evaluate(_path(corpus, "corpus"), _path(run, "run"), k,
                                              progress=callback))
    return Evaluation(result["report"], result["text"])


def report(run: Run | PathLike, corpus: Corpus | PathLike, out: PathLike, *,
           top_segments: int = 5, order: str = "rank", trial: int = 0,
           progress: Progress = True) -> str:
    """``epimine report``: one self-contained HTML page of ``run`` at ``out`` (a file ending
    in ``.html``, or a folder that gets ``report.html``); returns where it was written.
    ``order``: ``"rank"`` or ``"confidence"``."""
    with Shown(progress) as callback:
        written = json.loads(_epimine.report(
            _path(run, "run"), _path(corpus, "corpus"), _path(out, "out"),
            top_segments=top_segments, order=order, trial=trial, progress=callback,
        ))
    _log.info("%d key events, %d episodes, %d bytes; wrote %s", written["events"],
              written["episodes"], written["bytes"], written["location"])
    return str(written["location"])


def build_background(text: PathLike, out: PathLike, *, progress: Progress = True) -> str:
    """``epimine background build``: a background text (one document a line) tokenized once
    into a reusable table at ``out`` (a path ending in ``.parquet``); returns ``out``."""
    out = _path(out, "out")
    with Shown(progress) as callback:
        docs, terms = _epimine.build_background(_path(text, "text"), out, progress=callback)
    _log.info("%d documents, %d terms; wrote %s", docs, terms, out)
    return out


def synth(out: PathLike, *, events: int = 4, docs_per_event: int = 40, seed: int = 7,
          progress: Progress = True) -> Corpus:
    """``epimine synth``: a synthetic corpus with planted episodes at ``out`` (with its gold
    labels, and ``background.txt`` to use as the background)."""
    out = _path(out, "out")
    with Shown(progress) as callback:
        _epimine.synth(out, events=events, docs_per_event=docs_per_event, seed=seed,
                       progress=callback)
    return Corpus(out)


def detect(
    articles: Any,
    *,
    background: PathLike | None = None,
    out: PathLike | None = None,
    job: PathLike | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    workers: int | None = None,
    progress: Progress = True,
    **columns: Any,
) -> Run:
    """Articles in, episodes out, in one call (for a notebook): :func:`import_articles` into
    ``<out>/corpus``, then :func:`run` into ``<out>/run``. ``out`` defaults to a temporary
    folder that lives as long as the returned run. ``columns``: the column arguments of
    :func:`import_articles` (``text_column="body"``, …; also ``on_error``, ``target_chars``).

    ``run.episodes`` and ``run.assignments`` are the answer; ``run.segments`` the segments
    they point at.
    """
    workdir = None
    if out is None:
        workdir = tempfile.TemporaryDirectory(prefix="epimine-")
        folder = workdir.name
    else:
        folder = _path(out, "out")
    corpus = import_articles(articles, os.path.join(folder, "corpus"), job=job,
                             progress=progress, **columns)
    done = run(corpus, background=background, out=os.path.join(folder, "run"), job=job,
               model=model, settings=settings, workers=workers, progress=progress)
    done._workdir = workdir
    return done
