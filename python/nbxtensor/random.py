"""Seeded counter-based random streams (Philox4x32-10).

``Generator(seed, stream=0)`` draws ``uniform``, ``normal``, ``integers`` and
``permutation``; the same seed and stream give the same bits whatever the thread count or
chunking. bfloat16 draws are returned as their uint16 bit patterns.
"""

from nbxtensor._core import random as _core

Generator = _core.Generator
philox4x32_10 = _core.philox4x32_10

__all__ = ["Generator", "philox4x32_10"]
