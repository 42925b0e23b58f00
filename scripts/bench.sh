#!/usr/bin/env bash
# The benchmark harness (npm run bench): set-up (packages, toolchain, npm ci, build; all cached),
# then bench/ compiled with bench/tsconfig.json, then one run on the simulated site. It prints a
# table and writes bench/results/latest.json. Extra arguments go to dist/bench/main.js
# (e.g. --only floor,render).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(bash scripts/setup.sh | tail -n 1)
export PATH="$bin:$PATH"
npx tsc -p bench/tsconfig.json
exec node dist/bench/main.js "$@"
