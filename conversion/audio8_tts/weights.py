"""Audio8-TTS weights: a local snapshot in the publisher's layout, or seeded random ones.

    config.json                  the publisher's ArkttsConfig keys (random ones add voxport_config)
    model.safetensors            ArkttsModel's state dict, bf16 as published ("dtype": "bfloat16");
      or model.safetensors.index.json + its shards (the Hugging Face sharded convention)
    codec.pth                    the codec (config.json's `codec_filename`); a torch state dict,
                                 possibly under "state_dict" and/or keys prefixed `generator.` —
                                 only its presence is checked here, the codec module loads it
    tokenizer.json               the Qwen tokenizer (see tokenizer.py)

The state dict's names and shapes (`lm_param_shapes`) are read off the publisher's
`ArkttsModel.__init__` (modeling_arktts.py), with `base_model_prefix = ""` so keys carry no prefix:

    embeddings.weight                  [vocab_size, dim]     text + semantic ids; also the head:
                                       logits = F.linear(norm(h), embeddings.weight), so there is
                                       no lm_head key (get_output_embeddings() returns None)
    codebook_embeddings.weight         [codebook_size * num_codebooks, dim]  row = code + k * 4096
    layers.{i}.attention.wqkv.weight   [(n_head + 2 n_local_heads) head_dim, dim]  (q | k | v)
    layers.{i}.attention.wqkv.bias     same rows (attention_qkv_bias)
    layers.{i}.attention.wo.weight     [dim, n_head head_dim]   (no bias: attention_o_bias false)
    layers.{i}.attention.{q,k}_norm.weight  [head_dim]          only with attention_qk_norm (false)
    layers.{i}.feed_forward.w1/w3.weight [intermediate, dim], w2.weight [dim, intermediate]
    layers.{i}.attention_norm.weight, ffn_norm.weight  [dim]
    norm.weight                        [dim]
    fast_project_in.{weight,bias}      [fast_dim, dim], [fast_dim] — only when fast_dim != dim
                                       (an nn.Identity otherwise: no keys at the published sizes)
    fast_embeddings.weight             [codebook_size, fast_dim]
    fast_layers.{i}.…                  as layers, fast_* sizes, no qkv bias
    fast_norm.weight                   [fast_dim]
    fast_output.weight                 [codebook_size, fast_dim]   (no bias)

The RoPE tables (`freqs_cis`, `fast_freqs_cis`) are non-persistent buffers: not in the file.
Published sizes: 601,159,424 parameters (the card's "601M").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from conversion.core.errors import WeightsError
from conversion.core.json_file import load_json_object
from conversion.core.weights_folder import write_folder_atomically

from .calibration import CALIBRATION, calibrate
from .codec.config import CONFIGS as CODEC_CONFIGS
from .codec.config import CodecConfig
from .codec.model import Codec
from .codec.weights import load_codec
from .config import Audio8Config, BlockShape
from .reference import Audio8LM
from .tokenizer import TOKENIZER_FILE, check_tokenizer, load_tokenizer, write_tokenizer

CONFIG_FILE = "config.json"
LM_FILE = "model.safetensors"
LM_INDEX_FILE = "model.safetensors.index.json"
CODEC_FILE = "codec.pth"
GENERATION_CONFIG_FILE = "generation_config.json"
PROCESSOR_CONFIG_FILE = "processor_config.json"
PUBLISHER_DTYPE = torch.bfloat16

# The publisher's config.json keys our Audio8Config does not carry (values as published).
_PUBLISHER_EXTRA = {
    "architectures": ["ArkttsModel"],
    "attention_qk_norm": False,
    "auto_map": {
        "AutoConfig": "configuration_arktts.ArkttsConfig",
        "AutoModel": "modeling_arktts.ArkttsModel",
        "AutoModelForCausalLM": "modeling_arktts.ArkttsModel",
    },
    "codec_filename": CODEC_FILE,
    "dropout": 0.0,
    "dtype": "bfloat16",
    "fast_attention_qk_norm": False,
    "initializer_range": 0.02,
    "model_type": "arktts",
    "transformers_version": "4.57.5",
    "use_gradient_checkpointing": False,
}
# generation_config.json as published (sampling defaults of ArkttsModel.generate).
_GENERATION = {
    "do_sample": True,
    "max_new_tokens": 512,
    "temperature": 0.7,
    "top_k": 50,
    "top_p": 0.9,
    "transformers_version": "4.57.5",
}


# --- layout -----------------------------------------------------------------------------------


def _codec_name(folder: Path) -> str:
    try:
        return str(load_json_object(folder / CONFIG_FILE).get("codec_filename", CODEC_FILE))
    except (OSError, ValueError, AttributeError):
        return CODEC_FILE


def lm_files(folder: Path) -> list[Path]:
    """The LM safetensors file(s): model.safetensors, or the shards an index names."""
    folder = Path(folder)
    single, index = folder / LM_FILE, folder / LM_INDEX_FILE
    if single.is_file():
        return [single]
    if index.is_file():
        try:
            weight_map = load_json_object(index)["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise WeightsError(
                f"audio8_tts weights: {index} cannot be read ({type(err).__name__}): "
                "it is not a safetensors index with a weight_map"
            ) from err
        for name in shards:
            if not (folder / name).is_file():
                raise WeightsError(
                    f"audio8_tts weights: {folder / name} is missing (named by {LM_INDEX_FILE})"
                )
        return [folder / name for name in shards]
    raise WeightsError(
        f"audio8_tts weights: {single} is missing (the LM weights; a sharded snapshot has "
        f"{LM_INDEX_FILE} and its shards instead)"
    )


def check_layout(folder: Path, need_codec: bool = True) -> None:
    """Raise WeightsError naming the first missing snapshot file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise WeightsError(
            f"audio8_tts weights folder {folder} does not exist; pass a local snapshot of "
            "Audio8-TTS-Preview-0.6b (--weights DIR) or --weights random"
        )
    required = (
        f"{CONFIG_FILE}, {LM_FILE} (or {LM_INDEX_FILE} + shards), {CODEC_FILE}, {TOKENIZER_FILE}"
    )
    if not (folder / CONFIG_FILE).is_file():
        raise WeightsError(
            f"audio8_tts weights: {folder / CONFIG_FILE} is missing (a snapshot needs {required})"
        )
    lm_files(folder)
    if need_codec:
        codec = _codec_name(folder)
        if not (folder / codec).is_file():
            raise WeightsError(
                f"audio8_tts weights: {folder / codec} is missing (the codec "
                f"checkpoint; a snapshot needs {required})"
            )
    if not (folder / TOKENIZER_FILE).is_file():
        raise WeightsError(
            f"audio8_tts weights: {folder / TOKENIZER_FILE} is missing (a "
            f"snapshot needs {required})"
        )


