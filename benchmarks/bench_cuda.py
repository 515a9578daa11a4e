"""nbxtensor's CUDA backend against torch on the same GPU, side by side in one run.

Rows: bf16 matrix products (4096³, 8192³) against torch.matmul; prefill attention (bf16,
b1 h32, d128 and d64, full and causal, grouped heads) against torch's default
``scaled_dot_product_attention`` (the note gives torch's cuDNN and flash backends too); memory-bound kernels on
tensors far larger than L2 (their bytes read + written over time, against the device-to-device
copy bandwidth measured in the same run); the per-kernel host cost of a chain of 1000 small
kernels, eager against CUDA-graph replay (and torch's eager neg as a peer); decode attention
(one query, 32 query heads over 8 cache heads, d 128, bf16) over caches of 1K to 128K rows against
torch's default scaled_dot_product_attention and each of its backends that takes the case, called
eagerly, then as a decoder runs it: a chain of calls over caches together past L2, nbxtensor's
program replay against torch's CUDA graph; and
(``--only gemv``) bf16 ``linear`` of 1 and 4 rows at a Llama-3-8B decode step's shapes, a chain of
products over weights together past L2, nbxtensor's program replay against torch's CUDA graph; and
(``--only int4``) ``matmul_int4`` of 1, 16 and 64 bf16 rows at the int4 issue's three shapes, a
chain over packed weights together past L2, against torch's bf16 ``F.linear`` CUDA graph over
the same shapes, with the packed bytes' bandwidth against the copy's. Each timing is the median of `--repeats` runs of
`--inner` back-to-back launches, after a warm-up, bracketed by a device synchronisation.
torch is a reference peer only: this script imports it; the library never does.

    python3 benchmarks/bench_cuda.py --repeats 7
    python3 benchmarks/bench_cuda.py --repeats 7 --only decode   # the copy bandwidth and decode rows
    python3 benchmarks/bench_cuda.py --repeats 5 --only gemv     # the copy bandwidth and GEMV rows
    python3 benchmarks/bench_cuda.py --repeats 5 --only int4     # the copy bandwidth and int4 rows
"""

import argparse
import statistics
import time

import numpy as np
import torch

import nbxtensor as nbx
from nbxtensor import ops, program
from nbxtensor.backend import runtime


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
    runtime.synchronize()


def torch_sync():
    torch.cuda.synchronize()


def gemm_rows(repeats):
    rows = []
    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        ta, tb = nbx.from_dlpack(a), nbx.from_dlpack(b)
        inner = 20 if n == 4096 else 5
        mine = timed(lambda: ops.matmul(ta, tb), ours_sync, repeats, inner)
        theirs = timed(lambda: torch.matmul(a, b), torch_sync, repeats, inner)
        flops = 2.0 * n**3
        rows.append((f"matmul bf16 {n}^3", mine, theirs, f"{flops / mine / 1e12:.0f} TFLOP/s"))
    return rows


