"""``nbx generate`` from the installed ``nbx`` command (the Python package's entry point, which
runs the Rust command line inside the extension) on the tiny Llama-family checkpoints of
crates/nbxtensor-models/tests/data/llama: Hugging Face transformers' greedy tokens (32 steps)
and the prompt's last logits within 1e-4, as each checkpoint's reference.json holds them; and
the sampling options, not served yet, refused by name."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "crates" / "nbxtensor-models" / "tests" / "data" / "llama"
NBX = Path(sys.executable).parent / "nbx"


def generate(model, *args):
    return subprocess.run([str(NBX), "generate", "--model", str(model), *args], capture_output=True, text=True)


@pytest.mark.parametrize("name", ["llama2-tiny", "llama3-tiny", "qwen2-tiny"])
def test_generate_matches_transformers(name, tmp_path):
    assert NBX.is_file(), f"pip did not install the nbx command beside {sys.executable}"
    reference = json.loads((DATA / name / "reference.json").read_text())
    prompt, output = tmp_path / "prompt.json", tmp_path / "out.json"
    prompt.write_text(json.dumps(reference["prompt_ids"]))
    steps = str(len(reference["generated_ids"]))
    run = generate(DATA / name, "--prompt-ids", str(prompt), "--max-new-tokens", steps, "--output", str(output))
    assert run.returncode == 0, run.stderr
    got = json.loads(output.read_text())
    assert got["prompt_ids"] == reference["prompt_ids"]
    eos = json.loads((DATA / name / "config.json").read_text())["eos_token_id"]
    eos = eos if isinstance(eos, list) else [eos]
    assert not set(eos) & set(reference["generated_ids"]), "no end token in the reference: all of it is generated"
    assert got["generated_ids"] == reference["generated_ids"]
    diff = np.abs(np.asarray(got["prefill_last_logits"]) - np.asarray(reference["prefill_last_logits"])).max()
    print(f"{name}: max |diff| of the prompt logits {diff:.2e}")
    assert diff <= 1e-4
    assert "tok/s" in run.stderr


def test_a_seed_repeats_a_sampled_generation(tmp_path):
    prompt = tmp_path / "prompt.json"
    prompt.write_text("[1, 2, 3]")
    runs = []
    for tag in ["a", "b"]:
        out = tmp_path / f"{tag}.json"
        args = ["--temperature", "0.7", "--top-k", "40", "--top-p", "0.9", "--seed", "3", "--output", str(out)]
        run = generate(DATA / "qwen2-tiny", "--prompt-ids", str(prompt), "--max-new-tokens", "16", *args)
        assert run.returncode == 0, run.stderr
        assert "seed 3" in run.stderr
        runs.append(json.loads(out.read_text())["generated_ids"])
    assert runs[0] == runs[1] and len(runs[0]) == 16


@pytest.mark.parametrize("option", [["--temperature", "-1"], ["--top-k", "many"], ["--top-p", "0"], ["--seed", "-3"]])
def test_bad_sampling_options_are_refused_by_name(option, tmp_path):
    prompt = tmp_path / "prompt.json"
    prompt.write_text("[1, 2, 3]")
    run = generate(DATA / "qwen2-tiny", "--prompt-ids", str(prompt), *option)
    assert run.returncode == 2
    assert option[0] in run.stderr and run.stdout == ""
