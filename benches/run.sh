#!/usr/bin/env bash
# Covenant side by side with its peers, in one run, on the same inputs; prints one markdown
# table (see benches/README.md).
#
#   benches/run.sh            full sizes, release build (takes long: the scale part loads
#                             100,000 subjects x 10 versions)
#   benches/run.sh --smoke    tiny sizes, debug build, a few seconds per part; exits non-zero
#                             when any part breaks (run by scripts/test.sh)
#
# Extra arguments go to covenant-bench (e.g. --parts check,http --runs 3 --scale-subjects 10000).
# The peers are installed on first use: Apache's Python `avro` in benches/.peers/venv and
# `@bufbuild/buf` from npm in benches/.peers/npm. A peer that cannot be installed is reported
# as n/a with the reason, not as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

MODE=full
ARGS=()
for a in "$@"; do
  case "$a" in
    --smoke) MODE=smoke; ARGS+=(--smoke) ;;
    *) ARGS+=("$a") ;;
  esac
done

log() { echo "bench: $*" >&2; }

if [ "$MODE" = smoke ]; then
  PROFILE_DIR=debug
  cargo build --locked -q -p covenant-cli -p covenant-bench
else
  PROFILE_DIR=release
  cargo build --locked -q --release -p covenant-cli -p covenant-bench
fi
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo "$ROOT/target")
BIN="$TARGET_DIR/$PROFILE_DIR"

PEERS="$ROOT/benches/.peers"
mkdir -p "$PEERS"

# Apache's Python avro package (the reference implementation's Python checker).
PY_ARGS=()
VENV="$PEERS/venv"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import avro.compatibility' 2>/dev/null; then
  log "installing Python avro into $VENV"
  if ! { python3 -m venv "$VENV" >"$PEERS/pip.log" 2>&1 \
         && timeout 300 "$VENV/bin/pip" install -q --disable-pip-version-check 'avro>=1.12,<1.13' >>"$PEERS/pip.log" 2>&1; }; then
    log "Python avro could not be installed (see $PEERS/pip.log)"
  fi
fi
if "$VENV/bin/python" -c 'import avro.compatibility' 2>/dev/null; then
  PY_ARGS=(--python "$VENV/bin/python")
  PY_VERSION=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("avro"))')
else
  PY_ARGS=(--python-missing "Python avro could not be installed: $(tail -1 "$PEERS/pip.log" 2>/dev/null || echo 'python3 -m venv failed')")
  PY_VERSION=n/a
fi

# DuckDB for the profile part, into the same virtualenv; n/a when it cannot be installed.
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import duckdb' 2>/dev/null; then
  log "installing DuckDB into $VENV"
  timeout 300 "$VENV/bin/pip" install -q --disable-pip-version-check 'duckdb>=1.1,<2' >>"$PEERS/pip.log" 2>&1 \
    || log "DuckDB could not be installed (see $PEERS/pip.log)"
fi

# buf, from the @bufbuild/buf npm package (it ships the binary).
BUF_ARGS=()
BUF="$PEERS/npm/node_modules/.bin/buf"
if [ ! -x "$BUF" ]; then
  log "installing @bufbuild/buf into $PEERS/npm"
  mkdir -p "$PEERS/npm"
  if ! command -v npm >/dev/null; then
    echo "npm not found" >"$PEERS/npm.log"
  elif ! (cd "$PEERS/npm" && { [ -f package.json ] || npm init -y >/dev/null; } \
          && timeout 300 npm install --silent --no-audit --no-fund '@bufbuild/buf@1') >"$PEERS/npm.log" 2>&1; then
    log "buf could not be installed (see $PEERS/npm.log)"
  fi
fi
if [ -x "$BUF" ] && "$BUF" --version >/dev/null 2>&1; then
  BUF_ARGS=(--buf "$BUF")
  BUF_VERSION=$("$BUF" --version 2>&1)
else
  BUF_ARGS=(--buf-missing "buf could not be installed: $(tail -1 "$PEERS/npm.log" 2>/dev/null || echo unknown)")
  BUF_VERSION=n/a
fi

CORPUS="$ROOT/../shared/peer-corpus"

echo "## Covenant benchmarks ($MODE)"
echo
echo "- commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $PROFILE_DIR build, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "- machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
DUCKDB_VERSION=$("$VENV/bin/python" -c 'import duckdb; print(duckdb.__version__)' 2>/dev/null || echo n/a)
echo "- peers: DuckDB $DUCKDB_VERSION, apache-avro crate $(awk '/^name = "apache-avro"/ {getline; gsub(/"/, "", $3); print $3}' Cargo.lock), Python avro $PY_VERSION ($(python3 --version 2>&1)), buf $BUF_VERSION"
echo

# A throwaway PostgreSQL for the second HTTP run; covenant-bench reads COVENANT_TEST_POSTGRES.
exec scripts/with-postgres.sh "$BIN/covenant-bench" \
  --covenant "$BIN/covenant" --corpus "$CORPUS" --peer-script "$ROOT/benches/peers/avro_check.py" \
  --profile-counter-script "$ROOT/benches/peers/profile_counter.py" \
  --profile-duckdb-script "$ROOT/benches/peers/profile_duckdb.py" \
  "${PY_ARGS[@]}" "${BUF_ARGS[@]}" "${ARGS[@]}"
