"""Single Core AI assets, served the way Apple's in-process runtime serves them.

path of an `.aimodel` folder -> `load`: lowered for this process (`lowering.LoweredFolder`, the
folder `Session` uses), every function loaded once and described from the runtime's own
`InferenceFunction.desc` -> an asset id and its function descriptors. `run(id, function,
inputs, states)`: the caller owns the states — it sends their current contents with the inputs
and gets their new contents back with the outputs, nothing is kept here between calls. No
bundle, no manifest and no casting: the arrays must be exactly what the descriptor says.

What `voxport serve --assets` runs (`conversion.core.runtime.serve`), for VoxportKit's CoreAI mirror
(`AIModel(contentsOf:)` on Linux).
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core import bundle_lock
from conversion.core.bundle import MANIFEST
from conversion.core.errors import InputSpecError, UserError
from conversion.core.runtime.lowering import LoweredFolder
from conversion.core.runtime.program_check import check_asset
from conversion.core.runtime.session import _captured_stderr

#: A dimension the descriptor leaves open (None in the Python runtime) is written as this.
DYNAMIC = -1


@dataclass
class _Asset:
    path: Path
    stack: contextlib.AsyncExitStack
    model: Any
    functions: dict[str, Any] = field(default_factory=dict)  # name -> InferenceFunction
    descs: dict[str, dict] = field(default_factory=dict)  # name -> function descriptor


def describe(desc: Any) -> dict[str, Any]:
    """`{"name", "inputs", "outputs", "states"}` of a runtime `InferenceFunctionDescriptor`,
    each a list of `{"name", "shape", "dtype"}` in the descriptor's own order."""

    def arrays(names: list[str], get) -> list[dict[str, Any]]:
        out = []
        for n in names:
            d = get(n)
            shape = [DYNAMIC if s is None else int(s) for s in d.shape]
            out.append({"name": n, "shape": shape, "dtype": str(d.dtype)})
        return out

    return {
        "name": desc.name,
        "inputs": arrays(list(desc.input_names), desc.input_descriptor),
        "outputs": arrays(list(desc.output_names), desc.output_descriptor),
        "states": arrays(list(desc.state_names), desc.state_descriptor),
    }


def check_array(kind: str, d: Mapping[str, Any], arr: np.ndarray) -> None:
    """An `InputSpecError` unless `arr` is exactly descriptor `d`'s dtype and shape (-1: any
    size). No casting: the caller fills arrays of the descriptor's own scalar type."""
    if arr.dtype.name != d["dtype"]:
        raise InputSpecError(
            f"{kind} '{d['name']}': dtype {arr.dtype.name}, the function wants {d['dtype']} "
            f"(send {d['dtype']}: assets are run without casting)"
        )
    want = d["shape"]
    if arr.ndim != len(want) or any(
        w not in (DYNAMIC, s) for w, s in zip(want, arr.shape, strict=True)
    ):
        raise InputSpecError(
            f"{kind} '{d['name']}': shape {list(arr.shape)}, the function wants {want}"
            + (" (-1: any size)" if DYNAMIC in want else "")
        )


def _check_names(where: str, kind: str, got: Mapping[str, Any], descs: list[dict]) -> None:
    expected = [d["name"] for d in descs]
    missing = [n for n in expected if n not in got]
    extra = sorted(set(got) - set(expected))
    if not (missing or extra):
        return
    fix = {
        "input": "send exactly the function's inputs",
        "state": "send every state, as Apple's API wants views for all states: the ones the "
        "previous call returned, or zeros of their shapes to start",
    }[kind]
    raise InputSpecError(
        f"{where}: the {kind}s are {expected}"
        + (f"; missing {missing}" if missing else "")
        + (f"; unexpected {extra}" if extra else "")
        + f" ({fix})"
    )


