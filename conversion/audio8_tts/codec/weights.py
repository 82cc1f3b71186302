"""The codec's weights: its state dict's keys and shapes, seeded random `codec.pth` files, and
`load_codec` (a snapshot's `codec.pth` -> an eval `Codec`, checked key by key).

Checkpoint (`ArkttsModel.load_codec`): `torch.load(codec.pth)`; if it has a `state_dict`
key, that; if any key contains `generator.`, only those keys with `generator.` removed; keys
ending in `freqs_cis` / `causal_mask` dropped; `load_state_dict(strict=True)`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

import torch

from conversion.core.errors import WeightsError

from .config import PUBLISHED, REDUCED, CodecConfig
from .layers import _norm_except_dim0
from .model import Codec

CODEC_FILENAME = "codec.pth"

# -- state dicts ---------------------------------------------------------------------------------


def codec_state_shapes(cfg: CodecConfig) -> dict[str, tuple[int, ...]]:
    """Every key of the publisher's codec state dict at `cfg`, with its shape."""
    with torch.device("meta"):
        model = Codec(cfg)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def parameter_count(cfg: CodecConfig) -> int:
    return sum(math.prod(s) for s in codec_state_shapes(cfg).values())


def _gain(key: str, cfg: CodecConfig) -> float:
    """Extra scale that keeps random activations O(1): residual branches add 0.3 x, and the
    last conv lands tanh's input at std ~0.5 (not saturated, so parity checks see signal)."""
    if re.search(r"block\.3\.conv\.parametrizations", key):
        return 0.3
    if key.startswith(f"decoder.model.{len(cfg.decoder_strides) + 2}."):
        return 0.3
    return 1.0


_WEIGHT_V = ("parametrizations.weight.original1", "weight_v")
_WEIGHT_G = ("original0", "weight_g")


def _random_weight_norm(
    key: str, shape: tuple[int, ...], cfg: CodecConfig, gen: torch.Generator
) -> dict[str, torch.Tensor]:
    """A weight-norm pair: v (`key`) and its g, the effective weight at 1/sqrt(fan-in) scale."""
    transposed = re.match(r"decoder\.model\.\d+\.block\.1\.conv\.", key) is not None
    if transposed:  # [C_in, C_out, K]: each output sees C_in * (K/s) = 2 C_in taps
        fan_in = shape[0] * 2
    else:
        fan_in = shape[1] * shape[2]
    w = torch.randn(shape, generator=gen) / math.sqrt(fan_in) * _gain(key, cfg)
    g = _norm_except_dim0(w)
    v = w * (0.5 + torch.rand((shape[0], *([1] * (len(shape) - 1))), generator=gen))
    g_key = (
        key[: -len("original1")] + "original0"
        if key.endswith("original1")
        else (key[: -len("weight_v")] + "weight_g")
    )
    return {key: v, g_key: g}


def _random_tensor(key: str, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Any other parameter, by what its key names."""

    def randn() -> torch.Tensor:
        return torch.randn(shape, generator=gen)

    def rand() -> torch.Tensor:
        return torch.rand(shape, generator=gen)

    if key.endswith("alpha"):
        return 0.5 + rand()
    if key.endswith("gamma"):
        return 0.1 + 0.2 * rand()
    if key.endswith("codebook.weight"):
        return randn()
    if key.endswith("norm.weight"):
        return 1.0 + 0.1 * randn()
    if key.endswith("bias"):
        return 0.05 * randn()
    if key.startswith("quantizer.upsample.") and key.endswith(".0.conv.weight"):
        return randn() / math.sqrt(shape[0])  # transposed: fan-in C_in
    if len(shape) >= 2:  # linears, plain convs
        return randn() / math.sqrt(math.prod(shape[1:]))
    return 0.1 * randn()


def random_codec_state(
    cfg: CodecConfig, seed: int = 0, only: tuple[str, ...] | None = None
) -> dict[str, torch.Tensor]:
    """Seeded weights that keep activations O(1) through every layer and give every parameter
    signal: weight-norm g/v chosen so the effective weight has 1/sqrt(fan-in) scale (v a
    randomly rescaled copy, so the normalisation is exercised), LayerScale / ConvNeXt gammas
    ~0.1-0.3 (the publisher's inits 1e-2 / 1e-6 would hide the transformers), biases and
    Snake alphas perturbed. `only`: just the keys under those key prefixes."""
    gen = torch.Generator().manual_seed(seed)
    shapes = codec_state_shapes(cfg)
    if only is not None:  # a subset by key prefix (e.g. the decode path of the published size)
        shapes = {k: v for k, v in shapes.items() if k.startswith(only)}
    state: dict[str, torch.Tensor] = {}
    for key, shape in shapes.items():
        if key in state or key.endswith(_WEIGHT_G):  # g is written with its v
            continue
        if key.endswith(_WEIGHT_V):
            state.update(_random_weight_norm(key, shape, cfg, gen))
        else:
            state[key] = _random_tensor(key, shape, gen)
    return {k: state[k] for k in shapes}


def write_random_codec(
    path: Path | str, cfg: CodecConfig = REDUCED, seed: int = 0, nested: bool = False
) -> Path:
    """`codec.pth` with seeded random weights; `nested` writes the training layout
    ({"state_dict": {"generator.<key>": ..., "discriminator.<key>": ...}})."""
    state = random_codec_state(cfg, seed)
    if nested:
        state = {
            "state_dict": {f"generator.{k}": v for k, v in state.items()}
            | {"discriminator.dummy.weight": torch.zeros(2)}
        }
    path = Path(path)
    if path.is_dir():
        path = path / CODEC_FILENAME
    torch.save(state, path)
    return path


def publisher_state(raw: Mapping) -> dict[str, torch.Tensor]:
    """The publisher's unwrapping: `state_dict`, `generator.` nesting, rope/mask buffers."""
    state = dict(raw)
    if "state_dict" in state:
        state = dict(state["state_dict"])
    if any("generator." in k for k in state):
        state = {k.replace("generator.", ""): v for k, v in state.items() if "generator." in k}
    return {k: v for k, v in state.items() if not k.endswith(("freqs_cis", "causal_mask"))}


def load_codec(path: Path | str, cfg: CodecConfig = PUBLISHED) -> Codec:
    """A `Codec` from a `codec.pth` (or a folder holding one); WeightsError names the file and
    the first missing / unexpected / mis-shaped key."""
    path = Path(path)
    if path.is_dir():
        path = path / CODEC_FILENAME
    if not path.is_file():
        raise WeightsError(f"codec weights not found: {path} (expected the snapshot's codec.pth)")
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise WeightsError(f"{path}: not a readable torch checkpoint ({e})") from e
    if not isinstance(raw, Mapping):
        raise WeightsError(f"{path}: expected a state dict, found {type(raw).__name__}")
    state = publisher_state(raw)
    shapes = codec_state_shapes(cfg)
    missing = [k for k in shapes if k not in state]
    if missing:
        raise WeightsError(
            f"{path}: {len(missing)} codec key(s) missing at config '{cfg.name}', first: "
            f"'{missing[0]}'"
        )
    extra = [k for k in state if k not in shapes]
    if extra:
        raise WeightsError(
            f"{path}: {len(extra)} unexpected key(s) for config '{cfg.name}', first: '{extra[0]}'"
        )
    for k, shape in shapes.items():
        if tuple(state[k].shape) != shape:
            raise WeightsError(
                f"{path}: key '{k}' has shape {list(state[k].shape)}, config '{cfg.name}' "
                f"wants {list(shape)}"
            )
    model = Codec(cfg)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model.eval().requires_grad_(False)
