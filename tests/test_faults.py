"""Faults a real machine has: a writer killed mid-export, a full disk, a damaged weights cache.

Each is produced for real — a child process killed with SIGKILL, a tmpfs mounted at a few
hundred KB, a cache file cut short — and the test checks what a user is left with.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conversion.cli.main import main
from conversion.core.bundle import load_manifest
from conversion.core.host.audio_io import write_wav
from conversion.core.paths import no_space_message, staging_folder, sweep_stale_staging
from tests.test_bundle import _mlp_bundle

ROOT = Path(__file__).resolve().parents[1]


# A re-export that stops for good after its first asset is in the staging folder.
_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from conversion.core.bundle import BundleWriter
    from conversion.selftest import graphs as sg

    spec, _ = sg.mlp_graph(1)
    with BundleWriter(sys.argv[1], "test", overwrite=True, weights_sha256="cd" * 32) as bw:
        bw.add_graph(spec)
        print("staged", flush=True)
        time.sleep(600)
    """
)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_sigkill_during_export_keeps_the_previous_bundle_and_the_next_export_sweeps(tmp_path):
    dest = tmp_path / "b"
    _mlp_bundle(dest, seed=0)
    before = load_manifest(dest)
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(dest)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = iter(child.stdout.readline, "")  # the converter prints its own lines first
        assert any(line.strip() == "staged" for line in lines)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    stale = [p.name for p in tmp_path.iterdir() if p.name.startswith(".b.tmp-")]
    assert stale and str(child.pid) in stale[0]  # the killed writer's staging folder
    after = load_manifest(dest)  # hashes verified: the previous bundle still serves
    assert after.weights_sha256 == before.weights_sha256 == "ab" * 32

    _mlp_bundle(dest, seed=2, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert load_manifest(dest).graphs["mlp"]["sha256"] != before.graphs["mlp"]["sha256"]


def test_a_live_writers_staging_folder_is_left_alone(tmp_path):
    dest = tmp_path / "b"
    mine = staging_folder(dest)  # this process is alive: a second export must not take it
    dead = tmp_path / f".b.tmp-{_dead_pid()}-x1"
    dead.mkdir()
    removed = sweep_stale_staging(dest)
    assert removed == [dead] and mine.is_dir() and not dead.exists()


def test_a_writer_killed_between_its_renames_gets_the_previous_bundle_back(tmp_path):
    dest = tmp_path / "b"
    _mlp_bundle(dest, seed=0)
    digest = load_manifest(dest).graphs["mlp"]["sha256"]
    os.rename(dest, tmp_path / f".b.old-{_dead_pid()}")  # the state between the two renames
    sweep_stale_staging(dest)
    assert load_manifest(dest).graphs["mlp"]["sha256"] == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KB tmpfs: the disk that is full after a few writes (needs root, as CI has)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_full_disk_export_is_one_line_before_conversion(full_disk, capsys):
    assert main(["export", "core", "--output-dir", str(full_disk / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("voxport: error: no space left on the device")
    assert str(full_disk) in err[0] and "--output-dir" in err[0]
    assert os.listdir(full_disk) == []  # no staging folder, no half bundle


def test_full_disk_wav_names_the_file_and_leaves_nothing(full_disk):
    target = full_disk / "speech.wav"
    with pytest.raises(OSError) as caught:
        write_wav(target, np.zeros(24_000 * 10, np.float32), 24_000)  # 480 KB > 256 KB
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    message = no_space_message(caught.value)
    assert message is not None and str(target) in message
    assert os.listdir(full_disk) == []
    write_wav(target, np.zeros(2_400, np.float32), 24_000)  # the disk itself still works
    assert target.stat().st_size == 44 + 2 * 2_400


def test_truncated_file_in_the_weights_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from conversion.audio8_tts.port import PORT

    config = PORT.config("reduced")
    folder = PORT.resolve_weights("random", config, 3)
    manifest = json.loads((folder / "voxport-weights.json").read_text())
    name = max(manifest["files"], key=lambda n: manifest["files"][n]["size"])
    original = (folder / name).read_bytes()
    (folder / name).write_bytes(original[: len(original) // 2])  # an interrupted copy
    again = PORT.resolve_weights("random", config, 3)
    assert again == folder and (folder / name).read_bytes() == original
