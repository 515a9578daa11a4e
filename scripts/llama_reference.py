#!/usr/bin/env python3
"""Hugging Face transformers' greedy decoding of the tiny checkpoints of
scripts/make_tiny_llama.py: the references of the llama tests, written as
`reference.json` next to each checkpoint's config.

Run it in the peers environment, never in the project's (the library and its tests do not
import torch):

    python3 -m venv .venv-peers && .venv-peers/bin/pip install numpy torch transformers safetensors
    .venv-peers/bin/python scripts/llama_reference.py [DATA_DIR]

Each reference: float32, eager attention, on the CPU; the prompt's ids, the logits of its last
position, and STEPS greedy tokens (argmax of each step's logits, with the KV cache), not stopped
at an end-of-sequence token (the tests stop where the model's eos_token_id says).
"""

import json
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "crates", "nbxtensor-models", "tests", "data", "llama")
STEPS = 32

# The prompts, by checkpoint: lengths 7, 12 and 5 (prefill buckets of 8 and 16).
PROMPTS = {
    "llama2-tiny": [1, 17, 45, 200, 3, 99, 128],
    "llama3-tiny": [1, 250, 7, 7, 64, 31, 180, 222, 5, 90, 14, 77],
    "qwen2-tiny": [1, 33, 160, 12, 240],
}


@torch.no_grad()
def reference(directory, prompt):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    ids = torch.tensor([prompt], dtype=torch.long)
    out = model(input_ids=ids, use_cache=True)
    logits = out.logits[0, -1].float()
    past = out.past_key_values
    generated = []
    token = int(torch.argmax(logits))
    gaps = []  # how far the greedy choice is from the runner-up at each step
    for _ in range(STEPS):
        generated.append(token)
        step = model(input_ids=torch.tensor([[token]]), past_key_values=past, use_cache=True)
        past = step.past_key_values
        top = torch.topk(step.logits[0, -1], 2).values
        gaps.append(float(top[0] - top[1]))
        token = int(torch.argmax(step.logits[0, -1]))
    return {
        "source": f"transformers {transformers.__version__}, torch {torch.__version__}, float32, eager attention, CPU",
        "prompt_ids": prompt,
        "generated_ids": generated,
        "smallest_greedy_margin": min(gaps[:-1]),
        "prefill_last_logits": [float(x) for x in logits.tolist()],
    }


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DATA
    torch.manual_seed(0)
    for name, prompt in PROMPTS.items():
        directory = os.path.join(data, name)
        result = reference(directory, prompt)
        with open(os.path.join(directory, "reference.json"), "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"{name}: {result['generated_ids']}")


if __name__ == "__main__":
    main()
