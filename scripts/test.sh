#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, property, conformance, crash and
# store tests, the store suite on both backends) and the real-client suites against a running
# `covenant serve`. Starts its own throwaway PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${COVENANT_TEST_POSTGRES:-}" ]; then
  exec scripts/with-postgres.sh "$0" "$@"
fi

echo "== cargo test (workspace) =="
cargo test --workspace --locked -- --nocapture

echo "== real clients against covenant serve =="
scripts/client-tests.sh
