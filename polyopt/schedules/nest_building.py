"""Small builders shared by the op expansions (matmul, convolutions): a perfect nest of
constant loops and the ``acc + x * y`` statement body."""

from __future__ import annotations

from typing import Sequence, Union

from ..affine.affine_expr import AffineMap, IntegerSet, symbol
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineIfOp
from ..affine.dialects.arith import FLOAT_BINARY, INT_BINARY, ConstantOp
from ..affine.dialects.cf import AssertOp
from ..affine.dialects.memref import DimOp
from ..affine.ir import Value
from ..affine.types import FloatType, i1, index

Extent = Union[int, Value]


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


def guard_equal_extents(b: Builder, pairs: Sequence[tuple[Extent, Extent]], message: str,
                        loc) -> Builder:
    """Run what the returned builder creates only when each pair of extents is equal at run
    time; otherwise ``cf.assert`` fails with ``message`` (the Python call raises it).  Pairs of
    equal static extents need no check; with none left, ``b`` itself is returned.

        affine.if ()[s0, s1] : (s0 - s1 == 0)[%k_a, %k_b] { <the nest> }
        else { cf.assert %false, "<message>" }
    """
    symbols: list[Value] = []
    constraints = []

    def operand(e: Extent):
        if isinstance(e, int):
            return e
        symbols.append(e)
        return symbol(len(symbols) - 1)
    for x, y in pairs:
        if isinstance(x, int) and isinstance(y, int):
            continue
        constraints.append(operand(x) - operand(y))
    if not constraints:
        return b
    cond = IntegerSet(0, len(symbols), constraints, [True] * len(constraints))
    guard = b.create(AffineIfOp.build, cond, symbols, with_else=True, loc=loc)
    else_b = Builder.before_terminator(guard.else_block)
    false = else_b.create(ConstantOp, 0, i1, loc=loc).result
    else_b.create(AssertOp.build, false, message, loc=loc)
    return Builder.before_terminator(guard.then_block)
