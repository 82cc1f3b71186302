"""`.aimodel` assets lowered for this process, into a folder of its own.

asset (an `AIModelAsset`) -> on Linux: its ODIX written to
`<temp>/voxport-lowered-<pid>-xxxx/<name>.aimodelx`, then `AIModel.load` of that folder; on
macOS: the OS runtime loads the asset itself (`asset.executable()`, nothing written here) ->
a loaded `AIModel`. `discard` removes the folder. Used by `runtime.Session` (a bundle's graphs)
and `asset_runtime.AssetRuntime` (single assets, `voxport serve --assets`), so both leave the
same kind of folder behind and sweep each other's dead ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from pathlib import Path
from typing import Any

from conversion.core.bundle import is_plain_name
from conversion.core.paths import process_temp_folder

# Where a process's lowered assets go (one folder per owner, `<prefix><pid>-xxxx` in the temp
# folder). The runtime's own `executable()` lowers into an anonymous temp folder removed only by
# its context's exit, which a worker ended by `os._exit` (serve) or a killed child never runs:
# 70-90 MB a reduced bundle, GBs a published one, left in /tmp per child (a CI run filled the
# disk). A folder named by pid is removed by the next owner's first lowering once its process
# is gone (`paths.process_temp_folder`).
LOWERED_PREFIX = "voxport-lowered-"

# The suffix `executable()` gives its folder: the runtime loads an ODIX folder by it.
_SUFFIX = ".aimodelx"

# Every owner's folder in this process, so a process ending on a signal or on its parent's
# death removes them all (`discard_all`), whichever owner made them and wherever it stood.
_MADE: set[Path] = set()


def discard_all() -> None:
    """Remove every lowered folder of this process (it is about to end, by `os._exit`)."""
    for path in list(_MADE):
        shutil.rmtree(path, ignore_errors=True)
        _MADE.discard(path)


class LoweredFolder:
    """One owner's lowered assets: the folder is made on the first lowering, removed by
    `discard` (the owner closed, or its process is about to end)."""

    def __init__(self) -> None:
        self.path: Path | None = None

    async def lower(self, asset: Any, name: str, stack: contextlib.AsyncExitStack) -> Any:
        """`asset` (an `AIModelAsset`) loaded for this process as `name` (unique per owner):
        on Linux what `asset.executable()` does (write the ODIX, load it), but into this
        owner's folder; on macOS the OS runtime's path, its context kept open by `stack`."""
        if sys.platform == "darwin":  # the OS runtime loads the asset itself: nothing written
            return await stack.enter_async_context(asset.executable())
        from coreai.runtime import AIModel

        if not is_plain_name(name):  # the manifest check's second line: never a path out
            raise ValueError(f"lowered asset name {name!r} is not a plain name")
        if self.path is None:
            self.path = process_temp_folder(LOWERED_PREFIX)
            _MADE.add(self.path)
        odix = self.path / f"{name}{_SUFFIX}"
        odix.mkdir()
        try:
            await asyncio.to_thread(asset._write_odix, odix, enable_debug_info=False)
            return await AIModel.load(path=str(odix), specialization_options=None)
        except BaseException:
            shutil.rmtree(odix, ignore_errors=True)  # a failed load leaves nothing behind
            raise

    def forget(self, name: str) -> None:
        """Remove one lowered asset (its owner unloaded it; the process goes on)."""
        if self.path is not None:
            shutil.rmtree(self.path / f"{name}{_SUFFIX}", ignore_errors=True)

    def discard(self) -> None:
        """Remove every lowered asset of this owner, and the folder."""
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            _MADE.discard(self.path)
            self.path = None
