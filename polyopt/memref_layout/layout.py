"""The semantics of memref layouts for code generation: logical index -> flat element offset.

A memref's layout says where element ``A[i0, ..., in-1]`` lives in its buffer.  Code generation
needs it as ONE flat element offset from the start of the buffer (which is what the lowering
adds to the base pointer), and the allocator and the numpy boundary need the buffer's size:

* identity (no layout): row-major over the shape, ``((i0 * s1 + i1) * s2 + i2) ...``;
* an affine-map layout ``(d0, ..., dn-1) -> (r0, ..., rk-1)`` maps the logical index to an
  index into a *physical* row-major array whose shape is the extent of each result over the
  logical index box (``(d0, d1) -> (d1, d0)`` on ``4x8`` is an ``8x4`` array;
  ``(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)`` on ``64x256`` is ``16x256x4``;
  ``(d0, d1) -> (d0 * 258 + d1)`` on ``64x256`` is a 1-D array of ``63 * 258 + 256``);
  the offset is the row-major linearization of that physical index;
* ``strided<[s0, ..., sn-1], offset: o>`` is ``o + i0 * s0 + ... + in-1 * sn-1`` into a 1-D
  buffer of ``max offset + 1`` elements.

Extents are computed by interval arithmetic on the expression tree (exact for ``+``,
multiplication by constants and ``floordiv``/``ceildiv``/``mod`` by positive constants when
every dimension occurs once in a result; otherwise an upper bound, which only over-allocates).

Example::

    >>> t = parse_type("memref<64x256xf64, affine_map<(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>>")
    >>> physical_shape(t), physical_size(t)
    ((16, 256, 4), 16384)
    >>> linearize(t)
    AffineMap('(d0, d1) -> ((d0 floordiv 4) * 1024 + d1 * 4 + d0 mod 4)')

Dynamic (``?``) dimensions, strides or offsets, layout maps with symbols and results that can
be negative are rejected with :class:`CodegenError`.

A layout must be injective on the index box (two logical elements never share a location):
:func:`layout_collision` decides it exactly with ISL and the verifier rejects any memref type
that violates it (``memref<4x4xf64, (d0, d1) -> (d0 + d1)>``: indices (0, 1) and (1, 0) both
map to (1)).  :func:`layout_map` gives every layout, strided ones included, as an affine map
(what :mod:`polyopt.memref_layout.normalize` composes into the accesses).
"""

from __future__ import annotations

from typing import Optional, Sequence

from polyopt.affine.affine_expr import (AffineBinaryExpr, AffineConstantExpr, AffineDimExpr,
                                        AffineExpr, AffineExprKind, AffineMap, AffineSymbolExpr,
                                        constant, dim)
from polyopt.affine.diagnostics import CodegenError, Location
from polyopt.affine.dialects.memref import layout_as_map, layout_collision
from polyopt.affine.types import MemRefType, StridedLayout

__all__ = [
    "DYNAMIC_DIMS_MESSAGE",
    "expr_bounds",
    "needs_descriptor",
    "strided_form",
    "is_identity_layout",
    "is_injective",
    "layout_collision",
    "layout_map",
    "linearize",
    "physical_shape",
    "physical_size",
    "row_major_strides",
]

DYNAMIC_DIMS_MESSAGE = "dynamic memref dimensions ('?') are not supported yet"


def strided_form(memref_type: MemRefType) -> Optional[tuple[tuple[Optional[int], ...],
                                                             Optional[int]]]:
    """``(strides, offset)`` in elements for the identity and ``strided<...>`` layouts, with
    ``None`` for a value only known at run time (``?``, or a row-major stride over a ``?`` size);
    ``None`` for a layout map that is not the identity.

        memref<?x4x5xf64>                       ->  ((20, 5, 1), 0)
        memref<4x?xf64>                         ->  ((None, 1), 0)
        memref<?x?xf32, strided<[?, 1], offset: ?>>  ->  ((None, 1), None)
    """
    layout = memref_type.layout
    if isinstance(layout, StridedLayout):
        return tuple(layout.strides), layout.offset
    if layout is not None and not (isinstance(layout, AffineMap) and layout.is_identity()
                                   and layout.num_symbols == 0):
        return None
    strides: list[Optional[int]] = []
    acc: Optional[int] = 1
    for extent in reversed(memref_type.shape):
        strides.append(acc)
        acc = None if acc is None or extent is None else acc * extent
    return tuple(reversed(strides)), 0


def needs_descriptor(memref_type: MemRefType) -> bool:
    """Does code need MLIR's memref descriptor (sizes, strides, offset at run time) for this
    type: a ``?`` dimension, stride or offset.  Other memrefs are one pointer to their buffer."""
    if any(d is None for d in memref_type.shape):
        return True
    layout = memref_type.layout
    return isinstance(layout, StridedLayout) and \
        (layout.offset is None or any(s is None for s in layout.strides))


