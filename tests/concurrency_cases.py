"""The concurrency suite's cases, run by test_concurrency.py (each case in a child process of
its own, with a timeout).

    python tests/concurrency_cases.py CASE THREADS ITERATIONS [DEVICE]

runs CASE on THREADS threads, each ITERATIONS times, with its tensors on DEVICE ("cpu", the
default, or "cuda": test_cuda.py runs the suite there), asserting every value it gets; it
prints one line "CASE: THREADS threads x ITERATIONS iterations, W wrong, H hung, S s" and
exits non-zero when W or H is not 0. A thread that does not finish within the deadline
counts as hung.
"""

import sys
import threading
import time

import numpy as np

import nbxtensor
from nbxtensor import ops, program
from nbxtensor.backend.cpu import pool
from nbxtensor.ops import launch_observer
from nbxtensor.random import Generator

DEADLINE_S = 300
DEVICE = "cpu"


def put(a):
    """A tensor of the numpy array `a` on the suite's device."""
    t = nbxtensor.asarray(a)
    return t if DEVICE == "cpu" else t.to(DEVICE)


def get(t):
    """A tensor's values as numpy (copied to the host from a device)."""
    return (t if DEVICE == "cpu" else t.to("cpu")).numpy()


def affine(x):
    return ops.add(ops.mul(x, 2.0), 1.0)


def values(thread, iteration, n=64):
    return np.arange(n, dtype=np.float32) + np.float32(thread * 100_000 + iteration)


class Suite:
    def __init__(self, threads, iterations):
        self.threads, self.iterations = threads, iterations
        self.wrong = 0
        self.errors = []
        self.lock = threading.Lock()

    def check(self, ok, what):
        if not ok:
            with self.lock:
                self.wrong += 1
                if len(self.errors) < 5:
                    self.errors.append(what)

    def run(self, body):
        """Runs body(thread) on every thread (started together); returns how many hung."""
        start = threading.Barrier(self.threads)

        def guarded(i):
            start.wait()
            try:
                body(i)
            except Exception as e:  # an exception is a wrong answer, named
                self.check(False, f"thread {i}: {type(e).__name__}: {e}")

        workers = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(self.threads)]
        for w in workers:
            w.start()
        deadline = time.monotonic() + DEADLINE_S
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
        return sum(w.is_alive() for w in workers)


def eager_ops(s):
    def body(i):
        for k in range(s.iterations):
            v = values(i, k)
            x = put(v)
            got = get(ops.add(ops.exp(ops.mul(x, 0.0)), x))
            s.check(np.array_equal(got, v + 1), f"eager {i} {k}")
            total = float(get(ops.sum(put(v).reshape(8, 8).transpose(0, 1))))
            s.check(total == float(v.astype(np.float64).sum()), f"sum {i} {k}")
    return s.run(body)


def shared_replays(s):
    replay = program.trace(affine, put(values(0, 0))).executable().capture(put(values(0, 0)))

    def body(i):
        for k in range(s.iterations):
            v = values(i, k)
            s.check(np.array_equal(get(replay.run(put(v))[0]), 2 * v + 1), f"replay {i} {k}")
    return s.run(body)


def shared_executables(s):
    executable = program.trace(affine, put(values(0, 0))).executable()

    def body(i):
        for k in range(s.iterations):
            v = values(i, k)
            s.check(np.array_equal(get(executable.run(put(v))[0]), 2 * v + 1), f"run {i} {k}")
    return s.run(body)


