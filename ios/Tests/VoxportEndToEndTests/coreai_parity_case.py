"""The bundles and inputs VoxportEndToEndTests' CoreAIRunnerParityTests run on.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/coreai_parity_case.py OUT.json

Reuses (or exports, when missing or stale) the reduced bundles at their default paths — the
other cases' own (Kokoro real weights; Audio8's `ar` + `codec`; Chatterbox's whole fp32 bundle),
its int8 T3 alone (bundles/chatterbox-int8-reduced-seed0-t3) and its fp16 estimator alone at a
64-frame bucket (bundles/chatterbox-fp32-reduced-seed0-est-fp16: the Linux runtime emulates fp16
~150x slower than fp32, as the gate's fp16 rung knows) — and writes OUT.json:

    {"kokoro": {"bundle"}, "chatterbox": {"bundle", "int8_t3", "fp16_estimator", "ids"},
     "audio8": {"bundle", "ids"}}

`ids` are the first chunk's token ids of SENTENCE as `voxport tokenize MODEL` gives them (a
bench's VP_TOKENS). The Swift side runs each bench through WorkerRunner and CoreAIRunner on the
same bundle and compares them: no Python answer is needed beyond the bundles.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import audio8_case  # noqa: E402  (the case scripts beside this one)
import chatterbox_case  # noqa: E402
import kokoro_case  # noqa: E402

from conversion.audio8_tts.prompt import clean_text  # noqa: E402
from conversion.audio8_tts.tokenizer import load_tokenizer  # noqa: E402
from conversion.chatterbox.config import ChatterboxConfig  # noqa: E402
from conversion.chatterbox.export import TOKENIZER  # noqa: E402
from conversion.chatterbox.port import PORT as CHATTERBOX  # noqa: E402
from conversion.chatterbox.text import TextTokenizer  # noqa: E402
from conversion.core.threads import pin_torch_threads  # noqa: E402

SENTENCE = "Hello there."


def chatterbox() -> dict:
    folder, config = CHATTERBOX.resolve("random", "reduced", 0)
    whole = chatterbox_case.bundle_path()  # ChatterboxWorkerTests' bundle: every graph
    int8 = CHATTERBOX.ensure_bundle(folder, config, "reduced", "int8", graphs=("t3",), variant="t3")
    # 64 frames: the smallest estimator bucket the graph takes (a multiple of 64)
    small = ChatterboxConfig.from_json({**config.to_json(), "estimator_frames": [64]})
    fp16 = CHATTERBOX.ensure_bundle(
        folder,
        small,
        "reduced",
        "fp32",
        graphs=("flow_estimator",),
        precisions={"flow_estimator": "fp16"},
        variant="est-fp16",
    )
    chunks = TextTokenizer(Path(folder) / TOKENIZER).chunks(SENTENCE, config.text_budget)
    ids = [int(i) for i in chunks[0].ids]
    return {
        "bundle": str(whole.resolve()),
        "int8_t3": str(int8.resolve()),
        "fp16_estimator": str(fp16.resolve()),
        "ids": ids,
    }


def audio8() -> dict:
    bundle, _ = audio8_case.bundle_path()
    folder, _ = audio8_case.PORT.resolve("random", "reduced", 0)
    tokenizer = load_tokenizer(folder)
    ids = tokenizer.encode(clean_text(SENTENCE), add_special_tokens=False).ids
    return {"bundle": str(bundle.resolve()), "ids": [int(i) for i in ids]}


def main(out: Path) -> None:
    case = {
        "kokoro": {"bundle": str(kokoro_case.bundle_path().resolve())},
        "chatterbox": chatterbox(),
        "audio8": audio8(),
    }
    out.write_text(json.dumps(case, indent=1) + "\n")


if __name__ == "__main__":
    pin_torch_threads()
    main(Path(sys.argv[1]))
