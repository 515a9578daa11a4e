"""The host cost of an eager launch from Python, one process's figure: 15 chains of 1000
``ops.neg`` on 16 float32 values; prints the minimum and the median per launch.

Run it in several processes, alternating the builds compared (``PYTHONPATH=<build>``): on a
VM a process may run the whole chain in a faster or a slower mode, so one process tells
little; compare the distributions.

    for i in $(seq 12); do .venv/bin/python benchmarks/bench_eager_launch.py; done
"""

import time

import numpy as np

import nbxtensor as nbx
from nbxtensor import ops

CHAIN = 1000
ROUNDS = 15


def chain(t):
    for _ in range(CHAIN):
        t = ops.neg(t)
    return t


def main():
    x = nbx.asarray(np.ones(16, np.float32))
    seconds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        chain(x)
        seconds.append(time.perf_counter() - start)
    seconds.sort()
    per = 1e6 / CHAIN
    print(f"per launch: min {seconds[0] * per:.3f} us, median {seconds[ROUNDS // 2] * per:.3f} us")


if __name__ == "__main__":
    main()
