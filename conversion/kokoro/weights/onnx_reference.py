"""The int8 ONNX run by onnxruntime: an independent reference for the weights mapped into KModel.

The export's only output is `audio`; the predicted durations are exposed as a second output
by naming the input of its one `Round` node (the sigmoid-summed durations divided by speed,
before rounding), so both the prosody and the waveform can be compared with KModel's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx


@dataclass
class OnnxOutput:
    audio: np.ndarray  # float32 [samples] at 24 kHz
    durations: np.ndarray  # float32 [tokens], frames per token before rounding


def _with_duration_output(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    rounds = [n for n in model.graph.node if n.op_type == "Round"]
    if len(rounds) != 1:
        raise RuntimeError(f"expected one Round node (the durations), found {len(rounds)}")
    name = rounds[0].input[0]
    model.graph.output.append(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
    )
    return model, name


class OnnxReference:
    """`ref(input_ids, ref_s, speed)` -> OnnxOutput, on the CPU."""

    def __init__(self, onnx_file: Path | bytes, threads: int | None = None) -> None:
        import onnxruntime as ort

        raw = onnx_file if isinstance(onnx_file, bytes) else Path(onnx_file).read_bytes()
        model, self._duration_name = _with_duration_output(onnx.load_from_string(raw))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or max(1, os.cpu_count() or 1)
        # Idle onnxruntime workers otherwise spin for a while after each run and starve the
        # torch model that is usually run right next to this reference.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            model.SerializeToString(), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self.input_names = [i.name for i in self._session.get_inputs()]

    def __call__(self, input_ids: np.ndarray, ref_s: np.ndarray, speed: float = 1.0) -> OnnxOutput:
        ids = np.asarray(input_ids, dtype=np.int64).reshape(1, -1)
        style = np.asarray(ref_s, dtype=np.float32).reshape(1, 256)
        feeds = {"tokens": ids, "style": style, "speed": np.array([speed], np.float32)}
        audio, durations = self._session.run(["audio", self._duration_name], feeds)
        return OnnxOutput(
            audio=np.asarray(audio, np.float32).reshape(-1),
            durations=np.asarray(durations, np.float32).reshape(-1),
        )
