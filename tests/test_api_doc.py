"""Every public Python name is documented in docs/API.md.

A public name is one a module lists in ``__all__`` (every module of the package has one),
written ``module.name`` in the doc; a public member of a class the package defines is written
``Class.member``. The test prints the undocumented names it finds.
"""

import importlib
import inspect
import pkgutil
from pathlib import Path

import nbxtensor

API = Path(__file__).resolve().parents[1] / "docs" / "API.md"


def _public_modules():
    yield nbxtensor
    for info in pkgutil.walk_packages(nbxtensor.__path__, "nbxtensor."):
        if not info.name.split(".")[-1].startswith("_"):
            yield importlib.import_module(info.name)


def _public_names():
    for module in _public_modules():
        assert hasattr(module, "__all__"), f"{module.__name__} has no __all__: its public names are undeclared"
        for name in module.__all__:
            yield f"{module.__name__}.{name}"
            value = getattr(module, name)
            if inspect.isclass(value) and value.__module__.startswith("nbxtensor"):
                yield from _public_members(value)


def _public_members(cls):
    for member in dir(cls):
        if member.startswith("_") or isinstance(getattr(cls, member), cls):
            continue  # private, or an enum member (the dtype table lists those)
        owner = next((k for k in cls.__mro__ if member in vars(k)), None)
        if owner is None or owner.__module__ not in ("builtins", "enum"):
            yield f"{cls.__name__}.{member}"


def test_every_public_name_is_documented():
    text = API.read_text(encoding="utf-8")
    names = sorted(set(_public_names()))
    assert len(names) > 40, f"the walk found only {len(names)} public names"
    missing = [n for n in names if n not in text]
    assert missing == [], "undocumented in docs/API.md: " + ", ".join(missing)