def is_identity_layout(memref_type: MemRefType) -> bool:
    """True for the default row-major layout (no layout, or the identity map/strides)."""
    layout = memref_type.layout
    if layout is None:
        return True
    if isinstance(layout, AffineMap):
        return layout.is_identity() and layout.num_symbols == 0
    if isinstance(layout, StridedLayout):
        if any(d is None for d in memref_type.shape):
            return False
        return layout.offset == 0 and tuple(layout.strides) == \
            row_major_strides(memref_type.shape)
    return False


def layout_map(memref_type: MemRefType, loc: Optional[Location] = None) -> AffineMap:
    """The layout as an affine map from logical to physical indices (no symbols).

    The map itself for affine layouts; ``(d0, ..., dn-1) -> (o + d0 * s0 + ... + dn-1 * sn-1)``
    for ``strided<[s0, ..., sn-1], offset: o>``; the identity for the default layout::

        memref<30x40xf64, strided<[80, 1], offset: 5>>   ->  (d0, d1) -> (d0 * 80 + d1 + 5)

    Raises :class:`CodegenError` for dynamic strides/offset, layout maps with symbols or of the
    wrong arity.
    """
    layout = memref_type.layout
    if isinstance(layout, StridedLayout):
        _strided_expr(memref_type, layout, loc)  # dynamic values, stride count
    amap = layout_as_map(memref_type)
    if amap is None:
        raise CodegenError(f"unsupported memref layout in '{memref_type}'", loc)
    if isinstance(layout, AffineMap):
        _check_map(memref_type, amap, loc)
    return amap