def read_config(folder: Path) -> Audio8Config:
    """The snapshot's config.json as an Audio8Config (WeightsError naming the file)."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise WeightsError(f"audio8_tts weights: {path} is missing")
    try:
        return Audio8Config.read(path)
    except (ValueError, TypeError) as err:
        raise WeightsError(f"audio8_tts weights: {path} cannot be read ({err})") from err


# --- names and shapes -------------------------------------------------------------------------


def _block_shapes(prefix: str, b: BlockShape) -> dict[str, tuple[int, ...]]:
    qkv = (b.heads + 2 * b.kv_heads) * b.head_dim
    shapes: dict[str, tuple[int, ...]] = {f"{prefix}.attention.wqkv.weight": (qkv, b.dim)}
    if b.qkv_bias:
        shapes[f"{prefix}.attention.wqkv.bias"] = (qkv,)
    shapes[f"{prefix}.attention.wo.weight"] = (b.dim, b.heads * b.head_dim)
    if b.o_bias:
        shapes[f"{prefix}.attention.wo.bias"] = (b.dim,)
    if b.qk_norm:
        shapes[f"{prefix}.attention.q_norm.weight"] = (b.head_dim,)
        shapes[f"{prefix}.attention.k_norm.weight"] = (b.head_dim,)
    shapes[f"{prefix}.feed_forward.w1.weight"] = (b.hidden, b.dim)
    shapes[f"{prefix}.feed_forward.w2.weight"] = (b.dim, b.hidden)
    shapes[f"{prefix}.feed_forward.w3.weight"] = (b.hidden, b.dim)
    shapes[f"{prefix}.ffn_norm.weight"] = (b.dim,)
    shapes[f"{prefix}.attention_norm.weight"] = (b.dim,)
    return shapes


def lm_param_shapes(config: Audio8Config) -> dict[str, tuple[int, ...]]:
    """ArkttsModel's state-dict keys -> shapes, in module order."""
    c = config
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.weight": (c.vocab_size, c.dim),
        "codebook_embeddings.weight": (c.codebook_size * c.num_codebooks, c.dim),
    }
    for i in range(c.n_layer):
        shapes.update(_block_shapes(f"layers.{i}", c.block_shape()))
    shapes["norm.weight"] = (c.dim,)
    if c.fast_dim != c.dim:
        shapes["fast_project_in.weight"] = (c.fast_dim, c.dim)
        shapes["fast_project_in.bias"] = (c.fast_dim,)
    shapes["fast_embeddings.weight"] = (c.codebook_size, c.fast_dim)
    for i in range(c.n_fast_layer):
        shapes.update(_block_shapes(f"fast_layers.{i}", c.block_shape(fast=True)))
    shapes["fast_norm.weight"] = (c.fast_dim,)
    shapes["fast_output.weight"] = (c.codebook_size, c.fast_dim)
    return shapes


