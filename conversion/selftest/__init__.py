"""The toolkit's self-test: small graphs (conv, MLP, KV decoder) through export, runtime, gate and
bench; verbs only, no weights and no port (``voxport doctor`` runs it).

A model folder for the CLI (``conversion/cli/registry.py`` finds it by ``MODEL_NAME``).
"""

MODEL_NAME = "core"
# None: voxport-bench's core.calls measures the runtime itself, not this self-test.
DEVICE_BENCHES: tuple[str, ...] = ()
