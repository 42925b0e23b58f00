#!/usr/bin/env bash
# Deploy a stack from CI, non-interactively: `pulumi preview --diff` for a change request,
# `pulumi up` on the main branch. Prints a summary and exits non-zero on any failure.
#
#   scripts/ci-deploy.sh [preview|up|auto] [--stack S] [--cwd DIR]
#
# auto (the default) picks preview for pull requests and up for pushes to the main branch
# (GITHUB_EVENT_NAME / GITHUB_REF, or CI_MERGE_REQUEST_ID for GitLab).
# Secrets come from the CI's secret store, through the environment, and are never echoed:
#   PULUMI_CONFIG_PASSPHRASE   the stack's passphrase (or PULUMI_ACCESS_TOKEN for Pulumi Cloud)
#   PGPASSWORD                 the state database's password, for a postgres:// PULUMI_BACKEND_URL
#   SM121_SSH_PRIVATE_KEY      optional: a private key for the nodes, loaded into a private
#                              ssh-agent (when the stack has no sm121:sshPrivateKey secret)
# Not secret, from the CI's variables:
#   PULUMI_BACKEND_URL         the team's state backend (docs/team.md), e.g.
#                              postgres://sm121@db.lan:5432/pulumi_state?sslmode=verify-full
#   SM121_KNOWN_HOSTS          optional: the nodes' known_hosts lines, added to ~/.ssh/known_hosts
#                              (sm121:knownHosts' default) where missing; a node whose key differs
#                              is still refused
# A run that finds the stack locked by another fails with Pulumi's message naming that run; it
# never clears the lock itself (`pulumi cancel` is for a person who knows the run is gone).
set -euo pipefail
set +x

mode=auto stack="" cwd=.
while [ $# -gt 0 ]; do
  case "$1" in
    preview|up|auto) mode=$1; shift ;;
    --stack) stack=$2; shift 2 ;;
    --cwd) cwd=$2; shift 2 ;;
    *) echo "ci-deploy: unknown argument $1" \
         "(usage: ci-deploy.sh [preview|up|auto] [--stack S] [--cwd DIR])" >&2; exit 2 ;;
  esac
done
if [ "$mode" = auto ]; then
  if [ "${GITHUB_EVENT_NAME:-}" = pull_request ] || [ -n "${CI_MERGE_REQUEST_ID:-}" ]; then mode=preview
  elif [ "${GITHUB_REF:-}" = refs/heads/main ] || [ "${CI_COMMIT_BRANCH:-}" = main ]; then mode=up
  else mode=preview; fi
fi
[ -n "${PULUMI_CONFIG_PASSPHRASE:-}${PULUMI_CONFIG_PASSPHRASE_FILE:-}${PULUMI_ACCESS_TOKEN:-}" ] || {
  echo "ci-deploy: set PULUMI_CONFIG_PASSPHRASE (file backend) or PULUMI_ACCESS_TOKEN (Pulumi Cloud)" \
    "from the CI's secrets" >&2; exit 2; }
export PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# Diffs in parallel (sm121's are pure) and Node's compile cache (src/cli/pulumi.ts pulumiRunEnv).
export PULUMI_PARALLEL_DIFF=${PULUMI_PARALLEL_DIFF:-true}
export NODE_COMPILE_CACHE=${NODE_COMPILE_CACHE:-${TMPDIR:-/tmp}/node-compile-cache}

cleanup() { if [ -n "${SSH_AGENT_PID:-}" ]; then ssh-agent -k >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT
if [ -n "${SM121_SSH_PRIVATE_KEY:-}" ]; then
  eval "$(ssh-agent -s)" >/dev/null
  # The key goes to ssh-add on stdin: never in an argv, a file or the log.
  printf '%s\n' "$SM121_SSH_PRIVATE_KEY" | ssh-add - >/dev/null 2>&1 ||
    { echo "ci-deploy: SM121_SSH_PRIVATE_KEY is not a usable private key" >&2; exit 2; }
fi

if [ -n "${SM121_KNOWN_HOSTS:-}" ]; then
  mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
  touch "$HOME/.ssh/known_hosts"
  added=0
  while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    if ! grep -qxF -- "$line" "$HOME/.ssh/known_hosts"; then
      printf '%s\n' "$line" >> "$HOME/.ssh/known_hosts"
      added=$((added + 1))
    fi
  done <<< "$SM121_KNOWN_HOSTS"
  echo "ci-deploy: ~/.ssh/known_hosts: $added node key(s) added from SM121_KNOWN_HOSTS"
fi
# A password in the URL (better kept in PGPASSWORD) is not printed.
backend=$(printf '%s' "${PULUMI_BACKEND_URL:-the one pulumi login chose}" |
  sed -E 's#^([a-z0-9]+://[^:/@]*):[^@/]*@#\1:****@#')
echo "ci-deploy: state backend $backend, stack ${stack:-(the selected one)}"

args=(--non-interactive --color never)
[ -z "$stack" ] || args+=(--stack "$stack")
case "$mode" in
  preview) cmd=(pulumi preview --diff "${args[@]}") ;;
  up) cmd=(pulumi up --yes --skip-preview "${args[@]}") ;;
esac
log=$(mktemp)
set +e
# A cancelled CI job signals this script alone (GitHub: SIGINT to the step's process, SIGTERM
# 7.5 s later, then a kill of the process tree 2.5 s after that; run the script with `exec`, so
# that it is that process). Each signal goes on to Pulumi, whose own cancellation (SIGINT: stop
# at a safe point; SIGTERM: now) releases the stack's lock before the kill would leave it behind.
exec 3> >(tee "$log")
teed=$!
(cd "$cwd" && exec "${cmd[@]}") >&3 2>&1 &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null' INT
trap 'kill -TERM "$pid" 2>/dev/null' TERM
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done
wait "$pid"
code=$?
trap - INT TERM
exec 3>&-
wait "$teed"
set -e

summary=$(awk '/^Resources:/{p=1; next} p && /^$/{exit} p' "$log" | sed 's/^ *//' | paste -sd ';' - | sed 's/;/; /g')
changes=$(grep -Ec '^ *[-+~] |to (create|update|delete|replace)|(created|updated|deleted|replaced)$' "$log" || true)
rm -f "$log"
echo
if [ "$code" -ne 0 ]; then
  echo "ci-deploy: pulumi $mode FAILED (exit $code): ${summary:-see the output above}"
  exit "$code"
fi
if [ "$changes" -eq 0 ]; then echo "ci-deploy: pulumi $mode: nothing to do (${summary:-no resources})"
else echo "ci-deploy: pulumi $mode: ${summary}"; fi
