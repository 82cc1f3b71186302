"""What an Audio8 bundle carries for a host with no Python packages: the host tables, a licence
note and a README, beside the graphs and the tokenizer.json (which a device cannot run: text
becomes ids here, `voxport tokenize audio8_tts`).

* ``audio8_host.json``: every number and id the Python host reads from outside the graphs —
  the prompt template's segments as token ids (each encoded on its own, as `prompt.py` does:
  BPE never merges across a segment, so concatenating them is exact), eos and the semantic id
  range, the KV length and the prefill window, the RAS window, the frame budget default, and
  the codec's frame size, sample rate, book sizes and streaming context;
* ``LICENSE``: the terms as the publisher's model card states them (its code ships none);
* ``README.md``: what the files are and the host steps in order.

Audio8 has no default voice: without a reference the publisher's plain template is used; a
cloned voice comes from ``voxport voice audio8_tts`` (an npz the Swift host loads).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .ar.graphs import PREFILL_WINDOW
from .codec.config import CodecConfig
from .codec.host import book_sizes
from .config import GENERATION, Audio8Config
from .prompt import (
    ASSISTANT_VOICE,
    DEFAULT_SPEAKER,
    PLAIN_INSTRUCTION,
    REFERENCE_INSTRUCTION,
    SPEECH_HEADER,
    SYSTEM_START,
    TURN_END,
    USER_START,
    _encode,
)

HOST_TABLE_FILE = "audio8_host.json"
LICENSE_FILE = "LICENSE"
README_FILE = "README.md"
HOST_FILES = (HOST_TABLE_FILE, LICENSE_FILE, README_FILE)
HOST_TABLE_FORMAT = "voxport-audio8-host/1"
CONTEXT_FRAMES = 32  # pipeline.CONTEXT_FRAMES: a stream's window re-reads min(32, W // 4)

LICENSE = """\
Audio8-TTS-Preview-0.6b (Edge0 / Audio8-AI), weights and codec

Licence: Apache License 2.0, as stated on the publisher's model card
(Edge0/Audio8-TTS-Preview-0.6b). The publisher's code carries no licence file of its own; the
model card is the source of these terms. Full text: https://www.apache.org/licenses/LICENSE-2.0

The Core AI graphs in this bundle are an export of those weights by voxport; the host tables
(audio8_host.json) are derived from the publisher's prompt templates and configuration.
"""

README = """\
# Audio8-TTS-Preview-0.6b bundle (voxport)

Audio8-TTS-Preview-0.6b (Apache-2.0 per the model card, see LICENSE), exported to Core AI by
voxport. A DualAR: one fused `ar.frame` call per 46 ms frame, the sampler inside the graph.

Files: `ar`, `codec`, `encoder` graphs; `audio8_host.json` (the host tables below);
`tokenizer.json` (text -> ids stays on a machine with Python: `voxport tokenize audio8_tts`);
`audio8_config.json`. No default voice: a cloned one is `voxport voice audio8_tts --ref WAV
--ref-text T -o voice.npz` (codes [10, T] int32, text_ids int32).

Host steps, in order (`conversion/audio8_tts/pipeline.py`, `ar/host.py`, `codec/host.py`):

1. prompt rows [11, P]: row 0 = `prompt.plain_prefix + TEXT ids + prompt.tail`, or with a voice
   `prompt.reference_prefix + voice.text_ids + prompt.speech_header + (semantic_begin +
   codes[0]) + prompt.suffix_head + TEXT ids + prompt.tail`; rows 1..10 = the voice's codes
   under its frames, 0 elsewhere. P + frames must fit `frame.max_seq_len`.
2. prefill columns 0..P-2 in windows of `frame.prefill_window` at pos = window start (a pad
   column has row 0 = -1), over the `ar` KV state (reset first).
3. frame loop: `ar.frame(codes [1,11,1] = current column, pos P-1+step, noise_slow [2,4097],
   window [10], noise_fast [9,4096], forced 0, use_forced 0)`; uniforms from
   `np.random.default_rng(seed * 1000 + piece)` (u_slow then u_fast per step, floored at
   float32 tiny). Stop on semantic == eos (not emitted) or the frame budget. The RAS window
   starts all -1, stays all -1 after step 0 (the publisher's quirk), then rolls left and
   appends the frame's semantic id.
4. codec: windows of W = the codec graph's frames with context min(32, W // 4): whole (after
   the loop) or streamed (first window after W frames, then every W - context new frames);
   each window's codes zero-padded to W, only its new frames' samples kept
   (`codec.frame_size` per frame, 44.1 kHz).

Every file is hashed in `manifest.json` (`meta.files`); verify before loading.
"""


def prompt_segments(tokenizer) -> dict[str, list[int]]:
    """The template's fixed segments as ids (TEXT and the reference transcript go between)."""
    return {
        "plain_prefix": _encode(tokenizer, [SYSTEM_START, PLAIN_INSTRUCTION, TURN_END, USER_START]),
        "reference_prefix": _encode(tokenizer, [SYSTEM_START, REFERENCE_INSTRUCTION]),
        "speech_header": _encode(tokenizer, [SPEECH_HEADER]),
        "suffix_head": _encode(tokenizer, [TURN_END, USER_START]),
        "tail": _encode(tokenizer, [TURN_END, ASSISTANT_VOICE]),
    }


def host_table(tokenizer, config: Audio8Config, codec: CodecConfig) -> dict[str, Any]:
    """``audio8_host.json``'s content for this tokenizer and these configs."""
    return {
        "format": HOST_TABLE_FORMAT,
        "prompt": {**prompt_segments(tokenizer), "default_speaker": DEFAULT_SPEAKER},
        "tokens": {
            "eos": config.eos_token_id,
            "pad": config.pad_token_id,
            "semantic_begin": config.semantic_begin_id,
            "semantic_end": config.semantic_end_id,
            "vocab_size": config.vocab_size,
        },
        "frame": {
            "num_codebooks": config.num_codebooks,
            "codebook_size": config.codebook_size,
            "max_seq_len": config.max_seq_len,
            "prefill_window": PREFILL_WINDOW,
            "ras_window": config.ras_window_size,
            "max_new_frames": min(GENERATION.max_new_frames, config.max_seq_len // 4),
            "piece_seed_stride": 1000,
        },
        "codec": {
            "frame_size": codec.frame_size,
            "sample_rate": codec.sample_rate,
            "book_sizes": [int(b) for b in book_sizes(codec)],
            "context_frames": CONTEXT_FRAMES,
        },
    }


def host_table_bytes(tokenizer, config: Audio8Config, codec: CodecConfig) -> bytes:
    return (json.dumps(host_table(tokenizer, config, codec), indent=1) + "\n").encode()


def add_host_files(bundle, tokenizer, config: Audio8Config, codec: CodecConfig) -> None:
    """Add the host files to an open ``BundleWriter`` (each hashed in ``meta.files``)."""
    with tempfile.TemporaryDirectory(prefix="voxport-a8-host-") as tmp:
        for name, data in (
            (HOST_TABLE_FILE, host_table_bytes(tokenizer, config, codec)),
            (LICENSE_FILE, LICENSE.encode()),
            (README_FILE, README.encode()),
        ):
            src = Path(tmp) / name
            src.write_bytes(data)
            bundle.add_file(src, name)
