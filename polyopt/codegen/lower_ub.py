"""Lowering of ``ub.poison``: a poison value may be anything, and polyopt makes it zero (a
refinement of LLVM's ``poison`` that keeps what a program computes from it deterministic, e.g.
the lanes a ``vector.transfer_read`` padded with it reads past the end of a memref)."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.affine.types import MemRefType, UnrankedMemRefType
from polyopt.codegen.llvm_helpers import Unsupported
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("ub.poison")
def _lower_poison(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    if isinstance(t, (MemRefType, UnrankedMemRefType)):
        raise Unsupported(f"a poison value of type '{t}' is not supported")
    L.bind(op.results[0], ir.Constant(L.ml.type(t), None))
