#!/usr/bin/env bash
# Build the API reference of loadlib's public API (the names of `loadlib.__all__`, docs/writing-load-tests.md) from
# the docstrings with pdoc (pinned in requirements-dev.txt), as static HTML: DIR/loadlib.html and DIR/index.html.
#   scripts/api_docs.sh [DIR]        # DIR defaults to build/api
# Only the `loadlib` package page is built: every other module is private by convention.
set -euo pipefail
out="$(realpath -m "${1:-build/api}")"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python -m pdoc --docformat markdown --no-show-source -o "$out" loadlib '!loadlib\.'
echo "API reference: $out/loadlib.html"
