"""Audio8 fixtures for the Swift host (ios/, VoxportHost/Audio8), written by the Python host code.

`conversion.cli.swift_fixtures.write_fixtures` calls :func:`write_fixtures` for
`ios/Tests/Fixtures/audio8_tts/`. Every expected value comes from the code the Swift host must
agree with: `host_files.host_table` (the bundle's tables), `prompt.build_prompt` (prompt rows,
budget errors), `reference.seeded_uniforms` (numpy's PCG64 draws), `ar.host.generate` (prefill
windows, the RAS window, frame codes, stops), `codec.host.window_plan` / `prepare_codes`, and
`Audio8Pipeline.speak` (whole and streamed) run over a recording session instead of Core AI.

Reduced configuration, stand-in tokenizer. No graph runs here: the graph outputs are seeded
stand-ins (semantic draws, codes, wav), and the logits outputs — carried, never read by the
host — have small stand-in shapes. The uniforms ([2, 4097] + [9, 4096] floats a frame) are
not stored: the Swift host draws them from the seed as numpy does, and each recorded call
carries the sha256 of the uniforms the Python host fed (checked against the Swift host's).
The codec graph's window is 8 frames here (context 2), so a short utterance spans windows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from conversion.core.runtime.session import StandInSession

from .ar import host as ar_host
from .ar.graphs import FRAME, GRAPH, PREFILL
from .codec import host as host_codec
from .codec.config import REDUCED as CODEC_REDUCED
from .codec.graphs import CODEC_GRAPH, FUNCTION
from .config import REDUCED, Audio8Config
from .host_files import HOST_TABLE_FILE, host_table_bytes
from .prompt import build_prompt, clean_text
from .reference import seeded_uniforms
from .text_fixtures import write_text_fixtures
from .voice import Voice, transcript_ids

CONFIG = REDUCED
CODEC_WINDOW = 8
NOISE = ("noise_slow", "noise_fast")
PROMPT_TEXTS = ("Hello there.", "  Two   spaces,\tand a tab. ", "日本語もOK")
REF_TEXTS = ("A short clip.", "<|speaker:3|> tagged")
UNIFORM_SEEDS = (0, 1, 1001, 12345)
PIPELINES = {
    # name: (text, with voice, stream, eos step per piece (None = run to the budget))
    "plain_whole": ("Hello there. How are you today?", False, False, (7, None)),
    "voice_stream": ("Say it once more.", True, True, (None,)),
}
MAX_FRAMES = 12
SEED = 3


def stand_in_tokenizer(config: Audio8Config = CONFIG):
    from tokenizers import Tokenizer

    from .tokenizer import tokenizer_spec

    return Tokenizer.from_str(json.dumps(tokenizer_spec(config)))


def formula_codes(frames: int, k: int = 0) -> np.ndarray:
    """Reference codes [10, frames]: (37 b + 101 t + 7 k) * 53 mod 4096 (books 1..9 above
    1,023 too, as the processor allows), int32."""
    b = np.arange(CONFIG.num_codebooks)[:, None]
    t = np.arange(frames)[None, :]
    return ((37 * b + 101 * t + 7 * k) * 53 % CONFIG.codebook_size).astype(np.int32)


def _json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(clean_text(text), add_special_tokens=False).ids


def _write_prompts(root: Path, tokenizer) -> None:
    cases = []
    for i, text in enumerate(PROMPT_TEXTS):
        cases.append(
            {"ids": _ids(tokenizer, text), "prompt": build_prompt(tokenizer, CONFIG, text)}
        )
        for j, ref in enumerate(REF_TEXTS):
            codes = formula_codes(3 + i + j, k=j)
            prompt = build_prompt(tokenizer, CONFIG, text, codes, ref)
            cases.append(
                {
                    "ids": _ids(tokenizer, text),
                    "voice_codes": codes.tolist(),
                    "voice_text_ids": transcript_ids(tokenizer, ref).tolist(),
                    "prompt": prompt,
                }
            )
    for c in cases:
        c["prompt"] = c["prompt"].tolist()
    # prompt + frames past the KV rows: build_prompt's error (the number the host must refuse)
    width = len(cases[0]["prompt"][0])
    budget = {"ids": cases[0]["ids"], "fits": CONFIG.max_seq_len - width, "columns": width}
    try:
        build_prompt(tokenizer, CONFIG, PROMPT_TEXTS[0], max_new_frames=budget["fits"] + 1)
    except Exception as err:  # noqa: BLE001 - the fixture records the message
        budget["error"] = str(err)
    _json(root / "prompt.json", {"cases": cases, "budget": budget})


def _write_uniforms(root: Path) -> None:
    cases = []
    for seed in UNIFORM_SEEDS:
        fn = seeded_uniforms(seed, CONFIG)
        for step in range(3):
            u_slow, u_fast = fn(step)
            cases.append(
                {
                    "seed": seed,
                    "step": step,
                    "slow_head": [float(x) for x in u_slow.reshape(-1)[:12]],
                    "fast_tail": [float(x) for x in u_fast.reshape(-1)[-6:]],
                    "slow_sha256": _sha(u_slow),
                    "fast_sha256": _sha(u_fast),
                    "slow_shape": list(u_slow.shape),
                    "fast_shape": list(u_fast.shape),
                }
            )
    _json(root / "uniforms.json", {"cases": cases})


class _Manifest:
    def __init__(self, window: int) -> None:
        self.window = window

    def function(self, graph: str, function: str) -> dict:
        return {"inputs": [{"shape": [1, CONFIG.num_codebooks, self.window]}]}


class _RecordingSession(StandInSession):
    """Stands in for a Core AI session: seeded `ar` and `codec` outputs (semantic eos at a
    scripted step of each piece), every call and state reset recorded in order."""

    def __init__(self, rng: np.random.Generator, eos_steps=(), window: int = CODEC_WINDOW):
        self.rng = rng
        self.eos_steps = list(eos_steps)
        self.manifest = _Manifest(window)
        self.events: list[dict] = []
        self.piece = -1
        self.step = 0

    def reset_state(self, graph: str, state: str = "default") -> None:
        self.piece += 1
        self.step = 0
        self.events.append({"reset": graph, "state": state})

    def _frame(self) -> dict:
        r, c = self.rng, CONFIG
        eos = self.piece < len(self.eos_steps) and self.eos_steps[self.piece] == self.step
        code0 = int(r.integers(0, c.codebook_size))
        semantic = c.eos_token_id if eos else c.semantic_begin_id + code0
        codes = np.concatenate([[code0], r.integers(0, c.codebook_size, c.num_codebooks - 1)])
        self.step += 1
        return {
            "logits": r.standard_normal((1, 4)).astype(np.float32),
            "semantic": np.array([semantic], np.int32),
            "normal": np.array([semantic], np.int32),
            "high": np.array([c.semantic_begin_id + int(r.integers(0, 4096))], np.int32),
            "codes": codes.astype(np.int32),
            "fast_logits": r.standard_normal((c.num_codebooks - 1, 4)).astype(np.float32),
        }

    def run(self, graph: str, function: str, inputs: dict, state: str = "default") -> dict:
        if graph == CODEC_GRAPH:
            width = inputs["codes"].shape[-1]
            out = {"wav": (0.3 * self.rng.standard_normal((1, width * 2048))).astype(np.float32)}
        elif function == PREFILL:
            out = {
                "logits": self.rng.standard_normal((1, 4)).astype(np.float32),
                "hidden": self.rng.standard_normal((1, 4)).astype(np.float32),
            }
        else:
            out = self._frame()
        self.events.append(
            {"graph": graph, "function": function, "state": state, "in": inputs, "out": out}
        )
        return out


def _save_events(d: Path, events: list[dict], zip_clock) -> list[dict]:
    """calls_in.npz / calls_out.npz (members `NNN.name`) and the call list for the JSON."""
    steps, ins, outs = [], {}, {}
    for e in events:
        if "reset" in e:
            steps.append({"reset": e["reset"], "state": e["state"]})
            continue
        n = len([s for s in steps if "graph" in s])
        hashed = {}
        for name, a in e["in"].items():
            if name in NOISE:
                hashed[name] = {"sha256": _sha(np.asarray(a)), "shape": list(np.shape(a))}
            else:
                ins[f"{n:03d}.{name}"] = np.ascontiguousarray(a)
        for name, a in e["out"].items():
            outs[f"{n:03d}.{name}"] = np.ascontiguousarray(a)
        steps.append(
            {
                "graph": e["graph"],
                "function": e["function"],
                "state": e["state"],
                "inputs": sorted(e["in"]),
                "hashed": hashed,
            }
        )
    with zip_clock():
        np.savez(d / "calls_in.npz", **ins)
        np.savez(d / "calls_out.npz", **outs)
    return steps


def _bundle(session, tokenizer):
    from .pipeline import Audio8Pipeline

    pipeline = object.__new__(Audio8Pipeline)
    pipeline.session, pipeline.tokenizer = session, tokenizer
    pipeline.config, pipeline.codec_config = CONFIG, CODEC_REDUCED
    pipeline.path = Path("fixture")
    return pipeline


def _write_frame_loops(root: Path, zip_clock) -> None:
    """`ar.host.generate` alone: eos stop (and its frame not emitted), the budget stop."""
    tokenizer = stand_in_tokenizer()
    cases = []
    for name, eos, frames in (("eos", 5, 9), ("budget", None, 6), ("eos_first", 0, 4)):
        session = _RecordingSession(np.random.default_rng(len(cases) + 40), [eos])
        prompt = build_prompt(tokenizer, CONFIG, "Frame loop case " + name)
        loop = ar_host.generate(session, prompt, frames, seeded_uniforms(11, CONFIG), CONFIG)
        d = root / "frames" / name
        d.mkdir(parents=True, exist_ok=True)
        calls = _save_events(d, session.events, zip_clock)
        cases.append(
            {
                "name": name,
                "prompt": prompt.tolist(),
                "max_frames": frames,
                "uniform_seed": 11,
                "calls": calls,
                "windows": [f.window.tolist() for f in loop.frames],
                "semantics": [f.semantic for f in loop.frames],
                "codes": loop.codes.tolist(),
                "finished": loop.finished,
                "prefill_calls": loop.prefill_calls,
            }
        )
    _json(root / "frames.json", {"cases": cases})


def _write_codec(root: Path) -> None:
    plans = [
        {"total": t, "window": w, "context": c, "plan": host_codec.window_plan(t, w, c)}
        for t, w, c in ((0, 8, 2), (5, 8, 2), (8, 8, 2), (9, 8, 2), (21, 8, 2), (400, 160, 32))
    ]
    codes = formula_codes(7, k=5).astype(np.int64)
    codes[:, 5:] = -1  # generate's padding after eos: not decoded
    codes[3, 5] = 2  # a frame with any negative code is padding
    report = host_codec.DecodeReport()
    kept = host_codec.prepare_codes(codes, CODEC_REDUCED, report)
    prepared = {
        "codes": codes.tolist(),
        "kept": kept.tolist(),
        "frames": report.frames,
        "dropped": report.dropped,
        "clamped_by_book": report.clamped_by_book,
    }
    _json(root / "codec.json", {"plans": plans, "prepare": prepared})


def _write_pipeline(root: Path, name: str, zip_clock) -> dict:
    from .pipeline import SpeakOptions

    text, with_voice, stream, eos_steps = PIPELINES[name]
    tokenizer = stand_in_tokenizer()
    session = _RecordingSession(np.random.default_rng(len(name)), eos_steps)
    pipeline = _bundle(session, tokenizer)
    d = root / "pipeline" / name
    d.mkdir(parents=True, exist_ok=True)
    voice = None
    if with_voice:
        ref = "A short clip, said slowly."
        voice = Voice(formula_codes(5, k=9), ref, "formula", transcript_ids(tokenizer, ref))
        with zip_clock():
            voice.save(d / "voice.npz")
    pieces = pipeline.pieces(text, MAX_FRAMES, voice)
    result = pipeline.speak(
        text, SpeakOptions(voice, seed=SEED, max_frames=MAX_FRAMES, stream=stream)
    )
    calls = _save_events(d, session.events, zip_clock)
    (d / "audio.f32").write_bytes(result.audio.astype("<f4").tobytes())
    return {
        "text": text,
        "stream": stream,
        "seed": SEED,
        "max_frames": MAX_FRAMES,
        "voice": "voice.npz" if with_voice else None,
        "pieces": [
            {
                "text": p.text,
                "ids": _ids(tokenizer, piece),
                "prompt_columns": p.prompt_columns,
                "codes": p.frames.codes.tolist(),
                "finished": p.frames.finished,
                "samples": int(p.wav.size),
                "clamped": p.decode.clamped,
                "windows": p.decode.windows,
            }
            for p, piece in zip(result.pieces, pieces, strict=True)
        ],
        "calls": calls,
        "audio": "audio.f32",
        "audio_samples": int(result.audio.size),
    }


def write_fixtures(root: Path, zip_clock: Callable[[], AbstractContextManager]) -> None:
    """Every Audio8 fixture under `root` (`.../Fixtures/audio8_tts`); `zip_clock()` pins the
    clock np.savez stamps members with (`conversion.cli.swift_fixtures` passes its own)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    write_text_fixtures(root / "text")
    tokenizer = stand_in_tokenizer()
    (root / HOST_TABLE_FILE).write_bytes(host_table_bytes(tokenizer, CONFIG, CODEC_REDUCED))
    _json(
        root / "manifest.json",
        {
            "format": "voxport-bundle/1",
            "model": "audio8_tts",
            "precision": "fp32",
            "graphs": {
                GRAPH: {
                    "asset": "ar.aimodel",
                    "precision": "fp32",
                    "sha256": "",
                    "functions": {
                        PREFILL: {"inputs": [], "outputs": []},
                        FRAME: {"inputs": [], "outputs": []},
                    },
                },
                CODEC_GRAPH: {
                    "asset": "codec.aimodel",
                    "precision": "fp32",
                    "sha256": "",
                    "functions": {
                        FUNCTION: {
                            "inputs": [
                                {
                                    "name": "codes",
                                    "shape": [1, CONFIG.num_codebooks, CODEC_WINDOW],
                                    "dtype": "int32",
                                }
                            ],
                            "outputs": [
                                {
                                    "name": "wav",
                                    "shape": [1, CODEC_WINDOW * 2048],
                                    "dtype": "float32",
                                }
                            ],
                        }
                    },
                },
            },
        },
    )
    with zip_clock():  # a voice file from before text_ids (the Swift host must name the array)
        Voice(formula_codes(4), "An older voice file.", "formula").save(root / "voice_no_ids.npz")
    _write_prompts(root, tokenizer)
    _write_uniforms(root)
    _write_frame_loops(root, zip_clock)
    _write_codec(root)
    _json(
        root / "pipeline.json",
        {name: _write_pipeline(root, name, zip_clock) for name in PIPELINES},
    )
