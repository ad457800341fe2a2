"""LLVM lowering of :mod:`polyopt.affine.dialects.vector_build` (MLIR's
``--convert-vector-to-llvm``): ``vector.step`` as a constant, ``from_elements`` as an
``insertelement`` chain, ``to_elements`` as ``extractelement``s, ``deinterleave`` as two
``shufflevector``s.  0-D and 1-D vectors (a 0-D vector is one element, as in MLIR's
lowering)."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.codegen.llvm_helpers import I32, I64, Unsupported
from polyopt.codegen.lowering import FunctionLowering, handles


def _one_d(t, op: Operation) -> None:
    if len(t.shape) > 1:
        raise Unsupported(f"{op.name} of n-D vectors ('{t}') is not supported")


@handles("vector.step")
def _lower_step(L: FunctionLowering, op: Operation) -> None:
    n = op.results[0].type.shape[0]
    L.bind(op.results[0], ir.Constant(ir.VectorType(I64, n), list(range(n))))


@handles("vector.from_elements")
def _lower_from_elements(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    _one_d(t, op)
    v = ir.Constant(L.ml.type(t), ir.Undefined)
    for k, x in enumerate(op.operands):
        v = L.b.insert_element(v, L.get(x), ir.Constant(I32, k))
    L.bind(op.results[0], v)


@handles("vector.to_elements")
def _lower_to_elements(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    _one_d(t, op)
    v = L.get(op.operands[0])
    for k, r in enumerate(op.results):
        L.bind(r, L.b.extract_element(v, ir.Constant(I32, k)))


@handles("vector.deinterleave")
def _lower_deinterleave(L: FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    _one_d(t, op)
    n = t.shape[0] // 2
    v = L.get(op.operands[0])
    for r, first in zip(op.results, (0, 1)):
        mask = ir.Constant(ir.VectorType(I32, n), [2 * i + first for i in range(n)])
        L.bind(r, L.b.shuffle_vector(v, v, mask))
