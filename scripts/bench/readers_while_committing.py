#!/usr/bin/env python3
"""Readers polling a run folder while runs commit into it back to back (issue 64, item 1).

Usage: scripts/bench/readers_while_committing.py BIN CORPUS OUT RUNS [top|version] [-- RUN ARGS…]

Runs `BIN run --corpus CORPUS --out OUT -w 1 [RUN ARGS]` once, then RUNS more times (alternating
`episodes.keywords` between 3 and 4, so that consecutive runs' tables differ) while two threads
read, over and over, `run.json` and then `episodes.parquet` and `assignments.parquet` — at the
top of OUT (`top`, the paths the README gives) or in the folder `run.json`'s `version` names
(`version`, as `epimine report` and Python's `Run` read). A read is *mixed* when a table's
sha256 is not the one that `run.json` lists (two runs' files), an *error* when a file is missing
or unreadable. Prints the runs, the seconds, and the reads, mixed and errors. Standard library
only.
"""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        at = args.index("--")
        args, extra = args[:at], args[at + 1:]
    if len(args) not in (4, 5):
        sys.exit(__doc__)
    binary, corpus, out, runs = args[0], args[1], args[2], int(args[3])
    mode = args[4] if len(args) == 5 else "top"
    if mode not in ("top", "version"):
        sys.exit(f"mode {mode!r}: top or version")
    stop = threading.Event()
    lock = threading.Lock()
    stats = {"reads": 0, "mixed": 0, "errors": 0}

    def count(key):
        with lock:
            stats["reads"] += 1
            if key:
                stats[key] += 1

    def reader():
        while not stop.is_set():
            try:
                with open(os.path.join(out, "run.json"), "rb") as f:
                    manifest = json.load(f)
                listed = {t["name"]: t["sha256"] for t in manifest["tables"]}
                base = out
                if mode == "version" and manifest.get("version"):
                    base = os.path.join(out, manifest["version"])
                mixed = False
                for name in ("episodes.parquet", "assignments.parquet"):
                    with open(os.path.join(base, name), "rb") as f:
                        mixed |= listed.get(name) != hashlib.sha256(f.read()).hexdigest()
                count("mixed" if mixed else None)
            except Exception:
                count("errors")

    def run(keywords=None):
        cmd = [binary, "run", "--corpus", corpus, "--out", out, "-w", "1"] + extra
        if keywords:
            cmd += ["--set", f"episodes.keywords={keywords}"]
        subprocess.run(cmd, check=True, capture_output=True)

    run()
    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    started = time.time()
    try:
        for i in range(runs):
            run(3 + i % 2)
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(f"{binary} ({mode}): {runs} runs in {time.time() - started:.0f}s; reads {stats['reads']}, "
          f"mixed {stats['mixed']}, errors {stats['errors']}")


if __name__ == "__main__":
    main()
