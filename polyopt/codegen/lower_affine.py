"""Lowering of the affine dialect (MLIR's lower-affine, then to LLVM): ``affine.for`` as a
canonical loop with header phis, ``affine.if`` as branches, ``affine.apply/min/max`` and
subscripts through linear forms, loads, stores and prefetches."""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.affine_expr import AffineMap
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
from polyopt.codegen.llvm_helpers import I32, I64, NSW, VOID, i64
from polyopt.codegen.lowering import FunctionLowering, handles


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
    for arg, phi in zip(iter_args, phis):
        L.bind_llvm(arg, phi)
    yielded = L.lower_region_block(op.body)
    nxt = b.add(iv, i64(step), name="iv.next", flags=NSW)
    latch = b.block
    b.branch(header)
    iv.add_incoming(lb, pre)
    iv.add_incoming(nxt, latch)
    for phi, init, y in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(y, latch)
    b.position_at_end(exit_)
    for res, phi in zip(op.results, phis):
        L.bind_llvm(res, phi)


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
    b.position_at_end(merge)
    for i, res in enumerate(op.results):
        phi = b.phi(then_vals[i].type)
        phi.add_incoming(then_vals[i], then_end)
        phi.add_incoming(else_vals[i], else_end)
        L.bind_llvm(res, phi)


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
