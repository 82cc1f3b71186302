"""Audio8 weights: the publisher's snapshot layout, state-dict names and shapes, seeded random
snapshots (reduced) that load back exactly, errors that name the file and key, and the stand-in
tokenizer's special ids at both configurations."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
import torch

from conversion.audio8_tts import weights
from conversion.audio8_tts.config import PUBLISHED, REDUCED, Audio8Config
from conversion.audio8_tts.tokenizer import (
    check_tokenizer,
    load_tokenizer,
    special_ids,
    write_tokenizer,
)
from conversion.core.errors import UserError, WeightsError
from conversion.core.weights_folder import folder_problem, read_manifest

SEED = 3
# The keys of the publisher's config.json (model/audio8_tts_0_6B_preview/config.json).
PUBLISHER_CONFIG_KEYS = {
    "architectures",
    "attention_o_bias",
    "attention_qk_norm",
    "attention_qkv_bias",
    "auto_map",
    "codebook_size",
    "codec_filename",
    "codec_frame_size",
    "codec_sample_rate",
    "dim",
    "dropout",
    "dtype",
    "eos_token_id",
    "fast_attention_o_bias",
    "fast_attention_qk_norm",
    "fast_attention_qkv_bias",
    "fast_dim",
    "fast_head_dim",
    "fast_intermediate_size",
    "fast_n_head",
    "fast_n_local_heads",
    "head_dim",
    "initializer_range",
    "intermediate_size",
    "max_seq_len",
    "model_type",
    "n_fast_layer",
    "n_head",
    "n_layer",
    "n_local_heads",
    "norm_eps",
    "norm_fastlayer_input",
    "num_codebooks",
    "pad_token_id",
    "ras_temperature",
    "ras_top_p",
    "ras_window_size",
    "rope_base",
    "semantic_begin_id",
    "semantic_end_id",
    "tie_word_embeddings",
    "transformers_version",
    "use_gradient_checkpointing",
    "vocab_size",
}


def _fake_codec(path):
    torch.save({"generator.quantizer.weight": torch.zeros(2, 2)}, path)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    torch.set_num_threads(1)
    dest = tmp_path_factory.mktemp("a8") / "reduced"
    return weights.random_snapshot(dest, REDUCED, SEED, codec_writer=_fake_codec)


def _copy(snapshot, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(snapshot, dest)
    return dest


# --- names and shapes -------------------------------------------------------------------------


def test_published_param_count_is_601m():
    shapes = weights.lm_param_shapes(PUBLISHED)
    assert weights.param_count(PUBLISHED) == 601_159_424
    assert len(shapes) == 226
    assert shapes["embeddings.weight"] == (155_776, 896)
    assert shapes["codebook_embeddings.weight"] == (40_960, 896)
    assert shapes["layers.0.attention.wqkv.weight"] == (1_152, 896)
    assert shapes["layers.23.attention.wqkv.bias"] == (1_152,)
    assert shapes["layers.0.attention.wo.weight"] == (896, 896)
    assert shapes["layers.0.feed_forward.w2.weight"] == (896, 4_864)
    assert shapes["fast_embeddings.weight"] == (4_096, 896)
    assert shapes["fast_output.weight"] == (4_096, 896)
    # tied head: no lm_head; o without bias; fast AR without qkv bias; no projection at 896/896
    assert not any("lm_head" in k or "output.weight" == k for k in shapes)
    assert "layers.0.attention.wo.bias" not in shapes
    assert "fast_layers.0.attention.wqkv.bias" not in shapes
    assert "fast_layers.3.attention.wqkv.weight" in shapes
    assert not any(k.startswith("fast_project_in") for k in shapes)
    assert not any("q_norm" in k for k in shapes)


def test_fast_projection_appears_when_widths_differ():
    config = dataclasses.replace(REDUCED, fast_dim=64, fast_n_head=2, fast_n_local_heads=1)
    shapes = weights.lm_param_shapes(config)
    assert shapes["fast_project_in.weight"] == (64, 128)
    assert shapes["fast_project_in.bias"] == (64,)
    assert shapes["fast_layers.0.attention.wqkv.weight"] == ((2 + 2) * 32, 64)


def test_random_state_is_seeded_and_shaped():
    a = weights.random_lm_state(REDUCED, 1)
    b = weights.random_lm_state(REDUCED, 1)
    c = weights.random_lm_state(REDUCED, 2)
    assert {k: tuple(v.shape) for k, v in a.items()} == weights.lm_param_shapes(REDUCED)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["embeddings.weight"], c["embeddings.weight"])
    norm = a["layers.0.attention_norm.weight"]
    assert 0.8 < float(norm.mean()) < 1.2 and float(norm.std()) > 0.01
    assert abs(float(a["layers.0.attention.wqkv.bias"].std()) - 0.05) < 0.02
    assert abs(float(a["embeddings.weight"].std()) - 0.02) < 0.002


# --- snapshot round trip ----------------------------------------------------------------------


def test_random_snapshot_round_trip(snapshot):
    weights.check_layout(snapshot)
    assert folder_problem(snapshot, full=True) is None
    manifest = read_manifest(snapshot)
    assert manifest["random"] and manifest["config"] == "reduced" and manifest["seed"] == SEED
    assert manifest["dtype"] == "bfloat16" and manifest["codec"] == "codec.pth"
    assert weights.read_config(snapshot) == REDUCED
    state = weights.load_lm_state(snapshot)
    want = weights.random_lm_state(REDUCED, SEED, torch.bfloat16)
    assert list(state) == list(weights.lm_param_shapes(REDUCED))
    assert all(state[k].dtype == torch.float32 for k in state)
    assert all(torch.equal(state[k], want[k].float()) for k in want)


def test_config_json_has_the_publisher_keys(snapshot):
    data = json.loads((snapshot / "config.json").read_text())
    assert set(data) == PUBLISHER_CONFIG_KEYS | {"voxport_config"}
    assert data["voxport_config"] == "reduced" and data["model_type"] == "arktts"
    assert Audio8Config.from_json(data, name="reduced") == REDUCED
    published = weights.publisher_config_json(PUBLISHED)
    assert published["rope_base"] == 1_000_000 and isinstance(published["rope_base"], int)
    assert published["semantic_begin_id"] == 151_678 and published["vocab_size"] == 155_776
    proc = json.loads((snapshot / "processor_config.json").read_text())
    assert proc["semantic_begin_id"] == REDUCED.semantic_begin_id


def test_snapshot_without_codec_writer_has_no_codec(tmp_path):
    small = dataclasses.replace(REDUCED, n_layer=1, n_fast_layer=1)
    dest = weights.random_snapshot(tmp_path / "nocodec", small, 0)
    assert not (dest / "codec.pth").exists()
    assert read_manifest(dest)["codec"] is None
    with pytest.raises(WeightsError, match="codec.pth is missing"):
        weights.check_layout(dest)
    weights.check_layout(dest, need_codec=False)
    assert set(weights.load_lm_state(dest, small)) == set(weights.lm_param_shapes(small))


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["config.json", "model.safetensors", "codec.pth", "tokenizer.json"]
)
def test_missing_file_is_named(snapshot, tmp_path, name):
    folder = _copy(snapshot, tmp_path)
    (folder / name).unlink()
    with pytest.raises(WeightsError, match=name.replace(".", r"\.") + " is missing"):
        weights.check_layout(folder)


def test_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        weights.check_layout(tmp_path / "nope")


def test_codec_filename_from_config(snapshot, tmp_path):
    folder = _copy(snapshot, tmp_path)
    data = json.loads((folder / "config.json").read_text())
    data["codec_filename"] = "other_codec.pth"
    (folder / "config.json").write_text(json.dumps(data))
    with pytest.raises(WeightsError, match="other_codec.pth is missing"):
        weights.check_layout(folder)


def test_shape_mismatch_names_file_and_key(snapshot, tmp_path):
    from safetensors.torch import save_file

    folder = _copy(snapshot, tmp_path)
    state = weights.random_lm_state(REDUCED, 0)
    state["layers.1.feed_forward.w3.weight"] = torch.zeros(255, 128)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(WeightsError, match=r"model\.safetensors: layers\.1\.feed_forward\.w3"):
        weights.load_lm_state(folder)
    # the published config asks for other shapes: the first key already differs
    with pytest.raises(WeightsError, match=r": embeddings\.weight has shape"):
        weights.load_lm_state(snapshot, PUBLISHED)


def test_missing_and_unexpected_keys_are_named(snapshot, tmp_path):
    from safetensors.torch import save_file

    folder = _copy(snapshot, tmp_path)
    state = weights.random_lm_state(REDUCED, 0)
    del state["fast_norm.weight"]
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(WeightsError, match="lacks fast_norm.weight"):
        weights.load_lm_state(folder)
    state = weights.random_lm_state(REDUCED, 0)
    state["lm_head.weight"] = torch.zeros(1)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(WeightsError, match="has lm_head.weight"):
        weights.load_lm_state(folder)


def test_damaged_safetensors_is_named(snapshot, tmp_path):
    folder = _copy(snapshot, tmp_path)
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(WeightsError, match=r"model\.safetensors cannot be read"):
        weights.load_lm_state(folder)


def test_sharded_index_loads(snapshot, tmp_path):
    from safetensors.torch import save_file

    folder = _copy(snapshot, tmp_path)
    state = weights.load_lm_state(snapshot)
    (folder / "model.safetensors").unlink()
    keys = list(state)
    shards = {
        "model-00001-of-00002.safetensors": keys[:10],
        "model-00002-of-00002.safetensors": keys[10:],
    }
    weight_map = {}
    for name, part in shards.items():
        save_file({k: state[k] for k in part}, str(folder / name))
        weight_map.update({k: name for k in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    weights.check_layout(folder)
    again = weights.load_lm_state(folder)
    assert all(torch.equal(again[k], state[k]) for k in state)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(WeightsError, match="model-00002-of-00002.safetensors is missing"):
        weights.check_layout(folder)


# --- tokenizer --------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [REDUCED, PUBLISHED], ids=lambda c: c.name)
def test_tokenizer_specials_at_config_ids(tmp_path, config):
    write_tokenizer(tmp_path, config)
    tok = load_tokenizer(tmp_path)
    check_tokenizer(tok, config)
    assert tok.get_vocab_size() == config.vocab_size
    assert tok.token_to_id("<|im_end|>") == config.eos_token_id
    assert tok.token_to_id("<|endoftext|>") == config.pad_token_id
    assert tok.token_to_id("<|semantic:0|>") == config.semantic_begin_id
    assert tok.token_to_id("<|semantic:4095|>") == config.semantic_end_id
    voice = tok.token_to_id("<|voice|>")
    assert voice is not None and not config.semantic_begin_id <= voice <= config.semantic_end_id
    if config is PUBLISHED:
        assert tok.token_to_id("<|im_start|>") == 151_644
        assert (151_643, 151_645) == (config.pad_token_id, config.eos_token_id)
    ids = tok.encode("<|im_start|>user\nHi 世界<|im_end|>\n", add_special_tokens=False).ids
    assert ids[0] == special_ids(config)["<|im_start|>"]
    assert max(i for i in ids if i != ids[0] and i != config.eos_token_id) < 256
    assert tok.decode(ids, skip_special_tokens=True) == "user\nHi 世界\n"


def test_tokenizer_errors(tmp_path):
    with pytest.raises(WeightsError, match=r"tokenizer\.json is missing"):
        load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(WeightsError, match=r"tokenizer\.json cannot be read"):
        load_tokenizer(tmp_path)
    write_tokenizer(tmp_path, REDUCED)
    with pytest.raises(WeightsError, match="do not belong together"):
        check_tokenizer(load_tokenizer(tmp_path), PUBLISHED)
