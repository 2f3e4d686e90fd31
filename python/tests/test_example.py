"""The notebook-style example (examples/python_quickstart.py) runs as written, with the tiny
model named by EPIMINE_MODEL (all-MiniLM-L6-v2 is too slow in the tests' debug build)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_the_quickstart_example_runs(tiny_model, tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "examples/python_quickstart.py")],
        capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "EPIMINE_MODEL": tiny_model, "TMPDIR": str(tmp_path)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "open " in done.stdout and "report.html" in done.stdout, done.stdout
    assert "5-F1" in done.stdout, done.stdout
