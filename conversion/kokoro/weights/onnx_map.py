"""Map the int8 ONNX export of Kokoro onto `kokoro.KModel`'s state dict by walking its graph.

Initialiser names alone are not enough: onnxruntime's quantiser renamed most weights
(`onnx::MatMul_6547_quantized`, `/decoder/decoder/encode/Mul_output_0_quantized`) and shares
identical zero points between unrelated weights. The graph is what ties them together: each
weight-bearing node (MatMulInteger, ConvInteger, Conv, ConvTranspose, MatMul, Gather +
DequantizeLinear, DynamicQuantizeLSTM) names its weight, zero point and, through the Mul that
rescales its integer output, its scale; and the node's own name carries torch's module scope
(`/decoder/decoder/generator/resblocks.4/adain2.2/fc/Gemm_MatMul_quant`), which resolves to a
KModel module. Biases, norms and Snake alphas kept torch's names (under the export wrapper's
`encoder.` / `decoder.` prefix) and are taken by name. Every value is checked against the
KModel parameter's shape, and every conv against the module's stride, dilation, padding and
groups, so a wrong resolution fails loudly instead of loading the wrong tensor.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from .transforms import dequantize, lstm_params_from_onnx, restore_weight_norm

# An ALBERT layer called 12 times is exported as query, query_1, ... query_11.
_CALL_SUFFIX = re.compile(r"_\d+$")
_SUBMODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")


@dataclass
class Coverage:
    """How much of KModel's state dict came from the ONNX file."""

    keys_mapped: int
    keys_total: int
    elements_mapped: int
    elements_total: int
    defaulted: list[str] = field(default_factory=list)
    onnx_unused: list[str] = field(default_factory=list)

    @property
    def element_fraction(self) -> float:
        return self.elements_mapped / self.elements_total

    def summary(self) -> str:
        return (
            f"{self.keys_mapped}/{self.keys_total} keys and {100 * self.element_fraction:.2f}% "
            f"of elements mapped from the ONNX; {len(self.defaulted)} keys set to their neutral "
            f"value (InstanceNorm affines 1/0, unused ALBERT pooler 0); "
            f"{len(self.onnx_unused)} ONNX float constants have no KModel counterpart"
        )

    def to_json(self) -> dict:
        return {
            "keys_mapped": self.keys_mapped,
            "keys_total": self.keys_total,
            "elements_mapped": self.elements_mapped,
            "elements_total": self.elements_total,
            "defaulted": self.defaulted,
            "onnx_unused": self.onnx_unused,
        }


