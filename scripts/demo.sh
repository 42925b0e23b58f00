#!/usr/bin/env bash
# npm run demo: sm121's main job on the built-in simulated site. Starts three simulated Sparks,
# runs `pulumi up` of a demo stack (the qwen38-flash script recipe with its best profile on one
# node, a two-node tensor-parallel vLLM in docker), prints the endpoints and one chat completion
# from each, runs `pulumi destroy` and stops the site.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(bash scripts/setup.sh | tail -n 1)
export PATH="$bin:$PATH"
exec node dist/demo/demo.js "$@"