def param_count(config: Audio8Config) -> int:
    total = 0
    for shape in lm_param_shapes(config).values():
        n = 1
        for s in shape:
            n *= s
        total += n
    return total


# --- random weights ---------------------------------------------------------------------------


def _is_norm(name: str) -> bool:
    return name.endswith("norm.weight")


def random_lm_state(
    config: Audio8Config,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    calibrated: bool = True,
) -> dict[str, torch.Tensor]:
    """Seeded random ArkttsModel weights at `config`'s sizes, calibrated (`calibrate`).

    Matrices and embeddings ~ N(0, 0.02) (the publisher's initializer_range); norm weights
    1 + N(0, 0.05) and biases N(0, 0.05), so a dropped scale or bias shows in a gate.
    Drawn in fp32, one generator, module order, then calibrated and cast to `dtype`: the bf16
    snapshot holds exactly `random_lm_state(config, seed, torch.bfloat16)`.
    """
    gen = torch.Generator().manual_seed(int(seed))
    state: dict[str, torch.Tensor] = {}
    for name, shape in lm_param_shapes(config).items():
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        if _is_norm(name):
            value = 1.0 + 0.05 * noise
        elif name.endswith(".bias"):
            value = 0.05 * noise
        else:
            value = 0.02 * noise
        state[name] = value
    if calibrated:  # off only to measure what the plain draws do (calibration.py --uncalibrated)
        calibrate(state, config, seed)
    return {k: v.to(dtype) for k, v in state.items()}


def random_model(config: Audio8Config, seed: int = 0, calibrated: bool = True) -> Audio8LM:
    """A seeded random reference Audio8LM (the weights `random_lm_state` draws)."""
    model = Audio8LM(config).eval()
    model.load_state_dict(random_lm_state(config, seed, calibrated=calibrated))
    return model


# --- loading ----------------------------------------------------------------------------------


def load_lm_state(
    folder: Path, config: Audio8Config | None = None, dtype: torch.dtype = torch.float32
) -> dict[str, torch.Tensor]:
    """The snapshot's LM state dict (as `dtype`), checked key by key against `lm_param_shapes`.

    `config` defaults to the snapshot's config.json. WeightsError names the file and the first
    missing, unexpected or mis-shaped key.
    """
    from safetensors import safe_open

    folder = Path(folder)
    config = config or read_config(folder)
    files = lm_files(folder)
    expected = lm_param_shapes(config)
    state: dict[str, torch.Tensor] = {}
    try:
        handles = {path: safe_open(str(path), framework="pt") for path in files}
        where: dict[str, Path] = {}
        for path, f in handles.items():
            for key in f.keys():
                if key not in expected:
                    raise WeightsError(
                        f"audio8_tts weights: {path} has {key}, which the {config.name} "
                        "configuration's ArkttsModel does not (wrong config.json, or not "
                        "an Audio8-TTS checkpoint)"
                    )
                where[key] = path
        for key, want in expected.items():  # module order: the first bad key is reported
            if key not in where:
                source = files[0] if len(files) == 1 else folder / LM_INDEX_FILE
                raise WeightsError(
                    f"audio8_tts weights: {source} lacks {key} (the {config.name} "
                    "configuration's ArkttsModel needs it)"
                )
            f = handles[where[key]]
            shape = tuple(f.get_slice(key).get_shape())
            if shape != want:
                raise WeightsError(
                    f"audio8_tts weights: {where[key]}: {key} has shape {list(shape)}, the "
                    f"{config.name} configuration needs {list(want)}"
                )
            state[key] = f.get_tensor(key).to(dtype)
    except WeightsError:
        raise
    except Exception as err:  # noqa: BLE001 - header/decoder errors: a damaged file
        raise WeightsError(
            f"audio8_tts weights: {', '.join(str(p) for p in files)} cannot be read "
            f"({type(err).__name__}: {str(err)[:160]}); truncated or not a safetensors file"
        ) from err
    return {k: state[k] for k in expected}


