"""Elementwise ops, reductions, softmax and norms (typed wrappers over ``call``)."""

from nbxtensor._core import ops as _core


def _one(op, x, **attrs):
    return _core.call(op, [x], attrs)[0]


def neg(x):
    """-x."""
    return _one("neg", x)


def exp(x):
    """e to the x."""
    return _one("exp", x)


def abs(x):  # noqa: A001 - the op's name
    """|x|."""
    return _one("abs", x)


__all__ = ["neg", "exp", "abs"]
