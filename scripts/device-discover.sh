#!/usr/bin/env bash
# Capture a real GPU's MIG geometry with `migc discover` and compare it with the shipped catalog.
# Read-only: it runs `migc discover` (NVML Get* queries only) and `nvidia-smi -L` / `nvidia-smi mig
# -lgip` / `-lgipp` (listings); it never changes MIG mode, never creates or destroys instances, never
# resets the GPU.
#
# The GPU host needs only Python with pyyaml, click and nvidia-ml-py; discover runs from this working
# tree without installing migc. If the host also lacks jsonschema, two steps:
#   1. on a machine with network access:  scripts/device-discover.sh --prepare
#      downloads into build/device-wheels/ the CPython 3.12 manylinux wheels of jsonschema and its
#      helpers (set the versions below to what the host's Python needs).
#   2. on the GPU host, with those wheels copied into this checkout's build/device-wheels/:
#      scripts/device-discover.sh
#
# It writes, under tests/fixtures/nvml/ (or $DISCOVER_DEST) and also into $OUT when set, for MODEL_SLUG
# (default h200-141gb):
#   <slug>.capture.yaml     raw NVML readings (`--format capture`): replayable by tests/fakenvml.py
#   <slug>.discovered.yaml  the catalog entry (`--format yaml --compare`)
#   <slug>.compare.txt      stderr of that run: per-GPU summary, current layout, every difference
#   <slug>.nvidia-smi.txt   nvidia-smi's own listings, to cross-check names, ids and placements
# Then copy the files into tests/fixtures/nvml/, fix compiler/catalog/data/<slug>.yaml from the
# .discovered.yaml entry, and `pytest tests/test_discover_captures.py` must pass.
# Exit status: discover's (0 catalog matches, 3 differences found, 1 could not read the GPU);
# 2 when Python packages are missing and no wheels were prepared.

set -uo pipefail
cd "$(dirname "$0")/.."

WHEELS=build/device-wheels
SLUG=${MODEL_SLUG:-h200-141gb}
PY=${PYTHON:-python3}

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p "$WHEELS"
  # Versions as in the development venv; --no-deps so only these four are fetched (attrs and
  # typing-extensions must already be on the GPU host).
  "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$WHEELS" \
    jsonschema==4.26.0 referencing==0.37.0 jsonschema-specifications==2025.9.1 rpds-py==2026.9.1 || exit 1
  ls -l "$WHEELS"
  exit 0
fi

if ! "$PY" -c "import jsonschema, yaml, click, pynvml" 2>/dev/null; then
  if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    echo "device-discover: missing Python packages and no wheels in $WHEELS; run --prepare and carry it" >&2
    exit 2
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/migc-site \
    "$WHEELS"/*.whl || exit 2
  export PYTHONPATH=/tmp/migc-site${PYTHONPATH:+:$PYTHONPATH}
fi
# The working tree itself is the package; discover runs alone (python -m compiler.commands.discover) so
# that the other commands' dependencies (highspy, kubernetes, ...) need not be installed.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1

DEST=${DISCOVER_DEST:-tests/fixtures/nvml}
mkdir -p "$DEST"
CAPTURE=$DEST/$SLUG.capture.yaml
ENTRY=$DEST/$SLUG.discovered.yaml
REPORT=$DEST/$SLUG.compare.txt
SMI=$DEST/$SLUG.nvidia-smi.txt

{
  echo "\$ nvidia-smi -L"; nvidia-smi -L 2>&1
  echo "\$ nvidia-smi --query-gpu=index,name,pci.device_id,memory.total,mig.mode.current,driver_version --format=csv"
  nvidia-smi --query-gpu=index,name,pci.device_id,memory.total,mig.mode.current,driver_version --format=csv 2>&1
  echo "\$ nvidia-smi mig -lgip"; nvidia-smi mig -lgip 2>&1
  echo "\$ nvidia-smi mig -lgipp"; nvidia-smi mig -lgipp 2>&1
} >"$SMI"

{
  echo "# Real NVML capture by scripts/device-discover.sh (migc discover --format capture), read-only."
  echo "# Replayed by tests/fakenvml.py; nvidia-smi's listings from the same run: $SLUG.nvidia-smi.txt."
  "$PY" -m compiler.commands.discover --format capture --quiet
} >"$CAPTURE" 2>"$CAPTURE.err"
capture_rc=$?

"$PY" -m compiler.commands.discover --format yaml --compare >"$ENTRY" 2>"$REPORT"
rc=$?
echo "migc discover --format yaml --compare exited $rc; capture exited $capture_rc" >>"$REPORT"
cat "$CAPTURE.err" >>"$REPORT"
rm -f "$CAPTURE.err"

if [ -n "${OUT:-}" ]; then
  cp "$CAPTURE" "$ENTRY" "$REPORT" "$SMI" "$OUT"/
fi
cat "$SMI" "$REPORT"
echo "--- $ENTRY"; cat "$ENTRY"
exit "$rc"
