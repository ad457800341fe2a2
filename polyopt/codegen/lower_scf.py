"""Lowering of the scf dialect (MLIR's convert-scf-to-cf, then to LLVM), executed as written:

* ``scf.for``: a loop with header phis for the induction variable and the ``iter_args``,
  ``iv < ub`` compared signed (unsigned with ``unsigned``), ``iv + step`` without overflow
  flags (a wrapping induction variable behaves as upstream's);
* ``scf.if``: branches, results through phis at the join;
* ``scf.while``: the before region as the loop header (its ``scf.condition`` branches to the
  after region or out of the loop, passing its values), the after region as the latch;
* ``scf.parallel``: sequential nested loops in dimension order (as convert-scf-to-cf's
  ``scf.parallel`` -> ``scf.for`` rewrite), each reduction applied in iteration order as
  ``acc = region(acc, value)`` starting from its init; with ``threads > 1`` the outermost
  dimension is split statically over an OpenMP team (:mod:`polyopt.codegen.openmp`), the
  reductions folded per thread and then across threads (reassociated);
* ``scf.execute_region`` (one block): its ops in place; ``scf.index_switch``: an LLVM
  ``switch``, results through phis.

Index-typed induction variables with constant-ish bounds and a positive constant step get a
value range, so affine subscripts and bounds that use them fold as those of ``affine.for`` do.
"""

from __future__ import annotations

from typing import Optional, Sequence

from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Block, Operation, Value
from polyopt.affine.types import IndexType
from polyopt.codegen.llvm_helpers import i64, opaque_alloca
from polyopt.codegen.lowering import FunctionLowering, handles
from polyopt.codegen.openmp import Region, emit_parallel_region, iteration_cost, trip_count

I1 = ir.IntType(1)

# the terminators of the scf regions, handled by the op that owns the region


def _constant_step(op_step: Value) -> Optional[int]:
    d = op_step.defining_op
    if d is None or d.name != "arith.constant":
        return None
    v = getattr(d.attributes.get("value"), "value", None)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bind_iv(L: FunctionLowering, iv: Value, llv: ir.Value, lb: Value, ub: Value,
             step: Value, signed: bool = True) -> None:
    """Bind an induction variable; an ``index`` one whose step is a positive constant gets the
    range ``[min lb, max ub - 1]`` for the folding of affine expressions."""
    L.bind(iv, llv)
    if not isinstance(iv.type, IndexType):
        return
    L.leaf_values[id(llv)] = llv
    s = _constant_step(step)
    if signed and s is not None and s > 0:
        lo, _ = L.lin_range(L.form_of(lb))
        _, hi = L.lin_range(L.form_of(ub))
        L.leaf_ranges[id(llv)] = (lo, None if hi is None else hi - 1)


def _bind_all(L: FunctionLowering, values: Sequence[Value], llvs: Sequence[ir.Value]) -> None:
    for v, x in zip(values, llvs):
        L.bind_llvm(v, x)


def _merged(b: ir.IRBuilder, first: Sequence[ir.Value], first_block: ir.Block,
            second: Sequence[ir.Value], second_block: ir.Block) -> list:
    """Phis at the builder's block of each ``first`` value (from ``first_block``) and its
    ``second`` (from ``second_block``)."""
    out = []
    for x, y in zip(first, second):
        phi = b.phi(x.type)
        phi.add_incoming(x, first_block)
        phi.add_incoming(y, second_block)
        out.append(phi)
    return out


def _phis(L: FunctionLowering, inits: Sequence[ir.Value]) -> list:
    return [L.b.phi(x.type) for x in inits]


