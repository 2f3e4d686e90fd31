"""Bad inputs raise the right exception, with the command line's message naming the file,
row, column or setting; nothing is written."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import epimine


def test_the_hierarchy():
    for kind in [epimine.InputError, epimine.StorageError, epimine.ClusterError,
                 epimine.LLMError]:
        assert issubclass(kind, epimine.EpimineError)
    assert issubclass(epimine.InputError, ValueError)


def test_a_missing_column_names_the_table_and_the_setting(articles, tmp_path):
    with pytest.raises(epimine.InputError) as e:
        epimine.import_articles(articles.drop_columns(["text"]), tmp_path / "c", progress=False)
    message = str(e.value)
    assert message.startswith("pyarrow Table: 1 required column(s) missing:"), message
    assert "no column `text` (name it with --text-column" in message, message
    assert "`key_event`, `id`, `published`, `title`" in message, message
    assert message.endswith("from Python: import_articles(…, text_column=…)"), message
    assert not (tmp_path / "c").exists()
    # Columns that look like the ones meant are named as the keyword arguments that take them.
    other = articles.rename_columns(["event", "url", "published", "title", "body"])
    with pytest.raises(epimine.InputError) as e:
        epimine.import_articles(other, tmp_path / "c", progress=False)
    assert str(e.value).endswith(
        'from Python: import_articles(…, key_event_column="event", id_column="url", '
        'text_column="body")'), str(e.value)
    # Named, the column is found.
    renamed = articles.rename_columns(["key_event", "id", "published", "title", "body"])
    corpus = epimine.import_articles(renamed, tmp_path / "c", text_column="body", progress=False)
    assert len(corpus.segments) > 0


def test_a_column_of_the_wrong_type(articles, tmp_path):
    wrong = articles.set_column(4, "text", pa.array(range(len(articles)), pa.int64()))
    with pytest.raises(epimine.InputError, match=r"pyarrow Table: column `text` is Int64, expected a string"):
        epimine.import_articles(wrong, tmp_path / "c", progress=False)


def test_bad_rows_are_listed_and_nothing_is_written_unless_skipped(articles, tmp_path):
    texts = articles.column("text").to_pylist()
    texts[2] = "   "
    bad = articles.set_column(4, "text", pa.array(texts))
    with pytest.raises(epimine.InputError) as e:
        epimine.import_articles(bad, tmp_path / "c", progress=False)
    assert "1 bad row(s); nothing was written" in str(e.value)
    assert "pyarrow Table: row 3, column `text`" in str(e.value)
    assert not (tmp_path / "c").exists()
    corpus = epimine.import_articles(bad, tmp_path / "c", on_error="skip", progress=False)
    rejected = pa.table(corpus.rejected).to_pylist()
    assert [(r["file"], r["row"], r["column"]) for r in rejected] == [("pyarrow Table", 3, "text")]
    with pytest.raises(epimine.InputError, match="on_error: `maybe` is neither"):
        epimine.import_articles(bad, tmp_path / "d", on_error="maybe", progress=False)


def test_an_unknown_or_mistyped_setting_names_it(synth_corpus, run_args, tmp_path):
    with pytest.raises(epimine.InputError, match=r"--set episodes\.no_such_setting=1: "):
        epimine.run(synth_corpus, out=tmp_path / "r", settings={"episodes.no_such_setting": 1},
                    **run_args)
    with pytest.raises(epimine.InputError, match=r"--set episodes\.max_episodes=\"many\""):
        epimine.run(synth_corpus, out=tmp_path / "r", settings={"episodes.max_episodes": "many"},
                    **run_args)
    with pytest.raises(TypeError, match="settings"):
        epimine.run(synth_corpus, out=tmp_path / "r", settings={"episodes.max_episodes": None},
                    **run_args)
    with pytest.raises(epimine.InputError, match="cluster.workers = 0: must be at least 1"):
        epimine.run(synth_corpus, out=tmp_path / "r", **{**run_args, "workers": 0})
    assert not (tmp_path / "r").exists()


def test_a_missing_input(synth_corpus, run_args, tmp_path):
    with pytest.raises(epimine.InputError, match=r"background: .*missing-bg\.txt"):
        epimine.run(synth_corpus, out=tmp_path / "r",
                    **{**run_args, "background": tmp_path / "missing-bg.txt"})
    assert not (tmp_path / "r").exists()
    with pytest.raises(epimine.InputError, match="no file found"):
        epimine.import_articles(tmp_path / "nothing-here/", tmp_path / "c", progress=False)
    with pytest.raises(TypeError, match="source: expected a path or URI, or a table"):
        epimine.import_articles(42, tmp_path / "c", progress=False)
    with pytest.raises(epimine.InputError, match="not a finished run"):
        (tmp_path / "unfinished").mkdir()
        (tmp_path / "unfinished/job.toml").write_text("")
        epimine.open_run(tmp_path / "unfinished")


def test_storage_and_llm_errors(synth_corpus, run_args, tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(epimine.StorageError, match=str(blocked)):
        epimine.run(synth_corpus, out=blocked / "run", **run_args)
    monkeypatch.delenv("EPIMINE_TEST_NO_KEY", raising=False)
    with pytest.raises(epimine.LLMError, match="EPIMINE_TEST_NO_KEY"):
        epimine.run(synth_corpus, out=tmp_path / "llm", settings={
            "llm.backend": "openai", "llm.model": "m", "llm.api_key_env": "EPIMINE_TEST_NO_KEY",
        }, **run_args)
    assert not os.path.exists(tmp_path / "llm")


def test_dates_in_another_form_need_date_format(articles, tmp_path):
    # Day-first dates with a time: refused by default (naming the setting), read with
    # date_format.
    n = len(articles)
    eu = articles.set_column(2, "published", pa.array(["02/09/2024 15:45"] * n, pa.string()))
    with pytest.raises(epimine.InputError, match=r"02/09/2024 15:45.*--date-format"):
        epimine.import_articles(eu, tmp_path / "refused", progress=False)
    assert not (tmp_path / "refused").exists()
    corpus = epimine.import_articles(eu, tmp_path / "c", date_format="%d/%m/%Y %H:%M",
                                     progress=False)
    days = set(corpus.segments.to_arrow().column("doc_date").to_pylist())
    assert [str(d) for d in days] == ["2024-09-02"], days
