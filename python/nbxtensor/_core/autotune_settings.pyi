import os
from collections.abc import Callable

_Path = str | os.PathLike[str]

def set_store(store: _Path | Callable[[], _Path] | None) -> None: ...
def directory() -> os.PathLike[str]: ...
def writable_directory() -> os.PathLike[str]: ...

__all__ = ["set_store", "directory", "writable_directory"]