def captures(s):
    """Each thread traces, plans and captures programs of its own, while every thread also
    races a capture of one shared executable against runs of it."""
    example = put(values(0, 0))
    shared = {"executable": program.trace(affine, example).executable(), "replay": None}

    def body(i):
        for k in range(s.iterations):
            v = values(i, k)
            scale = float(i + 1)
            replay = program.trace(lambda x: ops.mul(x, scale), example).executable().capture(example)
            s.check(np.array_equal(get(replay.run(put(v))[0]), v * scale), f"capture {i} {k}")
            if k % 10 == 0:
                # the shared executable: a run, or a capture, or a refusal once captured
                try:
                    out = get(shared["executable"].run(put(v))[0])
                    s.check(np.array_equal(out, 2 * v + 1), f"shared run {i} {k}")
                except ValueError as e:
                    s.check("captured" in str(e), f"shared run refused with {e}")
                if i == 0 and k == 10 * (s.iterations // 20):
                    shared["replay"] = shared["executable"].capture(example)
    hung = s.run(body)
    replay = shared["replay"]
    if replay is not None:
        s.check(np.array_equal(get(replay.run(example)[0]), 2 * values(0, 0) + 1), "shared replay")
    return hung


def settings_churn(s):
    """Half the threads change the pool's size and the memory limit while the others compute."""
    def body(i):
        for k in range(s.iterations):
            if i % 2 == 0:
                pool.set_threads([1, 2, None][(i + k) % 3])
                nbxtensor.memory.set_limit([None, 8 << 30][k % 2])
            v = np.arange(1 << 14, dtype=np.float32) + np.float32(i + k)  # past one piece: the pool runs it
            got = get(ops.add(put(v), 1.0))
            s.check(np.array_equal(got, v + 1), f"churn {i} {k}")
    hung = s.run(body)
    pool.set_threads(None)
    nbxtensor.memory.set_limit(None)
    return hung


def observers(s):
    """Even threads dry-run under an observer of their own; odd threads' ops run."""
    def body(i):
        # the inputs made before the observer watches (on a GPU, a move is a copy)
        inputs = [put(values(i, k, 8)) for k in range(s.iterations)]
        if i % 2 == 0:
            observer = launch_observer.LaunchObserver()
            launch_observer.set_launch_observer(observer)
        for k in range(s.iterations):
            v, x = values(i, k, 8), inputs[k]
            out = ops.exp(x) if i % 2 == 0 else ops.add(x, x)
            if i % 2 == 0:
                s.check(launch_observer.launch_observer() is observer, "the observer of this thread")
                s.check(out.shape == (8,), "a dry run's output keeps its shape")
            else:
                s.check(launch_observer.launch_observer().active() is False, "no observer here")
                s.check(np.array_equal(get(out), v + v), f"unobserved run {i} {k}")
        if i % 2 == 0:
            s.check(len(observer.launches) == s.iterations, f"{len(observer.launches)} launches recorded")
            launch_observer.set_launch_observer(None)
    return s.run(body)


def generators(s):
    """One generator shared by every thread: every draw reads its own words of the stream."""
    shared = Generator(20261130)
    drawn = [[] for _ in range(s.threads)]

    def body(i):
        for _ in range(s.iterations):
            draw = shared.uniform(16)
            if DEVICE != "cpu":  # through the device and back: the same values
                s.check(np.array_equal(get(ops.add(put(draw), 0.0)), draw), "a draw through the device")
            drawn[i].append(draw)
    hung = s.run(body)
    got = np.sort(np.concatenate([d for per in drawn for d in per]))
    want = np.sort(Generator(20261130).uniform(16 * s.threads * s.iterations))
    s.check(np.array_equal(got, want), "the draws together are the stream's first words, each once")
    s.check(shared.offset == 16 * s.threads * s.iterations, f"offset {shared.offset}")
    return hung


CASES = {f.__name__: f for f in (eager_ops, shared_replays, shared_executables, captures, settings_churn, observers, generators)}


def main():
    global DEVICE
    name, threads, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    DEVICE = sys.argv[4] if len(sys.argv) > 4 else "cpu"
    suite = Suite(threads, iterations)
    start = time.monotonic()
    hung = CASES[name](suite)
    took = time.monotonic() - start
    print(f"{name}: {threads} threads x {iterations} iterations, {suite.wrong} wrong, {hung} hung, {took:.1f} s"
          + ("" if DEVICE == "cpu" else f" on {DEVICE}"))
    for error in suite.errors:
        print("  " + error)
    sys.stdout.flush()
    # a hung thread may hold the interpreter: leave without waiting for it
    import os
    os._exit(0 if suite.wrong == 0 and hung == 0 else 1)


if __name__ == "__main__":
    main()
