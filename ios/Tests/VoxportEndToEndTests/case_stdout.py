"""What the end-to-end case scripts beside this one share: their own stdout, apart from
everything the converter and the runtime print."""

from __future__ import annotations

import os
import sys
from typing import TextIO


def protocol_stdout() -> TextIO:
    """A file on the real stdout for this script's own lines; fd 1 itself then goes to stderr,
    so what the converter and the runtime print (Python or C) never mixes into them."""
    real = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return real
