#!/usr/bin/env bash
# Set up the project's virtual environment (if needed) and open the tutorial notebooks in
# JupyterLab. `bash run.sh --headless` instead runs the quickstart walkthrough in the terminal.
# Extra arguments go to JupyterLab (e.g. `bash run.sh --no-browser --port 8899`).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv notebook,spark
if [ "${1:-}" = "--headless" ]; then
  exec .venv/bin/python -m paimon_lab.walkthrough "${@:2}"
fi
args=()
if [ "$(id -u)" = "0" ]; then
  args+=(--allow-root)   # containers and Binder-like images run as root; JupyterLab refuses without it
fi
exec .venv/bin/jupyter lab notebooks/ "${args[@]}" "$@"
