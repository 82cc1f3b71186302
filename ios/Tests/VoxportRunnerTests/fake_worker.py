"""A stand-in for `voxport serve` that misbehaves on purpose (VoxportRunnerTests).

    python fake_worker.py MODE serve BUNDLE

It sends `ready`, answers `describe` with the bundle's manifest, and on the first `run`:
MODE `hang` never answers; MODE `abort` aborts the process (as a Core AI fatal error does).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from conversion.core.runtime import worker_protocol as wp

mode, bundle = sys.argv[1], Path(sys.argv[3])
out, read = sys.stdout.buffer, wp.stream_reader(sys.stdin.buffer)
ready = {"ok": True, "op": "ready", "protocol": wp.PROTOCOL, "model": "core", "graphs": []}
wp.write_frame(out, ready)
while (frame := wp.read_frame(read)) is not None:
    header = frame[0]
    if header["op"] == "describe":
        manifest = json.loads((bundle / "manifest.json").read_text())
        wp.write_frame(out, {"ok": True, "op": "describe", "manifest": manifest, "loaded": []})
    elif header["op"] == "run":
        print(f"fake worker: {mode} in {header['graph']}.{header['function']}", file=sys.stderr)
        sys.stderr.flush()
        if mode == "hang":
            time.sleep(600)
        os.abort()
    else:
        wp.write_frame(out, {"ok": True, "op": header["op"]})
