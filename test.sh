#!/usr/bin/env bash
# Set up the project's virtual environments (if needed) and run the whole test suite.
# Arguments go to pytest (default: the tests and the notebooks under nbval).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv test bench/requirements.txt
# pypaimon 2.1.0 (the tests' interop oracle, a bench peer) pins pyarrow<20 and pandas<3: its own
# venv, .venv-pypaimon (pip runs only when its stamp is missing); PAIMON_LAB_PYPAIMON_PYTHON overrides
[ -n "${PAIMON_LAB_PYPAIMON_PYTHON:-}" ] || .venv/bin/python tests/oracles/pypaimon_oracle.py ensure-venv
if [ $# -eq 0 ]; then
  set -- tests notebooks --nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
