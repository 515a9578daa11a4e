"""The frozen dtype enum ``NBXDtype``, built from the dtype table.

A member's value is the table's frozen code (``NBXDtype.bfloat16.value == 1``); its Python
name is the table name with ``-`` written ``_`` (``NBXDtype.int4_g128_asym``), and
``table_name`` gives the table's spelling back.
"""

import enum

from nbxtensor._core import nbx_dtype as _core

_TABLE_NAMES = dict((value, name) for name, value in _core.members())

NBXDtype = enum.Enum(
    "NBXDtype",
    [(name.replace("-", "_"), value) for name, value in _core.members()],
    module=__name__,
    qualname="NBXDtype",
)
NBXDtype.__doc__ = "A dtype of the table; the value is its frozen code (new members are appended)."
NBXDtype.table_name = property(lambda self: _TABLE_NAMES[self.value], doc="The dtype's table name.")


def parse_dtype(spelling):
    """The member for a table name or an alias (``"torch.float16"``, ``"half"``) or a numpy dtype
    (``np.float32``, ``np.dtype("int8")``); a member is returned as is."""
    if isinstance(spelling, NBXDtype):
        return spelling
    return NBXDtype(_core.parse_value(spelling))


def dtype_size(dtype):
    """Bytes per element of a member (or of a spelling ``parse_dtype`` reads)."""
    return _core.size_of_value(parse_dtype(dtype).value)


__all__ = ["NBXDtype", "parse_dtype", "dtype_size"]
