"""What a Chatterbox bundle carries for a host with no Python packages, beside the graphs and
the host tables (``t3_host.npz``, ``flow_host.npz``, ``hift_host.npz``), the default voice
(``voice_default.npz``, from the snapshot's conds.pt) and ``tokenizer.json``:

* ``LICENSE``: the publisher's licence (MIT, as chatterbox-tts 0.1.7 ships it);
* ``README.md``: what the files are and the host steps in order.

They do not change any graph; the port's ``layout`` says which files a bundle carries, so a
bundle exported before them is re-exported, not reused.
"""

from __future__ import annotations

from conversion.s3gen.host_files import (
    HOST_FILES,
    LICENSE_FILE,
    LICENSE_SOURCE,
    README_FILE,
    add_license_and_readme,
)

__all__ = ["HOST_FILES", "LICENSE_FILE", "LICENSE_SOURCE", "README", "README_FILE"]

README = """\
# Chatterbox bundle (voxport)

Chatterbox by Resemble AI (MIT, see LICENSE), exported to Core AI by voxport. Five graphs;
the host steps between them (VoxportKit's `ChatterboxPipeline` and `conversion/chatterbox/`):

1. text -> ids: `voxport tokenize chatterbox "TEXT"` (the publisher's punc_norm and
   `tokenizer.json`), SOT 255 + ids + EOT 0 per chunk.
2. voice: `voice_default.npz` or a file from `voxport voice chatterbox --ref WAV`;
   T3's conditioning is `cond_emb_base` with its last row `exaggeration * emotion_adv_weight`.
3. `t3` (`t3_host.npz` tables): prefill rows = conditioning + text (+ positions; the CFG
   uncond row keeps only the positions) + 2 start-of-speech rows, zero-padded to `prefill_P*`;
   then `decode` per token. Each draw: CFG `cond + 0.5 (cond - uncond)`, repetition penalty
   1.2, temperature 0.8, min-p 0.05, top-p 1.0, argmax(p / -log u) over host uniforms. Stop
   token 6562; keep the tokens after the last start-of-speech 6561 that are < 6561.
4. `flow_encoder` (prompt + speech tokens, `encode_N*`) -> mu; 10 Euler steps of
   `flow_estimator` on the CFG batch (`flow_host.npz`: speaker projection, cfg rate 0.7,
   cosine schedule), v = 1.7 v_cond - 0.7 v_uncond; drop the prompt frames.
5. `hift_f0` -> f0; harmonic source (`hift_host.npz`) and its 16-point STFT (hop 4);
   `hift_trunk` -> magnitude, phase; clip magnitude at 100, iSTFT, clamp, keep 480 n samples,
   multiply the first 960 by `trim_fade`.

Every file is hashed in `manifest.json` (`meta.files`); verify before loading.
"""


def add_host_files(bundle) -> None:
    """Add LICENSE and README.md to an open ``BundleWriter`` (each hashed in ``meta.files``)."""
    add_license_and_readme(bundle, README)
