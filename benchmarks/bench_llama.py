"""Llama-3-8B decoding at batch 1, side by side (issue 14): nbxtensor's ``nbx generate`` against
three torch peers, with the memory-bandwidth roofline measured in the same run.

What is measured, for a Llama-3-8B-shaped checkpoint with random bfloat16 weights:

- decode tok/s at contexts 512 and 4096: a prompt of exactly that many tokens fills the KV
  cache, then N new tokens come (``--new-tokens``, 64): the first from the prefill, N - 1 from
  decode steps, and the figure is those N - 1 steps over their seconds, the prefill left out;
- prefill tok/s for prompts of 512 and 2048 tokens: the prompt's length over the seconds of
  one forward of it that also writes the KV cache and gives the last position's logits.

Run it on the GPU machine (``--make`` writes the checkpoint, about 16 GB, unless it is there):

    python3 benchmarks/bench_llama.py --make /tmp/llama8b --model /tmp/llama8b

The whole run loads the 16 GB several times and compiles four graphs (minutes with gpt-fast's
tuning); where one command has a time limit, run the systems in separate commands and table
them together through one JSON file:

    python3 benchmarks/bench_llama.py --make /tmp/llama8b --systems nbx,hf,static --json /tmp/l8.json
    python3 benchmarks/bench_llama.py --model /tmp/llama8b --systems compiled --json /tmp/l8.json --merge

and on a CPU, a tiny Llama-shaped checkpoint in float32, 2 threads per system:

    python3 benchmarks/bench_llama.py --make /tmp/llama-tiny --shape tiny --device cpu \\
        --contexts 64 --prefills 64,128 --new-tokens 16

The peers, each in a child process of its own, one after another, so that the GPU memory of one
is free before the next loads (the parent imports neither torch nor nbxtensor; the nbx process
never imports torch):

- ``nbx``: nbxtensor's command line, ``nbx generate --model DIR --prompt-ids FILE.json
  --max-new-tokens N --device cuda --dtype bfloat16 --output FILE`` (on the CPU ``--device cpu
  --dtype float32 --threads T``), one process per prompt length. By default it is run the way
  the ``nbx`` console script of ``[project.scripts]`` runs it (``nbxtensor._cli:main``), from
  this interpreter; ``--nbx CMD`` runs another command instead (``--nbx target/release/nbx``).
  Its figures come from its stderr: the decode is its "tok/s replayed" (decode steps over the
  decode seconds less the decode program's trace, plan and capture); the prefill is the
  replayed prefill, the prompt's length over (prefill seconds - capture seconds): every nbx
  process captures its prompt's bucket on first use, and that capture is left out. The first
  call's figure, capture included, is printed in the notes too. nbx prints those seconds to
  0.1 ms, so a prefill of a few milliseconds is known to a few per cent only. nbx stops after
  the config's end-of-sequence token: a decode that stopped early is said so in the notes.
- ``HF eager``: transformers' ``LlamaForCausalLM`` from the same directory, on the device in
  the run's dtype, ``attn_implementation="sdpa"``, no compile. The prefill is one forward of
  the prompt with ``use_cache=True`` and the logits of the last position only
  (``logits_to_keep=1``, as ``generate`` does), the median of ``--repeats`` after a warm-up. The
  decode is a plain loop over the cache the prefill returned (its DynamicCache): N - 1
  single-token forwards, greedy argmax kept on the device (no host sync inside the loop),
  timed between two synchronizes after a whole warm-up run. ``generate(max_new_tokens=N,
  min_new_tokens=N, do_sample=False)`` is timed as well and its (N - 1) / (total - prefill
  seconds) is in the notes, with whether its tokens equal the loop's.
- ``static eager`` and ``static compile+graph``: a gpt-fast-style decoder written below in plain
  torch (no transformers): the same safetensors read by hand, q/k/v fused into one matrix at
  load (as gpt-fast does), RMSNorm computed in float32 as Hugging Face does, RoPE in Hugging
  Face's rotate_half layout with ``rope_theta`` and the llama3 ``rope_scaling`` of config.json,
  and a static KV cache ``[1, kv_heads, max_seq, head_dim]`` per layer (max_seq = the prompt
  plus N, as gpt-fast sizes it per call) written with ``index_copy_`` at the input positions.
  The prefill attends within the prompt (``scaled_dot_product_attention(is_causal=True,
  enable_gqa=True)``); a decode step attends over the whole cache with a boolean mask of the
  filled positions, grouped-query attention done by viewing each key/value head's query heads
  as its queries (no repeated cache). ``static eager`` runs that model uncompiled: its decode is
  the eager decode tok/s. ``static compile+graph`` runs the decode step through
  ``torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True, dynamic=False)``
  (reduce-overhead is CUDA graphs) with gpt-fast's inductor settings (coordinate descent
  tuning, ``--no-tune`` turns it off), and the prefill through ``torch.compile(prefill,
  fullgraph=True, dynamic=False)``, one graph per prompt length (no CUDA graph;
  ``--eager-prefill`` runs these rows eager instead); each is compiled and warmed up before it
  is timed. The context of a compiled decode row is filled by the eager prefill (one compile
  less). On the CPU this peer runs only with ``--compile`` (inductor's default mode, no graphs).
- ``roofline``: a decode step has to read every weight the step uses once plus the KV cache up
  to the context: bytes per token = the weights' bytes in the run's dtype, less the embedding
  table of which a step reads one row (it is 1 GB of the 16; counting it would flatter every
  %; the JSON has the full size too), plus 2 * layers * kv_heads * head_dim * context * itemsize for the cache; over the
  device-to-device copy bandwidth measured here with torch (a 1 GiB copy, read + write
  counted, best of several) that is the roofline tok/s. Each decode cell shows its share of it.
  For the prefill rows the ceiling column is a compute one instead: the matrix FLOPs per token
  (2 per weight of the layers and attention's 2 * context * heads * head_dim per layer) over a
  large matrix product's rate measured in the same child (bf16 8192^3 on the GPU). On a CPU both
  are rough (a tiny model's weights may sit in its caches; other load skews 2-thread timings).

Every peer gets the same prompt: ``numpy.random.RandomState(0).randint(0, vocab, size=L)``.
Greedy tokens are compared between the systems (each against HF eager's, or the static
decoder's without it); with bfloat16 a divergence after some tokens is a near-tie flipped by
rounding, on the tiny float32 model the token streams should be equal.

Options: ``--model DIR``, ``--make DIR`` (write the checkpoint unless DIR/config.json exists),
``--shape 8b|tiny`` (for --make), ``--new-tokens N``, ``--contexts 512,4096``, ``--prefills
512,2048``, ``--systems nbx,hf,static,compiled``, ``--device cuda|cpu``, ``--dtype``,
``--threads`` (CPU), ``--repeats`` (prefill timings of the torch peers), ``--nbx CMD``,
``--peer-python PATH`` (the interpreter of the torch children), ``--json FILE`` and
``--merge`` (keep FILE's results of systems this run does not run: the systems can be run in
separate commands and tabled together), ``--compile``, ``--no-tune``, ``--eager-prefill``,
``--child-timeout S``.
A system that fails shows its error's first line in its cells; the others still run.
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np

MARK = "@@bench "
SYSTEMS = ["nbx", "hf", "static", "compiled"]
TORCH_SYSTEMS = ["hf", "static", "compiled"]
LABELS = {"nbx": "nbx", "hf": "HF eager", "static": "static eager", "compiled": "static compile+graph"}

SHAPES = {
    "8b": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "bos_token_id": 128000,
           "eos_token_id": 128001},
    "tiny": {"hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
             "num_key_value_heads": 4, "head_dim": 64, "vocab_size": 32000, "bos_token_id": 1, "eos_token_id": 2},
}


# ---------------------------------------------------------------------------------------------
# the checkpoint (numpy only)


def llama_config(shape):
    """A Llama-3 config.json of the given shape ("8b" or "tiny")."""
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192},
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "pretraining_tp": 1,
    }
    cfg.update(SHAPES[shape])
    return cfg


def checkpoint_tensors(cfg):
    """[(file name, [(tensor name, shape, is a norm weight)])]: one shard per layer, one for the
    embedding, one for the final norm and the head."""
    h, inter, d = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    shards = [("model-embed.safetensors", [("model.embed_tokens.weight", (cfg["vocab_size"], h), False)])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shards.append((f"model-layer-{i:03d}.safetensors", [
            (p + "input_layernorm.weight", (h,), True),
            (p + "self_attn.q_proj.weight", (q, h), False),
            (p + "self_attn.k_proj.weight", (kv, h), False),
            (p + "self_attn.v_proj.weight", (kv, h), False),
            (p + "self_attn.o_proj.weight", (h, q), False),
            (p + "post_attention_layernorm.weight", (h,), True),
            (p + "mlp.gate_proj.weight", (inter, h), False),
            (p + "mlp.up_proj.weight", (inter, h), False),
            (p + "mlp.down_proj.weight", (h, inter), False),
        ]))
    head = [("model.norm.weight", (h,), True)]
    if not cfg.get("tie_word_embeddings"):
        head.append(("lm_head.weight", (cfg["vocab_size"], h), False))
    shards.append(("model-head.safetensors", head))
    return shards


def write_safetensors(path, tensors, block):
    """Writes ``tensors`` [(name, shape, is a norm)] as BF16 to ``path`` by hand: norms are ones,
    every other tensor is ``block`` (bf16 bits) read cyclically from an offset of its own."""
    header, offset = {}, 0
    for name, shape, _ in tensors:
        nbytes = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, shape, norm in tensors:
            n = math.prod(shape)
            if norm:
                f.write(np.full(n, 0x3F80, dtype=np.uint16).tobytes())  # bf16 1.0
                continue
            # an offset of the tensor's own: the block's length is odd, so rows of a tensor (and
            # tensors) start at different phases of it and no two rows are equal
            start = zlib.crc32(name.encode()) % len(block)
            while n > 0:
                chunk = block[start:start + n]
                f.write(memoryview(chunk))
                n -= len(chunk)
                start = 0
    os.replace(tmp, path)
    return offset


def make_checkpoint(directory, shape):
    """Writes a Llama checkpoint of random bf16 weights into ``directory`` unless its config.json
    exists (config.json is written last, so a checkpoint cut short is written again)."""
    directory = Path(directory)
    if (directory / "config.json").is_file():
        have = json.loads((directory / "config.json").read_text())
        if have.get("hidden_size") != SHAPES[shape]["hidden_size"]:
            print(f"note: {directory}/config.json exists with hidden_size {have.get('hidden_size')}, "
                  f"not --shape {shape}'s; it is used as it is", file=sys.stderr)
        print(f"checkpoint {directory}: exists, kept", file=sys.stderr)
        return
    directory.mkdir(parents=True, exist_ok=True)
    cfg = llama_config(shape)
    start = time.perf_counter()
    # one block of normals * 0.02, as bf16 bits (the float32's high half); 8 Mi + 9 values
    values = np.random.default_rng(0).standard_normal((1 << 23) + 9, dtype=np.float32) * np.float32(0.02)
    block = (values.view(np.uint32) >> 16).astype(np.uint16)
    assert np.isfinite(values).all()
    weight_map, total = {}, 0
    for file, tensors in checkpoint_tensors(cfg):
        total += write_safetensors(directory / file, tensors, block)
        weight_map.update({name: file for name, _, _ in tensors})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    (directory / "config.json").write_text(json.dumps(cfg, indent=2))
    # the written pages flushed before any system reads them: a first reader that shares the
    # machine with the write-back of 16 GB ran its host side tens of times slower (2026-12-03)
    os.sync()
    print(f"checkpoint {directory}: {shape}, {total / 1e9:.2f} GB of bf16 weights written in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)


def safetensors_headers(directory):
    """{file: header} of the checkpoint's safetensors files (their JSON headers only)."""
    directory = Path(directory)
    index = directory / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.is_file() \
        else ["model.safetensors"]
    headers = {}
    for file in files:
        with open(directory / file, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        headers[file] = (8 + n, header)
    return headers


def prompt_ids(length, vocab):
    """The prompt every system gets: deterministic token ids."""
    return np.random.RandomState(0).randint(0, vocab, size=length).tolist()


# ---------------------------------------------------------------------------------------------
# the torch children


def emit(**record):
    """One result line to the parent."""
    print(MARK + json.dumps(record), flush=True)


def say(text):
    """Progress, to stderr (the parent passes it on)."""
    print(text, file=sys.stderr, flush=True)


def first_line(error):
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    return (text.strip().splitlines() or ["(no message)"])[0]


def torch_setup(spec):
    import torch

    if spec["device"] == "cpu":
        torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    device = torch.device(spec["device"])
    dtype = getattr(torch, spec["dtype"])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    return torch, device, dtype, sync


def child_bandwidth(spec):
    """The copy bandwidth (read + write) and a large matrix product's rate on the device."""
    torch, device, dtype, sync = torch_setup(spec)
    info = {"torch": torch.__version__, "device": spec["device"], "dtype": spec["dtype"]}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
        numel, n, inner = 1 << 28, 8192, 10
    else:
        info["cpu_threads"] = torch.get_num_threads()
        numel, n, inner = 1 << 25, 1024, 3

    def best(fn, repeats=7):
        fn()
        sync()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            sync()
            times.append((time.perf_counter() - start) / inner)
        return min(times)

    x = torch.randn(numel, device=device, dtype=torch.float32)
    y = torch.empty_like(x)
    info["copy_bytes"] = 2 * x.numel() * 4
    info["copy_bandwidth"] = info["copy_bytes"] / best(lambda: y.copy_(x))
    x = y = None
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    info["gemm"] = f"{spec['dtype']} {n}^3"
    info["gemm_flops"] = 2.0 * n**3 / best(lambda: a @ b)
    emit(kind="info", **info)


def timed_median(fn, sync, repeats):
    """Median seconds of ``repeats`` calls of ``fn`` after one warm-up call, and all the times."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def load_prompt(spec, length, torch, device):
    ids = json.loads(Path(spec["prompts"][str(length)]).read_text())
    return torch.tensor([ids], dtype=torch.long, device=device)


def child_hf(spec):
    """HF transformers eager: LlamaForCausalLM, sdpa attention."""
    import inspect

    torch, device, dtype, sync = torch_setup(spec)
    import transformers
    from transformers import LlamaForCausalLM

    start = time.perf_counter()
    version = tuple(int(p) for p in re.findall(r"\d+", transformers.__version__)[:2])
    dtype_key = "dtype" if version >= (4, 56) else "torch_dtype"
    model = LlamaForCausalLM.from_pretrained(spec["model"], attn_implementation="sdpa", **{dtype_key: dtype})
    model = model.to(device=device, dtype=dtype).eval()
    load_seconds = time.perf_counter() - start
    params = inspect.signature(model.forward).parameters
    cache_key = "cache" if "cache" in params else "past_key_values"
    keep = {"logits_to_keep": 1} if "logits_to_keep" in params else \
        {"num_logits_to_keep": 1} if "num_logits_to_keep" in params else {}
    eos = model.config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    emit(kind="info", transformers=transformers.__version__, load_seconds=load_seconds,
         attn_implementation=getattr(model.config, "_attn_implementation", "sdpa"))

    def cache_of(out):
        cache = getattr(out, "cache", None)
        return cache if cache is not None else out.past_key_values

    def prefill(ids):
        out = model(input_ids=ids, use_cache=True, **keep)
        return out.logits[:, -1].argmax(-1, keepdim=True), cache_of(out)

    def loop(ids, n_new):
        """(prefill seconds, decode seconds, tokens): the prefill, then n_new - 1 decode steps."""
        sync()
        t0 = time.perf_counter()
        token, cache = prefill(ids)
        sync()
        t1 = time.perf_counter()
        tokens = [token]
        for _ in range(n_new - 1):
            out = model(input_ids=token, use_cache=True, **{cache_key: cache})
            cache = cache_of(out)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            tokens.append(token)
        sync()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, torch.cat(tokens, dim=1)[0].tolist()

    with torch.no_grad():
        for length, n_new, is_context, is_prefill in spec["plan"]:
            ids = load_prompt(spec, length, torch, device)
            say(f"prompt {length}: " + " and ".join(["prefill"] * is_prefill + ["decode"] * is_context))
            if is_prefill:
                try:
                    seconds, times = timed_median(lambda ids=ids: prefill(ids), sync, spec["repeats"])
                    emit(kind="prefill", length=length, tok_s=length / seconds, seconds=seconds, times=times)
                except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
                    emit(kind="prefill", length=length, error=first_line(e))
            if is_context:
                try:
                    loop(ids, n_new)  # warm-up
                    prefill_s, decode_s, tokens = loop(ids, n_new)
                    record = {"kind": "decode", "context": length, "tok_s": (n_new - 1) / decode_s,
                              "steps": n_new - 1, "seconds": decode_s, "prefill_seconds": prefill_s, "tokens": tokens}

                    def gen(ids=ids, n_new=n_new):
                        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                              max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False,
                                              pad_token_id=eos)

                    gen()
                    sync()
                    t0 = time.perf_counter()
                    out = gen()
                    sync()
                    total = time.perf_counter() - t0
                    record["generate_seconds"] = total
                    record["generate_tok_s"] = (n_new - 1) / max(total - prefill_s, 1e-9)
                    record["generate_tokens_equal_loop"] = out[0, length:].tolist() == tokens
                    emit(**record)
                except Exception as e:  # noqa: BLE001
                    emit(kind="decode", context=length, error=first_line(e))
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if device.type == "cuda":
        emit(kind="info", peak_memory_bytes=torch.cuda.max_memory_allocated())


def read_weights(directory, torch, device, dtype):
    """{name: tensor on ``device`` in ``dtype``} from the checkpoint's safetensors, read by hand."""
    kinds = {"BF16": (np.int16, torch.bfloat16), "F16": (np.float16, None), "F32": (np.float32, None)}
    weights = {}
    for file, (data_start, header) in safetensors_headers(directory).items():
        with open(Path(directory) / file, "rb") as f:
            for name, entry in header.items():
                begin, end = entry["data_offsets"]
                numpy_type, view = kinds[entry["dtype"]]
                f.seek(data_start + begin)
                array = np.fromfile(f, dtype=numpy_type, count=(end - begin) // np.dtype(numpy_type).itemsize)
                t = torch.from_numpy(array)
                if view is not None:
                    t = t.view(view)
                weights[name] = t.reshape(entry["shape"]).to(device=device, dtype=dtype)
    return weights


def rope_tables(cfg, positions, torch, device, dtype):
    """cos and sin [positions, head_dim] of Hugging Face's rotary embedding (rotate_half layout),
    with its llama3 frequency scaling."""
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    base = float(cfg.get("rope_theta", 10000.0))
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / d))
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    elif kind not in (None, "default"):
        raise ValueError(f"rope_scaling type {kind!r} is not served by the static decoder")
    freqs = torch.arange(positions, device=device, dtype=torch.int64).float()[:, None] * inv.float()[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def static_llama(cfg, weights, torch, device, dtype):
    """The gpt-fast-style decoder: an nn.Module holding the weights (consumed from ``weights``)
    and, after ``setup_caches``, static KV caches as buffers."""
    import torch.nn.functional as F
    from torch import nn

    hidden, heads, kv_heads = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or hidden // heads
    groups, eps = heads // kv_heads, float(cfg["rms_norm_eps"])
    # scaled_dot_product_attention's enable_gqa came with torch 2.5
    gqa = tuple(int(p) for p in re.findall(r"\d+", torch.__version__)[:2]) >= (2, 5)

    def param(t):
        return nn.Parameter(t, requires_grad=False)

    def rms_norm(x, weight):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return weight * h.to(x.dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Block(nn.Module):
        def __init__(self, i):
            super().__init__()
            p = f"model.layers.{i}."
            self.attention_norm = param(weights.pop(p + "input_layernorm.weight"))
            self.wqkv = param(torch.cat([weights.pop(p + f"self_attn.{x}_proj.weight") for x in "qkv"]))
            self.wo = param(weights.pop(p + "self_attn.o_proj.weight"))
            self.ffn_norm = param(weights.pop(p + "post_attention_layernorm.weight"))
            self.w1 = param(weights.pop(p + "mlp.gate_proj.weight"))
            self.w3 = param(weights.pop(p + "mlp.up_proj.weight"))
            self.w2 = param(weights.pop(p + "mlp.down_proj.weight"))

        def forward(self, x, cos, sin, input_pos, mask):
            s = x.shape[1]
            h = rms_norm(x, self.attention_norm)
            q, k, v = F.linear(h, self.wqkv).split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], -1)
            q = q.reshape(1, s, heads, head_dim).transpose(1, 2)
            k = k.reshape(1, s, kv_heads, head_dim).transpose(1, 2)
            v = v.reshape(1, s, kv_heads, head_dim).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            self.k_cache.index_copy_(2, input_pos, k)
            self.v_cache.index_copy_(2, input_pos, v)
            if mask is None:
                # the prefill, from position 0: causal attention within the prompt
                if gqa:
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                else:
                    y = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1),
                                                       v.repeat_interleave(groups, 1), is_causal=True)
                y = y.transpose(1, 2).reshape(1, s, heads * head_dim)
            else:
                # one token: query head kv * groups + g reads key/value head kv, so the query heads
                # of each key/value head are its queries; the mask hides the unwritten positions
                y = F.scaled_dot_product_attention(q.reshape(1, kv_heads, groups, head_dim), self.k_cache,
                                                   self.v_cache, attn_mask=mask)
                y = y.reshape(1, 1, heads * head_dim)
            x = x + F.linear(y, self.wo)
            h = rms_norm(x, self.ffn_norm)
            return x + F.linear(F.silu(F.linear(h, self.w1)) * F.linear(h, self.w3), self.w2)

    class StaticLlama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = param(weights.pop("model.embed_tokens.weight"))
            self.layers = nn.ModuleList(Block(i) for i in range(cfg["num_hidden_layers"]))
            self.norm = param(weights.pop("model.norm.weight"))
            head = weights.pop("lm_head.weight", None)
            self.tied = head is None or bool(cfg.get("tie_word_embeddings"))
            if not self.tied:
                self.output = param(head)
            if weights:
                raise ValueError(f"tensors the static decoder does not use: {sorted(weights)[:4]}")
            cos, sin = rope_tables(cfg, cfg["max_position_embeddings"], torch, device, dtype)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)

        def setup_caches(self, max_seq):
            shape = (1, kv_heads, max_seq, head_dim)
            for block in self.layers:
                block.register_buffer("k_cache", None)
                block.register_buffer("v_cache", None)
            if device.type == "cuda":
                torch.cuda.empty_cache()
            for block in self.layers:
                block.register_buffer("k_cache", torch.zeros(shape, device=device, dtype=dtype))
                block.register_buffer("v_cache", torch.zeros(shape, device=device, dtype=dtype))
            self.register_buffer("kv_positions", torch.arange(max_seq, device=device))

        def forward(self, ids, input_pos, prefill: bool):
            x = F.embedding(ids, self.embed)
            cos = self.cos[input_pos].view(1, 1, -1, head_dim)
            sin = self.sin[input_pos].view(1, 1, -1, head_dim)
            mask = None if prefill else (self.kv_positions.view(1, 1, 1, -1) <= input_pos.view(1, 1, 1, 1))
            for block in self.layers:
                x = block(x, cos, sin, input_pos, mask)
            x = rms_norm(x[:, -1:], self.norm)
            return F.linear(x, self.embed if self.tied else self.output)

    return StaticLlama()


