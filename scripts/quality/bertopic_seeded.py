#!/usr/bin/env python3
"""Runs ../shared/peers/bertopic_run.py with another UMAP seed (it fixes random_state=42).

usage: bertopic_seeded.py SEED PEER_SCRIPT ARGS…
UMAP is the only random part of BERTopic's defaults (HDBSCAN is deterministic), so the spread over
seeds is the peer's own spread; scripts/quality/quality.sh reports it over 5 seeds (issue 27).
"""
import runpy
import sys

import os

seed = int(sys.argv[1])
# The peer's own single-thread settings, before umap (and numba) are imported here: numba
# refuses a NUMBA_NUM_THREADS that changes after its threads start.
for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[v] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["HF_HUB_OFFLINE"] = "1"
import umap  # noqa: E402

_UMAP = umap.UMAP


class SeededUMAP(_UMAP):
    def __init__(self, *args, **kwargs):
        kwargs["random_state"] = seed
        super().__init__(*args, **kwargs)


umap.UMAP = SeededUMAP
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
