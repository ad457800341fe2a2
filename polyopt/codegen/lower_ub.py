"""Lowering of ``ub.poison``: a poison value may be anything, and polyopt makes it zero (a
refinement of LLVM's ``poison`` that keeps what a program computes from it deterministic, e.g.
the lanes a ``vector.transfer_read`` padded with it reads past the end of a memref).

A ranked memref's poison is a null pointer, and with a descriptor also offset, sizes and strides
0 (MLIR's lowering gives a poison descriptor): it may flow through branches, loops and calls,
and a program that does not take the path that reads it runs as written."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.ir import Operation
from polyopt.affine.types import UnrankedMemRefType
from polyopt.codegen.llvm_helpers import Unsupported
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("ub.poison")
def _lower_poison(L: FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    if isinstance(t, UnrankedMemRefType):
        raise Unsupported(f"a poison value of type '{t}' is not supported")
    L.bind_llvm(op.results[0], ir.Constant(L.ml.type(t), None))