def prefill_tokens(model, ids, input_pos):
    """The greedy token after the prompt ``ids`` [1, S] at positions ``input_pos`` (from 0)."""
    import torch

    return torch.argmax(model(ids, input_pos, True)[:, -1], dim=-1, keepdim=True)


def decode_one_token(model, token, input_pos):
    """One decode step: the greedy token after ``token`` [1, 1] at ``input_pos`` [1]."""
    import torch

    return torch.argmax(model(token, input_pos, False)[:, -1], dim=-1, keepdim=True)


def child_static(spec, compiled):
    """The gpt-fast-style decoder, eager (``static``) or compiled with CUDA graphs (``compiled``)."""
    torch, device, dtype, sync = torch_setup(spec)
    cfg = json.loads((Path(spec["model"]) / "config.json").read_text())
    start = time.perf_counter()
    model = static_llama(cfg, read_weights(spec["model"], torch, device, dtype), torch, device, dtype)
    emit(kind="info", load_seconds=time.perf_counter() - start)
    prefill_fn, decode_fn = prefill_tokens, decode_one_token

    def mark_step():
        pass

    if compiled:
        import torch._dynamo
        import torch._inductor.config as inductor

        # one graph per prompt length and per cache size: room for all of them
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(64, getattr(torch._dynamo.config, name)))
        # gpt-fast's inductor settings (each where this torch has it)
        settings = [(inductor, "fx_graph_cache")]
        if spec["tune"]:
            settings += [(inductor, "coordinate_descent_tuning"), (inductor.triton, "unique_kernel_names")]
        for where, name in settings:
            if hasattr(where, name):
                setattr(where, name, True)
        mode = "reduce-overhead" if device.type == "cuda" else None
        decode_fn = torch.compile(decode_one_token, mode=mode, fullgraph=True, dynamic=False)
        if not spec["eager_prefill"]:
            prefill_fn = torch.compile(prefill_tokens, fullgraph=True, dynamic=False)
        if device.type == "cuda" and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
            mark_step = torch.compiler.cudagraph_mark_step_begin
        emit(kind="info", compile_mode=mode or "default", tune=spec["tune"], eager_prefill=spec["eager_prefill"])

    def generate(ids, n_new):
        """(prefill seconds, decode seconds, tokens): the eager prefill, then n_new - 1 steps."""
        length = ids.shape[1]
        positions = torch.arange(length, device=device)
        sync()
        t0 = time.perf_counter()
        token = prefill_tokens(model, ids, positions)
        sync()
        t1 = time.perf_counter()
        tokens = [token]
        input_pos = torch.tensor([length], device=device)
        for _ in range(n_new - 1):
            mark_step()
            token = decode_fn(model, token, input_pos).clone()
            input_pos += 1
            tokens.append(token)
        sync()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, torch.cat(tokens, dim=1)[0].tolist()

    with torch.no_grad():
        for length, n_new, is_context, is_prefill in spec["plan"]:
            ids = load_prompt(spec, length, torch, device)
            say(f"prompt {length}: " + " and ".join(["prefill"] * is_prefill + ["decode"] * is_context)
                + (" (the first call of each compiles)" if compiled else ""))
            try:
                model.setup_caches(length + n_new)
            except Exception as e:  # noqa: BLE001
                if is_prefill:
                    emit(kind="prefill", length=length, error=first_line(e))
                if is_context:
                    emit(kind="decode", context=length, error=first_line(e))
                continue
            if is_prefill:
                try:
                    positions = torch.arange(length, device=device)
                    t0 = time.perf_counter()
                    prefill_fn(model, ids, positions)  # compiles, when compiled
                    sync()
                    warm = time.perf_counter() - t0

                    def again(ids=ids, positions=positions):
                        return prefill_fn(model, ids, positions)

                    seconds, times = timed_median(again, sync, spec["repeats"])
                    emit(kind="prefill", length=length, tok_s=length / seconds, seconds=seconds, times=times,
                         first_seconds=warm)
                except Exception as e:  # noqa: BLE001
                    emit(kind="prefill", length=length, error=first_line(e))
            if is_context:
                try:
                    t0 = time.perf_counter()
                    generate(ids, n_new)  # warm-up: compiles and records the graph, when compiled
                    warm = time.perf_counter() - t0
                    prefill_s, decode_s, tokens = generate(ids, n_new)
                    emit(kind="decode", context=length, tok_s=(n_new - 1) / decode_s, steps=n_new - 1,
                         seconds=decode_s, prefill_seconds=prefill_s, tokens=tokens, warmup_seconds=warm)
                except Exception as e:  # noqa: BLE001
                    emit(kind="decode", context=length, error=first_line(e))
    if device.type == "cuda":
        emit(kind="info", peak_memory_bytes=torch.cuda.max_memory_allocated())


