"""Audio files: atomic 16-bit wav writing (a reader never sees half a file), whole, streamed, or
as a speak's `WavSink`."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from conversion.core.errors import UserError
from conversion.core.paths import partial_path, public_mode, writable_file
from conversion.core.runtime import ending


def _pcm_ready(audio: np.ndarray, target: Path) -> np.ndarray:
    """Mono float32 clipped to [-1, 1] (libsndfile would wrap overflowing samples around)."""
    data = np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0)
    if not np.all(np.isfinite(data)):
        raise UserError(f"refusing to write {target}: the audio has NaN or infinite samples")
    return data


def write_wav(path: str | Path, audio: np.ndarray, sr: int) -> Path:
    """Write mono float audio as 16-bit PCM at ``path``, atomically (a temp file in the same
    folder, then renamed), so a reader never sees half a file. Samples are clipped to
    [-1, 1] first: libsndfile would otherwise wrap overflowing samples around."""
    import soundfile as sf

    target = writable_file(path)
    data = _pcm_ready(audio, target)
    # Encoded in memory, then written with plain file I/O: a full disk is then an OSError
    # (ENOSPC, a one-line error in the CLI), not libsndfile's codeless error.
    encoded = io.BytesIO()
    sf.write(encoded, data, sr, subtype="PCM_16", format="WAV")
    # `.NAME.partial-PID` (`paths.partial_path`), not an anonymous temp name: one a killed
    # writer leaves is swept by the next write into the folder, whatever its target.
    tmp = partial_path(target)
    try:
        with ending.removing(tmp), open(tmp, "wb") as f:
            f.write(encoded.getbuffer())
            f.close()
            public_mode(tmp)
            os.replace(tmp, target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.filename is None:  # a write through the fd names no file: name the target
            raise OSError(err.errno, err.strerror, str(target)) from err
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


@contextmanager
def streamed_wav(path: str | Path, sr: int) -> Iterator[Callable[[np.ndarray], None]]:
    """A function that appends mono float audio to the 16-bit wav `path` as it comes (each
    piece flushed, so a player can follow). It is written into a hidden `.NAME.partial-PID`
    beside `path` (`paths.partial_path`) and renamed there on a clean exit; on any error the
    partial file is removed. The finished file is byte-identical to `write_wav` of all the
    pieces joined."""
    import soundfile as sf

    target = writable_file(path)
    tmp = partial_path(target)
    # Registered while it is written: a process ending on a signal removes it (`ending`).
    try:
        with (
            ending.removing(tmp),
            sf.SoundFile(tmp, "w", samplerate=sr, channels=1, subtype="PCM_16", format="WAV") as f,
        ):

            def write(audio: np.ndarray) -> None:
                f.write(_pcm_ready(audio, target))
                f.flush()

            yield write
            f.close()
            public_mode(tmp)
            os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class WavSink:
    """Where a speak's audio goes: the wav `target`, streamed (each piece `audio` is handed
    appended as it comes, `streamed_wav`) or written whole by `finish` — never half a file.

    A context manager: a streamed file is renamed into place on a clean exit and removed on
    an error; a whole one is only ever written by `finish`. `first_audio_s` is the seconds
    from `start` (a perf_counter) to the first audio on disk (None until some is)."""

    def __init__(self, target: str | Path, sr: int, stream: bool, start: float) -> None:
        self.target, self.sr, self.stream, self.start = target, sr, stream, start
        self.first_audio_s: float | None = None
        self._stack = ExitStack()
        self._write: Callable[[np.ndarray], None] | None = None

    def __enter__(self) -> WavSink:
        if self.stream:
            self._write = self._stack.enter_context(streamed_wav(self.target, self.sr))
        return self

    def audio(self, piece: np.ndarray) -> None:
        """The next piece of the utterance: appended now when streaming (else `finish` writes
        the whole audio)."""
        if self._write is None:
            return
        self._write(piece)
        if self.first_audio_s is None and piece.size:
            self.first_audio_s = time.perf_counter() - self.start

    def finish(self, audio: np.ndarray) -> None:
        """The utterance is spoken (`audio`: every piece joined): written whole now when not
        streaming (the streamed file is already on disk, renamed on exit)."""
        if not self.stream:
            write_wav(self.target, audio, self.sr)
            self.first_audio_s = time.perf_counter() - self.start

    def __exit__(self, *exc) -> bool | None:
        return self._stack.__exit__(*exc)


# -- reference recordings (read, never written) -------------------------------------------------

#: The lowest sample rate a reference recording may have: telephone speech's 8 kHz. Below it
#: a clip holds no voice to clone, and its header's length misleads (ten samples at "1 Hz" are
#: ten seconds, resampled to 240,000 samples of nothing).
MIN_REFERENCE_RATE = 8000


def check_reference_rate(path: str | Path, rate: int | None) -> None:
    """A `ReferenceAudioError` when the header's sample rate (None: unknown, the decoder's
    own formats) is below `MIN_REFERENCE_RATE`."""
    from conversion.core.errors import ReferenceAudioError

    if rate is not None and rate < MIN_REFERENCE_RATE:
        raise ReferenceAudioError(
            f"reference audio {path} is sampled at {rate} Hz; a voice needs at least "
            f"{MIN_REFERENCE_RATE} Hz (16-48 kHz is usual): record or export it at a real rate"
        )
