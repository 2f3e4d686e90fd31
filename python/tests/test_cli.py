"""The package and the command line: the same inputs and settings give the same bytes, and
the same errors the same messages."""

from __future__ import annotations

import filecmp
import os
import subprocess

import pyarrow.parquet as pq
import pytest

import epimine
from conftest import cli

OUTPUTS = ["episodes", "assignments", "episode_articles", "left_out", "fragments", "terms", "pairs"]
SETTINGS = {"episodes.max_episodes": 4, "terms.synonym": 0.9, "episodes.top_articles": 0.3}


def test_import_and_run_give_the_cli_bytes(articles, epimine_bin, tiny_model, background,
                                           tmp_path):
    articles_file = tmp_path / "articles.parquet"
    pq.write_table(articles, articles_file)
    sets = [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
    cli(epimine_bin, "import", "--articles", str(articles_file), "--out",
        str(tmp_path / "cli-corpus"))
    printed = cli(epimine_bin, "run", "--corpus", str(tmp_path / "cli-corpus"), "--background",
        background, "--out", str(tmp_path / "cli-run"), "--model", tiny_model, "-w", "2",
        *sets)

    # From the same file, and from the same rows handed over in memory.
    for source, name in [(str(articles_file), "file"), (articles, "table")]:
        corpus = epimine.import_articles(source, tmp_path / f"{name}-corpus", progress=False)
        run = epimine.run(corpus, background=background, out=tmp_path / f"{name}-run",
                          model=tiny_model, workers=2, settings=SETTINGS, progress=False)
        assert filecmp.cmp(tmp_path / "cli-corpus/segments.parquet",
                           os.path.join(corpus.location, "segments.parquet"), shallow=False), name
        for table in OUTPUTS:
            assert filecmp.cmp(tmp_path / f"cli-run/{table}.parquet",
                               os.path.join(run.location, f"{table}.parquet"),
                               shallow=False), f"{name}: {table}"
        # The resolved job is the CLI's, but for where things are.
        assert run.manifest["job"]["episodes"]["max_episodes"] == 4
        # The summary is the one the command line printed (what the episodes hold and leave out).
        held = [line for line in printed.splitlines() if "in an episode" in line]
        assert held and held == [line for line in run.summary.splitlines()
                                 if "in an episode" in line], (printed, run.summary)
        assert run.manifest["job"]["terms"]["synonym"] == 0.9


def test_evaluate_and_report_are_the_cli_s(synth_corpus, epimine_bin, tmp_path, run_args):
    run = epimine.run(synth_corpus, out=tmp_path / "run", **run_args)
    evaluation = run.evaluate()
    assert str(evaluation) == cli(epimine_bin, "eval", "--corpus", synth_corpus.location,
                                  "--run", run.location)
    assert [e["key_event"] for e in evaluation.events] == [
        f"synth_event_{i:03}" for i in range(4)]
    assert all(0 <= e["k_f1"] <= 1 for e in evaluation.events), evaluation.events
    lo, hi = evaluation.all["k_f1_interval"]
    assert lo <= evaluation.all["k_f1"] <= hi and evaluation.all["events"] == 4, evaluation.all
    page = run.report(tmp_path / "page.html")
    assert page == str(tmp_path / "page.html")
    cli(epimine_bin, "report", "--run", run.location, "--corpus", synth_corpus.location,
        "--out", str(tmp_path / "cli-page.html"))
    assert filecmp.cmp(page, tmp_path / "cli-page.html", shallow=False)
    # An order the CLI's flag would not take is refused by the same command, naming the flag.
    with pytest.raises(epimine.InputError, match=r"--order\): `upside` is neither"):
        run.report(tmp_path / "other.html", order="upside")
    assert not (tmp_path / "other.html").exists()


def test_errors_carry_the_cli_message(epimine_bin, tmp_path):
    args = ["run", "--corpus", str(tmp_path / "nowhere"), "--background", "bg.txt",
            "--out", str(tmp_path / "out")]
    done = subprocess.run([epimine_bin, *args], capture_output=True, text=True)
    assert done.returncode == 1
    try:
        epimine.run(tmp_path / "nowhere", background="bg.txt", out=tmp_path / "out",
                    progress=False)
    except epimine.InputError as e:
        assert f"error: {e}" == done.stderr.strip().splitlines()[-1]
    else:
        raise AssertionError("no InputError")
    # A failed run leaves no output folder behind, as the binary does.
    assert not (tmp_path / "out").exists()
