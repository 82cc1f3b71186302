"""Audio files: atomic 16-bit wav writing (a reader never sees half a file)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from .errors import UserError
from .paths import public_mode, writable_file


def write_wav(path: str | Path, audio: np.ndarray, sr: int) -> Path:
    """Write mono float audio as 16-bit PCM at ``path``, atomically (a temp file in the same
    folder, then renamed), so a reader never sees half a file. Samples are clipped to
    [-1, 1] first: libsndfile would otherwise wrap overflowing samples around."""
    import soundfile as sf

    target = writable_file(path)
    data = np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0)
    if not np.all(np.isfinite(data)):
        raise UserError(f"refusing to write {target}: the audio has NaN or infinite samples")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        sf.write(tmp, data, sr, subtype="PCM_16", format="WAV")
        public_mode(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
