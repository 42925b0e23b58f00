#!/usr/bin/env bash
# Written by sm121: builds and installs DGPP v0.4.1 for recipe qwen38-27b-nvfp4-dgpp.
set -euo pipefail
mkdir -p "$HOME"/dgpp
cd "$HOME"/dgpp
[ -d .git ] || git init -q
if git remote get-url origin >/dev/null 2>&1; then git remote set-url origin https://github.com/HawkBearPig/dgpp.git; else git remote add origin https://github.com/HawkBearPig/dgpp.git; fi
git fetch -q --tags origin '+refs/heads/*:refs/remotes/origin/*'
git checkout -q --detach v0.4.1
abbrev=$(git rev-parse --short=7 HEAD)
scripts/release.sh
tarball=$(ls -t dist/dgpp-*.tar.zst | head -n 1)
if ! scripts/dgpp-cluster install "$tarball" --config "$HOME"/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json; then
  scripts/dgpp-cluster releases --config "$HOME"/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json | grep -F "$abbrev" > /dev/null
  echo "sm121: release $abbrev was already installed; keeping it"
fi
echo v0.4.1 > "$HOME"/dgpp/.sm121-dgpp-rev
echo SM121-DGPP-DONE
