# %% [markdown]
# # epimine from Python: articles in, episodes out
#
# A notebook-style example: its `# %%` cells open as a notebook in VS Code, PyCharm or
# Jupyter (with jupytext), and `python examples/python_quickstart.py` runs it whole.
#
# It needs the package (`pip install .` in a clone of epimine) and polars
# (`pip install polars tqdm`: tqdm draws the progress). It makes its own articles from a
# synthetic corpus with planted episodes, so it runs anywhere; your own articles go in the
# same way, as a pandas, polars or pyarrow table, or as a CSV, Parquet or JSON Lines path.
# The encoder, all-MiniLM-L6-v2, is fetched into the model cache on first use;
# `EPIMINE_MODEL` names another (a model folder, or a name in the cache).

# %%
import os
import tempfile

import polars as pl

import epimine

work = tempfile.mkdtemp(prefix="epimine-example-")
MODEL = os.environ.get("EPIMINE_MODEL", "all-MiniLM-L6-v2")

# %% [markdown]
# ## Articles
# One row an article: its key event (what happened), an id (here a URL), the publication
# date, a title and the text. The synthetic corpus gives three key events of 30 articles.

# %%
synthetic = epimine.synth(os.path.join(work, "synthetic"), events=3, docs_per_event=30)
background = os.path.join(synthetic.location, "background.txt")
articles = (
    pl.DataFrame(synthetic.segments)
    .sort("key_event", "doc_id", "seg_idx")
    .group_by("key_event", "doc_id", maintain_order=True)
    .agg(pl.col("text").str.join("\n\n"), pl.col("doc_date").first().alias("published"))
    .with_columns(
        id=pl.format("https://news.example/{}/{}", "key_event", "doc_id"),
        title=pl.format("Article {} of {}", "doc_id", "key_event"),
    )
    .select("key_event", "id", "published", "title", "text")
)
articles.head()

# %% [markdown]
# ## Episodes, in one call
# `detect` imports the articles (cut into segments) and runs the whole pipeline. The
# background is text unlike the events (one document a line) that sets their terms apart.

# %%
run = epimine.detect(
    articles,
    background=background,
    model=MODEL,
    workers=2,
    out=os.path.join(work, "detect"),
)
run

# %%
episodes = pl.DataFrame(run.episodes)
episodes.select(
    "key_event", "episode_id", "title", "n_segments", "n_articles", "first_date", "last_date"
)

# %% [markdown]
# ## Each episode's articles
# `episode_articles` lists each episode's articles for people to read: the article holding the
# episode's top passage first, with its id, title, date and the passage that put it there.

# %%
pl.DataFrame(run.episode_articles).filter(pl.col("article_rank") < 2).select(
    "key_event", "episode_id", "article_rank", "source_id", "title", "segments", "passage"
)

# %% [markdown]
# `assignments` lists each episode's segments in rank order; joined with the segments, they
# give every segment's text, article id and title.

# %%
passages = pl.DataFrame(run.assignments).join(
    pl.DataFrame(run.segments), on=["key_event", "doc_id", "seg_idx"]
)
per_episode = (
    passages.sort("rank")
    .group_by("key_event", "episode_id", maintain_order=True)
    .agg(
        pl.col("source_id").unique(maintain_order=True).alias("articles"),
        pl.col("text").first().alias("top_passage"),
    )
    .sort("key_event", "episode_id")
)
per_episode.head()

# %% [markdown]
# ## pandas, pyarrow, DuckDB
# Every table implements the Arrow PyCapsule interface: `pa.table(run.episodes)`,
# `pd.DataFrame.from_arrow(run.episodes)` (pandas 3), `run.episodes.to_pandas()`, or
# `duckdb.sql("select * from episodes")` after `episodes = run.episodes.to_arrow()`.

# %% [markdown]
# ## A page to read, and a score
# `report` writes one self-contained HTML page: a timeline of each event's episodes and their
# top segments. The synthetic corpus knows its planted episodes, so a run of it can be
# scored (k-precision, k-recall, k-F1 of each episode's top 5 segments).

# %%
page = run.report(os.path.join(work, "report.html"))
print("open", page)

scored = epimine.run(
    synthetic, background=background, model=MODEL, workers=2, out=os.path.join(work, "scored")
)
print(scored.evaluate())
