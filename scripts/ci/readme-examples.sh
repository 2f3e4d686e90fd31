#!/usr/bin/env bash
# Runs every ```sh block of README.md as written (but `scripts/ci/test.sh`, which is CI itself), one
# command at a time, in a scratch folder target/readme-examples/work whose ../shared is the
# development data beside the checkout (or $EPIMINE_SHARED) and whose examples/ is the
# checkout's. `cargo` there is the real cargo, pointed at this checkout's Cargo.toml. Then every
# ```python block, each as one script in the same folder, with the package installed from the
# checkout (`pip install`, a release build by maturin) and polars in a venv of their own. Fails
# on the first command that fails, naming it.
# Cost: a release build, the demo (about a minute) and a development-set run (about two); the
# package's release build and another development-set run.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${EPIMINE_SHARED:-$root/../shared}"
[ -d "$shared/data/epimine" ] || { echo "no development data at $shared (set EPIMINE_SHARED)" >&2; exit 1; }
base="$root/target/readme-examples"
rm -rf "$base"
mkdir -p "$base/work"
ln -s "$(cd "$shared" && pwd)" "$base/shared"
cargo() { command cargo "$1" --manifest-path "$root/Cargo.toml" "${@:2}"; }
export -f cargo
export root
# The commands of the sh blocks, one a line (no block uses line continuations).
mapfile -t commands < <(awk '/^```sh$/{on=1; next} /^```$/{on=0} on && NF' "$root/README.md")
ln -s "$root/examples" "$base/work/examples"
cd "$base/work"
n=0
for cmd in "${commands[@]}"; do
    if [ "$cmd" = "scripts/ci/test.sh" ]; then
        echo "== skipped (CI itself): $cmd"
        continue
    fi
    echo "== $cmd"
    start=$(date +%s)
    if ! bash -c "$cmd"; then
        echo "README example failed: $cmd" >&2
        exit 1
    fi
    echo "   ($(( $(date +%s) - start )) s)"
    n=$((n + 1))
done
# The python blocks, one file each.
awk -v dir="$base" '/^```python$/{on=1; n++; next} /^```$/{on=0} on {print > (dir "/block-" n ".py")}' "$root/README.md"
blocks=("$base"/block-*.py)
if [ -e "${blocks[0]}" ]; then
    echo "== pip install (the package, from $root) and polars into $base/venv"
    start=$(date +%s)
    python3 -m venv "$base/venv"
    "$base/venv/bin/pip" install -q --disable-pip-version-check "$root" polars
    echo "   ($(( $(date +%s) - start )) s)"
    for block in "${blocks[@]}"; do
        echo "== python $(basename "$block")"
        cat "$block"
        start=$(date +%s)
        if ! "$base/venv/bin/python" "$block"; then
            echo "README example failed: the python block $(basename "$block")" >&2
            exit 1
        fi
        echo "   ($(( $(date +%s) - start )) s)"
        n=$((n + 1))
    done
fi
echo "== $n README commands and blocks ran as written"
