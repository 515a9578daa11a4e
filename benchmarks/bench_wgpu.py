"""nbxtensor's portable GPU backend (wgpu, through Vulkan) against the same GPU's own libraries,
side by side in one run.

Rows: float32 matrix products (2048³, 4096³, and a 4096² linear by a [4096, 4096] weight)
against torch.matmul / F.linear with TF32 off (cuBLAS's float32 kernels); add, softmax and
rms_norm of a [8192, 4096] float32 tensor (128 MiB), their bytes read + written over time
against the device-to-device copy bandwidth measured by torch in the same run, eager (ten calls
back to back, the host's work included) and captured (chains of 10 and 30 calls, each replayed
as one command buffer: the difference over 20 is a kernel's own time, the replay's copy of the
input in and of the output out, its submission and its wait cancelled); the host cost per
kernel of a chain of 1000 small kernels (neg of 16 values),
eager against a captured replay. Each timing is the median of `--repeats` runs of `--inner`
back-to-back launches after a warm-up, bracketed by a device synchronisation. Without torch or
CUDA (lavapipe, a Mac) the peers' columns are left out. torch is a reference peer only: this
script imports it; the library never does.

    python3 benchmarks/bench_wgpu.py --repeats 5              # on the GPU machine (Vulkan loader carried)
    python3 benchmarks/bench_wgpu.py --repeats 3 --only launch   # the host cost rows alone
"""

import argparse
import json
import statistics
import time

import numpy as np

import nbxtensor as nbx
from nbxtensor import ops, program
from nbxtensor.backend import runtime

DEVICE = "vulkan"


def timed(fn, sync, repeats, inner):
    fn()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def ours_sync():
    runtime.synchronize(DEVICE)


