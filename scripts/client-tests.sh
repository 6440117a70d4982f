#!/usr/bin/env bash
# Runs the real-client suites against a freshly built `covenant serve` on a free loopback port
# with a temporary data directory:
#   - tests/clients/*.py: pytest + confluent-kafka's Schema Registry client and serializers, and
#     pyiceberg as the differential peer of the Iceberg format (test_iceberg.py); the web
#     console in headless Chromium driven by Selenium (test_console.py);
#   - tests/clients/node: `node --test` + @kafkajs/confluent-schema-registry, and Confluent's
#     @confluentinc/schemaregistry for field encryption (encryption.test.js) (npm ci, cached in
#     tests/clients/node/node_modules);
#   - the repository's pre-commit hook run by the pre-commit framework (test_precommit.py);
#   - schemathesis: generated requests for every operation of /openapi.json (bounded by
#     SCHEMATHESIS_MAX_TIME seconds, default 120), asserting that none is answered with a 5xx.
#     It runs last because it changes global config and mode.
# A second server runs with `--auth-file` (made here with `covenant auth`) for the suites'
# credential tests (test_auth.py, auth.test.js) and field encryption (test_encryption.py,
# encryption.test.js), at COVENANT_AUTH_URL; a third serves HTTPS
# with a certificate authority made here (make_pki.py) and client certificates (test_tls.py,
# tls.test.js), at COVENANT_TLS_URL.
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
# cryptography makes the test certificate authority (tests/clients/make_pki.py).
if ! "$VENV/bin/python" -c "import confluent_kafka.schema_registry, fastavro, pytest, google.protobuf, jsonschema, cryptography" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "confluent-kafka[schemaregistry,avro,json,protobuf]" pytest cryptography
fi
# The rules extra (tink) runs the client's field encryption through the DEK Registry
# (tests/clients/test_encryption.py).
if ! "$VENV/bin/python" -c "import tink" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "confluent-kafka[rules]"
fi
# pyiceberg (pinned) is the differential peer of the Iceberg format (tests/clients/test_iceberg.py),
# on its SQLite catalog.
if ! "$VENV/bin/python" -c "import pyiceberg, sqlalchemy; assert pyiceberg.__version__ == '0.12.0'" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "pyiceberg[sql-sqlite]==0.12.0"
fi
# Selenium drives Debian's Chromium in the web console's browser test (test_console.py).
if ! "$VENV/bin/python" -c "import selenium" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "selenium>=4.20,<5"
fi
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "client-tests: installing Chromium and ChromeDriver from Debian's packages" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } || true
fi
# The pre-commit framework runs the repository's own hook (tests/clients/test_precommit.py).
if [ ! -x "$VENV/bin/pre-commit" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "pre-commit>=3,<5"
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
free_port() {
  "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
AUTH_PORT=$(free_port)
AUTH_FILE="$DATA/auth.json"
AUTH_LOG="$DATA/server-auth.log"
printf 'w-pass\n' | "$BIN" auth add-user "$AUTH_FILE" writer --password-stdin 2>/dev/null
printf 'r-pass\n' | "$BIN" auth add-user "$AUTH_FILE" reader --password-stdin 2>/dev/null
"$BIN" auth grant "$AUTH_FILE" writer Write 'Subject:orders-.*'
"$BIN" auth grant "$AUTH_FILE" reader Read 'SubjectPrefix:orders-'
"$BIN" auth grant "$AUTH_FILE" reader Read 'Config:'
"$BIN" auth grant "$AUTH_FILE" svc-orders Write 'Subject:orders-.*'
# Field encryption (test_encryption.py, node/encryption.test.js): the writer's KEKs; the reader
# has none.
"$BIN" auth grant "$AUTH_FILE" writer Write 'Kek:orders-'
# Approvals (test_approvals.py): accepting risk takes Approve; Govern (usage reports, granted
# on the subjects only) does not.
printf 'a-pass\n' | "$BIN" auth add-user "$AUTH_FILE" approver --password-stdin 2>/dev/null
printf 'g-pass\n' | "$BIN" auth add-user "$AUTH_FILE" governor --password-stdin 2>/dev/null
printf 'x-pass\n' | "$BIN" auth add-user "$AUTH_FILE" auditor --password-stdin 2>/dev/null
"$BIN" auth grant "$AUTH_FILE" approver Approve 'SubjectPrefix:orders-'
"$BIN" auth grant "$AUTH_FILE" governor Govern 'SubjectPrefix:orders-'
"$BIN" auth grant "$AUTH_FILE" auditor Admin 'Config:'
TLS_PORT=$(free_port)
TLS_DIR="$DATA/pki"
TLS_LOG="$DATA/server-tls.log"
mkdir -p "$TLS_DIR"
"$VENV/bin/python" "$ROOT/tests/clients/make_pki.py" "$TLS_DIR"

"$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$DATA/store" >"$LOG" 2>&1 &
PID=$!
"$BIN" serve --listen "127.0.0.1:$AUTH_PORT" --data-dir "$DATA/store-auth" --auth-file "$AUTH_FILE" >"$AUTH_LOG" 2>&1 &
AUTH_PID=$!
"$BIN" serve --listen "127.0.0.1:$TLS_PORT" --data-dir "$DATA/store-tls" --auth-file "$AUTH_FILE" \
  --tls-cert "$TLS_DIR/server.pem" --tls-key "$TLS_DIR/server.key" --tls-client-ca "$TLS_DIR/ca.pem" >"$TLS_LOG" 2>&1 &
TLS_PID=$!
cleanup() {
  kill "$PID" "$AUTH_PID" "$TLS_PID" 2>/dev/null || true
  wait "$PID" "$AUTH_PID" "$TLS_PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT

wait_up() { # pid port log [scheme]
  for _ in $(seq 1 100); do
    if "$VENV/bin/python" -c "import ssl, urllib.request; urllib.request.urlopen('${4:-http}://localhost:$2/health/live', context=ssl.create_default_context(cafile='$TLS_DIR/ca.pem'))" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$1" 2>/dev/null; then
      echo "covenant serve exited early:" >&2
      cat "$3" >&2
      exit 2
    fi
    sleep 0.1
  done
}
wait_up "$PID" "$PORT" "$LOG"
wait_up "$AUTH_PID" "$AUTH_PORT" "$AUTH_LOG"
wait_up "$TLS_PID" "$TLS_PORT" "$TLS_LOG" https

export COVENANT_URL="http://127.0.0.1:$PORT"
export COVENANT_AUTH_URL="http://127.0.0.1:$AUTH_PORT"
export COVENANT_TLS_URL="https://localhost:$TLS_PORT"
export COVENANT_TLS_DIR="$TLS_DIR"
# test_migrate.py starts its own source and destination servers with this binary.
export COVENANT_BIN="$BIN"
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
  echo "--- authenticating server log (last 20 lines) ---" >&2
  tail -n 20 "$AUTH_LOG" >&2
  echo "--- TLS server log (last 20 lines) ---" >&2
  tail -n 20 "$TLS_LOG" >&2
fi
exit "$STATUS"
