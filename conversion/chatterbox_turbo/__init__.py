"""Chatterbox Turbo (Resemble AI): a GPT-2 T3 (no CFG; top-k, top-p, then the repetition
penalty), S3Gen with a mean-flow estimator run in 2 steps, the shared HiFT vocoder.

A model folder: the CLI finds it by ``MODEL_NAME`` (``conversion/cli/registry.py`` reads every
folder of ``conversion/``); its port is ``port.py``'s ``PORT``, its verbs ``cli.py``'s. What it
shares with Chatterbox lives below both, in ``conversion/s3gen/``.
"""

MODEL_NAME = "chatterbox_turbo"
# VoxportKit's on-device benches (voxport-bench's VP_BENCH) that run this model: Chatterbox's,
# shared (ios/Sources/VoxportBench/S3GenBench.swift), over Turbo's host.
DEVICE_BENCHES = (
    "chatterbox_turbo.t3",
    "chatterbox_turbo.estimator",
    "chatterbox_turbo.vocoder",
    "chatterbox_turbo.speak",
    "chatterbox_turbo.text",
)
