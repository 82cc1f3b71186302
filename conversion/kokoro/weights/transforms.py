"""Pure array transforms that turn onnxruntime's int8 Kokoro weights back into torch's layout.

Three facts about the int8 ONNX export drive everything here:
- weights are stored as integers with a scale and a zero point (per tensor or per channel);
- ONNX LSTMs order their four gates i, o, f, c where torch orders them i, f, g(=c), o;
- the exporter folded torch's weight norm (W = g * v / ||v||) into one tensor, and a
  per-tensor uint8 quantisation rounds some small output channels to exactly zero.
"""

from __future__ import annotations

import numpy as np

# Position, in ONNX's i-o-f-c gate order, of each of torch's i-f-g-o gates.
_TORCH_GATES_FROM_ONNX = (0, 2, 3, 1)


def dequantize(
    q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None = None, axis: int | None = None
) -> np.ndarray:
    """(q - zero_point) * scale as float32; `axis` is the channel axis of per-channel params.

    With `axis=None` scale and zero point must be scalars (per-tensor quantisation).
    """
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.zeros((), np.int32) if zero_point is None else np.asarray(zero_point, np.int32)
    if axis is None:
        if scale.size != 1 or zp.size != 1:
            raise ValueError(f"per-tensor dequantize needs scalars, got {scale.shape}, {zp.shape}")
        scale, zp = scale.reshape(()), zp.reshape(())
    else:
        shape = [1] * q.ndim
        shape[axis] = q.shape[axis]
        scale = np.broadcast_to(scale.reshape(-1), (q.shape[axis],)).reshape(shape)
        zp = np.broadcast_to(zp.reshape(-1), (q.shape[axis],)).reshape(shape)
    return ((q.astype(np.int32) - zp).astype(np.float32) * scale).astype(np.float32)


def onnx_gates_to_torch(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Reorder the four equal gate blocks along `axis` from ONNX's iofc to torch's ifgo."""
    blocks = np.split(x, 4, axis=axis)
    return np.concatenate([blocks[i] for i in _TORCH_GATES_FROM_ONNX], axis=axis)


def lstm_params_from_onnx(w: np.ndarray, r: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """torch `nn.LSTM` (one layer) parameters from ONNX LSTM inputs W, R, B.

    `w` is [directions, 4*hidden, input], `r` is [directions, 4*hidden, hidden] and `b` is
    [directions, 8*hidden] (input biases then recurrent biases), all in ONNX's iofc order.
    Direction 1 becomes torch's `_reverse` parameters.
    """
    out: dict[str, np.ndarray] = {}
    for d in range(w.shape[0]):
        suffix = "_l0" + ("_reverse" if d == 1 else "")
        wb, rb = np.split(b[d], 2)
        out["weight_ih" + suffix] = onnx_gates_to_torch(w[d])
        out["weight_hh" + suffix] = onnx_gates_to_torch(r[d])
        out["bias_ih" + suffix] = onnx_gates_to_torch(wb)
        out["bias_hh" + suffix] = onnx_gates_to_torch(rb)
    return out


def restore_weight_norm(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight_v, weight_g) for torch's `weight_norm(dim=0)` such that g * v / ||v|| == w.

    The norm is over every axis but 0, as torch computes it: for Conv1d axis 0 is the output
    channel, for ConvTranspose1d (weight [in, out/groups, k]) it is the input channel. A slice
    that quantised to all zeros would give 0/0 = NaN in the forward pass, so it becomes v = 1,
    g = 0, which folds back to the same zeros.
    """
    w = np.asarray(w, dtype=np.float32)
    reduce_axes = tuple(range(1, w.ndim))
    g = np.sqrt(np.sum(np.square(w, dtype=np.float64), axis=reduce_axes, keepdims=True))
    dead = g == 0
    v = np.where(dead, np.float32(1.0), w).astype(np.float32)
    return v, g.astype(np.float32)
