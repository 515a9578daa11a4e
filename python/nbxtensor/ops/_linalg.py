"""Matrix products, gathers and model ops (typed wrappers over ``call``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbxtensor._core import ops as _core

if TYPE_CHECKING:
    from nbxtensor._core.tensor import Tensor


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """numpy's matmul of two float tensors of one dtype (batch dims broadcast; a 1-d operand is a
    vector whose unit dim is dropped), each operand optionally read transposed in its last two dims."""
    return _core.call("matmul", [a, b], {"transpose_a": transpose_a, "transpose_b": transpose_b})[0]


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``: ``weight`` is ``[out, in]``, ``bias`` (optional) ``[out]``, ``x`` ``[..., in]``."""
    inputs = [x, weight] if bias is None else [x, weight, bias]
    return _core.call("linear", inputs, {})[0]


def pack_linear(weight: Tensor) -> Tensor:
    """A float32 weight ``[N, K]`` laid out once for :func:`linear_packed`: panels of output columns,
    ``[ceil(N / panel), K, panel]``, element ``(p, k, j)`` holding ``weight[p * panel + j, k]`` (zeros
    past row N-1). A constant weight packed at load spares every product its packing."""
    return _core.call("pack_linear", [weight], {})[0]


def linear_packed(x: Tensor, panels: Tensor, bias: Tensor | None = None, *, features: int) -> Tensor:
    """``x @ weight.T + bias`` on float32, with the weight ``[features, K]`` as :func:`pack_linear`
    laid it out (``panels``) and an optional ``bias`` ``[features]``; ``x`` ``[..., K]``."""
    inputs = [x, panels] if bias is None else [x, panels, bias]
    return _core.call("linear_packed", inputs, {"features": int(features)})[0]


def matmul_int4(x: Tensor, packed_weight: Tensor, scales: Tensor, minima: Tensor) -> Tensor:
    """``x @ W.T`` with W ``[N, K]`` in the int4-g128-asym layout: ``packed_weight`` uint8 ``[N, K/2]``,
    ``scales`` and ``minima`` float16 ``[N, K/group]``; ``x`` ``[..., K]`` float32/float16/bfloat16."""
    return _core.call("matmul_int4", [x, packed_weight, scales, minima], {})[0]


