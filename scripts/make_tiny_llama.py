#!/usr/bin/env python3
"""Writes tiny Llama-family checkpoints with seeded random weights, in Hugging Face's layout
(`config.json` + `model.safetensors`, or shards with `model.safetensors.index.json`), for the
tests of `nbxtensor_models::llama` and `nbx generate`.

Only numpy is needed (the safetensors files are written by hand: an 8-byte little-endian header
length, the JSON header, the raw little-endian data). The same seed gives the same bytes.

    python scripts/make_tiny_llama.py [OUT_DIR]

OUT_DIR defaults to crates/nbxtensor-models/tests/data/llama. The references the tests compare
with are made from these files by scripts/llama_reference.py (Hugging Face transformers).
"""

import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "crates", "nbxtensor-models", "tests", "data", "llama")

# Shared sizes: hidden 64, 4 query heads of 16, 2 key/value heads (grouped-query attention).
BASE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
    "hidden_act": "silu",
    "torch_dtype": "float32",
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CHECKPOINTS = {
    # Llama 2 style: untied output head, rope_theta 10000, no scaling.
    "llama2-tiny": {
        "seed": 14_001,
        "shards": 1,
        "tokenizer": True,
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "num_hidden_layers": 2,
            "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0,
            "rope_scaling": None,
            "tie_word_embeddings": False,
            "attention_bias": False,
            "mlp_bias": False,
        },
    },
    # Llama 3 style: tied embeddings, rope_theta 500000 with llama3 frequency scaling (with
    # head_dim 16 and original_max_position_embeddings 64 the scaling's three bands all occur).
    "llama3-tiny": {
        "seed": 14_002,
        "shards": 1,
        # with a tied head the token's own embedding would dominate the logits (and greedy
        # decoding repeat the prompt's last token): a smaller table, larger layer outputs
        "embed_scale": 0.25,
        "output_scale": 2.0,
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "num_hidden_layers": 3,
            "rms_norm_eps": 1e-5,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
            "tie_word_embeddings": True,
            "attention_bias": False,
            "mlp_bias": False,
            "eos_token_id": [2, 3],
        },
    },
    # Qwen2 style: q/k/v biases, rope_theta 1e6, the weights in two shards.
    "qwen2-tiny": {
        "seed": 14_003,
        "shards": 2,
        "config": {
            "architectures": ["Qwen2ForCausalLM"],
            "model_type": "qwen2",
            "num_hidden_layers": 2,
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "tie_word_embeddings": False,
            "use_sliding_window": False,
            "sliding_window": None,
            "max_window_layers": 2,
        },
    },
}


def weights(config, seed, embed_scale=1.0, output_scale=1.0):
    """The named float32 arrays of a LlamaForCausalLM (or Qwen2ForCausalLM) checkpoint: the
    token table of standard deviation `embed_scale`, the attention and feed-forward output
    projections scaled by `output_scale`."""
    rng = np.random.default_rng(seed)
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    d = h // heads
    bias = config["model_type"] == "qwen2"

    def dense(out, inp):
        return (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    named = {"model.embed_tokens.weight": (embed_scale * rng.standard_normal((v, h))).astype(np.float32)}
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}"
        named[f"{p}.input_layernorm.weight"] = norm(h)
        for name, out in (("q_proj", heads * d), ("k_proj", kv * d), ("v_proj", kv * d)):
            named[f"{p}.self_attn.{name}.weight"] = dense(out, h)
            if bias:
                named[f"{p}.self_attn.{name}.bias"] = (0.1 * rng.standard_normal(out)).astype(np.float32)
        named[f"{p}.self_attn.o_proj.weight"] = output_scale * dense(h, heads * d)
        named[f"{p}.post_attention_layernorm.weight"] = norm(h)
        named[f"{p}.mlp.gate_proj.weight"] = dense(i, h)
        named[f"{p}.mlp.up_proj.weight"] = dense(i, h)
        named[f"{p}.mlp.down_proj.weight"] = output_scale * dense(h, i)
    named["model.norm.weight"] = norm(h)
    if not config["tie_word_embeddings"]:
        named["lm_head.weight"] = dense(v, h)
    return named


def write_safetensors(path, named):
    """A safetensors file of float32 arrays, data aligned to 8 bytes, names in sorted order."""
    header, offset, blobs = {}, 0, []
    for name in sorted(named):
        data = np.ascontiguousarray(named[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(named[name].shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def byte_tokenizer():
    """A byte-level BPE tokenizer.json without merges: token id b is byte b (GPT-2's byte to
    character table), so a text's ids are its UTF-8 bytes; no special tokens are added."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    vocab = {chars[b]: b for b in range(256)}
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": level,
        "post_processor": None,
        "decoder": level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }


def write_checkpoint(out, name, spec):
    """One checkpoint directory: config.json and its weights (one file, or shards and an index)."""
    config = dict(BASE)
    config.update(spec["config"])
    directory = os.path.join(out, name)
    os.makedirs(directory, exist_ok=True)
    for old in os.listdir(directory):
        if old.startswith("model") and (old.endswith(".safetensors") or old.endswith(".json")):
            os.remove(os.path.join(directory, old))
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    if spec.get("tokenizer"):
        with open(os.path.join(directory, "tokenizer.json"), "w") as f:
            json.dump(byte_tokenizer(), f, ensure_ascii=False)
            f.write("\n")
    named = weights(config, spec["seed"], spec.get("embed_scale", 1.0), spec.get("output_scale", 1.0))
    shards = spec["shards"]
    if shards == 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), named)
        return
    names = sorted(named)
    weight_map, total = {}, 0
    for s in range(shards):
        part = names[s::shards]
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(directory, file), {n: named[n] for n in part})
        for n in part:
            weight_map[n] = file
            total += named[n].nbytes
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    for name, spec in CHECKPOINTS.items():
        write_checkpoint(out, name, spec)
        print(f"wrote {os.path.join(out, name)}")


if __name__ == "__main__":
    main()
