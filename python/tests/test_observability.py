"""What a Python user watches: the library's logs through `logging`, progress through a
callback or tqdm, and the GIL free while Rust works."""

from __future__ import annotations

import logging
import threading

import epimine


def test_logs_go_through_logging_at_the_logger_s_level(synth_corpus, run_args, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="epimine"):
        epimine.run(synth_corpus, out=tmp_path / "a", **run_args)
    names = {r.name for r in caplog.records}
    messages = " | ".join(r.getMessage() for r in caplog.records)
    assert "epimine.progress" in names, names
    assert "statistics dataflow" in messages, messages
    assert "4 of 4 events done" in messages, messages
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="epimine"):
        epimine.run(synth_corpus, out=tmp_path / "b", **run_args)
    assert [r for r in caplog.records if r.levelno < logging.WARNING] == []


def test_progress_reaches_a_callback_and_tqdm(synth_corpus, run_args, tmp_path, capsys):
    seen = {}

    def record(updates):
        for u in updates:
            seen.setdefault(u["id"], {}).update(u)

    epimine.run(synth_corpus, out=tmp_path / "a", **{**run_args, "progress": record})
    bars = {u["name"]: u for u in seen.values()}
    events = next(u for name, u in bars.items() if name.startswith("events"))
    assert (events["done"], events["total"], events["finished"]) == (4, 4, "4 of 4")
    stats = bars["statistics dataflow"]
    assert stats["total"] is None and stats["finished"].endswith("events in this process's share")

    epimine.run(synth_corpus, out=tmp_path / "b", **{**run_args, "progress": True})
    drawn = capsys.readouterr().err
    assert "statistics dataflow" in drawn and "4/4" in drawn, drawn


def test_the_gil_is_free_while_a_run_works(synth_corpus, run_args, tmp_path):
    counted = 0
    done = threading.Event()

    def count():
        nonlocal counted
        while not done.is_set():
            counted += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        epimine.run(synth_corpus, out=tmp_path / "a", **run_args)
    finally:
        done.set()
        thread.join()
    # A few seconds of a free GIL count millions; held, a handful of switch intervals.
    assert counted > 1_000_000, counted
