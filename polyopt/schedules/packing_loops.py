"""Shapes of packing loops that code generation handles better (no MLIR counterpart: they
are scheduling decisions about the copy nests that ``affineDataCopyGenerate`` produces)."""

from __future__ import annotations

from ..affine.affine_expr import AffineExpr, AffineMap, constant, dim
from ..affine.builder import Builder


def linear_terms(e: AffineExpr) -> list[int]:
    """The constant and the coefficients of ``e`` as a sum of multiples (0 stands for a term
    that is not one: g then stays ``gcd(g, 0) = g`` only for the pure linear parts)."""
    from ..affine.affine_expr import AffineBinaryExpr, AffineConstantExpr, AffineExprKind
    if isinstance(e, AffineConstantExpr):
        return [e.value]
    if isinstance(e, AffineBinaryExpr) and e.kind is AffineExprKind.ADD:
        return linear_terms(e.lhs) + linear_terms(e.rhs)
    if isinstance(e, AffineBinaryExpr) and e.kind is AffineExprKind.MUL:
        if isinstance(e.rhs, AffineConstantExpr):
            return [e.rhs.value]
        if isinstance(e.lhs, AffineConstantExpr):
            return [e.lhs.value]
    return [1]   # a bare dim or anything else: only g = 1 is safe


def _aligned_unit_loop(loop, multiple: int) -> bool:
    """Whether ``loop`` has step 1, no iter_args and one lower bound that is a multiple of
    ``multiple`` for any values of its operands."""
    from math import gcd
    if loop.step != 1 or loop.lower_map.num_results != 1 or loop.inits:
        return False
    align = multiple
    for t in linear_terms(loop.lower_map.results[0]):
        align = gcd(align, t)
    return align == multiple


def _rebase_inside(outer_iv, inner_loop, scale: int, loc) -> None:
    """Uses of ``outer_iv`` inside ``inner_loop`` read ``outer_iv * scale + inner IV`` (an
    ``affine.apply`` folded into its users)."""
    from ..affine.dialects.affine import AffineApplyOp
    from ..affine.loop_utils import fold_affine_apply
    uses = [u for u in list(outer_iv.uses) if inner_loop.is_proper_ancestor_of(u.op)]
    if not uses:
        return
    apply = Builder.at_start(inner_loop.body).create(
        AffineApplyOp.build, AffineMap.get(2, 0, (dim(0) * scale + dim(1),)),
        [outer_iv, inner_loop.induction_var], loc=loc)
    for u in uses:
        u.op.set_operand(u.index, apply.result)
    fold_affine_apply(apply)


def panelize_rows(r_loop, m_r: int):
    """``for r { for .. { for c { buf[.., r] = I[.., r, c] }}}`` over rows that start at a
    multiple of ``m_r`` -> full micro-panels first, each row of a panel innermost and unrolled
    (``for rp step m_r { for .. { for c { m_r copies }}}``): the ``m_r`` stores of one ``c``
    are consecutive in the micro-panel and LLVM turns the ``c`` loop into contiguous vector
    loads and interleaving shuffles instead of scatters; the rows of a last partial panel keep
    the original loop.  Returns the new loop over full panels, inserted before ``r_loop``
    (the remainder from then on), or ``None`` when the nest is unchanged."""
    from ..affine.dialects.affine import AffineForOp
    from ..affine.loop_utils import simplify_affine_expr, unroll_full
    if not _aligned_unit_loop(r_loop, m_r):
        return None
    ub = r_loop.upper_map
    full_ub = AffineMap.get(ub.num_dims, ub.num_symbols,
                            tuple(simplify_affine_expr(e.floordiv(m_r) * m_r)
                                  for e in ub.results))
    main = r_loop.clone()
    r_loop.parent.insert_before(r_loop, main)
    main.set_upper_bound(full_ub, list(r_loop.upper_operands))
    main.set_step(m_r)
    # the remainder: rows from the last full panel's end on (a max lower bound: empty except
    # in the block holding the last, partial panel)
    rest = _remainder_lower_bound(r_loop, full_ub)
    if rest is None:
        main.erase()
        return None
    r_loop.set_lower_bound(*rest)
    # rows inside a panel: innermost loop, fully unrolled
    loads = [op for op in main.walk() if op.name == "affine.load"]
    innermost = loads[0].parent.parent_op
    body_ops = [op for op in innermost.body.ops if op.name != "affine.yield"]
    rr_loop = Builder.before_terminator(innermost.body).create(AffineForOp.build_constant, 0,
                                                              m_r, loc=r_loop.loc)
    for op in body_ops:
        op.move_before(rr_loop.body.terminator)
    _rebase_inside(main.induction_var, rr_loop, 1, r_loop.loc)
    unroll_full(rr_loop)
    return main


