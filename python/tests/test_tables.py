"""Arrow tables in and out: articles as a pyarrow, polars or pandas table become the same
corpus and the same episodes; the run's tables go to each library through
`__arrow_c_stream__`."""

from __future__ import annotations

import filecmp
import os

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import epimine

OUTPUTS = ["episodes", "assignments", "episode_articles", "left_out", "fragments", "terms", "pairs"]


def as_library(table: pa.Table, library: str):
    if library == "pyarrow":
        return table
    if library == "polars":
        return pl.DataFrame(table)
    return table.to_pandas()


@pytest.fixture(scope="module")
def detected(articles, tiny_model, background, tmp_path_factory):
    """`detect` on the same articles from each library, into folders of their own."""
    runs = {}
    for library in ["pyarrow", "polars", "pandas"]:
        out = tmp_path_factory.mktemp(library)
        runs[library] = epimine.detect(
            as_library(articles, library), background=background, out=out,
            model=tiny_model, workers=2, progress=False,
            settings={"episodes.max_episodes": 4},
        )
    return runs


def test_articles_from_each_library_give_the_same_corpus_and_episodes(detected, articles):
    first = detected["pyarrow"]
    for library, run in detected.items():
        assert isinstance(run, epimine.Run), library
        assert not run.partial, (library, run.skipped)
        for name in ["corpus/segments.parquet"] + [f"run/{t}.parquet" for t in OUTPUTS]:
            a = os.path.join(os.path.dirname(first.location), name)
            b = os.path.join(os.path.dirname(run.location), name)
            assert filecmp.cmp(a, b, shallow=False), f"{library}: {name} differs from pyarrow's"
    episodes = pl.DataFrame(first.episodes)
    events = set(articles.column("key_event").to_pylist())
    assert set(episodes["key_event"]) == events
    assert episodes.group_by("key_event").len()["len"].max() <= 4


def test_the_run_tables_reach_every_library_and_join(detected):
    run = detected["polars"]
    # lineage: the run's place in the history of its out (its time is when it committed);
    # developments: what happened in it (on a first run, every episode is new).
    assert run.tables == sorted(OUTPUTS + ["lineage", "developments"])
    for name in OUTPUTS + ["lineage", "developments"]:
        table = run.table(name)
        assert len(table) > 0, name
        # The stream can be taken any number of times, by any reader.
        a, b = pa.table(table), pa.table(table)
        assert a.equals(b)
        assert pl.DataFrame(table).shape == (len(table), len(table.column_names))
        assert pd.DataFrame.from_arrow(table).shape == a.shape
        assert table.to_pandas().shape == a.shape
        assert table.to_arrow().schema.names == table.column_names
    # Each episode's segments, with their text and article id (the join a user writes).
    assigned = pl.DataFrame(run.assignments).join(
        pl.DataFrame(run.segments), on=["key_event", "doc_id", "seg_idx"], how="left")
    assert assigned["text"].null_count() == 0
    assert assigned["source_id"].str.starts_with("https://news.example/").all()
    assert "episodes" in repr(run.episodes)


def test_a_run_reopens_and_is_path_like(detected, tmp_path):
    run = detected["pandas"]
    again = epimine.open_run(run)
    assert again.manifest["tables"] == run.manifest["tables"]
    assert os.fspath(again) == run.location
    assert pa.table(again.episodes).equals(pa.table(run.episodes))
    corpus = epimine.open_corpus(run.corpus)
    assert corpus.tables == ["boilerplate", "copies", "paragraphs", "segments"]
    assert corpus.copies.num_rows == 0