class AssetRuntime:
    """Load `.aimodel` assets by path; run their functions with caller-owned states.

    Each `load` is a new, independent asset id, even for a path already loaded (as each
    `AIModel(contentsOf:)` is its own model): ids count up from 1 and are never reused in a
    process, so a stale id is an error, never another asset. Loading twice lowers twice.
    """

    def __init__(self, quiet: bool = True) -> None:
        import coreai  # noqa: F401  (import errors surface here, not mid-call)

        self.quiet = quiet
        self._loop = asyncio.new_event_loop()
        self._lowering = LoweredFolder()
        self._assets: dict[int, _Asset] = {}
        self._next_id = 1

    # -- assets ------------------------------------------------------------------------------
    def load(self, path: Path | str) -> tuple[int, list[dict[str, Any]]]:
        """Lower and load the asset at `path`, every function too; (its id, its functions)."""
        from coreai.authoring.asset import AIModelAsset

        path = Path(path).expanduser().absolute()
        if not (path.is_dir() and path.suffix == ".aimodel" and AIModelAsset.is_valid(path)):
            raise UserError(f"{path} is not a Core AI asset (an existing .aimodel folder)")
        asset_id, self._next_id = self._next_id, self._next_id + 1
        name = f"{asset_id}-{path.stem}"  # unique in this runtime's lowered folder
        stack = contextlib.AsyncExitStack()
        # An asset of a bundle: the bundle is held while the asset is read and lowered (the
        # lowered copy is this process's own after that).
        in_bundle = (path.parent / MANIFEST).is_file()
        try:
            with (
                bundle_lock.Use(path.parent) if in_bundle else contextlib.nullcontext(),
                _captured_stderr(self.quiet),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")
                # The bytecode reader aborts the process on a program file that is garbage or
                # truncated (issue 29): its header and size are checked first.
                check_asset(path, full=True)
                source = AIModelAsset.load(path)
                # A program the runtime cannot read aborts the process in the lowering
                # (SIGABRT, measured with a garbage main.mlirb); its summary just lists no
                # functions, so that is checked first and answered as an error.
                summary = source.summary(include_statistics=False)
                if summary is None or not summary.function_names:
                    raise UserError("no function in its program (unreadable or empty)")
                lowered = self._lowering.lower(source, name, stack)
                model = self._loop.run_until_complete(lowered)
                asset = _Asset(path, stack, model)
                for fn_name in model.function_names:
                    fn = model.load_function(fn_name)
                    asset.functions[fn_name] = fn
                    asset.descs[fn_name] = describe(fn.desc)
        except Exception as e:
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(stack.aclose())
            self._lowering.forget(name)
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            why = first if isinstance(e, UserError) else f"{type(e).__name__}: {first}"
            raise UserError(f"cannot load {path}: {why}") from e
        self._assets[asset_id] = asset
        return asset_id, list(asset.descs.values())

    def _asset(self, asset_id: int) -> _Asset:
        asset = self._assets.get(asset_id)
        if asset is None:
            raise UserError(f"no asset {asset_id!r} (loaded: {sorted(self._assets)})")
        return asset

    def assets(self) -> dict[int, Path]:
        """The loaded assets: id -> path."""
        return {i: a.path for i, a in self._assets.items()}

    def function(self, asset_id: int, function: str) -> dict[str, Any]:
        """Function `function`'s descriptor (as `load` returned it)."""
        asset = self._asset(asset_id)
        desc = asset.descs.get(function)
        if desc is None:
            raise UserError(
                f"no function '{function}' in asset {asset_id} ({asset.path.name}; "
                f"has: {list(asset.descs)})"
            )
        return desc

    def unload(self, asset_id: int) -> None:
        """Release an asset and remove its lowered copy; its id is not used again."""
        asset = self._asset(asset_id)
        del self._assets[asset_id]
        asset.functions.clear()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asset.stack.aclose())
        self._lowering.forget(f"{asset_id}-{asset.path.stem}")

    # -- calls -------------------------------------------------------------------------------
    def run(
        self,
        asset_id: int,
        function: str,
        inputs: Mapping[str, np.ndarray],
        states: Mapping[str, np.ndarray],
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Call `function` with `inputs` and the current contents of every state; (its outputs,
        the states' new contents), each a fresh C-contiguous array in descriptor order."""
        from coreai.runtime import NDArray

        desc = self.function(asset_id, function)
        fn = self._assets[asset_id].functions[function]
        misplaced = sorted(
            set(inputs) & {d["name"] for d in desc["states"]} - {d["name"] for d in desc["inputs"]}
        )
        if misplaced:
            raise InputSpecError(
                f"{function}: {misplaced} are states, not inputs (pass them as states: in a "
                "run request, list them under 'states')"
            )
        _check_names(function, "input", inputs, desc["inputs"])
        _check_names(function, "state", states, desc["states"])
        for kind in ("input", "state"):
            given = inputs if kind == "input" else states
            for d in desc[f"{kind}s"]:
                check_array(kind, d, np.asarray(given[d["name"]]))
        # NDArray copies what it is given: the caller's arrays (often read-only frame buffers)
        # are never written, and the runtime's in-place state updates land in these copies.
        args = {d["name"]: NDArray(np.ascontiguousarray(inputs[d["name"]])) for d in desc["inputs"]}
        st = {d["name"]: NDArray(np.ascontiguousarray(states[d["name"]])) for d in desc["states"]}
        if st:
            out = self._loop.run_until_complete(fn(args, state=st))
        else:
            out = self._loop.run_until_complete(fn(args))
        # Copies, C order: `.numpy()` may be a view of runtime memory (or a strided one).
        outputs = {d["name"]: np.array(out[d["name"]].numpy(), order="C") for d in desc["outputs"]}
        return outputs, {k: np.array(v.numpy(), order="C") for k, v in st.items()}

    def close(self) -> None:
        """Release every asset and remove the lowered folder (also fine before `end_process`)."""
        if self._loop.is_closed():
            return
        for asset_id in list(self._assets):
            self.unload(asset_id)
        # The thread that wrote the lowered assets ran runtime code: join it now, while the
        # runtime is whole, rather than in the interpreter's exit (see runtime.end_process).
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()
        self.discard_lowered()

    def discard_lowered(self) -> None:
        """Remove the lowered assets without releasing anything (the process is about to end)."""
        self._lowering.discard()

    def __enter__(self) -> AssetRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
