"""Precisions a graph can be exported at, and what each does to the module and its inputs."""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads with the export, not with every reader of a precision name
    import torch


class Precision(StrEnum):
    FP32 = "fp32"
    FP16 = "fp16"
    INT8 = "int8"  # fp32 activations, int8 per-channel weights (coreai-opt, after conversion)

    @classmethod
    def parse(cls, value: str | Precision) -> Precision:
        try:
            return cls(value)
        except ValueError:
            from conversion.core.errors import UserError

            choices = ", ".join(p.value for p in cls)
            raise UserError(f"unknown precision '{value}': choose one of {choices}") from None


def prepare_module(module: torch.nn.Module, precision: Precision) -> torch.nn.Module:
    """A copy of `module` at the precision's compute dtype (the caller's module is untouched);
    at fp32 its Linears pre-transposed (`rewrites.pretransposed_linears`: the Linux runtime
    transposes a Linear's weight on every call)."""
    from conversion.core.export.rewrites import pretransposed_linears

    m = copy.deepcopy(module).eval()
    if precision is Precision.FP16:
        m = m.half()
    if precision is Precision.FP32:
        m = pretransposed_linears(m)
    return m


def prepare_inputs(
    inputs: dict[str, torch.Tensor], precision: Precision
) -> dict[str, torch.Tensor]:
    """Float inputs follow the compute dtype; integer inputs are left alone."""
    if precision is not Precision.FP16:
        return dict(inputs)
    return {k: (v.half() if v.is_floating_point() else v) for k, v in inputs.items()}


def quantize_program(program, precision: Precision):
    """int8: per-channel symmetric weight quantization of the converted program."""
    if precision is not Precision.INT8:
        return program
    from coreai_opt.coreai_utils import CompressionGranularity, DType, quantize_weights

    return quantize_weights(
        coreai_program=program,
        dtype=DType.INT8,
        granularity=CompressionGranularity.PER_CHANNEL,
    )
