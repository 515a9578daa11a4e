"""all-MiniLM-L6-v2 from Python (examples/embed.py, which runs the ``nbx`` program) against
the embeddings sentence-transformers computed for the public reference file: cosine ≥ 0.99999
and |diff| ≤ 1e-4 for every sentence; the order of the texts kept, empty texts allowed; and
the ``nbx`` program's refusals (missing model, malformed input, unknown device) as non-zero
exits with a message."""

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "crates" / "nbxtensor-models" / "tests" / "data" / "minilm_public.json"

spec = importlib.util.spec_from_file_location("embed_example", ROOT / "examples" / "embed.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


@pytest.fixture(scope="module")
def reference():
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data["sentences"], np.asarray(data["embeddings"], dtype=np.float64)


def test_embeddings_match_sentence_transformers(reference):
    sentences, expected = reference
    got = example.embed(sentences, batch=3).astype(np.float64)
    assert got.shape == expected.shape
    cosine = (got * expected).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1))
    diff = np.abs(got - expected).max(axis=1)
    print(f"min cosine {cosine.min():.9f}, max |diff| {diff.max():.3e}")
    assert (cosine >= 0.99999).all(), cosine
    assert (diff <= 1e-4).all(), diff


def test_order_is_kept_and_empty_texts_are_embedded(reference):
    sentences, expected = reference
    texts = [sentences[-1], "", sentences[0]]
    got = example.embed(texts, batch=2).astype(np.float64)
    np.testing.assert_allclose(got[0], expected[-1], atol=1e-4)
    np.testing.assert_allclose(got[2], expected[0], atol=1e-4)
    assert abs(np.linalg.norm(got[1]) - 1.0) < 1e-5


def run_nbx(*args):
    return subprocess.run([str(example.nbx_binary()), *args], capture_output=True, text=True)


def test_refusals_exit_non_zero_with_a_message(tmp_path):
    good = tmp_path / "in.json"
    good.write_text('["a"]')
    out = str(tmp_path / "out.json")
    model = str(example.model_dir())

    missing = run_nbx("embed", "--model", str(tmp_path / "nowhere"), "--input", str(good), "--output", out)
    assert missing.returncode != 0 and "no model directory" in missing.stderr

    for content in ['{"a": 1}', '["a", 2]', "not json"]:
        bad = tmp_path / "bad.json"
        bad.write_text(content)
        result = run_nbx("embed", "--model", model, "--input", str(bad), "--output", out)
        assert result.returncode != 0 and "not a JSON list of strings" in result.stderr, result.stderr

    cuda = run_nbx("embed", "--model", model, "--input", str(good), "--output", out, "--device", "cuda")
    if cuda.returncode != 0:  # no GPU here: the error names CUDA and nothing is written
        assert "CUDA" in cuda.stderr, cuda.stderr
        assert not Path(out).exists()
    else:
        Path(out).unlink()
    unknown = run_nbx("price", "--model", model, "--device", "tpu")
    assert unknown.returncode == 2 and "unknown device" in unknown.stderr
    assert not Path(out).exists()
