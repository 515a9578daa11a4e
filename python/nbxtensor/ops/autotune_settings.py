"""Where proven kernel settings are kept: a path, a callable returning one, or (None) the
default ``$XDG_CACHE_HOME/nbxtensor/certified`` (``~/.cache/nbxtensor/certified``)."""

from pathlib import Path

from nbxtensor._core import autotune_settings as _core

set_store = _core.set_store


def directory() -> Path:
    """The store's directory in force, as a ``pathlib.Path`` (not created)."""
    return Path(_core.directory())


def writable_directory() -> Path:
    """The store's directory, created and proven writable; ``OSError`` naming it otherwise."""
    return Path(_core.writable_directory())


__all__ = ["set_store", "directory", "writable_directory"]
