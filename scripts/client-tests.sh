#!/usr/bin/env bash
# Runs the real-client suites against a freshly built `covenant serve` on a free loopback port
# with a temporary data directory:
#   - tests/clients/*.py: pytest + confluent-kafka's Schema Registry client and serializers;
#   - tests/clients/node: `node --test` + @kafkajs/confluent-schema-registry (npm ci, cached in
#     tests/clients/node/node_modules);
#   - schemathesis: generated requests for every operation of /openapi.json (bounded by
#     SCHEMATHESIS_MAX_TIME seconds, default 120), asserting that none is answered with a 5xx.
#     It runs last because it changes global config and mode.
# All suites always run; the exit status is non-zero when either fails. Missing Node or npm,
# or a failed install, is an error, not a skip.
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
if [ ! -x "$VENV/bin/schemathesis" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis>=4,<5"
fi

NODE_DIR="$ROOT/tests/clients/node"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "client-tests: installing Node.js and npm from Debian's packages" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } || true
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "client-tests: node and npm are required for the Node client suite" >&2
  exit 2
fi
# Reinstall only when the lock file changed since the last install.
if [ ! -f "$NODE_DIR/node_modules/.package-lock.json" ] ||
  [ "$NODE_DIR/package-lock.json" -nt "$NODE_DIR/node_modules/.package-lock.json" ]; then
  if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "client-tests: npm ci failed in $NODE_DIR" >&2
    exit 2
  fi
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
PY_STATUS=$?
(cd "$NODE_DIR" && node --test)
NODE_STATUS=$?
"$VENV/bin/schemathesis" run "$COVENANT_URL/openapi.json" --checks not_a_server_error \
  --max-examples 10 --max-time "${SCHEMATHESIS_MAX_TIME:-120}" --seed 1 \
  --request-timeout 30 --continue-on-failure --no-color
FUZZ_STATUS=$?
if ! kill -0 "$PID" 2>/dev/null; then
  echo "client-tests: covenant serve died during the API fuzzer" >&2
  FUZZ_STATUS=1
fi
set -e
STATUS=0
if [ "$PY_STATUS" -ne 0 ] || [ "$NODE_STATUS" -ne 0 ] || [ "$FUZZ_STATUS" -ne 0 ]; then
  echo "client-tests: pytest exited $PY_STATUS, node --test exited $NODE_STATUS, schemathesis exited $FUZZ_STATUS" >&2
  STATUS=1
  echo "--- server log (last 40 lines) ---" >&2
  tail -n 40 "$LOG" >&2
fi
exit "$STATUS"
