#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, property, conformance, crash and
# store tests) and the real-client suites against a running `covenant serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace) =="
cargo test --workspace --locked

if [ -x scripts/client-tests.sh ]; then
  echo "== real clients against covenant serve =="
  scripts/client-tests.sh
fi
