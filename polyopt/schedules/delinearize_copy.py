"""Copy loops over a flattened index split where the index crosses its divisor (no MLIR pass;
the loop form of ``affine.delinearize_index``).

The NCHW implicit GEMM's im2col copy walks a micro-panel row of ``N_R`` output positions
``p = base + x`` of the flattened ``OH x OW`` plane and reads the input at
``(p floordiv OW, p mod OW)`` plus the window offsets: a division per element, and loads
that LLVM cannot vectorize (perf on ResNet-50's conv2_x in NCHW put a fifth of the time
there, in scalar ``vmovss``).  Written as the output rows the panel row crosses and the
columns inside each, the same copy reads runs of consecutive input elements and writes
consecutive buffer elements::

    for x = 0 to U {                       for oh = base floordiv D to (base + U - 1) floordiv D + 1 {
      .. I[.., (base + x) floordiv D ..,     for x = max(0, oh * D - base) to min(U, oh * D + D - base) {
             (base + x) mod D ..]      ->      .. I[.., oh .., x + base - oh * D ..]
      .. buf[.., x] ..                         .. buf[.., x] ..
    }                                      }}

``x`` keeps its range ``[0, U)``, so what indexes the buffer by it (the micro-panel's
``x mod N_R`` once its layout is normalized) still folds.
"""

from __future__ import annotations

from typing import Optional

from ..affine.affine_expr import (AffineBinaryExpr, AffineConstantExpr, AffineDimExpr,
                                  AffineExpr, AffineExprKind, AffineMap, constant, dim)
from ..affine.builder import Builder
from ..affine.ir import Value


def _linear(e: AffineExpr, operands) -> Optional[dict]:
    """``e`` over ``operands`` (dims only) as ``{Value: coefficient, None: constant}``, or None
    when it is not linear."""
    if isinstance(e, AffineConstantExpr):
        return {None: e.value} if e.value else {}
    if isinstance(e, AffineDimExpr):
        return {operands[e.position]: 1}
    if not isinstance(e, AffineBinaryExpr):
        return None
    if e.kind is AffineExprKind.ADD:
        a, b = _linear(e.lhs, operands), _linear(e.rhs, operands)
        if a is None or b is None:
            return None
        out = dict(a)
        for k, c in b.items():
            out[k] = out.get(k, 0) + c
        return {k: c for k, c in out.items() if c}
    if e.kind is AffineExprKind.MUL and isinstance(e.rhs, AffineConstantExpr):
        a = _linear(e.lhs, operands)
        return None if a is None else {k: c * e.rhs.value for k, c in a.items() if c * e.rhs.value}
    return None


def _split_points(op, x: Value) -> Optional[list]:
    """The ``(lhs - x, divisor)`` pairs of the floordiv/mod subexpressions of ``op``'s access
    map that use ``x``; None when ``x`` appears in one that is not ``(base + x) op D``."""
    operands = list(op.map_operands)
    out = []
    for result in op.map.results:
        for e in result.walk():
            if not (isinstance(e, AffineBinaryExpr) and
                    e.kind in (AffineExprKind.FLOORDIV, AffineExprKind.MOD)):
                continue
            lin = _linear(e.lhs, operands)
            uses_x = any(operands[p] is x for p in e.lhs.used_dims())
            if not uses_x:
                continue
            if lin is None or lin.get(x) != 1 or not isinstance(e.rhs, AffineConstantExpr):
                return None
            base = {k: c for k, c in lin.items() if k is not x}
            out.append((base, e.rhs.value))
    return out


def _form_expr(form: dict, positions: dict) -> AffineExpr:
    e: AffineExpr = constant(form.get(None, 0))
    for v, c in form.items():
        if v is not None:
            e = e + dim(positions[v]) * c
    return e