def pack_int4(weight: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Quantizes a float ``[N, K]`` weight into the int4-g128-asym layout (per group: minimum and
    ``(max - min) / 15`` as float16, codes rounded to nearest); returns ``(packed, scales, minima)``."""
    packed, scales, minima = _core.call("pack_int4", [weight], {})
    return packed, scales, minima


def matmul_int8(x: Tensor, codes: Tensor, scales: Tensor, bias: Tensor | None = None, *,
                threshold: float = 6.0) -> Tensor:
    """``x @ W.T + bias`` with W ``[N, K]`` in the int8-g64 layout made by :func:`pack_int8`
    (``codes`` int8 in tiles of 16 rows x 4 codes, ``scales`` float32 ``[ceil(K / 64), N]``),
    ``bias`` (optional) float32 ``[N]``; ``x`` ``[..., K]`` float32, each row quantized to 8 bits
    over its own range as the product runs, but for its elements past ``threshold`` in magnitude
    (outliers), which are multiplied in float32 (``threshold=math.inf``: none)."""
    inputs = [x, codes, scales] if bias is None else [x, codes, scales, bias]
    return _core.call("matmul_int8", inputs, {"threshold": float(threshold)})[0]


def pack_int8(weight: Tensor) -> tuple[Tensor, Tensor]:
    """Quantizes a float ``[N, K]`` weight into the int8-g64 layout (per group of 64 along a row:
    the scale ``max |w| / 127`` in float32, codes rounded to nearest in -127..127), the codes
    tiled as :func:`matmul_int8` reads them; returns ``(codes, scales)``."""
    codes, scales = _core.call("pack_int8", [weight], {})
    return codes, scales


def embedding(indices: Tensor, table: Tensor) -> Tensor:
    """The rows of ``table`` ``[V, D]`` at ``indices`` (int32 or int64, any shape): ``[*indices.shape, D]``."""
    return _core.call("embedding", [indices, table], {})[0]


def index_select(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    """The entries of ``x`` at the 1-d ``indices`` (int32 or int64) along ``axis``."""
    return _core.call("index_select", [x, indices], {"axis": axis})[0]


def concat(inputs: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors of one dtype joined along ``axis`` (their shapes agree on every other dim)."""
    return _core.call("concat", list(inputs), {"axis": axis})[0]


def rope(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    """Rotary position embedding of ``x`` ``[..., heads, seq, head_dim]`` by ``cos`` and ``sin``
    ``[seq, head_dim/2]``: pairs ``(2i, 2i+1)`` when ``interleaved``, else ``(i, i + head_dim/2)``."""
    return _core.call("rope", [x, cos, sin], {"interleaved": interleaved})[0]


def sdpa(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, causal: bool = False, scale: float | None = None
) -> Tensor:
    """Scaled dot-product attention: ``softmax(q kᵀ · scale + mask) v`` with ``q`` ``[b, hq, sq, d]``,
    ``k`` ``[b, hk, sk, d]``, ``v`` ``[b, hk, sk, dv]`` (hq a multiple of hk: grouped-query heads), an
    optional additive ``mask`` broadcastable to ``[b, hq, sq, sk]``, ``causal`` masking (query i sees keys
    up to ``i + sk - sq``) and ``scale`` (default ``1/sqrt(d)``)."""
    attrs: dict[str, Any] = {"causal": causal}
    if scale is not None:
        attrs["scale"] = float(scale)
    inputs = [q, k, v] if mask is None else [q, k, v, mask]
    return _core.call("sdpa", inputs, attrs)[0]


def decode_attention(
    q: Tensor, k_cache: Tensor, v_cache: Tensor, length: Tensor, causal: bool = True, scale: float | None = None
) -> Tensor:
    """Attention of ``q`` ``[b, hq, sq, d]`` (``sq`` ≤ 8) over the first ``length`` rows of the caches
    ``k_cache`` ``[b, hk, T, d]`` and ``v_cache`` ``[b, hk, T, dv]`` (hq a multiple of hk). ``length`` is
    an int32 or int64 tensor of shape ``[]``, ``[1]`` or ``[b]`` on the caches' device, so one captured
    program serves every length. ``causal``: the queries are the last ``sq`` rows of the valid length
    (query i sees keys below ``length - sq + 1 + i``); ``scale`` defaults to ``1/sqrt(d)``."""
    attrs: dict[str, Any] = {"causal": causal}
    if scale is not None:
        attrs["scale"] = float(scale)
    return _core.call("decode_attention", [q, k_cache, v_cache, length], attrs)[0]


def kv_cache_write(cache: Tensor, new: Tensor, position: Tensor) -> None:
    """Writes ``new`` ``[b, h, s, d]`` into the contiguous ``cache`` ``[b, h, T, d]`` at rows
    ``position .. position + s``, in place. ``position`` is an int32 or int64 tensor of shape ``[]``,
    ``[1]`` or ``[b]`` on the cache's device. On the CPU a position past the end is refused
    (``ValueError``); on a GPU the rows that would fall outside the cache are skipped."""
    _core.call("kv_cache_write", [cache, new, position], {})


def sample(
    logits: Tensor, position: Tensor, *, seed: int, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> Tensor:
    """One token per row of ``logits`` ``[..., vocab]`` (an int64 tensor of the leading dims), drawn
    from ``softmax(logits / temperature)`` kept to the ``top_k`` largest logits (0: all) and to the
    heaviest tokens whose probability reaches ``top_p`` (1: all). Row ``r`` reads Philox word
    ``position`` (an int32 or int64 tensor of shape ``[]`` or ``[1]`` on the logits' device) of stream
    ``r`` of ``seed``: the same seed, position and logits give the same token on every device, and a
    captured program replays with the position it is fed. Greedy decoding is ``argmax``."""
    attrs: dict[str, Any] = {"seed": int(seed), "temperature": float(temperature), "top_k": int(top_k)}
    attrs["top_p"] = float(top_p)
    return _core.call("sample", [logits, position], attrs)[0]


__all__ = [
    "matmul",
    "linear",
    "pack_linear",
    "linear_packed",
    "matmul_int4",
    "pack_int4",
    "matmul_int8",
    "pack_int8",
    "embedding",
    "index_select",
    "concat",
    "rope",
    "sdpa",
    "decode_attention",
    "kv_cache_write",
    "sample",
]
