"""Fixtures of the Python package's tests: the repository's tiny random-weight BERT (fast in
any build), synthetic corpora with planted episodes, the same articles as pyarrow, polars and
pandas tables, and the `epimine` binary the tests compare against (scripts/ci/test.sh builds it
before them; EPIMINE_BIN names another)."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pyarrow as pa
import pytest

import epimine

REPO = pathlib.Path(__file__).resolve().parents[2]
TINY_MODEL = str(REPO / "tests/fixtures/encoders/tiny-bert")


@pytest.fixture(scope="session")
def tiny_model() -> str:
    assert pathlib.Path(TINY_MODEL, "model.safetensors").is_file(), TINY_MODEL
    return TINY_MODEL


@pytest.fixture(scope="session")
def epimine_bin() -> str:
    path = os.environ.get("EPIMINE_BIN", str(REPO / "target/debug/epimine"))
    assert os.access(path, os.X_OK), (
        f"no epimine binary at {path}: build it (cargo build) or set EPIMINE_BIN"
    )
    return path


def cli(binary: str, *args: str) -> str:
    """Runs the binary; insists on success; returns stdout."""
    done = subprocess.run([binary, *args], capture_output=True, text=True,
                          env={**os.environ, "RUST_LOG": "warn"})
    assert done.returncode == 0, f"epimine {args}: {done.stderr}\n{done.stdout}"
    return done.stdout


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory: pytest.TempPathFactory) -> epimine.Corpus:
    """4 synthetic key events of 20 articles, with gold labels and `background.txt`."""
    folder = tmp_path_factory.mktemp("synth") / "corpus"
    return epimine.synth(folder, events=4, docs_per_event=20, progress=False)


@pytest.fixture(scope="session")
def background(synth_corpus: epimine.Corpus) -> str:
    return os.path.join(synth_corpus.location, "background.txt")


@pytest.fixture(scope="session")
def articles(synth_corpus: epimine.Corpus) -> pa.Table:
    """The synthetic corpus's articles as one table of articles (one row an article: key
    event, id, publication date, title, text of its segments), rows in reverse order."""
    segments = pa.table(synth_corpus.segments).to_pylist()
    by_article: dict[tuple[str, int], list[dict]] = {}
    for s in segments:
        by_article.setdefault((s["key_event"], s["doc_id"]), []).append(s)
    rows = []
    for (event, doc), segs in sorted(by_article.items(), reverse=True):
        segs.sort(key=lambda s: s["seg_idx"])
        rows.append({
            "key_event": event,
            "id": f"https://news.example/{event}/{doc}",
            "published": segs[0]["doc_date"].isoformat() if segs[0]["doc_date"] else None,
            "title": f"Article {doc} of {event}",
            "text": "\n\n".join(s["text"] for s in segs),
        })
    return pa.Table.from_pylist(rows)


@pytest.fixture
def run_args(tiny_model: str, background: str) -> dict:
    """What every test run takes: the tiny model, the synthetic background, 2 workers."""
    return {"background": background, "model": tiny_model, "workers": 2, "progress": False}


@pytest.fixture(autouse=True)
def ctrl_c_raises_keyboard_interrupt():
    """Python's own SIGINT handler, whatever the test runner inherited: a shell's background job
    starts with SIGINT ignored, and Python then installs no handler, so the interrupt tests'
    Ctrl-C would be lost (as a user's would be in such a process)."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
