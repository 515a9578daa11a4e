"""The PEP 517 backend of nbxtensor: maturin's hooks, with the wheel's manylinux policy
(``[tool.maturin] compatibility`` in pyproject.toml) passed on to ``build_wheel``.

maturin's own PEP 517 hook builds with ``--compatibility off`` unless the policy comes on its
command line, which gives a plain ``linux_x86_64`` tag that PyPI refuses; ``pip wheel .`` and
``pip install .`` give no such argument. A policy given through ``MATURIN_PEP517_ARGS`` or
``--config-settings build-args=...`` still wins.
"""

from __future__ import annotations

from typing import Any, Mapping

import maturin
from maturin import (  # noqa: F401 - the other hooks, unchanged
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)


def _names_a_policy(args: list[str]) -> bool:
    return any(a in ("--compatibility", "--manylinux") or a.startswith(("--compatibility=", "--manylinux=")) for a in args)


def with_policy(config_settings: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The settings maturin gets: the caller's build arguments, plus pyproject's policy when
    they name none."""
    args = list(maturin.get_maturin_pep517_args(config_settings))
    policy = maturin.get_config().get("compatibility")
    if policy is None or _names_a_policy(args):
        return config_settings
    settings = dict(config_settings or {})
    settings.pop("build-args", None)
    settings["maturin.build-args"] = [*args, "--compatibility", str(policy)]
    return settings


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """maturin's ``build_wheel`` under pyproject's manylinux policy."""
    return maturin.build_wheel(wheel_directory, with_policy(config_settings), metadata_directory)
