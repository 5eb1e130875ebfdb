#!/usr/bin/env bash
# Start `bash run.sh` (JupyterLab) on a loopback port, check that it serves the lab page (with
# paimon-lab's lab extension) and lists the tutorial notebooks, then stop it by its process group.
# Exit 0 only if all of that worked.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-18888}
log=$(mktemp)
setsid bash run.sh --no-browser --ip=127.0.0.1 --port="$port" --ServerApp.token=smoke \
  --ServerApp.port_retries=0 >"$log" 2>&1 &
pid=$!
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
stop() { kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 120); do
  if get "http://127.0.0.1:$port/lab?token=smoke" >/dev/null 2>&1; then
    listing=$(get "http://127.0.0.1:$port/api/contents?token=smoke")
    if grep -q "01_quickstart.ipynb" <<<"$listing"; then
      if ! get "http://127.0.0.1:$port/lab?token=smoke" | grep -Eq '"name": ?"paimon-lab"'; then
        echo "JupyterLab does not load paimon-lab's extension (share/jupyter/labextensions/paimon-lab)" >&2
        exit 1
      fi
      echo "JupyterLab served the lab (with paimon-lab's extension) and the tutorial notebooks on port $port"
      exit 0
    fi
    echo "JupyterLab answered but did not list the notebooks: $listing" >&2
    exit 1
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "run.sh exited before JupyterLab served:" >&2; cat "$log" >&2; exit 1
  fi
  sleep 1
done
echo "JupyterLab did not answer within 120 s:" >&2; cat "$log" >&2
exit 1
