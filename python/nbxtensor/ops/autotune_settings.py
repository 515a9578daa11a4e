"""Where proven kernel settings are kept: a path, a callable returning one, or (None) the
default ``$XDG_CACHE_HOME/nbxtensor/certified`` (``~/.cache/nbxtensor/certified``); and how
many the autotune measured in this process.

Kernel tile and split choices are measured at first use and kept under ``<store>/autotune/``,
one JSON file per device, so that later processes find them and measure nothing."""

from pathlib import Path

from nbxtensor._core import autotune_settings as _core

set_store = _core.set_store


def directory() -> Path:
    """The store's directory in force, as a ``pathlib.Path`` (not created)."""
    return Path(_core.directory())


def writable_directory() -> Path:
    """The store's directory, created and proven writable; ``OSError`` naming it otherwise."""
    return Path(_core.writable_directory())


def measurements() -> int:
    """How many candidate measurements the autotune has made in this process: 0 in a process
    that found every choice it needed in the store."""
    return _core.measurements()


__all__ = ["set_store", "directory", "writable_directory", "measurements"]
