"""No Rust panic ever reaches Python: every public function of the package, called with
hostile arguments, either answers or raises an ordinary exception (ValueError, TypeError,
OverflowError …). pyo3's PanicException derives from BaseException, not Exception, so a
panic escapes the ``except Exception`` below and fails the test.
"""

import importlib
import inspect
import itertools
import pkgutil
import random

import numpy as np

import nbxtensor

HOSTILE = [
    None, 0, -1, 1, 2**31, 2**63, 2**64, 2**200, -(2**200), 1.5, float("nan"), float("inf"), True,
    "", "float16", "bfloat16", "int4-g128-asym", "nonsense", "x" * 10_000, "p=,c=", "params=float32,compute",
    (), (0,), (-1,), (3, -2), (2**40, 2**40), (2**62, 2**62, 2**62), (1, 1.5), ("a",), [2, 3], [[1]],
    {}, {"output_dtypes": None}, {"output_dtypes": ["nope"]}, object(),
    np.zeros(0, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3).T, np.zeros(3, np.uint16),
    np.zeros(3, np.float64), np.zeros(4, np.uint8)[::2], np.full(2, np.nan, np.float32),
]


def _public_callables():
    modules = [nbxtensor] + [
        importlib.import_module(i.name)
        for i in pkgutil.walk_packages(nbxtensor.__path__, "nbxtensor.")
        if not i.name.split(".")[-1].startswith("_")
    ]
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if callable(value) and not inspect.isclass(value):
                yield f"{module.__name__}.{name}", value


def test_hostile_arguments_never_panic():
    rng = random.Random(20261130)
    called = 0
    for qualified, function in _public_callables():
        calls = [()] + [(a,) for a in HOSTILE]
        calls += [tuple(rng.choice(HOSTILE) for _ in range(arity)) for arity in (2, 3, 4) for _ in range(120)]
        for args in calls:
            try:
                function(*args)
            except Exception:
                pass
            called += 1
    assert called > 1000


def test_hostile_methods_of_classes_never_panic():
    from nbxtensor.dtype.policy import get_policy

    policy = get_policy("params=float32,compute=float16,output=float32")
    methods = [getattr(policy, m) for m in dir(policy) if not m.startswith("_") and callable(getattr(policy, m))]
    assert methods, "the policy exposes methods to test"
    for method, args in itertools.product(methods, itertools.combinations(HOSTILE[:20], 2)):
        try:
            method(*args)
        except Exception:
            pass