@handles("scf.for")
def _lower_for(L: FunctionLowering, op: Operation) -> None:
    """The loop; a step that is not positive (the loop would never end) is an error: at
    compile time when it is a constant, else a failed check when the loop is reached, the loop
    then skipped."""
    b = L.b
    lb, ub, step = (L.get(v) for v in (op.lower_bound, op.upper_bound, op.step))
    inits = [L.get(v) for v in op.inits]
    constant = _constant_step(op.step)
    if constant is not None and (constant == 0 or constant < 0 and not op.is_unsigned):
        raise CodegenError(f"'scf.for' step must be positive, got {constant}", op.loc)
    header = L.fn.append_basic_block("scf.for.header")
    body = L.fn.append_basic_block("scf.for.body")
    exit_ = L.fn.append_basic_block("scf.for.exit")
    if constant is None:
        zero = ir.Constant(step.type, 0)
        ok = b.icmp_unsigned("!=", step, zero) if op.is_unsigned else \
            b.icmp_signed(">", step, zero)
        fail = L.fn.append_basic_block("scf.for.step.fail")
        start = L.fn.append_basic_block("scf.for.start")
        b.cbranch(ok, start, fail)
        b.position_at_end(fail)
        where = f"{op.loc}: " if op.loc is not None else ""
        b.call(L.ml.runtime("polyopt_assert_fail"),
               [L.ml.c_string(f"{where}error: 'scf.for' step must be positive")])
        skipped = b.block
        b.branch(exit_)
        b.position_at_end(start)
    pre = b.block
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type, "iv")
    phis = _phis(L, inits)
    less = b.icmp_unsigned if op.is_unsigned else b.icmp_signed
    b.cbranch(less("<", iv, ub), body, exit_)
    b.position_at_end(body)
    _bind_iv(L, op.induction_var, iv, op.lower_bound, op.upper_bound, op.step,
             signed=not op.is_unsigned)
    L.bind_phis(op.region_iter_args, phis)
    yielded = L.lower_region_block(op.body)
    nxt = b.add(iv, step, name="iv.next")
    latch = b.block
    b.branch(header)
    iv.add_incoming(lb, pre)
    iv.add_incoming(nxt, latch)
    for phi, init, y in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(y, latch)
    b.position_at_end(exit_)
    if constant is None:         # from the header, or past the loop when its step failed
        phis = _merged(b, phis, header, inits, skipped)
    L.bind_phis(op.results, phis)