class _Graph:
    """Initialisers, producers and consumers of an ONNX graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.nodes = list(model.graph.node)
        self.inits = {t.name: t for t in model.graph.initializer}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for n in self.nodes:
            for o in n.output:
                self.producer[o] = n
            for i in n.input:
                self.consumers[i].append(n)
        self.referenced: set[str] = set()

    def is_init(self, name: str) -> bool:
        return name in self.inits

    def array(self, name: str) -> np.ndarray:
        self.referenced.add(name)
        return numpy_helper.to_array(self.inits[name])

    def weight_scale(self, node: onnx.NodeProto) -> str:
        """The weight scale of an integer op: its output is rescaled by Mul(x_scale, w_scale).

        The path from the op to that Mul is Cast (MatMulInteger) or Add(int32 bias) -> Cast
        (ConvInteger with a bias); x_scale comes from the DynamicQuantizeLinear of the input.
        """
        out = node.output[0]
        while True:
            users = self.consumers[out]
            if len(users) != 1 or users[0].op_type not in ("Add", "Cast", "Mul"):
                raise RuntimeError(f"{node.name}: unexpected rescale path after the integer op")
            if users[0].op_type == "Mul":
                break
            out = users[0].output[0]
        other = next(i for i in users[0].input if i != out)
        scales = self.producer.get(other)
        found = [i for i in scales.input if self.is_init(i)] if scales is not None else []
        if scales is None or scales.op_type != "Mul" or len(found) != 1:
            raise RuntimeError(f"{node.name}: cannot find the weight scale of {node.input[1]}")
        return found[0]


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


class _Mapper:
    def __init__(self, graph: _Graph, kmodel: torch.nn.Module) -> None:
        self.g = graph
        self.modules = dict(kmodel.named_modules())
        self.module_names = [n for n in self.modules if n]
        self.skeleton = {k: tuple(v.shape) for k, v in kmodel.state_dict().items()}
        self.out: dict[str, np.ndarray] = {}

    # -- resolution -------------------------------------------------------------------------

    def resolve(self, node: onnx.NodeProto) -> str | None:
        """KModel module named by a node's scope: the longest scope tail that ends a module name.

        The wrapper's own levels (`encoder`, `decoder`) and method calls that skip a level
        (`/encoder/F0.0/conv1` is `predictor.F0.0.conv1`) are why it matches tails.
        """
        parts = [_CALL_SUFFIX.sub("", p) for p in node.name.split("/") if p][:-1]
        for k in range(len(parts), 0, -1):
            tail = ".".join(parts[-k:])
            hits = [n for n in self.module_names if n == tail or n.endswith("." + tail)]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise RuntimeError(f"{node.name}: scope '{tail}' matches {hits[:4]}")
        return None

    # -- writing ----------------------------------------------------------------------------

    def put(self, key: str, value: np.ndarray, source: str) -> None:
        if key not in self.skeleton:
            raise RuntimeError(f"{source}: KModel has no parameter {key}")
        # A copy: arrays read from the protobuf are read-only views, and torch wants to own them.
        value = np.array(value, dtype=np.float32, order="C", copy=True)
        if value.shape != self.skeleton[key]:
            raise RuntimeError(f"{source} -> {key}: shape {value.shape} != {self.skeleton[key]}")
        if key in self.out and not np.array_equal(self.out[key], value):
            raise RuntimeError(f"{source} -> {key}: a different value was already mapped")
        self.out[key] = value

    def put_weight(self, module: str, w: np.ndarray, source: str) -> None:
        """`module.weight`, or `weight_v`/`weight_g` where KModel wraps it in weight norm."""
        if module + ".weight_g" in self.skeleton:
            v, g = restore_weight_norm(w)
            self.put(module + ".weight_v", v, source)
            self.put(module + ".weight_g", g, source)
        else:
            self.put(module + ".weight", w, source)

    def check_conv(self, node: onnx.NodeProto, module: str) -> None:
        m = self.modules[module]
        if not isinstance(m, torch.nn.Conv1d | torch.nn.ConvTranspose1d):
            raise RuntimeError(f"{node.name} resolved to {module}, a {type(m).__name__}")
        pads = _attr(node, "pads", [0, 0])
        got = (
            _attr(node, "strides", [1])[0],
            _attr(node, "dilations", [1])[0],
            _attr(node, "group", 1),
            pads[0],
        )
        want = (m.stride[0], m.dilation[0], m.groups, m.padding[0])
        if got != want:
            raise RuntimeError(
                f"{node.name} (stride, dilation, groups, pad) {got} != {module} {want}"
            )

    # -- node handlers ----------------------------------------------------------------------

    def matmul_integer(self, node: onnx.NodeProto, module: str) -> None:
        q = self.g.array(node.input[1])  # [in, out], one scale per output column
        zp = self.g.array(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        w = dequantize(q, self.g.array(self.g.weight_scale(node)), zp, axis=1)
        self.put(module + ".weight", w.T, node.name)

    def conv_integer(self, node: onnx.NodeProto, module: str) -> None:
        self.check_conv(node, module)
        q = self.g.array(node.input[1])
        zp = self.g.array(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        scale = self.g.array(self.g.weight_scale(node))
        w = dequantize(q, scale, zp, axis=None if scale.size == 1 else 0)
        self.put_weight(module, w, node.name)

    def conv_float(self, node: onnx.NodeProto, module: str) -> None:
        self.check_conv(node, module)
        self.put_weight(module, self.g.array(node.input[1]), node.name)
        if len(node.input) > 2 and self.g.is_init(node.input[2]):
            self.put(module + ".bias", self.g.array(node.input[2]), node.name)

    def matmul_float(self, node: onnx.NodeProto, module: str) -> None:
        self.put(module + ".weight", self.g.array(node.input[1]).T, node.name)

    def gather(self, node: onnx.NodeProto, module: str) -> None:
        if not isinstance(self.modules[module], torch.nn.Embedding):
            return
        table = self.g.array(node.input[0])
        if table.dtype != np.float32:
            deq = self.g.consumers[node.output[0]]
            if len(deq) != 1 or deq[0].op_type != "DequantizeLinear":
                raise RuntimeError(f"{node.name}: quantised table without a DequantizeLinear")
            zp = self.g.array(deq[0].input[2]) if len(deq[0].input) > 2 else None
            table = dequantize(table, self.g.array(deq[0].input[1]), zp)
        self.put(module + ".weight", table, node.name)

    def lstm(self, node: onnx.NodeProto, module: str) -> None:
        m = self.modules[module]
        want = ("bidirectional" if m.bidirectional else "forward", m.hidden_size)
        got = (_attr(node, "direction", b"forward").decode(), _attr(node, "hidden_size"))
        if not isinstance(m, torch.nn.LSTM) or got != want:
            raise RuntimeError(f"{node.name} {got} does not fit {module}")
        ins = list(node.input) + [""] * (12 - len(node.input))
        for name in ins[4:8]:  # sequence lengths, initial states, peepholes: not weights
            if name and self.g.is_init(name):
                self.g.referenced.add(name)
        if node.op_type == "DynamicQuantizeLSTM":
            # W is [directions, input, 4*hidden] here (transposed against plain ONNX LSTM).
            w = self._per_direction(ins[1], ins[8], ins[9]).transpose(0, 2, 1)
            r = self._per_direction(ins[2], ins[10], ins[11]).transpose(0, 2, 1)
        else:
            w, r = self.g.array(ins[1]), self.g.array(ins[2])
        b = self.g.array(ins[3]) if ins[3] else np.zeros((w.shape[0], 2 * w.shape[1]), np.float32)
        for key, value in lstm_params_from_onnx(w, r, b).items():
            self.put(f"{module}.{key}", value, node.name)

    def _per_direction(self, q_name: str, scale_name: str, zp_name: str) -> np.ndarray:
        q, scale = self.g.array(q_name), self.g.array(scale_name)
        zp = self.g.array(zp_name) if zp_name else np.zeros(q.shape[0], np.int32)
        per_channel = scale.ndim == 2  # [directions, 4*hidden] instead of [directions]
        return np.stack(
            [
                dequantize(q[d], scale[d], zp[d], axis=1 if per_channel else None)
                for d in range(q.shape[0])
            ]
        )

    def named_initializers(self) -> None:
        """Float initialisers that kept torch's name under the wrapper's first scope level."""
        for name, t in self.g.inits.items():
            if t.data_type != onnx.TensorProto.FLOAT or "." not in name:
                continue
            key = name.split(".", 1)[1]
            if key in self.skeleton:
                self.put(key, self.g.array(name), name)

    def run(self) -> None:
        handlers = {
            "MatMulInteger": self.matmul_integer,
            "ConvInteger": self.conv_integer,
            "Conv": self.conv_float,
            "ConvTranspose": self.conv_float,
            "MatMul": self.matmul_float,
            "Gather": self.gather,
            "DynamicQuantizeLSTM": self.lstm,
            "LSTM": self.lstm,
        }
        for node in self.g.nodes:
            handler = handlers.get(node.op_type)
            idx = 0 if node.op_type == "Gather" else 1  # which input holds the weight
            if handler is None or len(node.input) <= idx or not self.g.is_init(node.input[idx]):
                continue
            if node.op_type == "Gather" and len(self.g.inits[node.input[0]].dims) != 2:
                continue  # shape bookkeeping, not an embedding table
            module = self.resolve(node)
            if module is None or (node.op_type == "ConvTranspose" and not self._has_weight(module)):
                continue  # e.g. the exporter's own iSTFT basis: no KModel counterpart
            handler(node, module)
        self.named_initializers()

    def _has_weight(self, module: str) -> bool:
        return any(module + s in self.skeleton for s in (".weight", ".weight_g"))


def _neutral_value(root: torch.nn.Module, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """What KModel's keys absent from the ONNX hold: InstanceNorm affine 1/0, pooler 0."""
    module_name, _, param = key.rpartition(".")
    if isinstance(root.get_submodule(module_name), torch.nn.InstanceNorm1d):
        return np.full(shape, 1.0 if param == "weight" else 0.0, np.float32)
    if key.startswith("bert.pooler."):
        return np.zeros(shape, np.float32)  # KModel reads last_hidden_state, never the pooler
    raise RuntimeError(f"the ONNX file has no value for {key}")


