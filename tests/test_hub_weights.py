"""`--weights OWNER/NAME` resolves through huggingface_hub's own cache, offline.

The test lays out a hub cache folder the way the library writes one (blobs named by hash,
snapshot files as relative links to them, refs/main naming the commit) and lets the library
read it in a child process with HF_HUB_OFFLINE=1: nothing is mocked.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conversion.core.hub import is_hub_id

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _lay_out_hub_cache(cache: Path, repo_id: str, files: dict[str, Path]) -> Path:
    """`files` (name in the repo -> local file) as huggingface_hub's cache holds a snapshot."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True)
    for name, src in files.items():
        data = src.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return snap


def _voxport(*argv: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "conversion.cli.main", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def chatterbox_snapshot() -> Path:
    from conversion.chatterbox.port import PORT

    return PORT.resolve_weights("random", PORT.config("reduced"), 0)


def test_hub_id_reads_the_library_cache_offline(chatterbox_snapshot, tmp_path, capsys):
    from conversion.chatterbox.port import PORT
    from conversion.cli.main import main

    cache = tmp_path / "hub"
    files = {n: chatterbox_snapshot / n for n in PORT.hub_files}
    files["README.md"] = chatterbox_snapshot / "tokenizer.json"  # not a loader file
    snap = _lay_out_hub_cache(cache, "ResembleAI/chatterbox", files)
    text = "Hello there, friend. How are you today?"
    by_hub = _voxport(
        "tokenize", "chatterbox", text, "--config", "reduced",
        "--weights", "ResembleAI/chatterbox", cache=cache,
    )  # fmt: skip
    assert by_hub.returncode == 0, by_hub.stderr
    assert (
        main(["tokenize", "chatterbox", text, "--config", "reduced", "--weights", str(snap)]) == 0
    )
    chunks = json.loads(by_hub.stdout)["chunks"]
    assert chunks and chunks == json.loads(capsys.readouterr().out)["chunks"]


# One child for the three models (each import of a model costs seconds): main() per model.
_NO_CACHE = """
import contextlib, io, json, sys
from conversion.cli.main import main

out = []
for model, repo in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["export", model, "--weights", repo])
    out.append([model, rc, err.getvalue()])
print(json.dumps(out))
"""

HUB_IDS = {
    "kokoro": "hexgrad/Kokoro-82M",
    "chatterbox": "ResembleAI/chatterbox",
    "audio8_tts": "Edge0/Audio8-TTS-Preview-0.6b",
}


def test_each_port_names_its_publishers_repo():
    from conversion.cli import registry

    assert {m: registry.port(m).hub_repo for m in HUB_IDS} == HUB_IDS


def test_no_network_and_no_cached_copy_is_one_line(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty-hub")}
    done = subprocess.run(
        [sys.executable, "-c", _NO_CACHE, json.dumps(list(HUB_IDS.items()))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for model, rc, stderr in json.loads(done.stdout.strip().splitlines()[-1]):
        repo = HUB_IDS[model]
        lines = stderr.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("voxport: error:"), stderr
        assert repo in lines[0] and "HF_HUB_OFFLINE" in lines[0] and "--weights DIR" in lines[0]


def test_a_local_folder_named_like_a_hub_id_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert is_hub_id("owner/model")
    (tmp_path / "owner" / "model").mkdir(parents=True)
    assert not is_hub_id("owner/model")
    assert not is_hub_id("random") and not is_hub_id("a/b/c") and not is_hub_id("/abs/path")
