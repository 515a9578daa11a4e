"""Two or more builds of nbxtensor side by side on the same `nbx embed` job (the CPU).

Each build is a folder a wheel was installed into (``pip install --no-deps --target DIR
nbxtensor-*.whl``); every run is a process of its own, this interpreter with that folder first
on ``PYTHONPATH``, the builds alternating round after round. The job: ``--texts`` texts of 3–120
words drawn from a fixed word list (seeded), embedded with ``--threads`` threads at ``--batch``.
It waits until the 1-minute load average is under 1 before the first run, prints the load before
each run, each run's wall, capture and replay seconds as ``nbx embed`` reports them, and fails
unless every build wrote byte-identical embeddings.

    .venv/bin/python benchmarks/bench_embed_builds.py --model DIR --builds /tmp/before,/tmp/after --rounds 2
"""

import argparse
import filecmp
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = "the quick brown fox jumps over a lazy dog while many other animals watch from afar in silence".split()
# builds from before the op-by-op first meeting print no "s op by op, " part
SUMMARY = re.compile(
    r"nbx: (\d+) texts in ([\d.]+) s \((?:([\d.]+) s op by op, )?([\d.]+) s capturing (\d+) shape\(s\), ([\d.]+) s replaying\)"
)


def texts(count, seed, words):
    rng = random.Random(seed)
    lengths = [rng.randint(3, 120) for _ in range(count)] if words is None else [words] * count
    return [" ".join(rng.choice(WORDS) for _ in range(n)) for n in lengths]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the MiniLM model folder")
    parser.add_argument("--builds", required=True, help="comma-separated folders, each holding an installed wheel")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--words", type=int, default=None, help="every text this many words (default: 3-120)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    builds = args.builds.split(",")
    work = Path(tempfile.mkdtemp(prefix="nbx-embed-builds-"))
    (work / "texts.json").write_text(json.dumps(texts(args.texts, args.seed, args.words)))
    while os.getloadavg()[0] >= 1.0:
        time.sleep(5)
    entry = "import sys; sys.argv = ['nbx'] + sys.argv[1:]; from nbxtensor._cli import main; main()"
    outputs = {}
    for round_ in range(1, args.rounds + 1):
        for build in builds:
            out = work / f"{Path(build).name}.json"
            load = os.getloadavg()[0]
            argv = [sys.executable, "-c", entry, "embed", "--model", args.model, "--input", str(work / "texts.json"),
                    "--output", str(out), "--threads", str(args.threads), "--batch", str(args.batch)]
            env = dict(os.environ, PYTHONPATH=build)
            done = subprocess.run(argv, env=env, capture_output=True, text=True)
            found = SUMMARY.search(done.stderr)
            if done.returncode != 0 or not found:
                sys.exit(f"{build}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
            wall, eager = float(found[2]), float(found[3] or 0.0)
            capture, shapes, replay = float(found[4]), int(found[5]), float(found[6])
            print(f"round {round_} {build}: load {load:.2f}: {wall:.3f} s ({eager:.3f} s op by op, {capture:.3f} s "
                  f"capturing {shapes} shapes, {replay:.3f} s replaying)", flush=True)
            outputs.setdefault(build, out)
    first = outputs[builds[0]]
    for build in builds[1:]:
        if not filecmp.cmp(first, outputs[build], shallow=False):
            sys.exit(f"{build} wrote other embeddings than {builds[0]}")
    print("embeddings byte-identical across the builds")


if __name__ == "__main__":
    main()
