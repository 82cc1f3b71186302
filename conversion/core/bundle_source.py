"""The bundles one gate or bench may ask for, over one snapshot (`BundleSource`): the main
bundle, and side bundles (a graph subset, other precisions) placed beside it by the one rule of
`ModelPort.ensure_bundle`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class BundleSource:
    """The bundles one command may ask for, over one snapshot: what a gate or a bench takes
    instead of the CLI's arguments. `path` (--bundle) places the main bundle; a side bundle
    (a variant: a graph subset, other precisions) goes beside it as `{path}-{variant}`, or
    to its own default folder when no path was given."""

    port: Any  # the ModelPort (core/port.py) whose one rule places every bundle
    folder: Path
    config_name: str
    path: Path | None = None
    loaded: Any = None
    overwrite: bool = False  # --overwrite: re-export a --bundle made from other arguments

    def get(
        self,
        config: Any,
        dtype: str,
        graphs: Sequence[str] | None = None,
        precisions: dict[str, str] | None = None,
        variant: str | None = None,
    ) -> Path:
        return self.port.ensure_bundle(
            self.folder,
            config,
            self.config_name,
            dtype,
            path=self._path(variant),
            graphs=graphs,
            precisions=precisions,
            variant=variant,
            loaded=self.loaded,
            overwrite=self.overwrite,
        )

    def check(
        self,
        config: Any,
        dtype: str,
        graphs: Sequence[str] | None = None,
        precisions: dict[str, str] | None = None,
        variant: str | None = None,
    ) -> None:
        """`get`'s refusal of a `--bundle` made from other arguments, before any load
        (`ModelPort.check_reuse`)."""
        self.port.check_reuse(
            self.folder,
            config,
            self.config_name,
            dtype,
            self._path(variant),
            self.overwrite,
            graphs,
            precisions,
            variant,
        )

    def _path(self, variant: str | None) -> Path | None:
        if self.path is None or variant is None:
            return self.path
        return self.path.with_name(f"{self.path.name}-{variant}")
