"""Lowering of the x86vector dialect (MLIR's ``--convert-vector-to-llvm=enable-x86vector``):
``x86vector.avx512.dot`` is AVX512-BF16's ``vdpbf16ps``, LLVM's
``llvm.x86.avx512bf16.dpbf16ps.{256,512}``."""

from __future__ import annotations

from polyopt.affine.ir import Operation
from polyopt.codegen.lowering import FunctionLowering, handles


@handles("x86vector.avx512.dot")
def _lower_dot(L: FunctionLowering, op: Operation) -> None:
    acc, a, b = op.operands
    bits = a.type.shape[0] * 16
    ret = L.ml.type(acc.type)
    fn = L.ml.intrinsic(f"llvm.x86.avx512bf16.dpbf16ps.{bits}", ret,
                        [ret, L.ml.type(a.type), L.ml.type(b.type)])
    L.bind(op.results[0], L.b.call(fn, [L.get(acc), L.get(a), L.get(b)]))