def panelize_columns(c_loop, n_r: int) -> bool:
    """``for c = lb to ub { buf[.., c] = I[.., c] }`` with ``lb`` a multiple of ``n_r`` ->
    ``for p = lb / n_r to ceildiv(ub, n_r) { for cr = 0 to min(n_r, ub - p * n_r) {
    buf[.., p * n_r + cr] = I[.., p * n_r + cr] }}``: one micro-panel row per ``p``.  Once
    the buffer's ``(c floordiv n_r, .., c mod n_r)`` layout is normalized, the subscripts
    fold to ``[p, .., cr]`` (the range of ``cr`` is known), so LLVM copies each row with
    contiguous vectors; over the whole ``c`` range it had to scatter.  Returns whether the
    loop was changed."""
    from ..affine.dialects.affine import AffineForOp
    from ..affine.loop_utils import simplify_affine_expr
    if not _aligned_unit_loop(c_loop, n_r) or \
            any(isinstance(op, AffineForOp) for op in c_loop.body.ops):
        return False
    lb, ub = c_loop.lower_map, c_loop.upper_map
    lb_operands, ub_operands = list(c_loop.lower_operands), list(c_loop.upper_operands)
    body_ops = [op for op in c_loop.body.ops if op.name != "affine.yield"]
    # the panel loop's rows: cr < n_r and cr < ub - p * n_r for each upper bound
    # (a bound that is a multiple of n_r leaves whole panels: p * n_r + n_r <= it)
    p_dim = dim(ub.num_dims)
    partial = [e for e in ub.results if any(t % n_r for t in linear_terms(e))]
    cr_ub = AffineMap.get(ub.num_dims + 1, ub.num_symbols,
                          (constant(n_r),) +
                          tuple(simplify_affine_expr(e - p_dim * n_r) for e in partial)) \
        if partial else None
    c_loop.set_lower_bound(
        AffineMap.get(lb.num_dims, lb.num_symbols,
                      (simplify_affine_expr(lb.results[0].floordiv(n_r)),)), lb_operands)
    c_loop.set_upper_bound(
        AffineMap.get(ub.num_dims, ub.num_symbols,
                      tuple(simplify_affine_expr(e.ceildiv(n_r)) for e in ub.results)),
        ub_operands)
    p = c_loop.induction_var
    cr_operands = ub_operands[:ub.num_dims] + [p] + ub_operands[ub.num_dims:]
    if cr_ub is None:
        cr_loop = Builder.before_terminator(c_loop.body).create(
            AffineForOp.build_constant, 0, n_r, loc=c_loop.loc)
    else:
        cr_loop = Builder.before_terminator(c_loop.body).create(
            AffineForOp.build, AffineMap.constant_map(0), [], cr_ub, cr_operands,
            loc=c_loop.loc)
    for op in body_ops:
        op.move_before(cr_loop.body.terminator)
    _rebase_inside(p, cr_loop, n_r, c_loop.loc)
    return True


