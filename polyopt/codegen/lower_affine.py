"""Lowering of the affine dialect (MLIR's lower-affine, then to LLVM): ``affine.for`` as a
canonical loop with header phis, ``affine.parallel`` as a nest of such loops with its reductions
in accumulators (with ``threads > 1`` its outermost dimension split statically over an OpenMP
team, :mod:`polyopt.codegen.openmp`), ``affine.if`` as branches, ``affine.apply/min/max``,
``affine.delinearize_index``/``linearize_index`` and subscripts through linear forms, loads,
stores and prefetches."""

from __future__ import annotations

import math

from llvmlite import ir

from polyopt.affine.affine_expr import AffineMap
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.codegen.index_forms import Lin
from polyopt.codegen.llvm_helpers import (I32, I64, NSW, VOID, call_intrinsic, i64,
                                          int_const, opaque_alloca)
from polyopt.codegen.loop_metadata import PARALLEL_ACCESSES, annotate_parallel_loop
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.openmp import Region, emit_parallel_region, iteration_cost, trip_count


@handles("affine.for")
def _lower_for(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    lb, lb_range = L.combine_bound(L.map_forms(op.lower_map, op.lower_operands), True)
    ub, ub_range = L.combine_bound(L.map_forms(op.upper_map, op.upper_operands), False)
    step = int(op.step)
    if step <= 0:
        raise CodegenError(f"'affine.for' step must be positive, got {step}", op.loc)
    inits = [L.get(v) for v in op.inits]
    iter_args = list(op.region_iter_args)
    pre = b.block
    header = L.fn.append_basic_block("for.header")
    body = L.fn.append_basic_block("for.body")
    exit_ = L.fn.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, "iv")
    phis = [b.phi(init.type) for init in inits]
    b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)
    b.position_at_end(body)
    L.bind(op.induction_var, iv)
    L.leaf_values[id(iv)] = iv
    hi = None if ub_range[1] is None else ub_range[1] - 1
    L.leaf_ranges[id(iv)] = (lb_range[0], hi)
    L.bind_phis(iter_args, phis)
    first_nested = len(L.fn.basic_blocks)       # blocks the body adds come after exit_
    yielded = L.lower_region_block(op.body)
    nxt = b.add(iv, i64(step), name="iv.next", flags=NSW)
    latch = b.block
    back_edge = b.branch(header)
    if PARALLEL_ACCESSES in op.attributes:
        annotate_parallel_loop(L.ml.llmod, [body] + list(L.fn.basic_blocks[first_nested:]),
                               back_edge)
    iv.add_incoming(lb, pre)
    iv.add_incoming(nxt, latch)
    for phi, init, y in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(y, latch)
    b.position_at_end(exit_)
    L.bind_phis(op.results, phis)


#: The value each reduction of ``affine.parallel`` starts from (MLIR's ``getIdentityValue``;
#: ``addf`` starts from +0.0 as upstream does, not from the true identity -0.0).
_REDUCTION_IDENTITY = {"addf": 0.0, "mulf": 1.0, "maximumf": -math.inf, "minimumf": math.inf,
                       "addi": 0, "muli": 1, "ori": 0, "andi": -1}


def _combine(L: FunctionLowering, kind: str, acc: ir.Value, value: ir.Value) -> ir.Value:
    """``acc <kind> value``: the reduction step (MLIR's ``getReductionOp``; arith semantics:
    ``maximumf``/``minimumf`` propagate NaN and order -0.0 below +0.0)."""
    b = L.b
    if kind == "addf":
        return b.fadd(acc, value, flags=("contract",))
    if kind == "mulf":
        return b.fmul(acc, value, flags=("contract",))
    if kind in ("maximumf", "minimumf"):
        return call_intrinsic(L, kind[:7], [acc, value])
    return {"addi": b.add, "muli": b.mul, "ori": b.or_, "andi": b.and_}[kind](acc, value)


