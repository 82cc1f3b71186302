"""Kokoro-82M (hexgrad, Apache-2.0): three graphs cut at the duration -> alignment expansion,
host DSP, the real weights.

A model folder: the CLI finds it by ``MODEL_NAME`` (``conversion/cli/registry.py`` reads every
folder of ``conversion/``); its port is ``port.py``'s ``PORT``, its verbs ``cli.py``'s.
"""

MODEL_NAME = "kokoro"
# VoxportKit's on-device benches (voxport-bench's VP_BENCH) that run this model.
DEVICE_BENCHES = ("kokoro.speak", "kokoro.text")
