"""Pre-export lint: name every op the Core AI converter will refuse, with its workaround.

The converter's own error lists unsupported ATen names and nothing else; the lint runs first
and says what to do instead, in the terms this project uses (host DSP, noise as an input, ...).
It reads the program twice: as exported (the names the author wrote, e.g. `aten.stft`) and
after decomposition (what the converter actually sees, e.g. `aten.unfold` from `stft`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# (substring of the ATen target, short name, workaround) — first match wins.
_RULES: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("aten.stft", "aten.istft", "aten._fft_", "aten.fft_"),
        "stft/fft",
        "compute it on the host (conversion.core.host.dsp.stft/istft) or in-graph with the "
        "conv-basis modules conversion.core.host.dsp.ConvSTFT / ConvISTFT",
    ),
    (
        ("aten.multinomial",),
        "multinomial",
        "draw with Gumbel-max and pass the uniforms in as an input "
        "(conversion.core.host.sampling.GumbelSampler)",
    ),
    (
        (
            "aten.rand",
            "aten.randn",
            "aten.randint",
            "aten.normal",
            "aten.bernoulli",
            "aten.uniform",
            "aten.exponential",
            "aten.randperm",
        ),
        "rand*",
        "randomness must be a graph input: draw the noise on the host and pass it in",
    ),
    (
        ("aten.repeat_interleave.Tensor", "aten.repeat_interleave.self_Tensor"),
        "repeat_interleave(Tensor)",
        "a data-dependent length: cut the graph there and expand on the host "
        "(e.g. an alignment matrix and a matmul at a static bucket)",
    ),
    (
        ("aten.unfold",),
        "unfold",
        "use strided slices + stack, or a conv1d with an identity kernel",
    ),
    (
        ("aten.elu",),
        "elu",
        "export with conversion.core.export.decomp.decomposition_table() "
        "(where(x > 0, x, expm1(x)))",
    ),
]

# Ops that only change a view of their first argument: walked through to find whether an
# index_put writes into a state buffer.
_VIEW_OPS = (
    "select",
    "slice",
    "view",
    "unsqueeze",
    "squeeze",
    "expand",
    "permute",
    "alias",
    "transpose",
    "reshape",
    "_unsafe_view",
    "as_strided",
)


@dataclass(frozen=True)
class LintFinding:
    """One reason the converter will refuse (or mis-handle) the program."""

    problem: str
    where: str
    workaround: str

    def __str__(self) -> str:
        return f"{self.problem} ({self.where}): {self.workaround}"


def _call_targets(ep: torch.export.ExportedProgram) -> list[tuple[str, torch.fx.Node]]:
    return [(str(n.target), n) for n in ep.graph.nodes if n.op == "call_function"]


def _source_line(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace") or ""
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else node.name


# Ops that our decomposition table rewrites: only a problem if they survive decomposition.
_DECOMPOSED_BY_US = ("elu",)


def _op_findings(ep: torch.export.ExportedProgram, decomposed: bool) -> list[LintFinding]:
    found: list[LintFinding] = []
    for target, node in _call_targets(ep):
        for needles, name, fix in _RULES:
            if not decomposed and name in _DECOMPOSED_BY_US:
                continue
            if any(target.startswith(n) for n in needles):
                found.append(LintFinding(f"{name}: {target}", _source_line(node), fix))
                break
    return found


def _state_index_put_findings(ep: torch.export.ExportedProgram) -> list[LintFinding]:
    # As exported (before functionalization) an in-place write into a buffer is the buffer
    # becoming runtime state: any index_put_ that lands in a buffer is the trap.
    placeholder_to_buffer = dict(ep.graph_signature.inputs_to_buffers)
    found = []
    for target, node in _call_targets(ep):
        if not target.startswith("aten.index_put"):
            continue
        src = node.args[0]
        while isinstance(src, torch.fx.Node) and src.op == "call_function":
            if not any(v in str(src.target) for v in _VIEW_OPS):
                break
            src = src.args[0]
        if isinstance(src, torch.fx.Node) and src.name in placeholder_to_buffer:
            found.append(
                LintFinding(
                    f"advanced-index write into state '{placeholder_to_buffer[src.name]}'",
                    _source_line(node),
                    "converts, but kills the runtime with a Swift fatal error: use "
                    "index_copy_ (static length) or slice assignment with .item() + "
                    "torch._check (dynamic length)",
                )
            )
    return found


def _unsupported_findings(ep: torch.export.ExportedProgram) -> list[LintFinding]:
    """Ops with no Core AI lowering that no rule above explains (the converter's own list)."""
    try:
        from coreai_torch._validate import validate_exported_program
    except ImportError:  # private API moved: the converter will still say it itself
        return []
    try:
        validate_exported_program(ep, {})
    except ValueError as e:
        return [LintFinding("converter refuses", "exported program", str(e).split("\n")[0])]
    return []


def input_dtype_findings(inputs: dict[str, torch.Tensor]) -> list[LintFinding]:
    """int64 (and float64) inputs convert but are rejected by the runtime: say so up front."""
    found = []
    for name, t in inputs.items():
        if t.dtype == torch.int64:
            found.append(
                LintFinding(
                    f"int64 input '{name}'",
                    "example inputs",
                    "the runtime rejects int64: pass int32 (cast with .long() inside the "
                    "graph where an op needs int64)",
                )
            )
        elif t.dtype == torch.float64:
            found.append(
                LintFinding(f"float64 input '{name}'", "example inputs", "pass float32 or float16")
            )
    return found


def lint_program(
    exported: torch.export.ExportedProgram,
    decomposed: torch.export.ExportedProgram | None = None,
    inputs: dict[str, torch.Tensor] | None = None,
) -> list[LintFinding]:
    """All findings for a program as exported and (optionally) after decomposition."""
    findings = input_dtype_findings(inputs or {})
    findings += _op_findings(exported, decomposed=False)
    findings += _state_index_put_findings(exported)
    if decomposed is not None:
        # A decomposition rewrites one source op into several (stft -> unfold + _fft_r2c):
        # report a source line once, under the name its author wrote.
        seen = {f.where for f in findings}
        # index_copy_ decomposes to index_put: state writes are judged as the author wrote them.
        later = _op_findings(decomposed, decomposed=True)
        findings += [f for f in later if f.where not in seen]
        if not findings:
            findings += _unsupported_findings(decomposed)
    unique: dict[tuple[str, str], LintFinding] = {}
    for f in findings:
        unique.setdefault((f.problem, f.where), f)
    return list(unique.values())
