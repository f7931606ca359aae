#!/usr/bin/env bash
# The prepared device check: run it on a machine with an NVIDIA GPU, from the repository
# root; it finishes within 10 minutes and prints the engine's and the trainer's speed and
# memory (benchmarks/gpu_check.py says what it measures).
#
#   bash benchmarks/gpu_check.sh              # install a CUDA torch if needed, then check
#   bash benchmarks/gpu_check.sh --dry-run    # CPU, toy sizes, nothing installed
#   WHEELS=dir bash benchmarks/gpu_check.sh   # install from wheels in dir (no network)
#
# A python3 whose torch already sees CUDA is used as it is; otherwise pip installs torch's
# CUDA build (PyPI's default Linux wheel), then the project, whose torch>=2.1,<3 the
# installed torch satisfies.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [[ "${1:-}" == "--dry-run" ]]; then
    exec timeout 300 "$PYTHON" benchmarks/gpu_check.py --dry-run
fi
PIP=("$PYTHON" -m pip install -q ${WHEELS:+--no-index --find-links "$WHEELS"})
if ! "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
    echo "installing torch's CUDA build ..."
    timeout 150 "${PIP[@]}" torch
fi
if ! "$PYTHON" -c "import qwinto_env, agents.trainers" 2>/dev/null; then
    echo "installing the project ..."
    timeout 60 "${PIP[@]}" -e .
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec timeout 360 "$PYTHON" benchmarks/gpu_check.py --minutes 3
