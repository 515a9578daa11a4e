from collections.abc import Mapping
from typing import Any

def amp_fp32_output_dtype(compute_dtype: str, graph_dtype: str, *, safe: bool, narrowed: bool) -> str: ...
def traced_output_is_complex(record: Mapping[str, Any]) -> bool: ...

__all__ = ["amp_fp32_output_dtype", "traced_output_is_complex"]