def _remainder_lower_bound(r_loop, full_ub: AffineMap):
    """(map, operands) of ``max(lb, full_ub...)``: the original lower bound and, as further
    candidates of the max, the full panels' end (its results are a min: only a single-result
    one can join a max bound)."""
    if full_ub.num_results != 1:
        # min(a, b) as a lower bound is not expressible; use the last result when the others
        # are the block's own end (r_lo + M_C, already a multiple of M_R: rows past it are not
        # this loop's), i.e. keep the candidate that depends on no loop IV
        consts = [e for e in full_ub.results if not e.used_dims()]
        if len(consts) != 1:
            return None
        target = consts[0]
    else:
        target = full_ub.results[0]
    lb = r_loop.lower_map
    shift = [dim(lb.num_dims + k) for k in range(full_ub.num_dims)]
    sym_shift = [dim(lb.num_dims + full_ub.num_dims + k) for k in range(full_ub.num_symbols)]
    lb_syms = [dim(lb.num_dims + full_ub.num_dims + full_ub.num_symbols + k)
               for k in range(lb.num_symbols)]
    first = lb.results[0].replace([dim(k) for k in range(lb.num_dims)], lb_syms)
    second = target.replace(shift, sym_shift)
    ordered = list(r_loop.lower_operands[:lb.num_dims]) + \
        list(r_loop.upper_operands) + list(r_loop.lower_operands[lb.num_dims:])
    amap = AffineMap.get(len(ordered), 0, (first, second))
    return amap, ordered


def prefetch_panel_rows(p_loop, rows_ahead: int, line_bytes: int = 64) -> bool:
    """In a copy nest ``for r { for p { for cr { buf[p, r, cr] = I[r, p * n_r + cr] }}}``
    (after :func:`panelize_columns`), prefetch the source's row ``r + rows_ahead`` before each
    panel row is copied: one ``affine.prefetch`` (to L1) per cache line of the panel row.

    A block of ``I`` narrower than its rows is a run of short segments, each on another page
    when the rows are 4 KiB or more apart; the hardware prefetchers start again on every
    row, and each load of the copy waits for memory.  Returns whether prefetches were
    inserted (only for that nest shape, one load of a rank-2 source)."""
    from ..affine.affine_expr import AffineConstantExpr, AffineMap, constant, dim
    from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffinePrefetchOp
    cr_loops = [op for op in p_loop.body.ops if isinstance(op, AffineForOp)]
    row_loop = p_loop.parent_op
    if len(cr_loops) != 1 or not isinstance(row_loop, AffineForOp):
        return False
    cr_loop = cr_loops[0]
    loads = [op for op in cr_loop.body.ops if isinstance(op, AffineLoadOp)]
    if len(loads) != 1 or loads[0].memref.type.rank != 2:
        return False
    load = loads[0]
    widths = [e.value for e in cr_loop.upper_map.results if isinstance(e, AffineConstantExpr)]
    if not widths or cr_loop.lower_map.results[0] != constant(0):
        return False
    elem = max(1, load.memref.type.element_type.width // 8)
    per_line = max(1, line_bytes // elem)
    operands = list(load.map_operands)
    amap = load.map
    row_dims = {n for n, v in enumerate(operands) if v is row_loop.induction_var}
    uses = [set(e.used_dims()) & row_dims for e in amap.results]
    if amap.num_symbols or not uses[0] or uses[1]:
        return False      # the outer loop is not (only) the source's row
    cr_iv, row_iv = cr_loop.induction_var, row_loop.induction_var
    kept = [v for v in operands if v is not cr_iv]
    for col in range(0, min(widths), per_line):
        subst, n = [], 0
        for v in operands:
            if v is cr_iv:
                subst.append(constant(col))
                continue
            subst.append(dim(n) + rows_ahead if v is row_iv else dim(n))
            n += 1
        results = tuple(e.replace(subst[:amap.num_dims], subst[amap.num_dims:])
                        for e in amap.results)
        cr_loop.parent.insert_before(cr_loop, AffinePrefetchOp.build(
            load.memref, kept, AffineMap.get(len(kept), 0, results), locality=3,
            loc=load.loc))
    return True
