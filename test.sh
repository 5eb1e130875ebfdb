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
# pypaimon 2.1.0 (the tests' interop oracle, a bench peer) pins pyarrow<20 and pandas<3: its own
# venv, .venv-pypaimon (pip runs only when its stamp is missing); PAIMON_LAB_PYPAIMON_PYTHON overrides
[ -n "${PAIMON_LAB_PYPAIMON_PYTHON:-}" ] || .venv/bin/python tests/oracles/pypaimon_oracle.py ensure-venv
if [ $# -eq 0 ]; then
  set -- tests notebooks --nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