def map_onnx_to_state_dict(
    model: onnx.ModelProto, module: torch.nn.Module
) -> tuple[dict[str, torch.Tensor], Coverage]:
    """`module`'s full state dict from an ONNX export of it, and how much the ONNX supplied."""
    graph = _Graph(model)
    mapper = _Mapper(graph, module)
    mapper.run()
    flat: dict[str, np.ndarray] = dict(mapper.out)
    defaulted = []
    for key, shape in mapper.skeleton.items():
        if key not in flat:
            flat[key] = _neutral_value(module, key, shape)
            defaulted.append(key)
    sizes = {k: int(np.prod(s)) for k, s in mapper.skeleton.items()}
    unused = sorted(
        name
        for name, t in graph.inits.items()
        if name not in graph.referenced
        and t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
        and int(np.prod(t.dims)) >= 16
    )
    coverage = Coverage(
        keys_mapped=len(mapper.out),
        keys_total=len(mapper.skeleton),
        elements_mapped=sum(sizes[k] for k in mapper.out),
        elements_total=sum(sizes.values()),
        defaulted=defaulted,
        onnx_unused=unused,
    )
    return {k: torch.from_numpy(v) for k, v in flat.items()}, coverage


def map_onnx_to_kmodel(
    model: onnx.ModelProto, kmodel: torch.nn.Module
) -> tuple[dict[str, dict[str, torch.Tensor]], Coverage]:
    """KModel's checkpoint layout ({submodule: state dict}) from the int8 ONNX, and coverage."""
    flat, coverage = map_onnx_to_state_dict(model, kmodel)
    state: dict[str, dict[str, torch.Tensor]] = {s: {} for s in _SUBMODULES}
    for key, value in flat.items():
        top, _, rest = key.partition(".")
        state[top][rest] = value
    return state, coverage
