#!/usr/bin/env bash
# Set up the project's virtual environment (if needed) and open the tutorial notebooks in
# JupyterLab. `bash run.sh --headless` instead runs the quickstart walkthrough in the terminal.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[notebook]'
if [ "${1:-}" = "--headless" ]; then
  exec .venv/bin/python -m paimon_lab.walkthrough "${@:2}"
fi
exec .venv/bin/jupyter lab notebooks/ "$@"
