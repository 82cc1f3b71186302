"""Chatterbox (Resemble AI): int8 stateful T3 with CFG and sampling, bucketed S3Gen encoder and
CFM estimator with a host Euler loop, HiFT with host STFT/iSTFT; voice cloning.

A model folder: the CLI finds it by ``MODEL_NAME`` (``conversion/cli/registry.py`` reads every
folder of ``conversion/``); its port is ``port.py``'s ``PORT``, its verbs ``cli.py``'s.
"""

MODEL_NAME = "chatterbox"
# VoxportKit's on-device benches (voxport-bench's VP_BENCH) that run this model.
DEVICE_BENCHES = (
    "chatterbox.t3",
    "chatterbox.estimator",
    "chatterbox.vocoder",
    "chatterbox.speak",
    "chatterbox.text",
)
