"""Calls every public function of nbxtensor (and the methods of its classes) with hostile
arguments, in this process; prints how many calls were made. Run by test_no_panic.py in a
child process, so the settings these calls change never reach other tests.

Any exception derived from Exception is an acceptable answer; pyo3's PanicException derives
from BaseException and ends this script with a traceback and a non-zero exit.
"""

import importlib
import inspect
import itertools
import os
import pkgutil
import random
import tempfile

import numpy as np

import nbxtensor

HOSTILE = [
    None, 0, -1, 1, 2**31, 2**63, 2**64, 2**200, -(2**200), 1.5, float("nan"), float("inf"), True,
    "", "float16", "bfloat16", "int4-g128-asym", "nonsense", "x" * 10_000, "p=,c=", "params=float32,compute",
    (), (0,), (-1,), (3, -2), (2**40, 2**40), (2**62, 2**62, 2**62), (1, 1.5), ("a",), [2, 3], [[1]],
    {}, {"output_dtypes": None}, {"output_dtypes": ["nope"]}, {"host_chunk_elements": -3}, object(),
    np.zeros(0, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3).T, np.zeros(3, np.uint16),
    np.zeros(3, np.float64), np.zeros(4, np.uint8)[::2], np.full(2, np.nan, np.float32),
]


LIMIT = 1 << 28  # bytes: far above what any call here needs, far below a hostile size


def public_callables():
    modules = [nbxtensor] + [
        importlib.import_module(i.name)
        for i in pkgutil.walk_packages(nbxtensor.__path__, "nbxtensor.")
        if not i.name.split(".")[-1].startswith("_")
    ]
    seen = set()
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if id(value) in seen:
                continue
            seen.add(id(value))
            if callable(value) and not inspect.isclass(value):
                yield value


def instance_methods():
    from nbxtensor.dtype.policy import get_policy
    from nbxtensor.io import safetensors
    from nbxtensor.ops.launch_observer import LaunchObserver
    from nbxtensor.random import Generator

    header = b'{"float16":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}'  # a name HOSTILE holds
    with open("weights.safetensors", "wb") as file:
        file.write(len(header).to_bytes(8, "little") + header + b"\x00\x3c")
    weights = safetensors.open("weights.safetensors")
    for instance in (get_policy("params=float32,compute=float16,output=float32"), Generator(0), LaunchObserver(), weights):
        for name in dir(instance):
            if not name.startswith("_") and callable(getattr(instance, name)):
                yield getattr(instance, name)


def main():
    with tempfile.TemporaryDirectory(prefix="nbx_hostile_") as scratch:
        os.chdir(scratch)  # files the calls write (paths like "float16") land here, removed after
        try:
            run_calls()
        finally:
            os.chdir("/")


def run_calls():
    rng = random.Random(20261130)
    calls = 0
    for function in itertools.chain(public_callables(), instance_methods()):
        arguments = [()] + [(a,) for a in HOSTILE]
        arguments += [tuple(rng.choice(HOSTILE) for _ in range(arity)) for arity in (2, 3, 4) for _ in range(120)]
        for args in arguments:
            # a real limit, set again before each call (the calls of nbxtensor.memory change
            # it): a hostile size is refused by it at once, as it would be in an application
            nbxtensor.memory.set_limit(LIMIT)
            try:
                function(*args)
            except Exception:
                pass
            calls += 1
    print(f"hostile calls: {calls}")


if __name__ == "__main__":
    main()
