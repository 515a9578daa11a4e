"""Precision policies: immutable data (JAX jmp's spelling) whose op classes are PyTorch's CUDA
autocast lists (the package's ``policy.yml``)."""

from nbxtensor._core import policy as _core

Policy = _core.Policy
get_policy = _core.get_policy
op_class = _core.op_class

__all__ = ["Policy", "get_policy", "op_class"]