@handles("affine.parallel")
def _lower_parallel(L: FunctionLowering, op: Operation) -> None:
    """As MLIR's lower-affine (scf.parallel over max/min bounds, scf.reduce from the identity),
    with the scf.parallel run as a nest of sequential loops, outermost dimension first: each
    iteration's yielded values are combined into the accumulators (``acc = acc <kind> v``).

    With ``threads > 1`` (and outside another parallel region) the outermost dimension is split
    statically over the team (MLIR's ``convert-scf-to-openmp``, ``schedule(static)``): each
    thread reduces its own iterations from the identity into its slot, and the slots are
    combined in thread order after the region.  Float reductions are therefore reassociated
    (the result may differ from the sequential order in the last bits)."""
    inits = []
    for kind, res in zip(op.reductions, op.results):
        if kind not in _REDUCTION_IDENTITY:
            raise CodegenError(f"'affine.parallel' reduction \"{kind}\" has no identity value "
                               f"and cannot be lowered (nor can MLIR's lower-affine)", op.loc)
        ty = L.ml.scalar_type(res.type)
        value = _REDUCTION_IDENTITY[kind]
        inits.append(ir.Constant(ty, value) if isinstance(value, float)
                     else int_const(ty, value))
    # the bounds are computed once, before the nest (their operands are defined above it)
    bounds = []
    for k, step in enumerate(op.steps):
        if step <= 0:
            raise CodegenError(f"'affine.parallel' step #{k} must be positive, got {step}",
                               op.loc)
        lb = L.combine_bound(L.map_forms(op.lower_bound_map(k), op.lower_operands), True)
        ub = L.combine_bound(L.map_forms(op.upper_bound_map(k), op.upper_operands), False)
        bounds.append((lb, ub, step))
    if L.ml.threads > 1 and not L.in_parallel and bounds:
        results = _lower_parallel_region(L, op, bounds, inits)
    else:
        results = _lower_parallel_dims(L, op, bounds, 0, inits)
    for res, v in zip(op.results, results):
        L.bind_llvm(res, v)


def work_varies_with(op: Operation) -> bool:
    """Does the work of an iteration of ``op`` (an ``affine.parallel`` with constant bounds
    in its first dimension) grow or shrink along that dimension: some loop inside it whose
    bounds depend on the IV and on constants only runs a different, non-zero number of
    iterations in the first and the next-to-last iteration (a triangular nest, ``for j = 0
    to i``)?  A loop that runs only in the last iteration (the zero padding of a partial
    block) or whose bounds also depend on other values does not count."""
    from polyopt.affine.loop_utils import results_over_shared_operands
    lbm, ubm = op.lower_bound_map(0), op.upper_bound_map(0)
    if not (lbm.is_constant() and ubm.is_constant()):
        return False
    first = max(r.evaluate([], []) for r in lbm.results)
    last = min(r.evaluate([], []) for r in ubm.results) - 1
    step = op.steps[0]
    if last - step < first:
        return False
    iv = op.ivs[0]

    def trips(lbs, ubs, at: int) -> int:
        point = [at]
        return min(u.evaluate(point) for u in ubs) - max(lo.evaluate(point) for lo in lbs)

    for loop in op.walk():
        if loop.name != "affine.for":
            continue
        operands: list = [iv]
        lbs = results_over_shared_operands(loop.lower_map, list(loop.lower_operands), operands)
        ubs = results_over_shared_operands(loop.upper_map, list(loop.upper_operands), operands)
        if len(operands) != 1 or not any(0 in e.used_dims() for e in lbs + ubs):
            continue
        before_last = first + (last - first) // step * step - step
        t_first, t_before_last = trips(lbs, ubs, first), trips(lbs, ubs, before_last)
        if max(t_first, t_before_last) > 0 and t_first != t_before_last:
            return True
    return False


def _lower_parallel_region(L: FunctionLowering, op: Operation, bounds: list,
                           inits: list) -> list:
    """The nest of ``op`` in an OpenMP region, dimension 0 split over the threads with
    ``schedule(static)`` (contiguous blocks), or ``schedule(static, 1)`` (round-robin) when
    an iteration's work varies with the IV (:func:`work_varies_with`: the blocks of a
    triangular nest would leave one thread three times the work of the other); returns the
    reductions' values after the region."""
    threads = L.ml.threads
    b = L.b
    slots = []
    for init in inits:
        ty = ir.ArrayType(init.type, threads)
        slot = opaque_alloca(L.entry_builder, ty)
        slots.append((slot, ty))
        for t in range(threads):
            b.store(init, b.gep(slot, [i64(0), i64(t)], inbounds=True, source_etype=ty))

    cyclic = work_varies_with(op)

    def body(region: Region) -> None:
        (lb, lb_range), (ub, ub_range), step = bounds[0]
        if cyclic:
            def one(lo, hi, accs):
                mine = [((lo, lb_range), (hi, ub_range), step), *bounds[1:]]
                return _lower_parallel_dims(L, op, mine, 0, accs)
            accs = region.cyclic_iterations(lb, ub, step, inits, one)
        else:
            lo, hi = region.static_chunk(lb, ub, step)
            mine = [((lo, lb_range), (hi, ub_range), step), *bounds[1:]]
            accs = _lower_parallel_dims(L, op, mine, 0, inits)
        for (slot, ty), acc in zip(slots, accs):
            L.b.store(acc, L.b.gep(slot, [i64(0), region.thread], inbounds=True,
                                         source_etype=ty))

    (lb0, _), (ub0, _), step0 = bounds[0]
    cost = iteration_cost(op.body)
    for (lb, _), (ub, _), step in bounds[1:]:
        cost *= _constant_trips(lb, ub, step)
    emit_parallel_region(L, op.loc, threads, body, trip_count(L.b, lb0, ub0, step0), cost)
    results = []
    for kind, (slot, ty) in zip(op.reductions, slots):
        acc = b.load(b.gep(slot, [i64(0), i64(0)], inbounds=True, source_etype=ty),
                     typ=ty.element)
        for t in range(1, threads):
            part = b.gep(slot, [i64(0), i64(t)], inbounds=True, source_etype=ty)
            acc = _combine(L, kind, acc, b.load(part, typ=ty.element))
        results.append(acc)
    return results


