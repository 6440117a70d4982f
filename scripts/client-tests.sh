#!/usr/bin/env bash
# Runs the real-client suite (tests/clients, pytest + confluent-kafka's Schema Registry client
# and serializers) against a freshly built `covenant serve` on a free loopback port with a
# temporary data directory. Exits with pytest's status.
#
# usage: scripts/client-tests.sh [pytest args...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV="$ROOT/.venv-clients"

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import confluent_kafka.schema_registry, fastavro, pytest, google.protobuf, jsonschema" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "confluent-kafka[schemaregistry,avro,json,protobuf]" pytest
fi

cargo build --quiet -p covenant-cli --manifest-path "$ROOT/Cargo.toml"
BIN="$ROOT/target/debug/covenant"

PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
DATA=$(mktemp -d -t covenant-clients.XXXXXX)
LOG="$DATA/server.log"
"$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$DATA/store" >"$LOG" 2>&1 &
PID=$!
cleanup() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
  if "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health/live')" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "covenant serve exited early:" >&2
    cat "$LOG" >&2
    exit 2
  fi
  sleep 0.1
done

export COVENANT_URL="http://127.0.0.1:$PORT"
set +e
"$VENV/bin/python" -m pytest -q "$ROOT/tests/clients" "$@"
STATUS=$?
set -e
if [ "$STATUS" -ne 0 ]; then
  echo "--- server log (last 40 lines) ---" >&2
  tail -n 40 "$LOG" >&2
fi
exit "$STATUS"
