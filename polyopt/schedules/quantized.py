"""``linalg.quantized_matmul`` as an integer GEMM and its zero points' share, as gemmlowp,
FBGEMM and oneDNN compute it::

    sum_k (A[i, k] - az) (B[k, j] - bz)
        = sum_k A[i, k] B[k, j] - bz rowsum(A)[i] - az colsum(B)[j] + K az bz

The first term is a ``linalg.matmul`` of A and B (signed casts, as the op's), which the
low-precision GEMM runs on the dot engine (:mod:`polyopt.schedules.lowp_gemm`); the others
are O(M K + K N + M N) nests after it.  C's integers wrap, and the identity holds modulo
2^32, so the result is the op's bit for bit.  Written as the op's nest, the product ran as a
scalar loop with two subtractions per multiply-add.

MLIR counterpart: none upstream (its ``linalg.quantized_matmul`` generalizes to the nest); IREE
and torch-mlir split the zero points off the same way.
"""

from __future__ import annotations

from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
from ..affine.dialects.arith import INT_BINARY, ConstantOp
from ..affine.dialects.linalg import LinalgMatmulOp, QuantizedMatmulOp, build_cast
from ..affine.dialects.memref import AllocOp, DeallocOp
from ..affine.types import IntegerType, MemRefType

__all__ = ["decompose_quantized_matmuls", "decomposes"]


def decomposes(op) -> bool:
    """A ``linalg.quantized_matmul`` of static shapes whose A, B and C are a combination the
    low-precision GEMM takes (8-bit integers into i32)."""
    from ..affine.dialects.hop import MIXED_TYPES
    if not isinstance(op, QuantizedMatmulOp):
        return False
    a, b, _, _, c = op.operands
    types = tuple(str(v.type.element_type) for v in (a, b, c))
    return (types in MIXED_TYPES and isinstance(c.type.element_type, IntegerType)
            and all(v.type.has_static_shape for v in (a, b, c)))


def decompose_quantized_matmuls(module, remark=None) -> int:
    """Every ``linalg.quantized_matmul`` :func:`decomposes` takes becomes the
    ``linalg.matmul`` of its A and B and the correction nests (module docstring).  Returns
    how many."""
    ops = [op for op in module.walk() if decomposes(op)]
    for op in ops:
        _decompose(op)
        if remark is not None:
            remark(op.loc, "linalg.quantized_matmul: the linalg.matmul of A and B, then "
                           "- bz * rowsum(A) - az * colsum(B) + K * az * bz")
        op.erase()
    return len(ops)


def _decompose(op: QuantizedMatmulOp) -> None:
    """The sums first, then the product, then the correction nest right after it: an
    epilogue of the product (:mod:`polyopt.schedules.epilogue`), applied to C's register tile
    instead of a second pass over C."""
    a, bm, az, bz, c = op.operands
    loc = op.loc
    (m, k), n = a.type.shape, bm.type.shape[1]
    t = c.type.element_type
    b = Builder.before(op)
    add, sub, mul = INT_BINARY["addi"], INT_BINARY["subi"], INT_BINARY["muli"]

    def const(v):
        return b.create(ConstantOp, v, t, loc=loc).result

    def widened(builder, memref, i, j):
        v = builder.create(AffineLoadOp.build, memref, [i, j], loc=loc).result
        return build_cast(builder, v, t, False, loc)

    zero = const(0)
    rows = b.create(AllocOp.build, MemRefType((m,), t), loc=loc).results[0]
    cols = b.create(AllocOp.build, MemRefType((n,), t), loc=loc).results[0]
    # rowsum(A)[i]
    li = b.create(AffineForOp.build_constant, 0, m, loc=loc)
    bi = Builder.before_terminator(li.body)
    lk = bi.create(AffineForOp.build_constant, 0, k, 1, [zero], loc=loc)
    bk = Builder.before_terminator(lk.body)
    s = bk.create(add, lk.body.args[1], widened(bk, a, li.induction_var, lk.induction_var),
                  loc=loc).result
    bk.create(AffineYieldOp.build, [s], loc=loc)
    bi.create(AffineStoreOp.build, lk.results[0], rows, [li.induction_var], loc=loc)
    # colsum(B)[j], along B's rows
    lj = b.create(AffineForOp.build_constant, 0, n, loc=loc)
    Builder.before_terminator(lj.body).create(AffineStoreOp.build, zero, cols,
                                              [lj.induction_var], loc=loc)
    lk = b.create(AffineForOp.build_constant, 0, k, loc=loc)
    lj = Builder.before_terminator(lk.body).create(AffineForOp.build_constant, 0, n, loc=loc)
    bj = Builder.before_terminator(lj.body)
    old = bj.create(AffineLoadOp.build, cols, [lj.induction_var], loc=loc).result
    s = bj.create(add, old, widened(bj, bm, lk.induction_var, lj.induction_var), loc=loc).result
    bj.create(AffineStoreOp.build, s, cols, [lj.induction_var], loc=loc)
    azv, bzv = (build_cast(b, z, t, False, loc) for z in (az, bz))
    kab = b.create(mul, b.create(mul, const(k), azv, loc=loc).result, bzv, loc=loc).result
    b.create(LinalgMatmulOp.build, a, bm, c, loc=loc)
    # C[i, j] += (K az bz - bz rowsum[i]) - az colsum[j]
    li = b.create(AffineForOp.build_constant, 0, m, loc=loc)
    lj = Builder.before_terminator(li.body).create(AffineForOp.build_constant, 0, n, loc=loc)
    bj = Builder.before_terminator(lj.body)
    i, j = li.induction_var, lj.induction_var
    r = bj.create(AffineLoadOp.build, rows, [i], loc=loc).result
    part = bj.create(sub, kab, bj.create(mul, bzv, r, loc=loc).result, loc=loc).result
    col = bj.create(AffineLoadOp.build, cols, [j], loc=loc).result
    part = bj.create(sub, part, bj.create(mul, azv, col, loc=loc).result, loc=loc).result
    cv = bj.create(AffineLoadOp.build, c, [i, j], loc=loc).result
    bj.create(AffineStoreOp.build, bj.create(add, cv, part, loc=loc).result, c, [i, j],
              loc=loc)
    b.create(DeallocOp.build, rows, loc=loc)
    b.create(DeallocOp.build, cols, loc=loc)