def delinearize_copy_loop(loop) -> bool:
    """Split the innermost copy loop ``loop`` (step 1 from one lower bound, a body of
    affine loads and stores) at the multiples of the divisor its subscripts divide
    ``base + x`` by (the module docstring, where ``x`` starts at 0; a micro-panel copied
    inside GEBP's ic loop starts at its first column).  Returns whether it was split: not
    when no subscript divides, when they disagree on ``base`` or the divisor, or when ``x``
    has other uses."""
    from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
    if not isinstance(loop, AffineForOp) or loop.step != 1 or loop.inits or \
            loop.lower_map.num_results != 1 or loop.lower_map.num_symbols:
        return False
    x = loop.induction_var
    body = [op for op in loop.body.ops if op.name != "affine.yield"]
    if not body or any(not isinstance(op, (AffineLoadOp, AffineStoreOp)) or op.map.num_symbols
                       for op in body):
        return False
    if any(u.op not in body or u.index <= u.op.MEMREF_INDEX for u in x.uses):
        return False
    points = []
    for op in body:
        found = _split_points(op, x)
        if found is None:
            return False
        points += found
    if not points or any(p != points[0] for p in points):
        return False
    base, d = points[0]
    if d <= 1:
        return False
    loc = loop.loc
    # oh from base floordiv D to min_i((base + u_i - 1) floordiv D) + 1, the upper bounds
    # u_i of x over the loop's own upper-bound operands
    ub = loop.upper_map
    ub_operands = list(loop.upper_operands)
    if ub.num_symbols:
        return False
    lb = loop.lower_map
    base_values = [v for v in base if v is not None]
    outer_operands = base_values + ub_operands + list(loop.lower_operands)
    pos = {v: i for i, v in enumerate(base_values)}
    base_e = _form_expr(base, pos)
    shift = len(base_values)
    uppers = [u.replace([dim(shift + i) for i in range(ub.num_dims)]) for u in ub.results]
    lower = lb.results[0].replace([dim(shift + ub.num_dims + i) for i in range(lb.num_dims)])
    oh_lb = AffineMap.get(len(outer_operands), 0, ((base_e + lower).floordiv(d),))
    oh_ub = AffineMap.get(len(outer_operands), 0,
                          tuple((base_e + u - 1).floordiv(d) + 1 for u in uppers))
    b = Builder.before(loop)
    oh_loop = b.create(AffineForOp.build, oh_lb, outer_operands, oh_ub, outer_operands, loc=loc)
    oh = oh_loop.induction_var
    # x from max(lower, oh * D - base) to min(u_i, oh * D + D - base)
    inner_operands = outer_operands + [oh]
    oh_e = dim(len(outer_operands))
    x_lb = AffineMap.get(len(inner_operands), 0, (lower, oh_e * d - base_e))
    x_ub = AffineMap.get(len(inner_operands), 0, tuple(uppers) + (oh_e * d + d - base_e,))
    x_loop = Builder.before_terminator(oh_loop.body).create(
        AffineForOp.build, x_lb, inner_operands, x_ub, inner_operands, loc=loc)
    for op in body:
        op.move_before(x_loop.body.terminator)
        _rewrite_access(op, x, x_loop.induction_var, oh, base, d)
    loop.erase()
    return True


def _rewrite_access(op, x: Value, new_x: Value, oh: Value, base: dict, d: int) -> None:
    """``op``'s subscripts with ``(base + x) floordiv d -> oh``, ``(base + x) mod d ->
    x + base - oh * d`` and ``x`` read from ``new_x``."""
    operands = list(op.map_operands)
    x_pos = {i for i, v in enumerate(operands) if v is x}
    new_operands = [new_x if v is x else v for v in operands] + [oh] + \
        [v for v in base if v is not None]
    n = len(operands)
    oh_e = dim(n)
    pos = {v: n + 1 + i for i, v in enumerate(v for v in base if v is not None)}
    base_e = _form_expr(base, pos)
    x_e = dim(min(x_pos))

    def sub(e: AffineExpr) -> AffineExpr:
        if isinstance(e, AffineBinaryExpr) and \
                e.kind in (AffineExprKind.FLOORDIV, AffineExprKind.MOD) and \
                any(p in x_pos for p in e.lhs.used_dims()):
            return oh_e if e.kind is AffineExprKind.FLOORDIV else x_e + base_e - oh_e * d
        if isinstance(e, AffineBinaryExpr):
            return AffineBinaryExpr(e.kind, sub(e.lhs), sub(e.rhs))
        return e

    results = tuple(sub(r) for r in op.map.results)
    op.set_map(AffineMap.get(len(new_operands), 0, results), new_operands)