@handles("scf.if")
def _lower_if(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    cond = L.get(op.condition)
    then_bb = L.fn.append_basic_block("scf.if.then")
    else_bb = L.fn.append_basic_block("scf.if.else") if op.has_else else None
    merge = L.fn.append_basic_block("scf.if.end")
    b.cbranch(cond, then_bb, else_bb if else_bb is not None else merge)
    arms = []
    for bb, block in ((then_bb, op.then_block), (else_bb, op.else_block)):
        if bb is None:
            continue
        b.position_at_end(bb)
        vals = L.lower_region_block(block)
        arms.append((vals, b.block))
        b.branch(merge)
    L.join(op.results, merge, arms)


@handles("scf.while")
def _lower_while(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    inits = [L.get(v) for v in op.inits]
    pre = b.block
    before_bb = L.fn.append_basic_block("scf.while.before")
    after_bb = L.fn.append_basic_block("scf.while.after")
    exit_ = L.fn.append_basic_block("scf.while.exit")
    b.branch(before_bb)
    b.position_at_end(before_bb)
    phis = _phis(L, inits)
    L.bind_phis(op.before_block.args, phis)
    cond_op = L.lower_ops(op.before_block)
    cond = L.get(cond_op.operands[0])
    passed = [L.get(v) for v in cond_op.operands[1:]]
    b.cbranch(cond, after_bb, exit_)
    # the after region and the exit are only entered from the end of the before region, which
    # dominates them: the condition's values are used directly
    b.position_at_end(after_bb)
    _bind_all(L, op.after_block.args, passed)
    yielded = L.lower_region_block(op.after_block)
    latch = b.block
    b.branch(before_bb)
    for phi, init, y in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(y, latch)
    b.position_at_end(exit_)
    _bind_all(L, op.results, passed)


@handles("scf.parallel")
def _lower_parallel(L: FunctionLowering, op: Operation) -> None:
    lbs = [L.get(v) for v in op.lower_bounds]
    ubs = [L.get(v) for v in op.upper_bounds]
    inits = [L.get(v) for v in op.inits]
    if L.ml.threads > 1 and not L.in_parallel:
        results = _parallel_region(L, op, lbs, ubs, inits)
    else:
        results = _parallel_loops(L, op, lbs, ubs, inits, _reduce)
    _bind_all(L, op.results, results)


def _parallel_loops(L: FunctionLowering, op: Operation, lbs: list, ubs: list, accs: list,
                    reduce) -> list:
    """The nest of ``op`` from ``lbs`` to ``ubs`` as sequential loops carrying ``accs``;
    ``reduce(L, scf.reduce op, accs)`` gives the accumulators after one iteration.  Returns
    them after the nest."""
    b = L.b
    n = op.num_dims
    steps = [L.get(v) for v in op.steps]

    def loop(d: int, accs: list) -> list:
        """The loop of dimension ``d`` carrying the reductions ``accs``; returns their values
        after it."""
        pre = b.block
        header = L.fn.append_basic_block(f"scf.parallel.header{d}")
        body = L.fn.append_basic_block(f"scf.parallel.body{d}")
        exit_ = L.fn.append_basic_block(f"scf.parallel.exit{d}")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(lbs[d].type, f"iv{d}")
        phis = _phis(L, accs)
        b.cbranch(b.icmp_signed("<", iv, ubs[d]), body, exit_)
        b.position_at_end(body)
        _bind_iv(L, op.induction_vars[d], iv, op.lower_bounds[d], op.upper_bounds[d],
                 op.steps[d])
        if d + 1 < n:
            nxt_accs = loop(d + 1, phis)
        else:
            nxt_accs = reduce(L, L.lower_ops(op.body), phis)
        nxt = b.add(iv, steps[d], name=f"iv{d}.next")
        latch = b.block
        b.branch(header)
        iv.add_incoming(lbs[d], pre)
        iv.add_incoming(nxt, latch)
        for phi, acc, new in zip(phis, accs, nxt_accs):
            phi.add_incoming(acc, pre)
            phi.add_incoming(new, latch)
        b.position_at_end(exit_)
        return phis

    return loop(0, accs)


def _parallel_region(L: FunctionLowering, op: Operation, lbs: list, ubs: list,
                     inits: list) -> list:
    """``op`` in an OpenMP region, dimension 0 split statically over the threads (MLIR's
    ``convert-scf-to-openmp``).  A reduction region has no identity in general, so each thread
    folds its own iterations starting from its first value (a flag says whether it had any),
    stores its partial value and flag in its slot, and after the region the partials of the
    threads that ran are folded into the inits in thread order: the reduction is reassociated
    (scf.reduce's operator must be associative and commutative)."""
    threads = L.ml.threads
    b = L.b
    slots = []
    for init in inits:
        ty = ir.ArrayType(ir.LiteralStructType([init.type, I1]), threads)
        slot = opaque_alloca(L.entry_builder, ty)
        for t in range(threads):
            b.store(ir.Constant(I1, 0), b.gep(slot, [i64(0), i64(t), I32c(1)], source_etype=ty))
        slots.append((slot, ty))

    def first_or_reduce(L: FunctionLowering, reduce_op: Operation, accs: list) -> list:
        *values, seen = accs
        folded = _reduce(L, reduce_op, values)
        out = [L.b.select(seen, f, L.get(v)) for f, v in zip(folded, reduce_op.operands)]
        return [*out, ir.Constant(I1, 1)]

    def body(region: Region) -> None:
        step = L.get(op.steps[0])
        lo, hi = region.static_chunk(lbs[0], ubs[0], step)
        undefs = [ir.Constant(v.type, ir.Undefined) for v in inits]
        accs = _parallel_loops(L, op, [lo, *lbs[1:]], [hi, *ubs[1:]],
                               [*undefs, ir.Constant(I1, 0)], first_or_reduce)
        *partials, seen = accs
        for (slot, ty), part in zip(slots, partials):
            L.b.store(part, L.b.gep(slot, [i64(0), region.thread, I32c(0)], source_etype=ty))
            L.b.store(seen, L.b.gep(slot, [i64(0), region.thread, I32c(1)], source_etype=ty))

    cost = iteration_cost(op.body) * 32 ** (op.num_dims - 1)
    emit_parallel_region(L, op.loc, threads, body,
                         trip_count(b, lbs[0], ubs[0], L.get(op.steps[0])), cost)
    if not inits:
        return []
    accs = list(inits)
    for t in range(threads):
        parts, flags = [], []
        for (slot, ty), init in zip(slots, inits):
            parts.append(b.load(b.gep(slot, [i64(0), i64(t), I32c(0)], source_etype=ty),
                                typ=init.type))
            flags.append(b.load(b.gep(slot, [i64(0), i64(t), I32c(1)], source_etype=ty),
                                typ=I1))
        # the region of scf.reduce is lowered once more per thread, in the enclosing function
        pre = b.block
        fold = L.fn.append_basic_block("scf.parallel.fold")
        done = L.fn.append_basic_block("scf.parallel.folded")
        b.cbranch(flags[0], fold, done)
        b.position_at_end(fold)
        folded = _reduce_values(L, op, accs, parts)
        fold_end = b.block
        b.branch(done)
        b.position_at_end(done)
        accs = _merged(b, accs, pre, folded, fold_end)
    return accs


def I32c(k: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), k)


def _reduce_values(L: FunctionLowering, op: Operation, accs: list, values: list) -> list:
    """``acc_k = region_k(acc_k, values_k)`` with the regions of ``op``'s ``scf.reduce``."""
    reduce_op = op.body.ops[-1]
    out = []
    for acc, value, region in zip(accs, values, reduce_op.regions):
        block: Block = region.blocks[0]
        L.bind_llvm(block.args[0], acc)
        L.bind_llvm(block.args[1], value)
        ret = L.lower_ops(block)
        out.append(L.get(ret.operands[0]))
    return out


def _reduce(L: FunctionLowering, reduce_op: Operation, accs: list) -> list:
    """``acc_k = region_k(acc_k, operand_k)`` for every reduction of ``scf.reduce``."""
    out = []
    for acc, value, region in zip(accs, reduce_op.operands, reduce_op.regions):
        block: Block = region.blocks[0]
        L.bind_llvm(block.args[0], acc)
        L.bind_llvm(block.args[1], L.get(value))
        ret = L.lower_ops(block)
        out.append(L.get(ret.operands[0]))
    return out


@handles("scf.execute_region")
def _lower_execute_region(L: FunctionLowering, op: Operation) -> None:
    blocks = op.regions[0].blocks
    if len(blocks) == 1:
        _bind_all(L, op.results, L.lower_region_block(blocks[0]))
        return
    from polyopt.codegen.lower_cf import lower_blocks
    first = L.fn.append_basic_block("scf.execute_region")
    merge = L.fn.append_basic_block("scf.execute_region.end")
    L.b.branch(first)
    arms = []

    def leave(yield_op: Operation) -> None:
        if yield_op.name != "scf.yield":
            raise CodegenError(f"'{yield_op.name}' cannot end a block of 'scf.execute_region' "
                               f"in the LLVM lowering", yield_op.loc)
        arms.append(([L.get(v) for v in yield_op.operands], L.b.block))
        L.b.branch(merge)

    lower_blocks(L, op.regions[0], first, leave)
    if arms:
        L.join(op.results, merge, arms)
    else:       # every path returns from the function
        L.b.position_at_end(merge)
        L.b.unreachable()


@handles("scf.index_switch")
def _lower_index_switch(L: FunctionLowering, op: Operation) -> None:
    b = L.b
    arg = L.get(op.arg)
    default_bb = L.fn.append_basic_block("scf.switch.default")
    case_bbs = [L.fn.append_basic_block(f"scf.switch.case{v}") for v in op.cases]
    merge = L.fn.append_basic_block("scf.switch.end")
    sw = b.switch(arg, default_bb)
    for value, bb in zip(op.cases, case_bbs):
        sw.add_case(ir.Constant(arg.type, value), bb)
    arms = []
    for bb, region in zip([*case_bbs, default_bb], [*op.case_regions, op.default_region]):
        b.position_at_end(bb)
        vals = L.lower_region_block(region.blocks[0])
        arms.append((vals, b.block))
        b.branch(merge)
    L.join(op.results, merge, arms)
