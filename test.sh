#!/usr/bin/env bash
# Set up the project's virtual environment (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]' -r bench/requirements.txt
if [ $# -eq 0 ]; then
  set -- tests notebooks --nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
