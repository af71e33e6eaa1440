#!/usr/bin/env bash
# RepOps on one CUDA GPU against the CPU bits, and the exact matmul's speed there (< 5 minutes).
# See scripts/device_check.py for what is checked. Writes $OUT/device_check.json (or
# out/bench/device_check.json). NOT YET RUN: no GPU was lent to the task that wrote it (issue 16);
# the first session with a GPU runs it and puts its figures into docs/repops/linalg.md.
#
#   scripts/device_check.sh [--budget-s 240] [--size 4096] [--runs 9]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
"$py" - <<'PY'
import sys
import torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.version.cuda}, "
      f"available {torch.cuda.is_available()}")
if torch.cuda.is_available():
    print("gpu:", torch.cuda.get_device_name(0))
PY
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader || true
# the CPU side's native passes (same bits as their torch-op path; faster CPU reference)
"$py" trainer/repops/_native.py || echo "native build failed: the CPU side runs its torch-op path"
exec timeout 290 "$py" scripts/device_check.py "$@"
