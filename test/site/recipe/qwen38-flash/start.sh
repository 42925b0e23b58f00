#!/usr/bin/env bash
# qwen38-flash: the single-Spark Qwen3.8-Flash-Next vLLM recipe (test-site edition).
#
#   ./start.sh              start the server from ./.env and wait until it answers
#   ./start.sh --no-launch  write .last_launch.sh and start the helper container only
#
# Keys read from .env, with the default this script uses when a key is absent.
# These defaults differ from .env.sample on purpose (as in the real recipe), so a
# profile must set every key.
#   CONTAINER_NAME          container name                                  qwen38-flash
#   IMAGE                   vLLM image                                      nvcr.io/nvidia/vllm:25.10-py3
#   MODEL                   HF repo id or path                              Qwen/Qwen3.8-Flash-Next
#   SERVED_MODEL_NAME       --served-model-name                             qwen38-flash
#   HF_HOME                 host HF cache, mounted at /root/.cache/huggingface   $HOME/.cache/huggingface
#   BIND                    --host                                          127.0.0.1
#   PORT                    --port                                          8000
#   MAX_MODEL_LEN           --max-model-len                                 131072
#   MAX_NUM_SEQS            --max-num-seqs                                  8
#   GPU_MEMORY_UTILIZATION  --gpu-memory-utilization                        0.85
#   KV_CACHE_DTYPE          --kv-cache-dtype                                auto
#   CHAT_TEMPLATE           file under this dir (mounted via ./files)       (none)
#   MTP_K                   > 0: MTP speculative decoding with K tokens     0
#   MTP_DRAFT_VOCAB         file under this dir, mounted at /recipe/mtp_draft_vocab.json   (none)
#   REQUIRE_IDLE_GPU        1: refuse to start while nvidia-smi lists compute apps   1
#   READY_TIMEOUT_S         seconds to wait for http://localhost:$PORT/v1/models   1800
#   MEMWATCH_RELIEF         off | drop_caches (label memwatch.relief)       off
#   API_KEY                 optional: --api-key (then /v1 needs the bearer key)
#   HF_TOKEN                optional: passed into the container (-e HF_TOKEN)
#   EXTRA_DOCKER_ARGS       more -e/-v pairs, word-split without quotes     (empty)
#   EXTRA_VLLM_ARGS         more vLLM flags, word-split without quotes      (empty)
#
# Mounts this script makes itself (an overlay must not mount these targets):
#   $HF_HOME                 -> /root/.cache/huggingface
#   ./files                  -> /recipe/files (ro)
#   ./patches/mtp.py         -> /usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/mtp.py (ro)
#   $MTP_DRAFT_VOCAB (opt.)  -> /recipe/mtp_draft_vocab.json (ro)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"
RECIPE_DIR=$PWD
NO_LAUNCH=0
case "${1:-}" in
  "") ;;
  --no-launch) NO_LAUNCH=1 ;;
  *) echo "start.sh: unknown argument: $1" >&2; exit 2 ;;
esac
die() { echo "start.sh: $*" >&2; exit 1; }
[ -f .env ] || die "no .env in $RECIPE_DIR (copy .env.sample to .env)"
set -a
# shellcheck disable=SC1091
. ./.env
set +a

: "${CONTAINER_NAME:=qwen38-flash}" "${IMAGE:=nvcr.io/nvidia/vllm:25.10-py3}" "${MODEL:=Qwen/Qwen3.8-Flash-Next}"
: "${SERVED_MODEL_NAME:=qwen38-flash}" "${HF_HOME:=$HOME/.cache/huggingface}" "${BIND:=127.0.0.1}" "${PORT:=8000}"
: "${MAX_MODEL_LEN:=131072}" "${MAX_NUM_SEQS:=8}" "${GPU_MEMORY_UTILIZATION:=0.85}" "${KV_CACHE_DTYPE:=auto}"
: "${CHAT_TEMPLATE:=}" "${MTP_K:=0}" "${MTP_DRAFT_VOCAB:=}" "${REQUIRE_IDLE_GPU:=1}" "${READY_TIMEOUT_S:=1800}"
: "${MEMWATCH_RELIEF:=off}" "${API_KEY:=}" "${HF_TOKEN:=}" "${EXTRA_DOCKER_ARGS:=}" "${EXTRA_VLLM_ARGS:=}"
case "$MEMWATCH_RELIEF" in
  off|drop_caches) ;;
  *) die "MEMWATCH_RELIEF must be off or drop_caches, got '$MEMWATCH_RELIEF'" ;;
