"""``linalg.mmt4d`` as the matrix product it tiles::

    C[m, n, m0, n0] += A[m, k, m0, k0] * B[n, k, n0, k0]
  ->
    A' = unpack(A)   A'[m * M0 + m0, k * K0 + k0]     (M*M0 x K*K0)
    B' = unpack(B)   B'[k * K0 + k0, n * N0 + n0]     (K*K0 x N*N0)
    C' = unpack(C)   C'[m * M0 + m0, n * N0 + n0]
    linalg.matmul ins(A', B') outs(C')                 (the BLIS pipeline, or the dot engine)
    C = pack(C')

IREE's data tiling goes the other way (pack, mmt4d, unpack) so that its micro-kernel reads
tiles in place; polyopt's GEMM packs its own panels, and mmt4d's contraction read as it is is a
batch of M x N tiny products, each packed again (f32 64x64x256 tiles of 8x8x1: 48.9 GFLOPS
where the matmul of the same matrices runs at 259).  The copies are O(M K + K N + M N).

MLIR counterpart: ``linalg.unpack`` / ``linalg.pack`` around the matmul (tensor ops upstream;
here copy nests between memrefs).
"""

from __future__ import annotations

from ..affine.affine_expr import AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineLoadOp, AffineStoreOp
from ..affine.dialects.linalg import LinalgMatmulOp, Mmt4dOp
from ..affine.dialects.memref import AllocOp, DeallocOp
from ..affine.ir import Value
from ..affine.types import MemRefType
from .nest_building import extent_loops

__all__ = ["decompose_mmt4ds", "decomposes"]


def decomposes(op) -> bool:
    """An ``linalg.mmt4d`` of static shapes whose element types the GEMM takes: one (f32,
    f64) or a low-precision combination (bf16 -> f32, i8 -> i32, ...)."""
    from ..affine.dialects.hop import MIXED_TYPES
    if not isinstance(op, Mmt4dOp) or not all(v.type.has_static_shape for v in op.operands):
        return False
    types = tuple(str(v.type.element_type) for v in op.operands)
    return types in MIXED_TYPES or (len(set(types)) == 1 and types[0] in ("f32", "f64"))


def decompose_mmt4ds(module, remark=None) -> int:
    """Every ``linalg.mmt4d`` :func:`decomposes` takes becomes unpacks, a ``linalg.matmul``
    and C's pack (module docstring).  Returns how many."""
    ops = [op for op in module.walk() if decomposes(op)]
    for op in ops:
        sizes = _decompose(op)
        if remark is not None:
            remark(op.loc, f"linalg.mmt4d: the linalg.matmul of its unpacked matrices "
                           f"({sizes}), C packed back")
        op.erase()
    return len(ops)


def _copy(b: Builder, src: Value, src_map: AffineMap, dst: Value, dst_map: AffineMap,
          extents, loc) -> None:
    """``dst[dst_map(ivs)] = src[src_map(ivs)]`` over a nest of ``extents``."""
    loops, body = extent_loops(b, extents, loc)
    ivs = [loop.induction_var for loop in loops]
    v = body.create(AffineLoadOp.build, src, ivs, src_map, loc=loc).result
    body.create(AffineStoreOp.build, v, dst, ivs, dst_map, loc=loc)


def _decompose(op: Mmt4dOp) -> str:
    a, bm, c = op.operands
    loc = op.loc
    (m, k, m0, k0), (n, _, n0, _) = a.type.shape, bm.type.shape
    b = Builder.before(op)

    def alloc(rows, cols, like):
        return b.create(AllocOp.build, MemRefType((rows, cols), like.type.element_type),
                        loc=loc).results[0]
    au, bu, cu = alloc(m * m0, k * k0, a), alloc(k * k0, n * n0, bm), alloc(m * m0, n * n0, c)
    identity = AffineMap.identity(4)
    d0, d1, d2, d3 = (dim(i) for i in range(4))
    a_at = AffineMap.get(4, 0, (d0 * m0 + d2, d1 * k0 + d3))      # over A's (m, k, m0, k0)
    b_at = AffineMap.get(4, 0, (d1 * k0 + d3, d0 * n0 + d2))      # over B's (n, k, n0, k0)
    c_at = AffineMap.get(4, 0, (d0 * m0 + d2, d1 * n0 + d3))      # over C's (m, n, m0, n0)
    _copy(b, a, identity, au, a_at, a.type.shape, loc)
    _copy(b, bm, identity, bu, b_at, bm.type.shape, loc)
    _copy(b, c, identity, cu, c_at, c.type.shape, loc)
    b.create(LinalgMatmulOp.build, au, bu, cu, loc=loc)
    _copy(b, cu, c_at, c, identity, c.type.shape, loc)
    for buf in (au, bu, cu):
        b.create(DeallocOp.build, buf, loc=loc)
    return f"{m * m0}x{n * n0}x{k * k0}"
