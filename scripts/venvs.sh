#!/usr/bin/env bash
# The Python programs the simulated site runs for real (the LiteLLM proxy), each in a virtualenv
# under ~/.cache/sm121/, keyed by the sha256 of its requirements file in toolchain/python/, built
# once per machine from PyPI. ~/.cache/sm121/<name> links to the current one; the tests start
# ~/.cache/sm121/litellm/bin/litellm. Used by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache="${SM121_CACHE:-$HOME/.cache/sm121}"
mkdir -p "$cache"
# One install at a time per cache: two pip runs into one virtualenv break it.
exec 9>"$cache/.venvs.lock"
flock 9
for req in toolchain/python/*.txt; do
  name=$(basename "$req" .txt)
  key=$(sha256sum "$req" | cut -c1-12)
  venv="$cache/venv-$name-$key"
  if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
    echo "setup: $name: a virtualenv from PyPI ($(grep -v '^#' "$req" | tr '\n' ' '))" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
    touch "$venv/.complete"
  fi
  ln -sfn "$venv" "$cache/$name"
done