def peer():
    """torch on CUDA, or None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def copy_bandwidth(torch, repeats):
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), torch.cuda.synchronize, repeats, 10)
    return 2 * x.numel() * 4 / t


def matmul_rows(torch, repeats):
    rows = []
    rng = np.random.default_rng(0)
    for n in (2048, 4096):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ta, tb = nbx.asarray(a).to(DEVICE), nbx.asarray(b).to(DEVICE)
        inner = 10 if n == 2048 else 3
        ours = timed(lambda: ops.matmul(ta, tb), ours_sync, repeats, inner)
        check = ops.matmul(ta, tb).to("cpu").numpy()
        want = a[:64].astype(np.float64) @ b
        error = float(np.abs(check[:64] - want).max() / np.abs(want).max())
        row = {"case": f"matmul f32 {n}^3", "nbx_ms": ours * 1e3, "nbx_tflops": 2 * n**3 / ours / 1e12, "rel_error": error}
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = False
            pa, pb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            theirs = timed(lambda: pa @ pb, torch.cuda.synchronize, repeats, inner)
            row.update(torch_ms=theirs * 1e3, torch_tflops=2 * n**3 / theirs / 1e12, ratio=theirs / ours)
        rows.append(row)
    # linear: the right factor a [out, in] weight, read along its depth
    n = 4096
    x = rng.standard_normal((n, n), dtype=np.float32)
    w = rng.standard_normal((n, n), dtype=np.float32)
    tx, tw = nbx.asarray(x).to(DEVICE), nbx.asarray(w).to(DEVICE)
    ours = timed(lambda: ops.linear(tx, tw), ours_sync, repeats, 3)
    check = ops.linear(tx, tw).to("cpu").numpy()
    want = x[:64].astype(np.float64) @ w.T
    error = float(np.abs(check[:64] - want).max() / np.abs(want).max())
    row = {"case": f"linear f32 {n}x{n} by a [{n}, {n}] weight", "nbx_ms": ours * 1e3, "nbx_tflops": 2 * n**3 / ours / 1e12, "rel_error": error}
    if torch is not None:
        px, pw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
        theirs = timed(lambda: torch.nn.functional.linear(px, pw), torch.cuda.synchronize, repeats, 3)
        row.update(torch_ms=theirs * 1e3, torch_tflops=2 * n**3 / theirs / 1e12, ratio=theirs / ours)
    rows.append(row)
    return rows


def bandwidth_rows(copy, repeats):
    rng = np.random.default_rng(1)
    x = nbx.asarray(rng.standard_normal((8192, 4096), dtype=np.float32)).to(DEVICE)
    y = nbx.asarray(rng.standard_normal((8192, 4096), dtype=np.float32)).to(DEVICE)
    w = nbx.asarray(rng.standard_normal(4096, dtype=np.float32)).to(DEVICE)
    size = 8192 * 4096 * 4
    cases = [
        ("add", lambda t: ops.add(t, y), 3 * size),
        ("softmax", lambda t: ops.softmax(t, axis=-1), 2 * size),
        ("rms_norm", lambda t: ops.rms_norm(t, w), 2 * size),
    ]
    rows = []
    for name, step, bytes_moved in cases:
        # eager: ten calls back to back, the host's work per call included
        t = timed(lambda: step(x), ours_sync, repeats, 10)
        row = {"case": f"{name} f32 [8192, 4096]", "nbx_ms": t * 1e3, "nbx_tb_s": bytes_moved / t / 1e12}
        if copy:
            row["of_copy"] = bytes_moved / t / copy
        rows.append(row)

        # captured: chains of 10 and 30 calls, each replayed as one command buffer; their
        # difference over 20 is a kernel's own time
        def chain(count):
            def run(v):
                for _ in range(count):
                    v = step(v)
                return v

            return program.trace(run, x).executable().capture(x)

        short, long = chain(10), chain(30)
        t_long = timed(lambda: long.run(x), ours_sync, repeats, 1)
        t_short = timed(lambda: short.run(x), ours_sync, repeats, 1)
        t = (t_long - t_short) / 20
        row = {"case": f"{name} f32 [8192, 4096], captured: a kernel's own time", "nbx_ms": t * 1e3, "nbx_tb_s": bytes_moved / t / 1e12}
        if copy:
            row["of_copy"] = bytes_moved / t / copy
        rows.append(row)
        del short, long
    return rows


def launch_rows(repeats):
    x = nbx.asarray(np.linspace(-1, 1, 16, dtype=np.float32)).to(DEVICE)

    def chain(t):
        for _ in range(1000):
            t = ops.neg(t)
        return t

    eager = timed(lambda: chain(x), ours_sync, repeats, 1)
    replay = program.trace(chain, x).executable().capture(x)
    replayed = timed(lambda: replay.run(x), ours_sync, repeats, 1)
    assert replay.run(x)[0].to("cpu").numpy().tobytes() == chain(x).to("cpu").numpy().tobytes()
    return [
        {"case": "1000 neg of 16 values, eager", "per_kernel_us": eager / 1000 * 1e6},
        {"case": "the same, captured and replayed (one command buffer)", "per_kernel_us": replayed / 1000 * 1e6},
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=["matmul", "bandwidth", "launch"])
    parser.add_argument("--json")
    args = parser.parse_args()
    vulkan = [d for d in runtime.devices() if d["kind"] == DEVICE]
    if not vulkan:
        raise SystemExit(f"no Vulkan adapter: {runtime.unavailable_reason('vulkan')}")
    a = vulkan[0]
    print(f"adapter: {a['name']} ({a['driver']}), software {a['software']}, denorm_preserve {a['denorm_preserve']}, spirv_built_here {a['spirv_built_here']}")
    torch = peer()
    rows = []
    copy = copy_bandwidth(torch, args.repeats) if torch is not None else None
    if copy:
        print(f"device-to-device copy (torch): {copy / 1e12:.3f} TB/s")
    if args.only in (None, "matmul"):
        rows += matmul_rows(torch, args.repeats)
    if args.only in (None, "bandwidth"):
        rows += bandwidth_rows(copy, args.repeats)
    if args.only in (None, "launch"):
        rows += launch_rows(args.repeats)
    for row in rows:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": vulkan[0], "copy_bytes_per_s": copy, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