def child_main(name, spec):
    try:
        if name == "bandwidth":
            child_bandwidth(spec)
        elif name == "hf":
            child_hf(spec)
        elif name in ("static", "compiled"):
            child_static(spec, compiled=name == "compiled")
        else:
            raise ValueError(f"no child {name!r}")
    except Exception as e:  # noqa: BLE001 - the parent tables it
        import traceback

        traceback.print_exc()
        emit(kind="fatal", error=first_line(e))
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# the parent


def run_process(argv, timeout, label):
    """Runs ``argv``: (exit code, result records from stdout, stderr's lines); stderr is passed on
    to ours as it comes, each line prefixed with ``label``."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    except OSError as e:
        return None, [], [f"cannot start {argv[0]}: {e}"]
    records, err_lines = [], []

    def pump_err():
        for line in proc.stderr:
            err_lines.append(line.rstrip("\n"))
            print(f"[{label}] {line}", end="", file=sys.stderr, flush=True)

    def pump_out():
        for line in proc.stdout:
            if line.startswith(MARK):
                records.append(json.loads(line[len(MARK):]))

    threads = [threading.Thread(target=pump_err, daemon=True), threading.Thread(target=pump_out, daemon=True)]
    for t in threads:
        t.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = f"killed after the {timeout} s of --child-timeout"
    for t in threads:
        t.join(timeout=10)
    return rc, records, err_lines


def run_torch_child(args, name, spec):
    """A torch child's results: {"info": {...}, "rows": {row key: record}, "error": str | None}."""
    argv = [args.peer_python, str(Path(__file__).resolve()), "--child", name, "--spec", json.dumps(spec)]
    start = time.perf_counter()
    rc, records, err_lines = run_process(argv, args.child_timeout, name)
    result = {"info": {}, "rows": {}, "error": None, "wall_seconds": time.perf_counter() - start}
    for r in records:
        kind = r.pop("kind")
        if kind == "info":
            result["info"].update(r)
        elif kind == "fatal":
            result["error"] = r["error"]
        elif kind == "prefill":
            result["rows"][f"prefill {r['length']}"] = r
        elif kind == "decode":
            result["rows"][f"decode {r['context']}"] = r
    if rc != 0 and result["error"] is None:
        tail = next((line for line in reversed(err_lines) if line.strip()), "")
        result["error"] = f"exit {rc}" + (f": {tail.strip()}" if tail else "")
    return result


