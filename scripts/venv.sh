# Sourced by run.sh and test.sh: make .venv hold paimon-lab with the given extras, running pip
# only when pyproject.toml (or the extra requirement files) changed since the last install.
# Usage: ensure_venv EXTRAS [REQUIREMENT_FILE...]    e.g. ensure_venv notebook,spark
ensure_venv() {
  local extras=$1; shift
  local py=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  # paimon-lab's JupyterLab extension where JupyterLab looks (an editable install copies no data files)
  mkdir -p .venv/share/jupyter/labextensions
  ln -sfn "$PWD/share/jupyter/labextensions/paimon-lab" .venv/share/jupyter/labextensions/paimon-lab
  local stamp=".venv/.paimon-lab-${extras//,/-}"
  local want
  want=$(cat pyproject.toml "$@" | sha256sum | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && .venv/bin/python -c "import paimon_lab" 2>/dev/null; then
    return 0
  fi
  echo "Installing paimon-lab[$extras] into .venv ..." >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  local reqs=()
  for r in "$@"; do reqs+=(-r "$r"); done
  .venv/bin/python -m pip install -q -e ".[$extras]" "${reqs[@]}"
  echo "$want" > "$stamp"
}