def attention_rows(repeats):
    """Prefill sdpa, bf16, batch 1, 32 query heads: (name, ours, torch's default, note)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa = torch.nn.functional.scaled_dot_product_attention
    rows = []
    cases = [(1024, 128, 32, False), (1024, 128, 32, True), (4096, 128, 32, False), (4096, 128, 32, True),
             (16384, 128, 32, False), (16384, 128, 32, True), (4096, 64, 32, False), (4096, 128, 8, True)]
    for s, d, hk, causal in cases:
        q = torch.randn(1, 32, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, hk, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(1, hk, s, d, device="cuda", dtype=torch.bfloat16)
        tq, tk, tv = nbx.from_dlpack(q), nbx.from_dlpack(k), nbx.from_dlpack(v)
        inner = max(1, 2**26 // (s * s))
        gqa = hk != 32

        def theirs(backend=None):
            if backend is None:
                return sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)
            with sdpa_kernel(backend):
                return sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)

        mine = timed(lambda: ops.sdpa(tq, tk, tv, causal=causal), ours_sync, repeats, inner)
        default = timed(theirs, torch_sync, repeats, inner)
        others = []
        for label, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                others.append(f"torch {label} {timed(lambda: theirs(backend), torch_sync, repeats, inner) * 1e3:.3f} ms")
            except RuntimeError as e:
                others.append(f"torch {label}: {str(e).splitlines()[0][:40]}")
        flops = 4.0 * 32 * s * s * d * (0.5 if causal else 1.0)
        name = f"sdpa s{s} d{d}{' gqa32:' + str(hk) if gqa else ''}{' causal' if causal else ''}"
        rows.append((name, mine, default, f"{flops / mine / 1e12:.0f} TFLOP/s; " + ", ".join(others)))
    return rows


# the elements (float32) of the copy whose bandwidth the rows are measured against, and of the
# memory-bound rows, by default (`--numel`)
COPY_NUMEL = 1 << 28


def copy_bandwidth(repeats, numel):
    x = torch.randn(numel, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    seconds = timed(lambda: y.copy_(x), torch_sync, repeats, 10)
    return 2 * x.numel() * 4 / seconds


def memory_rows(repeats, numel, copy_bw):
    """(name, our seconds, torch seconds, our bandwidth as a share of the copy's)."""
    rows = []
    x = torch.randn(numel, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(numel, device="cuda", dtype=torch.bfloat16)
    tx, ty = nbx.from_dlpack(x), nbx.from_dlpack(y)
    width = 4096
    m = x.reshape(-1, width)
    tm = nbx.from_dlpack(m)
    w = torch.randn(width, device="cuda", dtype=torch.bfloat16)
    tw = nbx.from_dlpack(w)
    bytes_2d = 2 * m.numel() * 2
    # rope on [heads, seq, 128] (half-split): cos and sin [seq, 64] stay in L2
    seq, head_dim = 4096, 128
    q = x.reshape(-1, seq, head_dim)
    tq = nbx.from_dlpack(q)
    angles = torch.rand(seq, head_dim // 2, device="cuda")
    cos, sin = angles.cos().bfloat16(), angles.sin().bfloat16()
    tcos, tsin = nbx.from_dlpack(cos), nbx.from_dlpack(sin)

    def torch_rope():
        x1, x2 = q[..., : head_dim // 2], q[..., head_dim // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    cases = [
        ("add bf16", lambda: ops.add(tx, ty), lambda: torch.add(x, y), 3 * numel * 2),
        ("cast bf16->f32", lambda: ops.cast(tx, "float32"), lambda: x.float(), numel * 2 + numel * 4),
        ("rms_norm bf16 rows of 4096", lambda: ops.rms_norm(tm, tw, eps=1e-6),
         lambda: torch.nn.functional.rms_norm(m, (width,), w, 1e-6), bytes_2d),
        ("softmax bf16 rows of 4096", lambda: ops.softmax(tm, axis=-1), lambda: torch.softmax(m, -1), bytes_2d),
        ("rope bf16 head_dim 128", lambda: ops.rope(tq, tcos, tsin), torch_rope, 2 * numel * 2),
    ]
    for name, mine_fn, theirs_fn, moved in cases:
        try:
            mine = timed(mine_fn, ours_sync, repeats, 10)
        except (ValueError, RuntimeError) as e:
            rows.append((name, None, None, f"not measured: {e}"))
            continue
        theirs = timed(theirs_fn, torch_sync, repeats, 10)
        rows.append((name, mine, theirs, f"{moved / mine / 1e12:.2f} TB/s = {moved / mine / copy_bw:.0%} of copy"))
    return rows


def launch_rows(repeats, chain=1000):
    """Per kernel of a chain of 1000 neg on 16 values: (name, host, host with the GPU busy,
    wall) for torch, nbxtensor eager and nbxtensor's graph replay. 'host' starts from an idle
    GPU (where the GPU drains launches slower than the host queues them, the host waits and
    this is the GPU's rate); 'GPU busy' queues ~8 ms of matrix products first, so the host
    never waits: its own cost per launch."""
    x = nbx.from_dlpack(torch.randn(16, device="cuda"))
    tx = torch.randn(16, device="cuda")
    square = torch.zeros(8192, 8192, device="cuda", dtype=torch.bfloat16)
    our_square = nbx.from_dlpack(square)

    def torch_busy():  # on torch's stream
        for _ in range(6):
            torch.matmul(square, square)

    def our_busy():  # on nbxtensor's stream
        for _ in range(6):
            ops.matmul(our_square, our_square)

    def model(t):
        for _ in range(chain):
            t = ops.neg(t)
        return t

    def torch_model(t):
        for _ in range(chain):
            t = torch.neg(t)
        return t

    def one_round(fn, busy, into):
        """Adds one round of host, host with the GPU busy and wall time to ``into``."""
        torch_sync()
        ours_sync()
        start = time.perf_counter()
        fn()
        host = time.perf_counter() - start
        torch_sync()
        ours_sync()
        wall = time.perf_counter() - start
        busy()
        start = time.perf_counter()
        fn()
        host_busy = time.perf_counter() - start
        torch_sync()
        ours_sync()
        for samples, value in zip(into, (host, host_busy, wall)):
            samples.append(value)

    replay = program.trace(model, x).executable().capture(x)
    ways = [
        ("per kernel, torch (1000 neg)", lambda: torch_model(tx), torch_busy),
        ("per kernel, eager (1000 neg)", lambda: model(x), our_busy),
        ("per node, CUDA graph replay", lambda: replay.run(x), our_busy),
    ]
    for _, fn, _ in ways:  # warm up: kernels loaded, pools filled
        fn()
    samples = [([], [], []) for _ in ways]
    # the ways in turn, round after round: the host's drift touches them alike
    for _ in range(2 * repeats + 1):
        for (_, fn, busy), into in zip(ways, samples):
            one_round(fn, busy, into)
    return [(name, *(statistics.median(v) / chain for v in into)) for (name, _, _), into in zip(ways, samples)]


def torch_kernels(fn):
    """The CUDA kernels one call of ``fn`` launches (torch's profiler), joined by '+'."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch_sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch_sync()
    names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
    return "+".join(dict.fromkeys(n.split("<")[0].split("(")[0][:40] for n in names)) or "?"


# the linears of a Llama-3-8B decode step: (name, in features, out features)
LLAMA_LINEARS = [
    ("q, o 4096->4096", 4096, 4096),
    ("k, v 4096->1024", 4096, 1024),
    ("qkv 4096->6144", 4096, 6144),
    ("gate, up 4096->14336", 4096, 14336),
    ("gate+up 4096->28672", 4096, 28672),
    ("down 14336->4096", 14336, 4096),
    ("head 4096->128256", 4096, 128256),
]


def gemv_rows(repeats, copy_bw, rows_of_x=(1, 4)):
    """bf16 ``linear`` of m rows at a decode step's shapes: a chain of products over distinct
    weights (together past L2, so each is read from memory) captured and replayed by both
    libraries (nbxtensor's program, torch's CUDA graph), time per product; the weight bytes over
    that time against the copy bandwidth."""
    rows = []
    for name, k, n in LLAMA_LINEARS:
        count = max(4, -(-(512 << 20) // (n * k * 2)))
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / 64 for _ in range(count)]
        ours = [nbx.from_dlpack(w) for w in weights]
        for m in rows_of_x:
            x = torch.randn(1, m, k, device="cuda", dtype=torch.bfloat16)
            tx = nbx.from_dlpack(x)

            def model(t):
                return [ops.linear(t, w) for w in ours][-1]

            traced = program.trace(model, tx)
            replay = traced.executable().capture(tx)
            graph = torch_graph_of(lambda: [torch.nn.functional.linear(x, w) for w in weights])
            mine = timed(lambda: replay.run(tx), ours_sync, repeats, 5) / count
            theirs = timed(graph.replay, torch_sync, repeats, 5) / count
            eager = timed(lambda: [torch.nn.functional.linear(x, w) for w in weights], torch_sync, repeats, 5) / count
            moved = n * k * 2
            note = (f"{moved / mine / 1e12:.2f} TB/s = {moved / mine / copy_bw:.0%} of copy; torch graph "
                    f"{moved / theirs / copy_bw:.0%}; torch eager {eager * 1e6:.1f} us; {count} weights, "
                    f"{len(traced)} launches")
            rows.append((f"linear m={m} {name}", mine, theirs, note))
        del weights, ours
    return rows


# the int4 products measured: (out features N, in features K)
INT4_SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336)]


def torch_graph_of(fn):
    """``fn`` captured in a torch CUDA graph (after a warm-up on a side stream)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def dequantized(pack, n, k):
    """The float32 ``[n, k]`` weight of a packed int4-g128 triple (low nibble first)."""
    codes, scales, minima = (torch.from_dlpack(t) for t in pack)
    w = torch.stack([codes & 15, codes >> 4], dim=-1).reshape(n, k // 128, 128).float()
    return (w * scales.float()[..., None] + minima.float()[..., None]).reshape(n, k)


def int4_rows(repeats, copy_bw, rows_of_x=(1, 16, 64)):
    """``matmul_int4`` of m bf16 rows over a chain of packed weights (together past L2, so each
    is read from memory), captured and replayed, time per product; against torch's bf16
    ``F.linear`` of the same shape in a CUDA graph over bf16 weights past L2. The note gives the
    packed bytes (codes, scales, minima) over our time against the copy bandwidth."""
    F = torch.nn.functional
    rows = []
    for n, k in INT4_SHAPES:
        packed_bytes = n * k // 2 + 2 * 2 * n * (k // 128)
        count = max(4, -(-(512 << 20) // packed_bytes))
        # packed once on the CPU (the CUDA backend packs no weights), then copied: distinct
        # buffers of the same codes, read from memory each
        packed = ops.pack_int4(nbx.from_dlpack(torch.randn(n, k, dtype=torch.bfloat16) / 64))
        packs = [tuple(t.to("cuda") for t in packed) for _ in range(count)]
        count_t = max(4, -(-(512 << 20) // (n * k * 2)))
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / 64 for _ in range(count_t)]
        for m in rows_of_x:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            tx = nbx.from_dlpack(x)

            def model(t):
                return [ops.matmul_int4(t, *p) for p in packs][-1]

            traced = program.trace(model, tx)
            replay = traced.executable().capture(tx)
            got = torch.from_dlpack(replay.run(tx)[0]).float()
            want = F.linear(x.float(), dequantized(packs[-1], n, k))
            graph = torch_graph_of(lambda: [F.linear(x, w) for w in weights])
            mine = timed(lambda: replay.run(tx), ours_sync, repeats, 5) / count
            theirs = timed(graph.replay, torch_sync, repeats, 5) / count_t
            note = (f"{packed_bytes / mine / 1e12:.2f} TB/s = {packed_bytes / mine / copy_bw:.0%} of copy over the "
                    f"packed bytes; torch bf16 {n * k * 2 / theirs / copy_bw:.0%} of copy over its weight; "
                    f"{count} packed weights; max |err| {(got - want).abs().max().item():.1e} "
                    f"(|want| ≤ {want.abs().max().item():.1e})")
            rows.append((f"int4 m={m} {n}x{k}", mine, theirs, note))
        del packs, weights
    return rows


# the decode attention measured: batch, query heads, cache heads, head dim; and the cache lengths
DECODE_SHAPE = (1, 32, 8, 128)
DECODE_LENGTHS = (1024, 8192, 32768, 131072)


def decode_rows(repeats, copy_bw):
    """Decode attention, b1 hq32 hk8 d128 bf16, one query over caches of T rows: (name, our
    seconds, torch default seconds, note with the cache bytes' bandwidth and torch's backends)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    F = torch.nn.functional
    b, hq, hk, d = DECODE_SHAPE
    rows = []
    for t in DECODE_LENGTHS:
        k = torch.randn(b, hk, t, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, t, d, device="cuda", dtype=torch.bfloat16)
        q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16)
        tq, tk, tv = nbx.from_dlpack(q), nbx.from_dlpack(k), nbx.from_dlpack(v)
        length = nbx.from_dlpack(torch.tensor(t, dtype=torch.int32, device="cuda"))
        inner = 50 if t <= 8192 else 20
        ours = ops.decode_attention(tq, tk, tv, length)
        want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
        err = (torch.from_dlpack(ours).float() - want).abs().max().item()
        mine = timed(lambda: ops.decode_attention(tq, tk, tv, length), ours_sync, repeats, inner)
        default = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
        theirs = timed(default, torch_sync, repeats, inner)
        picked = torch_kernels(default)
        others = []
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                              ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)):
            def run(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            try:
                seconds = timed(run, torch_sync, repeats, inner)
                others.append(f"{name} {seconds * 1e6:.1f} us")
            except RuntimeError as e:
                others.append(f"{name}: {str(e).splitlines()[0][:60]}")
        moved = 2 * k.numel() * 2 + 2 * q.numel() * 2
        note = (f"{moved / mine / 1e12:.2f} TB/s = {moved / mine / copy_bw:.0%} of copy; max |err| {err:.1e}; "
                f"torch default ran {picked}; torch backends: {', '.join(others)}")
        rows.append((f"decode attention T={t // 1024}K", mine, theirs, note))
        del k, v
    return rows


def decode_graph_rows(repeats, copy_bw, lengths=DECODE_LENGTHS):
    """Decode attention as a decoder runs it: ``decode_rows``' shape over the cache ``lengths`` in
    that order (``DECODE_LENGTHS`` by default, as ``decode_rows``), a chain of calls over
    distinct caches (together past L2, so each is read from memory) captured once and replayed,
    time per call; against torch's default ``scaled_dot_product_attention`` over the same caches
    in a CUDA graph. Each graph keeps its calls' outputs inside (the replay copies out the last
    one only). The note gives the cache bytes' bandwidth against the copy's."""
    F = torch.nn.functional
    b, hq, hk, d = DECODE_SHAPE
    rows = []
    for t in lengths:
        moved = 2 * b * hk * t * d * 2 + 2 * b * hq * d * 2
        count = max(4, -(-(512 << 20) // moved))
        caches = [(torch.randn(b, hk, t, d, device="cuda", dtype=torch.bfloat16),
                   torch.randn(b, hk, t, d, device="cuda", dtype=torch.bfloat16)) for _ in range(count)]
        ours_caches = [(nbx.from_dlpack(k), nbx.from_dlpack(v)) for k, v in caches]
        q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16)
        tq = nbx.from_dlpack(q)
        length = nbx.from_dlpack(torch.tensor(t, dtype=torch.int32, device="cuda"))

        # a decoder's attention output stays in its graph (the next product reads it): the
        # replay returns the last call's, as the int4 rows do, not a copy of every call's
        def model(query):
            return [ops.decode_attention(query, k, v, length) for k, v in ours_caches][-1]

        replay = program.trace(model, tq).executable().capture(tq)
        got = torch.from_dlpack(replay.run(tq)[0]).float()
        err = (got - F.scaled_dot_product_attention(q.float(), caches[-1][0].float(), caches[-1][1].float(),
                                                    enable_gqa=True)).abs().max().item()
        graph = torch_graph_of(lambda: [F.scaled_dot_product_attention(q, k, v, enable_gqa=True) for k, v in caches])
        mine = timed(lambda: replay.run(tq), ours_sync, repeats, 5) / count
        theirs = timed(graph.replay, torch_sync, repeats, 5) / count
        note = (f"{moved / mine / 1e12:.2f} TB/s = {moved / mine / copy_bw:.0%} of copy (torch "
                f"{moved / theirs / copy_bw:.0%}); {count} caches a graph; max |err| {err:.1e}")
        rows.append((f"decode T={t // 1024}K graph", mine, theirs, note))
        del caches, ours_caches, replay, graph
        torch.cuda.empty_cache()
    return rows


def decode_table(repeats, copy_bw):
    """The decode rows, eager then in a graph, with the graph rows measured first, before the eager
    rows run torch's profiler (to name torch's kernel). Measured both ways in one call, the order
    moved both libraries' graph rows by 1-3% alike; our 128K replay moves from one process to the
    next, whatever ran before it (docs/BENCHMARKS.md, twenty-sixth session)."""
    graph = decode_graph_rows(repeats, copy_bw)
    return decode_rows(repeats, copy_bw) + graph


def print_us_rows(rows):
    """Rows of (name, our seconds, torch's seconds, note) in µs, with torch's time over ours."""
    for name, mine, theirs, note in rows:
        print(f"{name:<30}{mine * 1e6:>10.1f}us{theirs * 1e6:>10.1f}us{theirs / mine:>7.2f}x  {note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--numel", type=int, default=COPY_NUMEL, help="elements of the memory-bound rows")
    parser.add_argument("--only", choices=["decode", "gemv", "int4"], help="the copy bandwidth and these rows alone")
    args = parser.parse_args()
    print(f"device: {runtime.devices()[0]['name']}, {runtime.gpu_runtime()}, torch {torch.__version__}")
    copy_bw = copy_bandwidth(args.repeats, args.numel)
    print(f"device-to-device copy (torch, {args.numel * 4 >> 20} MiB f32): {copy_bw / 1e12:.2f} TB/s (read + write)")
    print(f"{'operation':<30}{'nbxtensor':>12}{'torch':>12}{'ratio':>8}  note")
    if args.only == "gemv":
        print_us_rows(gemv_rows(args.repeats, copy_bw))
        return
    if args.only == "int4":
        print_us_rows(int4_rows(args.repeats, copy_bw))
        return
    if args.only == "decode":
        print_us_rows(decode_table(args.repeats, copy_bw))
        return
    rows = gemm_rows(args.repeats) + attention_rows(args.repeats) + memory_rows(args.repeats, args.numel, copy_bw)
    for name, mine, theirs, note in rows:
        if mine is None:
            print(f"{name:<30}{'':>12}{'':>12}{'':>8}  {note}")
            continue
        print(f"{name:<30}{mine * 1e3:>10.3f}ms{theirs * 1e3:>10.3f}ms{theirs / mine:>7.2f}x  {note}")
    print_us_rows(decode_table(args.repeats, copy_bw))
    for name, host, host_busy, wall in launch_rows(args.repeats):
        print(f"{name:<30} host {host * 1e6:.2f} us, host with the GPU busy {host_busy * 1e6:.2f} us, wall {wall * 1e6:.2f} us")


if __name__ == "__main__":
    main()
