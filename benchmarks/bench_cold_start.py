"""The first call of each op on a CUDA device, in a fresh process with an empty kernel cache.

Each (library, op) runs in a process of its own, started with ``XDG_CACHE_HOME`` and
``CUDA_CACHE_PATH`` pointing at an empty folder, so neither nbxtensor's compiled-kernel cache, its
proven settings, nor the driver's cache of code it compiled from PTX (where cuDNN's generated
attention kernels land) carry over. Before the table one process per library runs the ops that
load the big libraries (cuBLASLt, cuDNN), so that no row pays for reading them from disk into
the page cache (``--no-warm-up`` skips it).
A process imports its library, puts its inputs on the GPU (which creates the device's context:
``setup``), then times the op's first call and a second call, each to a device synchronisation.
torch is the peer, in processes of its own (it ships compiled kernels; it is never imported by
the library). nbxtensor is timed twice where ``--nvrtc-cache`` asks: with an empty cache, then
with the cache the first process filled (what a build without shipped kernels costs the second
time).

    python3 benchmarks/bench_cold_start.py                 # every op, both libraries
    python3 benchmarks/bench_cold_start.py --ops add,sum   # some of them
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# the ops whose first call loads a large library, run once per library before the table
WARM_UP = {"nbxtensor": ["matmul", "sdpa"], "torch": ["matmul", "sdpa", "sdpa_cudnn"]}
OPS = ["add", "gelu", "cast", "sum", "argmax", "softmax", "rms_norm", "layer_norm", "rope",
       "matmul", "linear_row", "sdpa", "decode_attention", "cumulative_sum", "sort"]


def nbx_case(op):
    import numpy as np

    import nbxtensor as nbx
    from nbxtensor import ops

    rng = np.random.default_rng(0)

    def put(*shape, dtype="float32"):
        return nbx.asarray(rng.standard_normal(shape).astype(np.float32), dtype=dtype, device="cuda")

    x = put(1 << 20)
    m = put(1024, 4096)
    w = put(4096)
    if op == "add":
        return lambda: ops.add(x, x)
    if op == "gelu":
        return lambda: ops.gelu(x)
    if op == "cast":
        return lambda: ops.cast(x, "bfloat16")
    if op == "sum":
        return lambda: ops.sum(m, axes=-1)
    if op == "argmax":
        return lambda: ops.argmax(m, axis=-1)
    if op == "softmax":
        return lambda: ops.softmax(m, axis=-1)
    if op == "rms_norm":
        return lambda: ops.rms_norm(m, w, eps=1e-6)
    if op == "layer_norm":
        return lambda: ops.layer_norm(m, w, w, eps=1e-5)
    if op == "rope":
        q = put(8, 256, 128, dtype="bfloat16")
        cos, sin = put(256, 64, dtype="bfloat16"), put(256, 64, dtype="bfloat16")
        return lambda: ops.rope(q, cos, sin)
    if op == "matmul":
        a = put(1024, 1024, dtype="bfloat16")
        return lambda: ops.matmul(a, a)
    if op == "linear_row":
        row, weight = put(1, 4096, dtype="bfloat16"), put(4096, 4096, dtype="bfloat16")
        return lambda: ops.linear(row, weight)
    if op == "sdpa":
        q = put(1, 8, 256, 64, dtype="bfloat16")
        return lambda: ops.sdpa(q, q, q, causal=True)
    if op == "decode_attention":
        q = put(1, 32, 1, 128, dtype="bfloat16")
        cache = put(1, 8, 1024, 128, dtype="bfloat16")
        length = nbx.asarray(np.array([1024], dtype=np.int32), device="cuda")
        return lambda: ops.decode_attention(q, cache, cache, length)
    if op == "cumulative_sum":
        return lambda: ops.cumulative_sum(m, axis=-1)
    if op == "sort":
        return lambda: ops.sort(m, axis=-1)
    raise SystemExit(f"unknown op {op}")


def torch_case(op):
    import torch
    import torch.nn.functional as F

    def put(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda").to(dtype)

    x, m, w = put(1 << 20), put(1024, 4096), put(4096)
    bf = torch.bfloat16
    cases = {
        "add": lambda: torch.add(x, x),
        "gelu": lambda: F.gelu(x),
        "cast": lambda: x.to(bf),
        "sum": lambda: m.sum(-1),
        "argmax": lambda: m.argmax(-1),
        "softmax": lambda: torch.softmax(m, -1),
        "rms_norm": lambda: F.rms_norm(m, (4096,), w, 1e-6),
        "layer_norm": lambda: F.layer_norm(m, (4096,), w, w, 1e-5),
        "cumulative_sum": lambda: m.cumsum(-1),
        "sort": lambda: m.sort(-1),
    }
    if op == "rope":
        q, cos, sin = put(8, 256, 128, dtype=bf), put(256, 64, dtype=bf), put(256, 64, dtype=bf)
        return lambda: torch.cat((q[..., :64] * cos - q[..., 64:] * sin, q[..., 64:] * cos + q[..., :64] * sin), -1)
    if op == "matmul":
        a = put(1024, 1024, dtype=bf)
        return lambda: a @ a
    if op == "linear_row":
        row, weight = put(1, 4096, dtype=bf), put(4096, 4096, dtype=bf)
        return lambda: F.linear(row, weight)
    if op in ("sdpa", "sdpa_cudnn"):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q = put(1, 8, 256, 64, dtype=bf)
        if op == "sdpa":
            return lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, q, q, is_causal=True)

        return cudnn
    if op == "decode_attention":
        q, cache = put(1, 32, 1, 128, dtype=bf), put(1, 8, 1024, 128, dtype=bf)
        return lambda: F.scaled_dot_product_attention(q, cache, cache, enable_gqa=True)
    return cases[op]


def child(library, op):
    """Runs in the fresh process: prints one JSON line of seconds."""
    start = time.perf_counter()
    if library == "nbxtensor":
        from nbxtensor.backend import runtime

        sync = runtime.synchronize
        make = nbx_case
    else:
        import torch

        sync = torch.cuda.synchronize
        make = torch_case
    imported = time.perf_counter()
    if op == "warm-up":
        for each in WARM_UP[library]:
            make(each)()
        sync()
        print(json.dumps({}))
        return
    fn = make(op)
    sync()
    ready = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter()
    fn()
    sync()
    second = time.perf_counter()
    print(json.dumps({"import": imported - start, "setup": ready - imported, "first": first - ready,
                      "second": second - first}))


def run(library, op, cache):
    env = dict(os.environ, XDG_CACHE_HOME=cache, CUDA_CACHE_PATH=os.path.join(cache, "cuda-jit"))
    out = subprocess.run([sys.executable, __file__, "--child", library, op], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1])
    result["compiled"] = out.stderr.count("nbxtensor: compiling")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--libraries", default="nbxtensor,torch")
    parser.add_argument("--nvrtc-cache", action="store_true",
                        help="also time nbxtensor a second time over the cache its first process filled")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="time the first processes with the libraries' files perhaps not yet in the page cache")
    parser.add_argument("--child", nargs=2, metavar=("LIBRARY", "OP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from nbxtensor.backend import runtime  # what this build carries

    print(f"nbxtensor ships machine code for: {', '.join(runtime.shipped_kernels()) or 'none'}")
    libraries = args.libraries.split(",")
    if not args.no_warm_up:
        for library in libraries:
            with tempfile.TemporaryDirectory() as cache:
                r = run(library, "warm-up", cache)
            if "error" in r:
                print(f"warm-up of {library} failed: {r['error']}")
    print("| op | library | import s | setup s | first call s | second call s | kernels compiled |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for op in args.ops.split(","):
        # torch's sdpa twice: its default backend, and its cuDNN backend (what nbxtensor runs)
        cases = [(library, op) for library in libraries]
        if op == "sdpa" and "torch" in libraries:
            cases.append(("torch", "sdpa_cudnn"))
        for library, case in cases:
            backend = " (its cuDNN backend)" if case == "sdpa_cudnn" else ""
            with tempfile.TemporaryDirectory() as cache:
                passes = [run(library, case, cache)]
                if library == "nbxtensor" and args.nvrtc_cache:
                    passes.append(run(library, case, cache))
            for n, r in enumerate(passes):
                name = library + backend + (" (cache filled)" if n else "")
                if "error" in r:
                    print(f"| {op} | {name} | error: {r['error']} | | | | |")
                    continue
                compiled = r["compiled"] if library == "nbxtensor" else ""
                print(f"| {op} | {name} | {r['import']:.3f} | {r['setup']:.3f} | {r['first']:.3f} | "
                      f"{r['second']:.4f} | {compiled} |", flush=True)


if __name__ == "__main__":
    main()
