"""Model-agnostic machinery, the ground floor: the port contract, export, bundle, runtime,
buckets, precision, dsp, sampling. It imports no model, no gate, no oracle and no CLI."""

import logging
import warnings

# coreai-torch warns for any torch newer than 2.13.0 and counts "2.13.0+cpu" as newer; the
# project pins exactly torch==2.13.0, so the warning says nothing here.
warnings.filterwarnings(
    "ignore", message="coreai-torch has only been validated", category=UserWarning
)

# torchao (pulled in by coreai-torch / coreai-opt) tries to load its CUDA kernels (mxfp8,
# cutlass) and logs a warning per file on a CPU-only torch; nothing voxport uses needs them.
logging.getLogger("torchao").setLevel(logging.ERROR)