def is_injective(memref_type: MemRefType) -> bool:
    """Does the layout map distinct in-bounds indices to distinct locations?  (Exact, with ISL;
    see :func:`layout_collision` for a witness pair when it does not.)"""
    return layout_collision(memref_type) is None


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape`` (``(4, 5, 6)`` -> ``(30, 6, 1)``)."""
    strides = []
    acc = 1
    for extent in reversed(tuple(shape)):
        strides.append(acc)
        acc *= extent
    return tuple(reversed(strides))


def _row_major_expr(exprs: Sequence[AffineExpr], shape: Sequence[int]) -> AffineExpr:
    offset: AffineExpr = constant(0)
    for e, stride in zip(exprs, row_major_strides(shape)):
        offset = offset + e * stride
    return offset


def _check_static(memref_type: MemRefType, loc: Optional[Location]) -> None:
    if not isinstance(memref_type, MemRefType):
        raise CodegenError(f"expected a ranked memref type, got '{memref_type}'", loc)
    if any(d is None for d in memref_type.shape):
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, loc)


def _check_map(memref_type: MemRefType, layout: AffineMap, loc: Optional[Location]) -> None:
    if layout.num_symbols:
        raise CodegenError(f"layout maps with symbols are not supported: '{memref_type}'", loc)
    if layout.num_dims != memref_type.rank:
        raise CodegenError(f"layout map of '{memref_type}' has {layout.num_dims} dimensions but "
                           f"the memref has rank {memref_type.rank}", loc)
    if not layout.results:
        raise CodegenError(f"layout map of '{memref_type}' has no results", loc)


def _strided_expr(memref_type: MemRefType, layout: StridedLayout,
                  loc: Optional[Location]) -> AffineExpr:
    if layout.offset is None or any(s is None for s in layout.strides):
        raise CodegenError(f"dynamic strides or offset ('?') are not supported: '{memref_type}'",
                           loc)
    if len(layout.strides) != memref_type.rank:
        raise CodegenError(f"strided layout of '{memref_type}' has {len(layout.strides)} strides "
                           f"but the memref has rank {memref_type.rank}", loc)
    e: AffineExpr = constant(layout.offset)
    for i, s in enumerate(layout.strides):
        e = e + dim(i) * s
    return e


# ---------------------------------------------------------------------------------------------
# interval arithmetic


def _floor(a: int, b: int) -> int:
    return a // b


def _ceil(a: int, b: int) -> int:
    return -((-a) // b)


def expr_bounds(expr: AffineExpr, dim_bounds: Sequence[tuple[int, int]],
                symbol_bounds: Sequence[tuple[int, int]] = ()) -> tuple[int, int]:
    """Bounds ``(lo, hi)`` (inclusive) of ``expr`` for dims ``di`` in ``dim_bounds[i]``.

    Interval arithmetic on the expression tree: exact when every dim occurs once and divisors
    are constants; otherwise a sound over-approximation.  Symbols need ``symbol_bounds``.
    Raises ``ValueError`` for a symbol without bounds or a non-constant divisor.
    """
    if isinstance(expr, AffineConstantExpr):
        return expr.value, expr.value
    if isinstance(expr, AffineDimExpr):
        return tuple(dim_bounds[expr.position])
    if isinstance(expr, AffineSymbolExpr):
        if expr.position >= len(symbol_bounds):
            raise ValueError(f"no bounds for symbol s{expr.position}")
        return tuple(symbol_bounds[expr.position])
    assert isinstance(expr, AffineBinaryExpr)
    lo1, hi1 = expr_bounds(expr.lhs, dim_bounds, symbol_bounds)
    lo2, hi2 = expr_bounds(expr.rhs, dim_bounds, symbol_bounds)
    kind = expr.kind
    if kind is AffineExprKind.ADD:
        return lo1 + lo2, hi1 + hi2
    if kind is AffineExprKind.MUL:
        corners = (lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2)
        return min(corners), max(corners)
    if lo2 != hi2:
        raise ValueError(f"non-constant divisor in '{expr}'")
    c = lo2
    if c == 0:
        raise ValueError(f"division by zero in '{expr}'")
    if kind is AffineExprKind.FLOORDIV:
        a, b = _floor(lo1, c), _floor(hi1, c)
        return min(a, b), max(a, b)
    if kind is AffineExprKind.CEILDIV:
        a, b = _ceil(lo1, c), _ceil(hi1, c)
        return min(a, b), max(a, b)
    # MOD: result in [0, |c|) for c > 0 (MLIR requires a positive modulus)
    if c < 0:
        raise ValueError(f"non-positive modulus in '{expr}'")
    if _floor(lo1, c) == _floor(hi1, c):
        return lo1 % c, hi1 % c
    return 0, c - 1


def _result_extents(memref_type: MemRefType, exprs: Sequence[AffineExpr],
                    loc: Optional[Location]) -> tuple[int, ...]:
    if any(d == 0 for d in memref_type.shape):
        return (0,) * len(exprs)
    box = [(0, d - 1) for d in memref_type.shape]
    extents = []
    for i, e in enumerate(exprs):
        try:
            lo, hi = expr_bounds(e, box)
        except ValueError as exc:
            raise CodegenError(f"unsupported layout '{memref_type}': {exc}", loc) from None
        if lo < 0:
            raise CodegenError(f"layout of '{memref_type}' is invalid: result #{i} ('{e}') can be "
                               f"negative (as low as {lo}) on the index space", loc)
        extents.append(hi + 1)
    return tuple(extents)


def _physical(memref_type: MemRefType, loc: Optional[Location]):
    """(physical shape, physical index expressions over the logical dims)."""
    _check_static(memref_type, loc)
    layout = memref_type.layout
    rank = memref_type.rank
    if layout is None:
        return tuple(memref_type.shape), [dim(i) for i in range(rank)]
    if isinstance(layout, AffineMap):
        _check_map(memref_type, layout, loc)
        if layout.is_identity():
            return tuple(memref_type.shape), [dim(i) for i in range(rank)]
        exprs = list(layout.results)
    elif isinstance(layout, StridedLayout):
        exprs = [_strided_expr(memref_type, layout, loc)]
    else:
        raise CodegenError(f"unsupported memref layout in '{memref_type}'", loc)
    return _result_extents(memref_type, exprs, loc), exprs


def physical_shape(memref_type: MemRefType, loc: Optional[Location] = None) -> tuple[int, ...]:
    """Shape of the row-major buffer behind ``memref_type``.

    The memref's own shape for the identity layout; the extent of each layout-map result over
    the logical index box for affine-map layouts; ``(max offset + 1,)`` for strided layouts.
    """
    return _physical(memref_type, loc)[0]


def physical_size(memref_type: MemRefType, loc: Optional[Location] = None) -> int:
    """Number of elements to allocate for ``memref_type``: the product of
    :func:`physical_shape`, i.e. the largest offset + 1, except that a partial last tile of a
    tiled layout is padded to a full tile (as MLIR's ``normalizeMemRefs`` does)."""
    n = 1
    for extent in physical_shape(memref_type, loc):
        n *= extent
    return n


def linearize(memref_type: MemRefType, loc: Optional[Location] = None) -> AffineMap:
    """``(d0, ..., dn-1) -> (offset)``: the flat element offset of a logical index.

    Row-major over :func:`physical_shape` composed with the layout map (the strided form for
    ``strided<...>`` layouts).  Rank-0 memrefs give ``() -> (0)``.
    """
    shape, exprs = _physical(memref_type, loc)
    if isinstance(memref_type.layout, StridedLayout):
        offset = exprs[0]
    else:
        offset = _row_major_expr(exprs, shape)
    return AffineMap(memref_type.rank, 0, [offset])
