# Types of nbx_dtype.py, whose enum is built at import from the dtype table: one member per
# entry of crates/nbxtensor/data/dtypes.yml, in code order. A dtype added to the table is added
# here too (tests/test_typing.py compares the two).

import enum

from nbxtensor._typing import DTypeLike

class NBXDtype(enum.Enum):
    float16 = 0
    bfloat16 = 1
    float32 = 2
    float64 = 3
    int8 = 4
    int16 = 5
    int32 = 6
    int64 = 7
    uint8 = 8
    uint16 = 9
    uint32 = 10
    uint64 = 11
    bool = 12
    complex64 = 13
    complex128 = 14
    float8_e4m3fn = 15
    float8_e5m2 = 16
    int4_g128_asym = 17
    int4_g128_sym = 18
    int8_per_channel = 19
    int8_g64 = 20
    @property
    def table_name(self) -> str: ...

def parse_dtype(spelling: str | NBXDtype | DTypeLike) -> NBXDtype: ...
def dtype_size(dtype: str | NBXDtype | DTypeLike) -> int: ...

__all__ = ["NBXDtype", "parse_dtype", "dtype_size"]