def nbx_command(given):
    """The nbx command: ``--nbx`` split as a shell would, else the console script's entry point
    (``nbx = "nbxtensor._cli:main"``) run by this interpreter, else ``nbx`` on the PATH."""
    if given:
        return shlex.split(given), None
    import importlib.util

    spec = importlib.util.find_spec("nbxtensor")  # finds the package without importing it
    locations = (spec.submodule_search_locations or []) if spec is not None else []
    if any((Path(p) / "_cli.py").is_file() for p in locations):
        entry = "import sys; sys.argv[0] = 'nbx'; from nbxtensor._cli import main; main()"
        return [sys.executable, "-c", entry], None
    found = shutil.which("nbx")
    if found:
        return [found], None
    return None, (f"nbxtensor is not installed for {sys.executable} and no nbx is on the PATH "
                  "(pip install the package, or give --nbx CMD)")


PREFILL_LINE = re.compile(r"nbx: prefill of (\d+) tokens \(bucket (\d+)\) in ([\d.]+) s: ([\d.]+) tok/s "
                          r"\(([\d.]+) s of it tracing, planning and capturing\)")
DECODE_LINE = re.compile(r"nbx: (\d+) tokens generated; (\d+) decode steps in ([\d.]+) s \(([\d.]+) s of it "
                         r"tracing, planning and capturing\): ([\d.]+) tok/s replayed")
