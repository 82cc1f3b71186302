"""An IsolatedSession's child: `python -m conversion.core.runtime_worker FD BUNDLE`."""

from __future__ import annotations

import sys

from .runtime import serve

if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
