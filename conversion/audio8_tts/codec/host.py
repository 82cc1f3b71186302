"""Host side of Audio8-TTS's codec: windowed decoding over the static `codec` graph and
voice registration over the `encoder` graph.

The codec graph decodes a fixed W-frame window (160 published). Every op is causal, so:
* a window whose real codes end early is padded on the right with zeros and cut: the padding
  cannot reach the real samples;
* a stream decodes in windows that each carry up to `context` frames already emitted
  (their samples are decoded again and dropped) and up to `window - context` new frames.
  The first window starts at frame 0 and emits all it decodes, so it equals the
  whole-utterance decode exactly; later windows differ only by what the transformers
  (window 128 x 8 layers) would have seen before their context.

Codes follow the publisher's `decode_audio`: a frame with any negative code is padding
(`generate` writes -1 after eos); the first `count(valid frames)` frames are decoded. Draws
above a book's size (the fast head has 4,096 rows for the 1,024-entry residual books) are
clamped in the graph exactly as the publisher's `decode()` clamps; the host counts them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.core.runtime.session import StandInSession

from .config import CodecConfig
from .graphs import CODEC_GRAPH, ENCODER_GRAPH, FUNCTION, CodecDecode, CodecEncode
from .model import Codec


@dataclass
class DecodeReport:
    frames: int = 0  # frames decoded (after dropping padding frames)
    dropped: int = 0  # padding frames (a negative code) not decoded
    clamped: int = 0  # draws above their book's size, clamped to the last entry
    clamped_by_book: list[int] = field(default_factory=list)
    windows: int = 0  # codec graph calls
    window_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "frames": self.frames,
            "dropped": self.dropped,
            "clamped": self.clamped,
            "clamped_by_book": self.clamped_by_book,
            "windows": self.windows,
            "window_ms_mean": float(np.mean(self.window_ms)) if self.window_ms else None,
        }


def book_sizes(cfg: CodecConfig) -> np.ndarray:
    return np.array(
        [cfg.semantic_size] * cfg.semantic_books + [cfg.residual_size] * cfg.residual_books
    )


def _as_codes(codes) -> np.ndarray:
    if isinstance(codes, torch.Tensor):
        codes = codes.detach().cpu().numpy()
    codes = np.asarray(codes)
    if codes.ndim == 3 and codes.shape[0] == 1:
        codes = codes[0]
    if codes.ndim != 2:
        raise UserError(f"codes must be [books, T] (or [1, books, T]); got {list(codes.shape)}")
    return codes.astype(np.int64)


def prepare_codes(codes, cfg: CodecConfig, report: DecodeReport | None = None) -> np.ndarray:
    """[books, T] -> the frames the publisher decodes; counts padding and clamped draws."""
    codes = _as_codes(codes)
    if codes.shape[0] != cfg.num_books:
        raise UserError(f"codes have {codes.shape[0]} books, the codec has {cfg.num_books}")
    valid = int((codes >= 0).all(axis=0).sum())
    kept = codes[:, :valid]
    if report is not None:
        over = (kept > (book_sizes(cfg) - 1)[:, None]).sum(axis=1)
        report.frames += valid
        report.dropped += codes.shape[1] - valid
        report.clamped_by_book = [
            a + int(b) for a, b in zip(report.clamped_by_book or [0] * len(over), over, strict=True)
        ]
        report.clamped = int(sum(report.clamped_by_book))
    return kept


def window_plan(total: int, window: int, context: int) -> list[tuple[int, int, int]]:
    """(start, emit_from, emit_to) per window, in frames; emit_to - start <= window."""
    if not 0 <= context < window:
        raise UserError(f"context ({context}) must be in [0, window={window})")
    plan, done = [], 0
    while done < total:
        start = max(0, done - context)
        end = min(start + window, total)
        plan.append((start, done, end))
        done = end
    return plan


def graph_frames(session, graph: str = CODEC_GRAPH) -> int:
    shape = session.manifest.function(graph, FUNCTION)["inputs"][0]["shape"]
    return int(shape[-1])


def decode_stream(
    session,
    codes,
    cfg: CodecConfig,
    window: int | None = None,
    context: int = 32,
    report: DecodeReport | None = None,
    graph: str = CODEC_GRAPH,
) -> Iterator[np.ndarray]:
    """Yield float32 wav chunks (only each window's new samples) as windows are decoded."""
    width = graph_frames(session, graph)
    window = window or width
    if window > width:
        raise UserError(f"window {window} exceeds the codec graph's {width} frames")
    report = report if report is not None else DecodeReport()
    kept = prepare_codes(codes, cfg, report)
    fs = cfg.frame_size
    for start, emit_from, emit_to in window_plan(kept.shape[1], window, context):
        block = np.zeros((1, cfg.num_books, width), np.int32)
        block[0, :, : emit_to - start] = kept[:, start:emit_to]
        t0 = time.perf_counter()
        wav = session.run(graph, FUNCTION, {"codes": block})["wav"].reshape(-1)
        report.window_ms.append(1000 * (time.perf_counter() - t0))
        report.windows += 1
        yield wav[(emit_from - start) * fs : (emit_to - start) * fs].astype(np.float32)


def decode_whole(
    session,
    codes,
    cfg: CodecConfig,
    window: int | None = None,
    context: int = 32,
    graph: str = CODEC_GRAPH,
) -> tuple[np.ndarray, DecodeReport]:
    """The utterance at once (after generation): one call when it fits the graph's window,
    else the same windows joined. Returns (wav [T*frame_size], report)."""
    report = DecodeReport()
    chunks = list(decode_stream(session, codes, cfg, window, context, report, graph))
    wav = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    return wav, report


def encode_reference(session, audio, cfg: CodecConfig, graph: str = ENCODER_GRAPH) -> np.ndarray:
    """44.1 kHz mono samples -> codes [10, ceil(n/frame_size)] through the encoder bucket
    (the publisher pads to whole frames; the rest of the bucket is zeros on the right,
    which the causal encoder cannot see from the real frames)."""
    audio = np.asarray(audio, np.float32).reshape(-1)
    capacity = int(session.manifest.function(graph, FUNCTION)["inputs"][0]["shape"][-1])
    if audio.size == 0:
        raise UserError("the reference audio is empty")
    if audio.size > capacity:
        raise UserError(
            f"reference audio has {audio.size} samples; the encoder bucket holds {capacity} "
            f"({capacity / cfg.sample_rate:.1f} s): trim it"
        )
    block = np.zeros((1, 1, capacity), np.float32)
    block[0, 0, : audio.size] = audio
    codes = session.run(graph, FUNCTION, {"audio": block})["codes"][0]
    return codes[:, : -(-audio.size // cfg.frame_size)].astype(np.int32)


class _Manifest:
    def __init__(self, shapes: dict[str, list[int]]) -> None:
        self.shapes = shapes

    def function(self, graph: str, function: str) -> dict:
        return {"inputs": [{"shape": self.shapes[graph]}]}


class EagerCodecSession(StandInSession):
    """The graphs' export-form modules run eagerly behind `Session.run`'s interface (tests,
    oracles, and the reference the runtime is compared with)."""

    def __init__(self, codec: Codec, frames: int | None = None, encoder_frames: int | None = None):
        cfg = codec.cfg
        self.modules = {
            CODEC_GRAPH: CodecDecode(codec, frames or cfg.graph_frames),
            ENCODER_GRAPH: CodecEncode(codec, encoder_frames or cfg.encoder_frames),
        }
        shapes = {g: list(m.example_inputs()[m.INPUTS[0]].shape) for g, m in self.modules.items()}
        self.manifest = _Manifest(shapes)

    def run(self, graph: str, function: str, inputs: dict) -> dict[str, np.ndarray]:
        module = self.modules[graph]
        (name,) = module.INPUTS
        with torch.no_grad():
            out = module(torch.as_tensor(np.asarray(inputs[name])))
        return {module.OUTPUTS[0]: out.numpy()}
