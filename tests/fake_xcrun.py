"""A stand-in `xcrun` for the device verbs' tests: `devicectl device copy to/from` and
`device process launch` against a fake device folder, the way devicectl misbehaves.

`install(tmp_path, monkeypatch)` writes an executable `xcrun` into tmp_path/bin, puts it first
on PATH and returns a `FakeDevice`. The script reads its setup from the environment:

- FAKE_DEVICE: the device's root; an app's container is FAKE_DEVICE/<app id>/
- FAKE_LOG: every call is appended as one JSON line (argv); no file means never called
- FAKE_DROP: a destination path suffix whose `copy to` is dropped while still exiting 0
  (FAKE_DROP_MODE=truncate writes half the bytes, =vanish writes nothing)
- FAKE_LAUNCH_RESULT: JSON that `process launch` writes as Documents/<VP_OUT>/result.json
  (with a small audio.wav beside it, or for a `*.text` bench a text.json)
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPT = r"""
import json, os, shutil, sys
from pathlib import Path

argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(argv) + "\n")

def opt(name):
    return argv[argv.index(name) + 1]

root = Path(os.environ["FAKE_DEVICE"])
if argv[:4] == ["devicectl", "device", "copy", "to"]:
    container = root / opt("--domain-identifier")
    dest = container / opt("--destination")
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = Path(opt("--source")).read_bytes()
    drop = os.environ.get("FAKE_DROP")
    if drop and opt("--destination").endswith(drop):
        if os.environ.get("FAKE_DROP_MODE", "truncate") == "truncate":
            dest.write_bytes(data[: len(data) // 2])
        print("Copied 1 file.")  # and exits 0: the trap
        sys.exit(0)
    dest.write_bytes(data)
    print("Copied 1 file.")
elif argv[:4] == ["devicectl", "device", "copy", "from"]:
    src = root / opt("--domain-identifier") / opt("--source")
    if not src.is_file():
        print(f"ERROR: The file doesn't exist. ({opt('--source')})", file=sys.stderr)
        sys.exit(1)
    shutil.copyfile(src, opt("--destination"))
elif argv[:4] == ["devicectl", "device", "process", "launch"]:
    env = json.loads(opt("--environment-variables"))
    app = argv[-1]
    result = os.environ.get("FAKE_LAUNCH_RESULT")
    if result:
        out = root / app / "Documents" / env["VP_OUT"]
        out.mkdir(parents=True, exist_ok=True)
        doc = json.loads(result)
        doc["bench"] = env["VP_BENCH"]
        (out / "result.json").write_text(json.dumps(doc))
        if env["VP_BENCH"].endswith(".text"):  # a text bench: text.json, no audio
            (out / "text.json").write_text(json.dumps({"model": "fake", "chunks": []}))
        else:
            (out / "audio.wav").write_bytes(b"RIFF-fake-wav")
    print("Launched application")
else:
    print("unexpected: " + " ".join(argv), file=sys.stderr)
    sys.exit(64)
"""


@dataclass
class FakeDevice:
    root: Path
    log: Path

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def container(self, app_id: str) -> Path:
        return self.root / app_id


def install(tmp_path: Path, monkeypatch) -> FakeDevice:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "xcrun"
    script.write_text(f"#!{sys.executable}\n{SCRIPT}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    device = FakeDevice(tmp_path / "device", tmp_path / "xcrun-calls.jsonl")
    device.root.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_DEVICE", str(device.root))
    monkeypatch.setenv("FAKE_LOG", str(device.log))
    return device


def no_xcrun(tmp_path: Path, monkeypatch) -> None:
    """PATH with no xcrun on it."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def tiny_bundle(dest: Path, model: str = "kokoro") -> Path:
    """A verified bundle without an export: one asset folder (nested files, as a real
    `.aimodel` has) hashed as BundleWriter.add_graph hashes it, and one host file."""
    import numpy as np

    from conversion.core.bundle import BundleWriter, content_hash

    with BundleWriter(dest, model, weights_sha256="ab" * 32) as bw:
        asset = bw.staging / "g.aimodel"
        (asset / "weights").mkdir(parents=True)
        (asset / "main.mlirb").write_bytes(b"graph" * 300)
        (asset / "weights" / "0.bin").write_bytes(bytes(range(256)) * 16)
        bw.graphs["g"] = {
            "asset": "g.aimodel",
            "precision": "fp32",
            "sha256": content_hash(asset),
            "functions": {},
            "export_seconds": 0.0,
            "meta": {},
        }
        bw.add_arrays("voices.npz", {"af_test": np.arange(8, dtype=np.float32)})
    return dest
