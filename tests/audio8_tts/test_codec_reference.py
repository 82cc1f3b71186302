"""The Audio8 codec reference written from the architecture (conversion/audio8_tts/codec/
reference.py) and the rungs that compare the exported graphs against it.

The reference must be able to fail the rung: four deliberate bugs, each the kind a re-author
makes, are injected into the reference alone (the bundle stays as exported) and each must make
`codec.window` fail; the unbroken reference passes it, the streamed windows and the encoder
rungs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.audio8_tts.codec import reference as CR
from conversion.audio8_tts.codec.config import REDUCED as CFG
from conversion.audio8_tts.codec.graphs import codec_graph_spec, encoder_graph_spec
from conversion.audio8_tts.codec.host import book_sizes
from conversion.audio8_tts.codec.weights import load_codec, write_random_codec
from conversion.audio8_tts.gate.codec_rungs import (
    CODEC_COS_MIN,
    codec_rung,
    encoder_rungs,
    random_codes,
    reference_clip,
    stream_vs_whole_rungs,
)
from conversion.core.bundle import BundleWriter
from conversion.core.runtime.session import Session
from gates.ladder import run_ladder

torch.set_num_threads(1)
SEED = 2


@pytest.fixture(scope="module")
def codec_file(tmp_path_factory):
    # the training layout ({"state_dict": {"generator.<key>": ...}}): read_state unwraps it
    return write_random_codec(tmp_path_factory.mktemp("a8cr") / "codec.pth", CFG, 1, nested=True)


@pytest.fixture(scope="module")
def state(codec_file):
    return CR.read_state(codec_file)


@pytest.fixture(scope="module")
def session(codec_file, tmp_path_factory):
    codec = load_codec(codec_file, CFG)
    dest = tmp_path_factory.mktemp("a8cr-bundle") / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts", precision="fp32") as bw:
        bw.add_graph(codec_graph_spec(codec))
        bw.add_graph(encoder_graph_spec(codec))
    with Session(dest) as s:
        yield s


def _report(rungs):
    return {r.name: r for r in run_ladder("audio8_tts", rungs, progress=False).rungs}


def test_read_state_unwraps_the_training_layout(state):
    assert not any(k.startswith(("generator.", "discriminator.")) for k in state)
    assert "decoder.model.0.conv.parametrizations.weight.original1" in state
    assert "quantizer.quantizer.quantizers.0.in_proj.weight_v" in state


def test_the_graphs_pass_against_the_reference(session, state):
    got = _report(
        [
            codec_rung(session, state, CFG, SEED),
            *stream_vs_whole_rungs(session, state, CFG, SEED),
            *encoder_rungs(session, state, CFG, SEED),
        ]
    )
    for r in got.values():
        assert r.passed, f"{r.name}: {r.value} vs {r.threshold}: {r.detail}"
    assert got["codec.window"].value > 0.99999


# Each bug replaces one function of the reference with a plausible wrong writing of it.
def _snake_without_reciprocal(x, alpha):
    return x + torch.sin(alpha * x) ** 2  # the 1/alpha scale forgotten


def _transpose_cropped_left(x, w, p, stride):
    weight = CR._weight(w, f"{p}.conv")
    y = torch.nn.functional.conv_transpose1d(x, weight, w[f"{p}.conv.bias"], stride=stride)
    crop = weight.shape[-1] - stride
    return y[..., crop:]  # crops the start instead of the end: not causal


def _rope_rotate_half(x, cos, sin):
    half = x.shape[-1] // 2  # rotate-half pairs (i, i + d/2) instead of the GPT-J pairs
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def _weight_norm_whole_tensor(w, conv):
    if f"{conv}.parametrizations.weight.original1" in w:
        g = w[f"{conv}.parametrizations.weight.original0"]
        v = w[f"{conv}.parametrizations.weight.original1"]
    elif f"{conv}.weight_v" in w:
        g, v = w[f"{conv}.weight_g"], w[f"{conv}.weight_v"]
    else:
        return w[f"{conv}.weight"]
    return g * v / v.norm()  # one norm over the whole tensor, not per output channel


BUGS = {
    "_snake": _snake_without_reciprocal,
    "_conv_transpose": _transpose_cropped_left,
    "_apply_rope": _rope_rotate_half,
    "_weight": _weight_norm_whole_tensor,
}


@pytest.mark.parametrize("name", sorted(BUGS))
def test_a_broken_reference_fails_the_codec_rung(session, state, monkeypatch, name):
    codes = random_codes(CFG, 8, SEED)
    with torch.no_grad():
        before = CR.decode(state, CFG, torch.from_numpy(codes)[None])
    monkeypatch.setattr(CR, name, BUGS[name])
    with torch.no_grad():
        after = CR.decode(state, CFG, torch.from_numpy(codes)[None])
    assert not torch.allclose(before, after)  # the bug is on the decode path
    rung = _report([codec_rung(session, state, CFG, SEED)])["codec.window"]
    assert not rung.passed, f"{name}: {rung.value} {rung.detail}"
    assert rung.value < CODEC_COS_MIN


def test_the_reference_does_not_share_the_ports_modules():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(CR))
    imported = {
        (node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    # the config's numbers only: no module, layer or helper of codec/model.py, layers.py,
    # quantizer.py, weights.py or graphs.py
    assert {n for m, n in imported if m in ("config", "model", "graphs")} <= {"CodecConfig"}
    assert not any(m.endswith(("layers", "quantizer", "weights")) for m, _ in imported)
    assert not any(m.endswith(("graphs", "rewrites", "host")) for m, _ in imported)


def test_the_reference_decodes_and_encodes_every_book(state):
    codes = random_codes(CFG, 6, SEED)
    with torch.no_grad():
        wav = CR.decode(state, CFG, torch.from_numpy(codes)[None])
        moved = codes.copy()
        moved[-1, 3] = (moved[-1, 3] + 1) % 1024  # the last residual book, one frame
        wav2 = CR.decode(state, CFG, torch.from_numpy(moved)[None])
    assert wav.shape == (1, 1, 6 * CFG.frame_size)
    fs = CFG.frame_size
    # causal: frames before 3 untouched, frame 3 on changed
    assert torch.equal(wav[..., : 3 * fs], wav2[..., : 3 * fs])
    assert not torch.allclose(wav[..., 3 * fs :], wav2[..., 3 * fs :])
    clip = torch.from_numpy(reference_clip(CFG, 3 * fs + 100, SEED))[None, None]
    with torch.no_grad():
        got = CR.encode(state, CFG, clip)
    assert got.shape == (1, CFG.num_books, 4)
    assert int(got[0, 0].max()) < CFG.semantic_size and int(got[0, 1:].max()) < CFG.residual_size
    assert np.unique(got[0].numpy()).size > 4


def test_the_codec_rungs_draw_codes_past_the_residual_books():
    """Codes as the fast head can draw them (port note item 8: 4,096 rows for books of 1,024):
    in a 32-frame window every residual book holds codes past its last entry, the semantic book
    none, and none passes the head's rows."""
    codes = random_codes(CFG, CFG.graph_frames, SEED)
    sizes = book_sizes(CFG)
    past = codes > (sizes - 1)[:, None]
    assert not past[0].any()
    assert past[1:].any(axis=1).all(), past.sum(axis=1)
    assert 0.15 < past[1:].mean() < 0.35 and codes.min() >= 0 and codes.max() < 4096
    # the codes inside their books are the ones drawn before (the same seeded draw)
    inside = random_codes(CFG, CFG.graph_frames, SEED, out_of_book=0.0)
    assert (inside < sizes[:, None]).all() and np.array_equal(codes[~past], inside[~past])


@pytest.mark.parametrize("kind", ["removed", "stacked"])
def test_a_codec_graph_without_the_per_book_clamp_fails_the_codec_rungs(
    codec_file, state, tmp_path, kind
):
    """The codec graph's clamp taken out (`mutants._codec_clamp`: every book bounded at the
    fast head's last row, which this runtime refuses as an out-of-range gather; or one bound
    at the stacked table's end, a residual draw past its book reading the next book's entries):
    the window and every streamed window fail. Codes drawn inside every book passed both."""
    from conversion.audio8_tts import mutants as M
    from conversion.audio8_tts.codec import graphs as CG

    codec = load_codec(codec_file, CFG)
    dest = tmp_path / "bundle"
    with M._patched(CG.CodecDecode, "__init__", M._codec_clamp(kind)):
        with torch.no_grad(), BundleWriter(dest, model="audio8_tts", precision="fp32") as bw:
            bw.add_graph(codec_graph_spec(codec))
    with Session(dest) as session:
        got = _report(
            [
                codec_rung(session, state, CFG, SEED),
                *stream_vs_whole_rungs(session, state, CFG, SEED),
            ]
        )
    assert not any(r.passed for r in got.values()), {n: r.value for n, r in got.items()}
