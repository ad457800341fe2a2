"""Maps over a table of SSA values: the step shared by the passes that build affine
expressions over "every index value in sight" (dims numbered by table position) and then need
an ``affine.*`` map with compact operands."""

from __future__ import annotations

from typing import Callable, Sequence

from .affine_expr import AffineExpr, AffineMap, dim, symbol
from .ir import Value


def export_map(exprs: Sequence[AffineExpr], values: Sequence[Value], symbolic: Sequence[bool],
               simplify: Callable[[AffineExpr], AffineExpr],
               presimplify: bool = False) -> tuple[AffineMap, list[Value]]:
    """``exprs`` use ``d<k>`` for ``values[k]``; returns a map over just the values they use
    (dims in table order, then the symbolic ones as symbols) and those operands."""
    if presimplify:
        exprs = [simplify(e) for e in exprs]
    used = sorted(set().union(*(e.used_dims() for e in exprs))) if exprs else []
    dims_ = [k for k in used if not symbolic[k]]
    syms = [k for k in used if symbolic[k]]
    repl: list[AffineExpr] = [dim(0)] * ((used[-1] + 1) if used else 0)
    for i, k in enumerate(dims_):
        repl[k] = dim(i)
    for i, k in enumerate(syms):
        repl[k] = symbol(i)
    results = [simplify(e.replace_dims(repl)) for e in exprs]
    return AffineMap.get(len(dims_), len(syms), results), [values[k] for k in dims_ + syms]
