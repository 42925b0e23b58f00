#!/usr/bin/env bash
# The test command (npm test): set-up (packages, toolchain, npm ci, build; all cached), the
# linter, then every suite, including the end-to-end ones on the simulated site with the real
# Pulumi CLI. Extra arguments go to vitest (e.g. a file name).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(bash scripts/setup.sh | tail -n 1)
export PATH="$bin:$PATH"
echo "test: linting"
npm run --silent lint
echo "test: running the suites"
exec npx vitest run "$@"
