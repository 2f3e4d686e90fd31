"""Following an event from Python: a day's articles appended to a corpus as a table
(`import_articles(..., append=True)`), a re-run on the same `out`, and the run's lineage: the
episodes of the events the new articles did not touch keep their ids, and the history holds
both runs (the CLI's `import --articles --append` and `run --run-time`)."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pyarrow.compute as pc

import epimine


def test_appending_a_table_keeps_the_untouched_events_ids(tmp_path: pathlib.Path,
                                                          articles: pa.Table,
                                                          run_args: dict) -> None:
    events = sorted(set(articles.column("key_event").to_pylist()))
    changed = events[0]
    # Day 1: every article but the last three of one event; day 2: those three.
    in_changed = [i for i, e in enumerate(articles.column("key_event").to_pylist()) if e == changed]
    later = set(in_changed[:3])
    day1 = articles.take([i for i in range(articles.num_rows) if i not in later])
    day2 = articles.take(sorted(later))
    corpus = epimine.import_articles(day1, tmp_path / "corpus", progress=False)
    initial_rows = pa.table(corpus.segments).num_rows
    out = tmp_path / "run"
    first = epimine.run(corpus, out=out, run_time="2024-05-01T06:00:00Z", **run_args)
    first_lineage = pa.table(first.lineage)
    assert first_lineage.num_rows > 0
    assert set(first_lineage.column("status").to_pylist()) == {"new"}
    # On a first run every episode is a development (new); read now, before the folder moves on.
    assert pa.table(first.developments).num_rows == first_lineage.num_rows

    added = epimine.import_articles(day2, tmp_path / "corpus", append=True, progress=False)
    assert added.summary["segments"] > 0
    # The same day again adds nothing.
    again = epimine.import_articles(day2, tmp_path / "corpus", append=True, progress=False)
    assert again.summary["segments"] == 0

    second = epimine.run(tmp_path / "corpus", out=out, run_time="2024-05-02T06:00:00Z",
                         **run_args)
    lineage = pa.table(second.lineage)

    def ids(table: pa.Table, event: str) -> list:
        rows = table.filter(pc.equal(table.column("key_event"), event))
        rows = rows.filter(pc.invert(pc.equal(rows.column("status"), "ended")))
        return sorted(zip(rows.column("trial").to_pylist(), rows.column("stable_id").to_pylist()))

    for event in events[1:]:
        assert ids(lineage, event) == ids(first_lineage, event), event
        statuses = set(lineage.filter(pc.equal(lineage.column("key_event"), event))
                       .column("status").to_pylist())
        assert statuses == {"continued"}, (event, statuses)
    # Today's developments: only the changed event can have any, and run.json lists the same.
    developments = pa.table(second.developments)
    assert set(developments.column("key_event").to_pylist()) <= {changed}
    assert developments.num_rows == len(second.manifest["history"]["developments"])
    history = sorted(p.name for p in (out / "history").iterdir())
    assert len(history) == 2, history
    # The first run's tables, read only now, are still its own (its version folder, issue 64):
    # every episode new, none continued, though the top of `out` is the second run's.
    assert first.manifest["version"] != second.manifest["version"]
    assert set(pa.table(first.episodes).column("status").to_pylist()) == {"new"}
    assert "continued" in set(pa.table(second.episodes).column("status").to_pylist())
    # The corpus's segments are every batch's, so that every assignment joins its segment.
    segments = pa.table(second.segments)
    assert segments.num_rows == pa.table(added.segments).num_rows
    assert segments.num_rows == initial_rows + added.summary["segments"]
    keys = set(zip(segments.column("key_event").to_pylist(), segments.column("doc_id").to_pylist(),
                   segments.column("seg_idx").to_pylist()))
    assigned = pa.table(second.assignments)
    assert set(zip(assigned.column("key_event").to_pylist(), assigned.column("doc_id").to_pylist(),
                   assigned.column("seg_idx").to_pylist())) <= keys
