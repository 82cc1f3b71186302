"""Written wavs: atomic, with the mode a plain open() gives, and an unwritable output refused
before any work (CI runs as root, where a permission check alone says yes to /proc)."""

import os
import stat

import numpy as np
import pytest
import soundfile as sf

from conversion.cli.main import main
from conversion.core.errors import UserError
from conversion.core.host.audio_io import write_wav


def test_wav_has_the_umask_mode_and_the_samples(tmp_path):
    umask = os.umask(0o022)
    try:
        path = write_wav(tmp_path / "a.wav", np.linspace(-0.5, 0.5, 2400, dtype=np.float32), 24000)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600
    audio, sr = sf.read(path, dtype="float32")
    assert sr == 24000 and audio.size == 2400 and abs(float(audio[0]) + 0.5) < 1e-4
    assert [p.name for p in tmp_path.iterdir()] == ["a.wav"]  # no temp file left


def test_unwritable_wav_is_refused_before_writing():
    with pytest.raises(UserError, match="cannot write to /proc"):
        write_wav("/proc/voxport.wav", np.zeros(10, np.float32), 24000)


def test_speak_to_an_unwritable_output_is_one_line_exit_2_before_any_work(capsys, monkeypatch):
    from conversion.cli import registry

    def no_work(*_a, **_k):
        raise AssertionError("speak started before checking its output")

    monkeypatch.setattr(registry, "verb", no_work)
    assert main(["speak", "kokoro", "Hello there.", "-o", "/proc/x.wav"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("voxport: error: cannot write to /proc"), err


def test_a_killed_writers_partial_wav_is_removed_by_the_next_write(tmp_path):
    """A writer killed mid-stream (SIGKILL: nothing of its own runs) leaves its hidden partial
    file; the next write to that target removes it. A live writer's partial file is its own
    (named by its pid) and is left alone: two writers of one target never share one."""
    import subprocess
    import sys

    from conversion.core.host.audio_io import streamed_wav

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    target = tmp_path / "x.wav"
    stale = tmp_path / f".x.wav.partial-{dead.pid}"
    live = tmp_path / f".x.wav.partial-{os.getppid()}"  # a process that runs: not this one's
    stale.write_bytes(b"RIFF")
    live.write_bytes(b"RIFF")
    with streamed_wav(target, 24000) as write:
        assert (tmp_path / f".x.wav.partial-{os.getpid()}").exists()
        write(np.zeros(240, np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["x.wav", live.name])
    assert sf.info(target).frames == 240
