"""Small builders shared by the op expansions (matmul, convolutions): a perfect nest of
constant loops and the ``acc + x * y`` statement body."""

from __future__ import annotations

from typing import Sequence

from ..affine.affine_expr import AffineMap, symbol
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp
from ..affine.dialects.arith import FLOAT_BINARY, INT_BINARY, ConstantOp
from ..affine.dialects.memref import DimOp
from ..affine.ir import Value
from ..affine.runtime_checks import Extent
from ..affine.types import FloatType, index


def mul_add(b: Builder, x: Value, y: Value, acc: Value, loc) -> Value:
    """``acc + x * y`` with float or integer arithmetic."""
    is_float = isinstance(x.type, FloatType)
    ops = FLOAT_BINARY if is_float else INT_BINARY
    prod = b.create(ops["mulf" if is_float else "muli"], x, y, loc=loc).result
    return b.create(ops["addf" if is_float else "addi"], acc, prod, loc=loc).result


def constant_loops(b: Builder, extents, loc) -> tuple[list[AffineForOp], Builder]:
    """A perfect nest ``0 to extent`` per extent; returns the loops and a builder in the body."""
    loops = []
    inner = b
    for n in extents:
        loop = inner.create(AffineForOp.build_constant, 0, n, loc=loc)
        loops.append(loop)
        inner = Builder.before_terminator(loop.body)
    return loops, inner


def memref_size(b: Builder, memref: Value, axis: int, loc) -> Extent:
    """The extent of ``memref``'s dimension ``axis``: an ``int`` when static, else the result
    of a ``memref.dim`` created at ``b``."""
    d = memref.type.shape[axis]
    if d is not None:
        return d
    k = b.create(ConstantOp, axis, index, loc=loc).result
    return b.create(DimOp, memref, k, loc=loc).result


def extent_loops(b: Builder, extents: Sequence[Extent], loc) -> tuple[list[AffineForOp], Builder]:
    """A perfect nest ``0 to extent`` per extent, an ``int`` or an ``index`` value (a symbol
    upper bound); returns the loops and a builder in the body."""
    loops = []
    inner = b
    for n in extents:
        if isinstance(n, int):
            loop = inner.create(AffineForOp.build_constant, 0, n, loc=loc)
        else:
            loop = inner.create(AffineForOp.build, AffineMap.constant_map(0), [],
                                AffineMap.get(0, 1, (symbol(0),)), [n], loc=loc)
        loops.append(loop)
        inner = Builder.before_terminator(loop.body)
    return loops, inner