# --- writing ----------------------------------------------------------------------------------


def publisher_config_json(config: Audio8Config) -> dict:
    """config.json as the publisher writes it, at `config`'s sizes, plus voxport_config."""
    data = {k: v for k, v in config.to_json().items() if k != "name"}
    if float(data["rope_base"]).is_integer():
        data["rope_base"] = int(data["rope_base"])
    data.update(_PUBLISHER_EXTRA)
    data["voxport_config"] = config.name
    return dict(sorted(data.items()))


def random_snapshot(
    dest: Path,
    config: Audio8Config,
    seed: int = 0,
    codec_writer: Callable[[Path], None] | None = None,
    dtype: torch.dtype = PUBLISHER_DTYPE,
) -> Path:
    """Seeded random weights at `config`'s sizes in the publisher's layout, written atomically.

    `codec_writer(path)` writes codec.pth; without one the snapshot has no codec (the manifest
    says so, and `check_layout(..., need_codec=True)` fails on it).
    """
    from safetensors.torch import save_file

    def fill(tmp: Path) -> dict:
        c = publisher_config_json(config)
        (tmp / CONFIG_FILE).write_text(json.dumps(c, indent=2) + "\n")
        gen = {
            **_GENERATION,
            "eos_token_id": config.eos_token_id,
            "pad_token_id": config.pad_token_id,
        }
        (tmp / GENERATION_CONFIG_FILE).write_text(json.dumps(gen, indent=2) + "\n")
        proc = {
            "audio_sampling_rate": config.codec_sample_rate,
            "auto_map": {"AutoProcessor": "processing_arktts.ArkttsProcessor"},
            "num_codebooks": config.num_codebooks,
            "processor_class": "ArkttsProcessor",
            "semantic_begin_id": config.semantic_begin_id,
        }
        (tmp / PROCESSOR_CONFIG_FILE).write_text(json.dumps(proc, indent=2) + "\n")
        state = random_lm_state(config, seed, dtype)
        save_file(state, str(tmp / LM_FILE), metadata={"format": "pt"})
        del state
        write_tokenizer(tmp, config)
        if codec_writer is not None:
            codec_writer(tmp / CODEC_FILE)
        return {
            "model": "audio8_tts",
            "config": config.name,
            "seed": seed,
            "random": True,
            "calibration": CALIBRATION,
            "dtype": str(dtype).removeprefix("torch."),
            "codec": CODEC_FILE if codec_writer is not None else None,
        }

    print(f"audio8_tts: writing seeded random weights ({config.name}) to {dest}", file=sys.stderr)
    return write_folder_atomically(Path(dest), fill)


@dataclass
class Loaded:
    """A snapshot in memory: the reference LM, the codec and the tokenizer."""

    folder: Path
    config: Audio8Config
    lm: Audio8LM
    codec: Codec
    codec_config: CodecConfig
    tokenizer: object


def load(folder: Path, config: Audio8Config) -> Loaded:
    """The reference LM, the codec and the tokenizer from a snapshot, checked against `config`."""
    check_layout(folder)
    found = read_config(folder)
    if found.name != config.name:
        raise WeightsError(
            f"audio8_tts weights in {folder} are the {found.name} configuration, but --config "
            f"{config.name} was asked for: pass --config {found.name}"
        )
    lm = Audio8LM(found).eval()
    lm.load_state_dict(load_lm_state(folder, found))
    codec_cfg = CODEC_CONFIGS[found.name]
    codec = load_codec(folder / found.codec_filename, codec_cfg).eval()
    tok = load_tokenizer(folder)
    check_tokenizer(tok, found, str(folder / TOKENIZER_FILE))
    return Loaded(folder, found, lm, codec, codec_cfg, tok)
