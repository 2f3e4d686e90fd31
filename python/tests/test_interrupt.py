"""Ctrl-C: a real SIGINT while a run works raises KeyboardInterrupt once the run has stopped,
with nothing committed and the lock given back; the same call again resumes from the
checkpoints to the bytes of an uninterrupted run. Also Ctrl-C in an import: nothing written."""

from __future__ import annotations

import filecmp
import logging
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import epimine

OUTPUTS = ["episodes", "assignments", "episode_articles", "left_out", "fragments", "terms", "pairs"]


def sigint_after_first_event(updates):
    """A progress callback that sends this process a real SIGINT once the first event is done
    (the callback runs on the calling thread, as Ctrl-C's handler does)."""
    for u in updates:
        if u["name"].startswith("events") and u["done"] >= 1:
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_stops_a_run_that_then_resumes_to_the_same_bytes(tmp_path, tiny_model, caplog):
    corpus = epimine.synth(tmp_path / "corpus", events=5, docs_per_event=20, progress=False)
    args = {"background": os.path.join(corpus.location, "background.txt"),
            "model": tiny_model, "workers": 1}
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="epimine"):
        with pytest.raises(KeyboardInterrupt):
            epimine.run(corpus, out=out, progress=sigint_after_first_event, **args)
    said = caplog.text
    assert "interrupted: stopping at the next event" in said, said
    assert "the same run again resumes" in said, said
    assert not (out / "run.json").exists()
    assert len(os.listdir(out / "_checkpoints")) == 1
    # The lock given back (its folder goes with its last object).
    assert not (out / "_lock").exists() or os.listdir(out / "_lock") == []
    with pytest.raises(epimine.InputError, match="not a finished run"):
        epimine.open_run(out)

    resumed = epimine.run(corpus, out=out, progress=False, **args)
    assert resumed.manifest["checkpoints"]["reused"] == 1
    fresh = epimine.run(corpus, out=tmp_path / "fresh", progress=False, **args)
    for table in OUTPUTS:
        assert filecmp.cmp(out / f"{table}.parquet", tmp_path / f"fresh/{table}.parquet",
                           shallow=False), table


def test_a_progress_callback_that_raises_stops_the_run_the_same_way(synth_corpus, run_args,
                                                                    tmp_path):
    def fail(updates):
        raise RuntimeError("the notebook closed")

    with pytest.raises(RuntimeError, match="the notebook closed"):
        epimine.run(synth_corpus, out=tmp_path / "run", **{**run_args, "progress": fail})
    assert not (tmp_path / "run/run.json").exists()


def test_ctrl_c_in_an_import_leaves_each_file_whole_or_absent(articles, tmp_path):
    """Ctrl-C as an import starts reading: KeyboardInterrupt once it stopped, and its file is
    absent or whole (as when the command line is killed: a file being published when the
    import is dropped still lands whole)."""
    many = pa.concat_tables([
        articles.set_column(1, "id", pc.binary_join_element_wise(
            articles.column("id"), pa.scalar(f"?copy={i}"), ""))
        for i in range(200)
    ])

    def sigint(updates):
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        epimine.import_articles(many, tmp_path / "stopped", progress=sigint)
    whole = epimine.import_articles(many, tmp_path / "whole", progress=False)
    # The copies are dropped as duplicates.
    assert sum(e["duplicates"] for e in whole.summary["events"]) == 199 * len(articles)
    stopped = tmp_path / "stopped/segments.parquet"
    if stopped.exists():
        assert filecmp.cmp(stopped, tmp_path / "whole/segments.parquet", shallow=False)


def test_ctrl_c_from_outside_while_rust_works(tmp_path, tiny_model):
    """A Python process running a run, sent SIGINT by another process once its first
    checkpoint is written: it stops, says what it kept, and dies of KeyboardInterrupt; the
    folder is resumable (uncommitted, lock given back)."""
    corpus = epimine.synth(tmp_path / "corpus", events=10, docs_per_event=20, progress=False)
    out = tmp_path / "run"
    script = (
        "import epimine\n"
        f"epimine.run({corpus.location!r}, background={corpus.location + '/background.txt'!r}, "
        f"out={str(out)!r}, model={tiny_model!r}, workers=1, progress=False)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((out / "_checkpoints").glob("*.ckpt")):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGINT, (child.returncode, stderr)
    assert "KeyboardInterrupt" in stderr, stderr
    assert "interrupted: stopping at the next event" in stderr, stderr
    assert "the same run again resumes" in stderr, stderr
    assert not (out / "run.json").exists()
    kept = len(list((out / "_checkpoints").glob("*.ckpt")))
    assert 1 <= kept < 10, kept
    assert not (out / "_lock").exists() or os.listdir(out / "_lock") == []
    resumed = epimine.run(corpus, background=os.path.join(corpus.location, "background.txt"),
                          out=out, model=tiny_model, workers=1, progress=False)
    assert resumed.manifest["checkpoints"]["reused"] == kept