def _lower_parallel_dims(L: FunctionLowering, op: Operation, bounds: list, k: int,
                         accs: list) -> list:
    """Dimensions ``k...`` of ``op`` around its body, from accumulators ``accs``; returns the
    accumulators after them."""
    if k == len(bounds):
        yielded = L.lower_region_block(op.body)
        return [_combine(L, kind, a, y) for kind, a, y in zip(op.reductions, accs, yielded)]
    b = L.b
    (lb, lb_range), (ub, ub_range), step = bounds[k]
    pre = b.block
    header = L.fn.append_basic_block("par.header")
    body = L.fn.append_basic_block("par.body")
    exit_ = L.fn.append_basic_block("par.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, "piv")
    phis = [b.phi(a.type) for a in accs]
    b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)
    b.position_at_end(body)
    L.bind(op.ivs[k], iv)
    L.leaf_values[id(iv)] = iv
    L.leaf_ranges[id(iv)] = (lb_range[0], None if ub_range[1] is None else ub_range[1] - 1)
    inner = _lower_parallel_dims(L, op, bounds, k + 1, phis)
    nxt = b.add(iv, i64(step), name="piv.next", flags=NSW)
    latch = b.block
    b.branch(header)
    iv.add_incoming(lb, pre)
    iv.add_incoming(nxt, latch)
    for phi, a, v in zip(phis, accs, inner):
        phi.add_incoming(a, pre)
        phi.add_incoming(v, latch)
    b.position_at_end(exit_)
    return phis


