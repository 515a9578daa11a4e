"""Typed code with mistakes that mypy --strict must report (tests/test_typing.py names each
expected error by line): the library's types are seen, not Any."""

import numpy as np

import nbxtensor as nbx
from nbxtensor import ops, program
from nbxtensor.dtype import itemsize

x = nbx.asarray(np.ones(3, np.float32))
count: int = nbx.asarray([1, 2])  # E: Tensor is not int
ops.exp("x")  # E: a str is not a Tensor
shape: str = x.shape  # E: a tuple is not a str
seconds: str = program.trace(ops.exp, x).price().seconds  # E: a float is not a str
width: str = itemsize.itemsize("int8")  # E: an int is not a str
ops.softmax(x, axis="last")  # E: an axis is an int
nbx.from_dlpack([1.0, 2.0])  # E: a list exports no DLPack