MEMORY_LINE = re.compile(r"nbx: memory: .*")


def run_nbx(args, plan, prompts, work):
    """nbx's results, one ``nbx generate`` process per prompt length."""
    result = {"info": {}, "rows": {}, "error": None, "wall_seconds": 0.0}
    cmd, why = nbx_command(args.nbx)
    if cmd is None:
        result["error"] = why
        return result
    result["info"]["command"] = cmd
    for length, n_new, is_context, is_prefill in plan:
        out = work / f"nbx-out-{length}.json"
        argv = cmd + ["generate", "--model", str(args.model), "--prompt-ids", prompts[str(length)],
                      "--max-new-tokens", str(n_new), "--device", args.device, "--dtype", args.dtype,
                      "--output", str(out)]
        if args.device == "cpu":
            argv += ["--threads", str(args.threads)]
        print(f"[nbx] {shlex.join(argv)}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        rc, _, err_lines = run_process(argv, args.child_timeout, "nbx")
        wall = time.perf_counter() - start
        result["wall_seconds"] += wall
        text = "\n".join(err_lines)
        pre, dec = PREFILL_LINE.search(text), DECODE_LINE.search(text)
        error = None
        if rc != 0 or pre is None or dec is None:
            errors = [line for line in err_lines if line.startswith("nbx: error:")]
            tail = next((line for line in reversed(err_lines) if line.strip()), "")
            error = errors[0] if errors else (tail.strip() or f"exit {rc}, no figures on stderr")
        keys = ([f"prefill {length}"] if is_prefill else []) + ([f"decode {length}"] if is_context else [])
        if error:
            for key in keys:
                result["rows"][key] = {"error": error}
            continue
        memory = MEMORY_LINE.search(text)
        if memory:
            result["info"][f"memory {length}"] = memory.group(0)
        n, bucket, prefill_s, _, capture_s = int(pre[1]), int(pre[2]), float(pre[3]), float(pre[4]), float(pre[5])
        if is_prefill:
            replay = prefill_s - capture_s
            record = {"length": n, "bucket": bucket, "first_seconds": prefill_s, "capture_seconds": capture_s,
                      "first_tok_s": n / prefill_s, "process_seconds": wall}
            if replay > 0:
                record.update(tok_s=n / replay, seconds=replay)
            else:
                record["error"] = f"prefill {prefill_s} s less capture {capture_s} s: below nbx's 0.1 ms resolution"
            result["rows"][f"prefill {length}"] = record
        if is_context:
            generated, steps = int(dec[1]), int(dec[2])
            decode_s, decode_capture_s, tok_s = float(dec[3]), float(dec[4]), float(dec[5])
            tokens = None
            if out.is_file():
                tokens = json.loads(out.read_text()).get("generated_ids")
            result["rows"][f"decode {length}"] = {
                "context": length, "tok_s": tok_s, "steps": steps, "generated": generated,
                "seconds": decode_s - decode_capture_s, "capture_seconds": decode_capture_s, "tokens": tokens,
                "prefill_seconds": prefill_s - capture_s, "process_seconds": wall}
    return result


def model_facts(directory, itemsize):
    """The checkpoint's shape and the bytes a decode step reads (for the roofline)."""
    cfg = json.loads((Path(directory) / "config.json").read_text())
    params = {}
    for _, header in safetensors_headers(directory).values():
        for name, entry in header.items():
            params[name] = math.prod(entry["shape"])
    total = sum(params.values())
    embed = params.get("model.embed_tokens.weight", 0)
    tied = "lm_head.weight" not in params
    # a decode step reads one row of the embedding table (all of it when it is also the head)
    read = total if tied else total - embed + cfg["hidden_size"]
    layers, kv_heads = cfg["num_hidden_layers"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    # the matrix FLOPs of a prefill token: 2 per weight of the layers, causal attention's
    # 2 * context * heads * head_dim per layer (QK and PV over half the context each)
    layer_params = total - embed - (0 if tied else params.get("lm_head.weight", 0))
    return {
        "config": {k: cfg.get(k) for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                           "num_attention_heads", "num_key_value_heads", "vocab_size")},
        "parameters": total, "weight_bytes": total * itemsize, "weight_bytes_read_per_token": read * itemsize,
        "kv_bytes_per_position": 2 * layers * kv_heads * head_dim * itemsize,
        "layer_parameters": layer_params,
        "attention_flops_per_token_per_position": 2 * layers * cfg["num_attention_heads"] * head_dim,
    }


def fmt(value):
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def cell_text(text, width=72):
    text = text.replace("|", "/")
    return text if len(text) <= width else text[:width - 1] + "…"


def build_table(rows, systems, results, facts, env):
    """(markdown lines, table records)."""
    bandwidth, gemm = env.get("copy_bandwidth"), env.get("gemm_flops")
    header = ["", "nbx", "HF eager", "static eager", "static compile+graph", "roofline", "nbx / best torch",
              "nbx % roofline"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    records = []
    for kind, length in rows:
        key = f"{kind} {length}"
        if kind == "decode":
            label = f"decode ctx {length} (tok/s)"
            bytes_per_token = facts["weight_bytes_read_per_token"] + facts["kv_bytes_per_position"] * length
            ceiling = bandwidth / bytes_per_token if bandwidth else None
        else:
            label = f"prefill {length} (tok/s)"
            flops = 2 * facts["layer_parameters"] + facts["attention_flops_per_token_per_position"] * length
            ceiling = gemm / flops if gemm else None
        record = {"row": key, "roofline_tok_s": ceiling}
        cells = [label]
        values = {}
        for system in SYSTEMS:
            result = results.get(system)
            if system not in systems and result is None:
                cells.append("—")
                continue
            entry = (result or {}).get("rows", {}).get(key)
            if entry and "tok_s" in entry and "error" not in entry:
                values[system] = entry["tok_s"]
                share = f" ({entry['tok_s'] / ceiling:.0%})" if ceiling else ""
                cells.append(fmt(entry["tok_s"]) + share)
                record[system] = entry["tok_s"]
            else:
                error = (entry or {}).get("error") or (result or {}).get("error") or "not measured"
                cells.append(cell_text(error.removeprefix("nbx: error: ")))
                record[system] = {"error": error}
        cells.append((fmt(ceiling) + ("" if kind == "decode" else " (GEMM)")) if ceiling else "—")
        best = max((values[s] for s in TORCH_SYSTEMS if s in values), default=None)
        nbx = values.get("nbx")
        cells.append(f"{nbx / best:.2f}×" if nbx and best else "—")
        cells.append(f"{nbx / ceiling:.0%}" if nbx and ceiling else "—")
        record["nbx_over_best_torch"] = nbx / best if nbx and best else None
        record["nbx_share_of_roofline"] = nbx / ceiling if nbx and ceiling else None
        lines.append("| " + " | ".join(cells) + " |")
        records.append(record)
    return lines, records


def agreement_lines(contexts, results):
    """Whether the greedy tokens agree: each system's against HF eager's (or the static decoder's)."""
    lines = []
    for length in contexts:
        key = f"decode {length}"
        streams = {s: results[s]["rows"][key]["tokens"] for s in SYSTEMS
                   if results.get(s) and (results[s]["rows"].get(key) or {}).get("tokens")}
        ref = "hf" if "hf" in streams else "static" if "static" in streams else None
        if ref is None or len(streams) < 2:
            continue
        parts = []
        for s, tokens in streams.items():
            if s == ref:
                continue
            want = streams[ref]
            pairs = enumerate(zip(tokens, want, strict=False))
            same = next((i for i, (a, b) in pairs if a != b), min(len(tokens), len(want)))
            parts.append(f"{LABELS[s]} {same}/{len(want)}" + (" (all)" if same == len(want) == len(tokens) else ""))
        lines.append(f"greedy tokens at ctx {length}, leading tokens equal to {LABELS[ref]}'s: " + ", ".join(parts))
    return lines


def detail_notes(rows, results, n_new):
    notes = []
    nbx = results.get("nbx") or {}
    for kind, length in rows:
        entry = nbx.get("rows", {}).get(f"{kind} {length}") or {}
        if kind == "prefill" and "first_seconds" in entry:
            notes.append(f"nbx prefill {length}: the table's figure is the replayed prefill "
                         f"({length} / ({entry['first_seconds']:.4f} - {entry['capture_seconds']:.4f} s of capture)); "
                         f"the first run of bucket {entry['bucket']}, capture included: "
                         f"{fmt(entry['first_tok_s'])} tok/s")
        if kind == "decode" and "steps" in entry:
            if entry["steps"] < n_new - 1:
                notes.append(f"nbx decode ctx {length}: stopped at the end-of-sequence token after "
                             f"{entry['steps']} decode steps (of {n_new - 1})")
            notes.append(f"nbx decode ctx {length}: {entry['steps']} steps, {entry['capture_seconds']:.3f} s "
                         f"of decode capture left out")
    hf = results.get("hf") or {}
    for kind, length in rows:
        entry = hf.get("rows", {}).get(f"{kind} {length}") or {}
        if kind == "decode" and "generate_tok_s" in entry:
            notes.append(f"HF eager decode ctx {length}: the manual loop over its cache; generate() gives "
                         f"(N - 1) / (total - prefill) = {fmt(entry['generate_tok_s'])} tok/s "
                         f"(its tokens {'equal' if entry['generate_tokens_equal_loop'] else 'differ from'} the loop's)")
    compiled = results.get("compiled") or {}
    for kind, length in rows:
        entry = compiled.get("rows", {}).get(f"{kind} {length}") or {}
        if "warmup_seconds" in entry:
            notes.append(f"static compile+graph decode ctx {length}: warm-up (compile, graph record) "
                         f"{entry['warmup_seconds']:.1f} s, after an eager prefill")
        if "first_seconds" in entry:
            how = "eager (--eager-prefill), first call" if compiled.get("info", {}).get("eager_prefill") \
                else "compiled (dynamic=False, no graph) in"
            notes.append(f"static compile+graph prefill {length}: {how} {entry['first_seconds']:.1f} s before timing")
    return notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="the checkpoint directory (default: --make's)")
    parser.add_argument("--make", metavar="DIR",
                        help="write a random checkpoint into DIR unless DIR/config.json exists")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="8b", help="the shape --make writes")
    parser.add_argument("--new-tokens", type=int, default=64, help="tokens generated per decode row")
    parser.add_argument("--contexts", default="512,4096", help="decode contexts (prompt lengths)")
    parser.add_argument("--prefills", default="512,2048", help="prefill prompt lengths")
    parser.add_argument("--systems", default=None, help="of nbx,hf,static,compiled (default: all; on the CPU "
                        "compiled only with --compile)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"],
                        help="default: bfloat16 on cuda, float32 on the CPU")
    parser.add_argument("--threads", type=int, default=2, help="threads of each system on the CPU")
    parser.add_argument("--repeats", type=int, default=3, help="timed prefills of the torch peers (the median)")
    parser.add_argument("--nbx", help="the nbx command (default: the nbx console script's entry point)")
    parser.add_argument("--peer-python", default=sys.executable, help="the interpreter of the torch children")
    parser.add_argument("--compile", action="store_true", help="run the compiled static decoder on the CPU too")
    parser.add_argument("--no-tune", dest="tune", action="store_false",
                        help="without inductor's coordinate descent tuning (a faster compile)")
    parser.add_argument("--eager-prefill", action="store_true",
                        help="the compiled static decoder's prefill rows eager (two compiles less)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--merge", action="store_true",
                        help="keep --json FILE's results for the systems this run does not run")
    parser.add_argument("--child-timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args.child, json.loads(args.spec))

    args.dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    if args.systems is None:
        systems = [s for s in SYSTEMS if s != "compiled" or args.device == "cuda" or args.compile]
    else:
        systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        bad = [s for s in systems if s not in SYSTEMS]
        if bad:
            parser.error(f"--systems: unknown {', '.join(bad)} (of {','.join(SYSTEMS)})")
    if args.make:
        make_checkpoint(args.make, args.shape)
        args.model = args.model or args.make
    if not args.model:
        parser.error("give --model DIR (or --make DIR)")
    if not systems:
        return 0
    if not (Path(args.model) / "config.json").is_file():
        parser.error(f"no {args.model}/config.json (write one with --make {args.model})")
    if args.new_tokens < 2:
        parser.error("--new-tokens takes 2 or more (one token comes from the prefill)")
    contexts = [int(x) for x in args.contexts.split(",") if x.strip()]
    prefills = [int(x) for x in args.prefills.split(",") if x.strip()]
    cfg = json.loads((Path(args.model) / "config.json").read_text())
    limit = cfg["max_position_embeddings"]
    too_long = [n for n in contexts if n + args.new_tokens > limit] + [n for n in prefills if n > limit]
    if too_long:
        parser.error(f"prompt lengths {too_long} with --new-tokens do not fit max_position_embeddings {limit}")
    # one run per prompt length: (length, new tokens, a decode row, a prefill row)
    plan = [(n, args.new_tokens if n in contexts else 1, n in contexts, n in prefills)
            for n in sorted(set(contexts) | set(prefills))]
    rows = [("decode", n) for n in contexts] + [("prefill", n) for n in prefills]
    itemsize = {"bfloat16": 2, "float16": 2, "float32": 4}[args.dtype]
    facts = model_facts(args.model, itemsize)

    previous = {}
    if args.merge and args.json and Path(args.json).is_file():
        previous = json.loads(Path(args.json).read_text()).get("results", {})
    with tempfile.TemporaryDirectory(prefix="bench-llama-") as tmp:
        work = Path(tmp)
        prompts = {}
        for n, _, _, _ in plan:
            path = work / f"prompt-{n}.json"
            path.write_text(json.dumps(prompt_ids(n, cfg["vocab_size"])))
            prompts[str(n)] = str(path)
        spec = {"model": str(Path(args.model).resolve()), "device": args.device, "dtype": args.dtype,
                "threads": args.threads, "repeats": args.repeats, "tune": args.tune,
                "eager_prefill": args.eager_prefill,
                "plan": plan, "prompts": prompts}
        env_result = run_torch_child(args, "bandwidth", spec)
        env = env_result["info"]
        if env_result["error"]:
            print(f"copy bandwidth: not measured ({env_result['error']})", file=sys.stderr)
        results = {}
        for system in systems:
            print(f"--- {LABELS[system]}", file=sys.stderr, flush=True)
            if system == "nbx":
                results[system] = run_nbx(args, plan, prompts, work)
            else:
                results[system] = run_torch_child(args, system, spec)
    for system, result in previous.items():
        if system in SYSTEMS and system not in results:
            results[system] = result

    if env_result["error"]:
        dev = f"{args.device} (the bandwidth child failed: {env_result['error']})"
    else:
        dev = env.get("gpu") or f"CPU, {env.get('cpu_threads', args.threads)} threads"
    print(f"\nLlama {facts['config']['num_hidden_layers']} layers, hidden {facts['config']['hidden_size']}, "
          f"{facts['parameters'] / 1e9:.2f} B parameters ({facts['weight_bytes'] / 1e9:.2f} GB {args.dtype}), "
          f"batch 1, {args.new_tokens} new tokens per decode row")
    print(f"device: {dev}" + (f"; torch {env['torch']}" if env.get("torch") else "")
          + (f", CUDA {env['cuda']}" if env.get("cuda") else ""))
    if env.get("copy_bandwidth"):
        print(f"copy bandwidth (torch, {env['copy_bytes'] / 2 / 2**30:.2f} GiB copied, read + write counted, "
              f"best of 7): {env['copy_bandwidth'] / 1e12:.3f} TB/s; {env['gemm']} matmul "
              f"{env['gemm_flops'] / 1e12:.1f} TFLOP/s")
    for system, result in results.items():
        info = result.get("info", {})
        extra = ", ".join(f"{k} {v}" for k, v in info.items() if k in ("transformers", "compile_mode"))
        print(f"{LABELS[system]}: {result.get('wall_seconds', 0):.1f} s in all" + (f"; {extra}" if extra else "")
              + (f"; error: {result['error']}" if result.get("error") else ""))
    lines, records = build_table(rows, systems, results, facts, env)
    print()
    print("\n".join(lines))
    print()
    print(f"decode roofline: ({facts['weight_bytes_read_per_token'] / 1e9:.3f} GB of weights, the embedding table "
          f"but one row left out, + {facts['kv_bytes_per_position'] / 1e3:.1f} kB of KV cache per position of the "
          "context) / the copy bandwidth; a decode cell's % is its share of it. Prefill ceiling: matrix FLOPs per "
          "token / the matmul rate above.")
    notes = detail_notes(rows, results, args.new_tokens) + agreement_lines(contexts, results)
    for system, result in results.items():
        errors = {e for e in [result.get("error")] + [r.get("error") for r in result.get("rows", {}).values()] if e}
        notes += [f"{LABELS[system]} error: {e}" for e in sorted(errors)]
    for note in notes:
        print(f"- {note}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "env": env, "model": facts, "dtype": args.dtype, "new_tokens": args.new_tokens, "contexts": contexts,
            "prefills": prefills, "systems": systems, "results": results, "table": records, "notes": notes,
        }, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