esac
[[ "$MTP_K" =~ ^[0-9]+$ ]] || die "MTP_K must be a number, got '$MTP_K'"

if [ "$REQUIRE_IDLE_GPU" = 1 ]; then
  busy=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader)
  [ -z "$busy" ] || die "the GPU is busy (REQUIRE_IDLE_GPU=1): $busy"
fi

args=(docker run -d --name "$CONTAINER_NAME"
  --label recipe=qwen38-flash --label "memwatch.relief=$MEMWATCH_RELIEF"
  --gpus all --network host --ipc host --shm-size 16g --restart no
  -v "$HF_HOME:/root/.cache/huggingface"
  -v "$RECIPE_DIR/files:/recipe/files:ro"
  -v "$RECIPE_DIR/patches/mtp.py:/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/mtp.py:ro")
[ -z "$HF_TOKEN" ] || args+=(-e HF_TOKEN)
if [ -n "$MTP_DRAFT_VOCAB" ]; then
  [ -f "$RECIPE_DIR/$MTP_DRAFT_VOCAB" ] || die "MTP_DRAFT_VOCAB $MTP_DRAFT_VOCAB not found in $RECIPE_DIR"
  args+=(-v "$RECIPE_DIR/$MTP_DRAFT_VOCAB:/recipe/mtp_draft_vocab.json:ro")
  args+=(-e MTP_DRAFT_VOCAB=/recipe/mtp_draft_vocab.json)
fi
# shellcheck disable=SC2206 # word splitting is the contract of EXTRA_DOCKER_ARGS
args+=($EXTRA_DOCKER_ARGS)
args+=("$IMAGE" vllm serve "$MODEL" --served-model-name "$SERVED_MODEL_NAME" --host "$BIND" --port "$PORT"
  --max-model-len "$MAX_MODEL_LEN" --max-num-seqs "$MAX_NUM_SEQS"
  --gpu-memory-utilization "$GPU_MEMORY_UTILIZATION" --kv-cache-dtype "$KV_CACHE_DTYPE")
if [ -n "$CHAT_TEMPLATE" ]; then
  [ -f "$RECIPE_DIR/$CHAT_TEMPLATE" ] || die "CHAT_TEMPLATE $CHAT_TEMPLATE not found in $RECIPE_DIR"
  case "$CHAT_TEMPLATE" in files/*) ;; *) die "CHAT_TEMPLATE must be under files/ (only ./files is mounted)" ;; esac
  args+=(--chat-template "/recipe/$CHAT_TEMPLATE")
fi
[ "$MTP_K" -eq 0 ] || args+=(--speculative-config "{\"method\":\"mtp\",\"num_speculative_tokens\":$MTP_K}")
[ -z "$API_KEY" ] || args+=(--api-key "$API_KEY")
# shellcheck disable=SC2206 # word splitting is the contract of EXTRA_VLLM_ARGS
args+=($EXTRA_VLLM_ARGS)

if [ "$NO_LAUNCH" = 1 ]; then
  printf '%q ' "${args[@]}" > .last_launch.sh
  echo >> .last_launch.sh
  docker run -d --name "$CONTAINER_NAME-helper" --label recipe=qwen38-flash-helper --entrypoint sleep "$IMAGE" infinity
  echo "start.sh: --no-launch: wrote .last_launch.sh and started $CONTAINER_NAME-helper"
  exit 0
fi

echo "start.sh: starting $CONTAINER_NAME ($SERVED_MODEL_NAME on $BIND:$PORT)"
"${args[@]}"
auth=()
[ -z "$API_KEY" ] || auth=(-H "Authorization: Bearer $API_KEY")
deadline=$((SECONDS + READY_TIMEOUT_S))
while [ "$SECONDS" -lt "$deadline" ]; do
  if curl -sf -o /dev/null --max-time 5 "${auth[@]}" "http://localhost:$PORT/v1/models"; then
    echo "start.sh: $SERVED_MODEL_NAME is ready on port $PORT"
    exit 0
  fi
  if [ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER_NAME" 2>/dev/null)" != true ]; then
    docker logs --tail 30 "$CONTAINER_NAME" >&2 || true
    die "container $CONTAINER_NAME exited before it was ready"
  fi
  sleep 1
done
docker rm -f "$CONTAINER_NAME" >/dev/null 2>&1 || true
die "not ready after ${READY_TIMEOUT_S}s on http://localhost:$PORT; removed $CONTAINER_NAME"
