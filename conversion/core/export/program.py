"""Export PyTorch modules to Core AI assets (`.aimodel`).

One asset = one graph; it holds one or more functions (entrypoints). Functions of one asset
share state by name — a `prefill` and a `decode` over one KV cache — and a bucketed graph is one
function per static bucket. The path is torch.export -> decomposition -> lint -> converter ->
(int8 quantization) -> save.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty

import torch

from conversion.core.errors import ExportLintError, UserError
from conversion.core.export.decomp import decomposition_table
from conversion.core.export.lint import input_dtype_findings, lint_program
from conversion.core.export.precision import (
    Precision,
    prepare_inputs,
    prepare_module,
    quantize_program,
)
from conversion.core.host.buckets import Bucket, BucketTable


@dataclass
class FunctionSpec:
    """One entrypoint: a module, its example inputs (in forward's argument order) and names."""

    name: str
    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    outputs: Sequence[str]
    states: Sequence[str] | None = None  # buffer paths mutated in forward; None = infer
    bucket: Bucket | None = None


@dataclass
class GraphSpec:
    """One asset: a named set of functions exported together."""

    name: str
    functions: list[FunctionSpec]
    meta: dict = field(default_factory=dict)


def _tensor_desc(name: str, t: torch.Tensor) -> dict:
    return {"name": name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}


def state_name(buffer_path: str) -> str:
    """Runtime state names are identifiers: `layers.0.k_cache` -> `layers_0_k_cache`."""
    return buffer_path.replace(".", "_")


def _mutated_buffers(ep: torch.export.ExportedProgram) -> list[str]:
    return list(ep.graph_signature.buffers_to_mutate.values())


def _output_descs(ep: torch.export.ExportedProgram, names: Sequence[str]) -> list[dict]:
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    values = out_node.args[0]
    n_mut = len(ep.graph_signature.buffers_to_mutate)
    user_values = list(values)[n_mut:]
    if len(user_values) != len(names):
        raise UserError(
            f"the module returns {len(user_values)} output(s) but {len(names)} output name(s) "
            f"were given ({list(names)}): name every output"
        )
    descs = []
    for name, node in zip(names, user_values, strict=True):
        val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if val is None:
            descs.append({"name": name, "shape": None, "dtype": None})
        else:
            descs.append(_tensor_desc(name, val))
    return descs


def export_program(
    fn: FunctionSpec, lint: bool = True
) -> tuple[torch.export.ExportedProgram, dict]:
    """torch.export + decomposition + lint for one function; returns the program and its I/O."""
    module = fn.module.eval()
    args = tuple(fn.inputs.values())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            exported = torch.export.export(module, args)
        except Exception as e:
            # torch.export failed: the input-dtype lint can still explain part of it.
            findings = input_dtype_findings(fn.inputs)
            if findings and lint:
                raise ExportLintError(findings) from e
            raise
        decomposed = exported.run_decompositions(decomposition_table())
    if lint:
        findings = lint_program(exported, decomposed, fn.inputs)
        if findings:
            raise ExportLintError(findings)
    mutated = _mutated_buffers(decomposed)
    if fn.states is not None and sorted(fn.states) != sorted(mutated):
        raise UserError(
            f"function '{fn.name}': declared states {sorted(fn.states)} but forward mutates "
            f"{sorted(mutated)}; a mutated buffer must be non-persistent state, declared here"
        )
    buffers = dict(module.named_buffers())
    io = {
        "inputs": [_tensor_desc(k, v) for k, v in fn.inputs.items()],
        "outputs": _output_descs(decomposed, fn.outputs),
        "states": [_tensor_desc(state_name(b), buffers[b]) for b in mutated],
    }
    if fn.bucket is not None:
        io["bucket"] = dict(fn.bucket)
    return decomposed, io


@dataclass(frozen=True)
class AssetInfo:
    """What every `.aimodel` of a model says about itself: who made it, under which license."""

    author: str
    license: str
    description: str

    def to_coreai(self, graph: str):
        import coreai

        m = coreai.runtime.AIModelAssetMetadata()
        m.author = self.author
        m.license = self.license
        m.model_description = f"{self.description} (graph '{graph}', exported by voxport)"
        return m


@dataclass
class ExportedGraph:
    name: str
    path: Path
    precision: Precision
    functions: dict[str, dict]
    seconds: float


def export_graph(
    spec: GraphSpec,
    asset_path: Path,
    precision: Precision | str = Precision.FP32,
    lint: bool = True,
    on_function: Callable[[str], None] | None = None,
    info: AssetInfo | None = None,
) -> ExportedGraph:
    """Export every function of `spec` into one `.aimodel` at `asset_path`.

    `info` (author, license, description) is saved in the asset's own metadata, as Apple's
    export scripts do, so a `.aimodel` copied out of its bundle still says what it is.
    """
    from coreai_torch import TorchConverter

    precision = Precision.parse(precision)
    check_free_space(Path(asset_path).parent, estimated_asset_bytes(spec, precision), spec.name)
    start = time.perf_counter()
    converter = TorchConverter()
    functions: dict[str, dict] = {}
    # One copy per distinct module, not per function: functions sharing a module (prefill and
    # decode, every bucket) share its weights in the exported programs too. A 2 GB T3 with
    # four functions otherwise held four copies during conversion.
    prepared: dict[int, torch.nn.Module] = {}
    for fn in spec.functions:
        if id(fn.module) not in prepared:
            prepared[id(fn.module)] = prepare_module(fn.module, precision)
        module = prepared[id(fn.module)]
        inputs = prepare_inputs(fn.inputs, precision)
        at_precision = FunctionSpec(fn.name, module, inputs, fn.outputs, fn.states, fn.bucket)
        program, io = export_program(at_precision, lint=lint)
        converter.add_exported_program(
            program,
            input_names=list(inputs),
            output_names=list(fn.outputs),
            state_names=[s["name"] for s in io["states"]],
            entrypoint_name=fn.name,
        )
        functions[fn.name] = io
        if on_function is not None:
            on_function(fn.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = quantize_program(converter.to_coreai(), precision)
    program.save_asset(Path(asset_path), metadata=info.to_coreai(spec.name) if info else None)
    return ExportedGraph(
        spec.name, Path(asset_path), precision, functions, time.perf_counter() - start
    )


def _asset_path(folder: Path | str, spec: GraphSpec) -> Path:
    return Path(folder) / f"{spec.name}.aimodel"


def _export_in_child(spec: GraphSpec, folder: str, precision: str, info, queue) -> None:
    """A spawned worker: export one graph, reporting each function and the result (or the
    error) on `queue`."""
    try:
        exported = export_graph(
            spec,
            _asset_path(folder, spec),
            precision,
            on_function=lambda fn: queue.put(("function", spec.name, fn)),
            info=info,
        )
        queue.put(("done", spec.name, exported))
    except BaseException as e:  # noqa: BLE001 (any failure is the parent's to raise)
        queue.put(("error", spec.name, e))


def export_graphs(
    specs: Sequence[GraphSpec],
    folder: Path,
    precision: Precision | str,
    workers: int = 1,
    info: AssetInfo | None = None,
    on_function: Callable[[str, str], None] | None = None,
) -> list[ExportedGraph]:
    """`export_graph` for each spec into `folder` (as `NAME.aimodel`), in `specs` order;
    `on_function(graph, function)` as each function is converted.

    With `workers` > 1 the graphs convert side by side, each in a fresh (spawned) process that
    gets its spec pickled: the converter uses one core. Not forked: a fork of a process that has
    converted before inherits the converter's thread pool without its threads, and hangs. The
    graph with the most functions goes first (Kokoro's vocoder: 15 buckets). A worker's error
    is raised here once the running workers are stopped.
    """
    precision = Precision.parse(precision)
    workers = max(1, min(workers, len(specs)))
    if workers == 1:
        return [
            export_graph(
                spec,
                _asset_path(folder, spec),
                precision,
                on_function=(lambda fn, g=spec.name: on_function(g, fn)) if on_function else None,
                info=info,
            )
            for spec in specs
        ]
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    pending = sorted(specs, key=lambda s: -len(s.functions))
    running: dict[str, multiprocessing.Process] = {}
    done: dict[str, ExportedGraph] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                spec = pending.pop(0)
                proc = ctx.Process(
                    target=_export_in_child,
                    args=(spec, str(folder), precision.value, info, queue),
                    daemon=True,
                )
                proc.start()
                running[spec.name] = proc
            try:
                kind, graph, payload = queue.get(timeout=1.0)
            except Empty:
                # A worker killed outright (the OOM killer, a runtime abort) reports nothing.
                for graph, proc in running.items():
                    if proc.exitcode not in (None, 0):
                        raise RuntimeError(
                            f"exporting graph '{graph}' died (exit code {proc.exitcode})"
                        ) from None
                continue
            if kind == "function":
                if on_function is not None:
                    on_function(graph, payload)
                continue
            running.pop(graph).join()
            if kind == "error":
                raise payload
            done[graph] = payload
    finally:
        for proc in running.values():
            proc.kill()
            proc.join()
    return [done[spec.name] for spec in specs]


_BYTES_PER_WEIGHT = {Precision.FP32: 4, Precision.FP16: 2, Precision.INT8: 1}


def estimated_asset_bytes(spec: GraphSpec, precision: Precision) -> int:
    """A lower bound on the asset's size: its distinct weights at `precision` (an asset holds
    each shared tensor once). Assets measured here are 1.0-1.1x this."""
    seen: set[int] = set()
    total = 0
    for fn in spec.functions:
        for t in [*fn.module.parameters(), *fn.module.buffers()]:
            if t.data_ptr() in seen:
                continue
            seen.add(t.data_ptr())
            per = _BYTES_PER_WEIGHT[precision] if t.is_floating_point() else t.element_size()
            total += t.numel() * per
    return total


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """A full disk is a one-line error before conversion: the converter's writer cannot be
    caught (it aborts the process with 'LLVM ERROR: IO failure on output stream')."""
    import shutil

    margin = needed + needed // 4 + (1 << 20)
    free = shutil.disk_usage(folder).free
    if folder.name.startswith(".") and ".tmp-" in folder.name:
        folder = folder.parent  # a bundle's staging folder: name where the user pointed
    if free < margin:
        raise UserError(
            f"no space left on the device for graph '{what}': it needs about "
            f"{margin / 2**20:.1f} MB in {folder}, {free / 2**20:.1f} MB are free; free some "
            "space there or export somewhere else (--output-dir)"
        )


def bucketed_functions(
    name: str,
    module: torch.nn.Module,
    table: BucketTable,
    make_inputs: Callable[[Bucket], dict[str, torch.Tensor]],
    outputs: Sequence[str],
) -> list[FunctionSpec]:
    """One function per static bucket, named `{name}_{bucket.label}` (e.g. `main_L512_T128`).

    All of them go into one asset, so they share the weights; `Session.run(graph,
    f"{name}_{table.select(...).label}", ...)` calls the smallest that fits.
    """
    return [
        FunctionSpec(f"{name}_{b.label}", module, make_inputs(b), outputs, bucket=b) for b in table
    ]
