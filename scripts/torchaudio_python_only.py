"""Delete torchaudio's compiled extension so it imports as pure Python beside torch 2.13 CPU.

Every torchaudio wheel on PyPI for Linux links CUDA libraries that the CPU torch does not ship;
with the ``lib/*.so`` files absent, torchaudio skips the extension and its pure-Python parts
(``compliance.kaldi.fbank``, ``transforms.Resample``) still work. Idempotent.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> int:
    spec = importlib.util.find_spec("torchaudio")
    if spec is None or spec.origin is None:
        print("torchaudio is not installed; nothing to strip", file=sys.stderr)
        return 1
    lib = Path(spec.origin).parent / "lib"
    removed = [p for p in sorted(lib.glob("*.so"))]
    for p in removed:
        p.unlink()
    import torchaudio  # noqa: F401  (proves the import works now)
    from torchaudio.compliance import kaldi  # noqa: F401

    print(f"torchaudio {torchaudio.__version__}: python-only ({len(removed)} .so removed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
