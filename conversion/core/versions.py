"""Installed package versions, as bundles, fixtures and `voxport doctor` record them."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each distribution, None where it is absent."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
