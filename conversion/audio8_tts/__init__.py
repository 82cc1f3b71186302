"""Audio8-TTS: a DualAR, one fused graph call per 46 ms frame with the sampler inside, windowed
prefill over a KV state, a causal codec decoded in streaming windows.

A model folder: the CLI finds it by ``MODEL_NAME`` (``conversion/cli/registry.py`` reads every
folder of ``conversion/``); its port is ``port.py``'s ``PORT``, its verbs ``cli.py``'s.
"""

MODEL_NAME = "audio8_tts"
# VoxportKit's on-device benches (voxport-bench's VP_BENCH) that run this model.
DEVICE_BENCHES = ("audio8.frame", "audio8.codec", "audio8.speak", "audio8.text")
