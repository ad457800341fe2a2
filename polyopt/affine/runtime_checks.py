"""Run-time checks of sizes that only the running program knows (``?`` dimensions).

``guard_sizes`` wraps what comes next in an ``affine.if`` over the sizes, with a failing
``cf.assert`` in its else branch: the checked code runs only when the sizes agree, and the
Python call (or ``polyopt run``) reports ``FILE:LINE:COL: error: <message>`` instead of reading
or writing out of bounds.  MLIR itself leaves such mismatches undefined (its optional
``-generate-runtime-verification`` inserts ``cf.assert``s that abort the process)::

    affine.if affine_set<()[s0, s1] : (s0 - s1 == 0)>()[%k_a, %k_b] { <the nest> }
    else { %false = arith.constant false
           cf.assert %false, "'hop.matmul' operands have sizes that do not agree at run time" }
"""

from __future__ import annotations

from typing import Sequence, Union

from .affine_expr import AffineExpr, IntegerSet, symbol
from .builder import Builder
from .dialects.affine import AffineIfOp
from .dialects.arith import ConstantOp
from .dialects.cf import AssertOp
from .ir import Value
from .types import i1

#: A size: an ``int`` when static, else an ``index`` value.
Extent = Union[int, Value]

__all__ = ["Extent", "guard_sizes"]


class SizeExprs:
    """Affine expressions over extents: ``int`` extents fold, values become symbols."""

    def __init__(self):
        self.symbols: list[Value] = []

    def __call__(self, e: Extent) -> AffineExpr | int:
        if isinstance(e, int):
            return e
        for k, s in enumerate(self.symbols):
            if s is e:
                return symbol(k)
        self.symbols.append(e)
        return symbol(len(self.symbols) - 1)


def guard_sizes(b: Builder, equal: Sequence[tuple[Extent, Extent]], message: str, loc,
                at_least: Sequence[tuple[Extent, AffineExpr | int]] = (),
                sizes: SizeExprs | None = None) -> Builder:
    """A builder for code that runs only when each pair in ``equal`` is equal and each
    ``(size, bound)`` in ``at_least`` has ``size >= bound`` (``bound`` an expression over the
    symbols of ``sizes``); otherwise ``cf.assert`` fails with ``message``.  Conditions that
    hold statically are dropped; with none left, ``b`` itself is returned."""
    sizes = sizes if sizes is not None else SizeExprs()
    constraints, eqs = [], []
    for x, y in equal:
        if isinstance(x, int) and isinstance(y, int):
            if x != y:
                raise ValueError(f"static sizes {x} and {y} differ")
            continue
        constraints.append(sizes(x) - sizes(y))
        eqs.append(True)
    for size, bound in at_least:
        if isinstance(size, int) and isinstance(bound, int):
            if size < bound:
                raise ValueError(f"static size {size} is below {bound}")
            continue
        constraints.append(sizes(size) - bound)
        eqs.append(False)
    if not constraints:
        return b
    cond = IntegerSet(0, len(sizes.symbols), constraints, eqs)
    guard = b.create(AffineIfOp.build, cond, sizes.symbols, with_else=True, loc=loc)
    else_b = Builder.before_terminator(guard.else_block)
    false = else_b.create(ConstantOp, 0, i1, loc=loc).result
    else_b.create(AssertOp.build, false, message, loc=loc)
    return Builder.before_terminator(guard.then_block)