def _constant_trips(lb: ir.Value, ub: ir.Value, step: int) -> int:
    if isinstance(lb, ir.Constant) and isinstance(ub, ir.Constant):
        return max(0, -(-(int(ub.constant) - int(lb.constant)) // step))
    return 32


@handles("affine.if")
def _lower_if(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    cset = op.condition
    forms = L.map_forms(AffineMap(cset.num_dims, cset.num_symbols, cset.constraints),
                        op.cond_operands)
    known = True
    conds = []
    cache: dict = {}
    for f, eq in zip(forms, cset.eq_flags):
        lo, hi = L.lin_range(f)
        if eq:
            if lo is not None and hi is not None and lo == hi == 0:
                continue
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                known = False
                conds = []
                break
            conds.append(b.icmp_signed("==", L.emit_lin(f, cache), i64(0)))
        else:
            if lo is not None and lo >= 0:
                continue
            if hi is not None and hi < 0:
                known = False
                conds = []
                break
            conds.append(b.icmp_signed(">=", L.emit_lin(f, cache), i64(0)))
    has_else = op.has_else
    if not conds:  # statically known
        if known:
            vals = L.lower_region_block(op.then_block)
        elif has_else:
            vals = L.lower_region_block(op.else_block)
        else:
            vals = []
        for res, v in zip(op.results, vals):
            L.bind_llvm(res, v)
        return
    cond = conds[0]
    for c in conds[1:]:
        cond = b.and_(cond, c)
    then_bb = L.fn.append_basic_block("if.then")
    else_bb = L.fn.append_basic_block("if.else") if has_else else None
    merge = L.fn.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb if else_bb is not None else merge)
    b.position_at_end(then_bb)
    then_vals = L.lower_region_block(op.then_block)
    then_end = b.block
    b.branch(merge)
    else_vals, else_end = [], None
    if else_bb is not None:
        b.position_at_end(else_bb)
        else_vals = L.lower_region_block(op.else_block)
        else_end = b.block
        b.branch(merge)
    L.join(op.results, merge, [(then_vals, then_end), (else_vals, else_end)])


@handles("affine.apply")
def _lower_apply(L: FunctionLowering, op: Operation) -> None:
    form = L.map_forms(op.map, op.map_operands)[0]
    L.bind(op.results[0], L.emit_lin(form))
    L.forms[op.results[0]] = form


@handles("affine.min", "affine.max")
def _lower_minmax(L: FunctionLowering, op: Operation) -> None:
    v, _ = L.combine_bound(L.map_forms(op.map, op.map_operands), op.name == "affine.max")
    L.bind(op.results[0], v)


@handles("affine.load", "affine.store", "affine.vector_load", "affine.vector_store")
def _lower_affine_memop(L: FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.memref)
    subs = L.map_forms(op.map, op.map_operands)
    if op.name == "affine.load":
        L.bind(op.results[0], L.load_elem(mem, subs))
    elif op.name == "affine.store":
        L.store_elem(L.get(op.value), mem, subs)
    elif op.name == "affine.vector_load":
        vt = op.results[0].type
        L.ml.type(vt)
        L.bind(op.results[0], L.load_vector(mem, subs, vt))
    else:
        vt = op.value.type
        L.ml.type(vt)
        L.store_vector(L.get(op.value), mem, subs, vt)


@handles("affine.prefetch")
def _lower_affine_prefetch(L: FunctionLowering, op: Operation) -> None:
    # as MLIR's PrefetchOp lowering: llvm.prefetch(ptr, rw, locality, cache type); the address
    # may lie outside the memref (a prefetch does not fault), so the GEP is not inbounds
    mem = L.mem(op.memref)
    subs = L.map_forms(op.map, op.map_operands)
    ptr, _ = L.address(mem, subs, L.ml.mem_type(op.memref.type.element_type), inbounds=False)
    fn = L.ml.intrinsic("llvm.prefetch.p0", VOID, [ptr.type, I32, I32, I32])
    L.b.call(fn, [ptr, ir.Constant(I32, int(op.is_write)), ir.Constant(I32, op.locality),
                  ir.Constant(I32, int(op.is_data_cache))])


def _product(L: FunctionLowering, factors: list) -> Lin:
    out = Lin.constant(1)
    for f in factors:
        out = L.lin_mul(out, f)
    return out


def _basis_forms(L: FunctionLowering, op: Operation) -> list:
    """The basis of an index op as linear forms (constants, or the dynamic operands' forms)."""
    return [L.form_of(b) if not isinstance(b, int) else Lin.constant(b) for b in op.basis()]


@handles("affine.delinearize_index")
def _lower_delinearize(L: FunctionLowering, op: Operation) -> None:
    """As MLIR's affine-expand-index-ops: with strides ``S_k`` (the product of the basis entries
    after result ``k``'s), result 0 is ``x floordiv S_0``, result ``k`` is ``(x mod S_{k-1})
    floordiv S_k`` and the last ``x mod S_{n-2}``; the basis must be positive (as MLIR assumes).
    The results keep their linear forms, so subscripts built from them fold."""
    basis = _basis_forms(L, op)
    if not op.has_outer_bound:
        basis = [None] + basis        # the first result is unbounded
    x = L.form_of(op.linear_index)
    n = len(op.results)
    strides = [_product(L, basis[k + 1:]) for k in range(n)]
    cache: dict = {}
    for k, res in enumerate(op.results):
        form = x if k == 0 else L.lin_mod(x, strides[k - 1])
        if k < n - 1:
            form = L.lin_floordiv(form, strides[k])
        L.bind(res, L.emit_lin(form, cache))
        L.forms[res] = form


@handles("affine.linearize_index")
def _lower_linearize(L: FunctionLowering, op: Operation) -> None:
    """``sum(index_k * S_k)``, ``S_k`` the product of the basis entries after index ``k``'s
    (the outer bound, when given, takes no part), as MLIR's affine-expand-index-ops."""
    basis = _basis_forms(L, op)
    indices = op.multi_index
    if len(basis) < len(indices):
        basis = [None] + basis
    form = Lin.constant(0)
    for k, v in enumerate(indices):
        form = form.add(L.lin_mul(L.form_of(v), _product(L, basis[k + 1:])))
    L.bind(op.results[0], L.emit_lin(form))
    L.forms[op.results[0]] = form
