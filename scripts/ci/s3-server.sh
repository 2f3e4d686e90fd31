#!/usr/bin/env bash
# Installs (once) and starts a real S3-protocol server on 127.0.0.1 for the tests: moto's
# `moto_server` from PyPI, in a virtual environment under target/. Prints the environment the
# tests need as `export` lines. Usage: eval "$(scripts/ci/s3-server.sh start)"; scripts/ci/s3-server.sh stop
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/target/s3-venv"
pidfile="$root/target/s3-server.pid"
bucket=epimine-test
moto_version=5.2.5

case "${1:-start}" in
start)
    if [ ! -x "$venv/bin/moto_server" ]; then
        echo "installing moto[server]==$moto_version into $venv" >&2
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$moto_version" >&2
    fi
    # A free port on loopback.
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$root/target/s3-server.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 100); do
        if curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    curl -sf -X PUT "http://127.0.0.1:$port/$bucket" >/dev/null || {
        echo "the S3 server did not come up; see target/s3-server.log" >&2
        exit 1
    }
    cat <<ENV
export AWS_ENDPOINT_URL=http://127.0.0.1:$port
export AWS_ALLOW_HTTP=true
export AWS_ACCESS_KEY_ID=epimine-test
export AWS_SECRET_ACCESS_KEY=epimine-test
export AWS_REGION=us-east-1
export EPIMINE_TEST_S3_BUCKET=$bucket
export EPIMINE_TEST_MOTO_SERVER=$venv/bin/moto_server
ENV
    ;;
stop)
    if [ -f "$pidfile" ]; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
