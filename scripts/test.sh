#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, property, conformance, crash and
# store tests, the store suite on both backends) and the real-client suites against a running
# `covenant serve`. Starts its own throwaway PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${COVENANT_TEST_POSTGRES:-}" ]; then
  exec scripts/with-postgres.sh "$0" "$@"
fi

# docs/governance.md is run as a test with curl and jq.
if ! command -v curl >/dev/null || ! command -v jq >/dev/null; then
  echo "test: installing curl and jq from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl jq >/dev/null
fi

echo "== cargo test (workspace) =="
cargo test --workspace --locked -- --nocapture
echo "== benchmark smoke run (benches/README.md) ==" && benches/run.sh --smoke

echo "== real clients against covenant serve =="
scripts/client-tests.sh
