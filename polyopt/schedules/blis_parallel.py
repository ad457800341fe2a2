"""The BLIS nest on several threads (Smith et al., "Anatomy of High-Performance Many-Threaded
Matrix Multiplication", IPDPS 2014; BLIS's docs/Multithreading.md).

Of BLIS's five loops around the micro-kernel (jc: N_C, pc: K_C, ic: M_C, jr: N_R, ir: M_R)
this parallelizes, in GEBP's order (the paper's), **ic**, the loop over M_C blocks of A: on a CPU whose cores have private
L1/L2 caches and share the L3 (this machine), each thread packs its own M_C x K_C block of A
into its own buffer (sized for its L2) and runs the jr/ir loops over it, while the K_C x N_C
panel of B, in the shared L3, is packed once per pc iteration by all threads together (its
copy loop is parallel too) and read by all of them: the end of that parallel copy is the
barrier after B's packing, and the end of the ic loop the barrier before the next pc
iteration repacks B.  jc is the loop BLIS splits over separate L3 caches (sockets), which
this machine does not have; it stays sequential, as do pc (a reduction over k) and jr.

    affine.for %pc ... {                                   (K_C blocks; jc around it: N_C)
      affine.parallel (%j) = ... { B's copy-in }          (B packed by the team; join = barrier)
      affine.parallel (%ic) = (0) to (M / M_C) {          (each thread its ic blocks)
        %A_c = memref.alloca() : memref<M_C x K_C, ...>   (each thread its own A buffer)
        A's copy-in; jr, ir loops and the micro-kernel on (%A_c, B's panel, C)
      }
    }

M_C is shrunk, when needed, so that the number of ic blocks is a multiple of the thread
count (the model's M_C is an upper bound for L2; :func:`balance_m_c`).  K_C is unchanged, so
every element of C is summed in the same order (k blocks in turn, k within a block in turn)
whatever the thread count: results are bitwise identical at every thread count.  Other
buffers written inside the ic loop (the stack tile of partial register tiles) become
per-thread allocas as well.

In GEPB's order (``l2_block = "B"``: ic, pc, jc, ir, jr, B's K_C x N_C block in L2) the roles
swap, as in BLIS on the transposed problem: **jc** runs on the threads, each packing its own
K_C x N_C block of B into its L2, and A's M_C x K_C block, in the shared L3, is packed by the
team; N_C is shrunk so that the jc blocks split evenly (:func:`balance_n_c`).  When all of N
is one block of B there is no jc loop: the ic loop runs on the threads, each packing its own
A blocks, B's block packed by the team when it is packed once before the loop (doitgen's
21000x160x160), by each thread when it is packed per K_C block inside it; the team's region
then encloses the K_C loop, so that each thread packs B's block once per K_C block before
its own chunk of the ic blocks (:func:`_team_around_k_blocks`).  When N spans
several blocks but has fewer N_R-wide micro-panels than there are threads, the nest takes
GEBP's parameters.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

from ..affine.affine_expr import AffineMap, dim
from ..affine.dialects.affine import AffineForOp, AffineParallelOp, AffineYieldOp
from ..affine.dialects.memref import AllocaOp
from ..affine.ir import Operation
from .blis_schedule import BlisParams
from .parallelize import to_affine_parallel

__all__ = ["balance_m_c", "balance_n_c", "balance_for_threads", "parallelize_blis_nest",
           "split_short_a"]

RemarkSink = Optional[Callable[[object, str], None]]


#: how many times the model's block count the blocks may be cut into to balance the threads
#: (PolyBench gemm's 1100 columns: 9 blocks of 4 panels of 32 gave one thread 20 panels and
#: the other 15, 1.62x on 2 threads; 12 blocks of 3 give 18 and 17.  The ResNet-50 stem's
#: 12544 rows: 29 blocks of 436 gave one thread 15 blocks, 4% over an even share; 32 blocks
#: of 392 split evenly, 1.04x-1.07x on 2 Zen 4 threads)
BALANCE_MAX_BLOCKS = 2

#: A product of at most this many multiply-adds (M x N x K) runs on one thread whatever the
#: team, unpacked where the small path takes it
#: (:func:`~polyopt.schedules.blis_schedule.unpacked_params`), packed otherwise: forking,
#: splitting the blocks and the team's packing cost more than the second core gives back.
#: Zen 4, numpy on two threads in the same run: f32 64^3 on two threads 27 GFLOPS (0.40x
#: numpy, whose OpenBLAS keeps it on one), unpacked on one 95 (1.40x-1.52x); 96^3 80 ->
#: 100-109 (0.98x -> 1.21x); f64 64^3 0.92x -> 1.28x.  Packed (no tile of the small path
#: divides them): f32 24^3 0.69x -> 1.68x, 40^3 0.72x -> 1.33x, 72^3 0.57x -> 1.04x (0.71x
#: with a bound of 2^17 for the packed ones), 50^3 f32 / f64 0.72x / 0.72x -> 1.11x / 1.00x.
#: At 128^3 the team wins (f32 on two threads 116, one 96-102).
MIN_THREADED_PRODUCT = 1 << 20



def _even_blocks(size: int, tile: int, multiple: int, threads: int) -> int:
    """A tile, at most ``tile`` and a multiple of ``multiple``, whose blocks, dealt to
    ``threads`` in contiguous chunks (OpenMP's static schedule), give the busiest thread the
    fewest ``multiple``-wide units: among the block counts from ``tile``'s up to
    :data:`BALANCE_MAX_BLOCKS` times it, the most even, with the fewest blocks among
    equals."""
    units = -(-size // multiple)
    first = -(-units // max(1, tile // multiple))
    best = None
    for count in range(first, min(units, BALANCE_MAX_BLOCKS * first) + 1):
        per_block = -(-units // count)
        blocks = -(-units // per_block)
        busiest = min(units, -(-blocks // threads) * per_block)
        if best is None or busiest < best[0]:
            best = (busiest, per_block)
    return best[1] * multiple


def balance_m_c(params: BlisParams, m: int, threads: int, user_tiles: dict = ()) -> BlisParams:
    """``params`` with M_C lowered (to a multiple of M_R) so that the ``ceil(m / M_C)`` ic
    blocks split evenly over ``threads``: the same number of blocks per thread, each at most
    the model's M_C.  Unchanged at one thread, when the user gave M_C, or when there are
    fewer rows than threads x M_R."""
    if threads <= 1 or "M_C" in dict(user_tiles) or m <= params.M_R * threads:
        return params
    m_c = _even_blocks(m, params.M_C, params.M_R, threads)
    if m_c >= params.M_C:
        return params
    why = (f"M_C {m_c}: {-(-m // m_c)} blocks of rows for {threads} threads "
           f"(the model's {params.M_C} gives {-(-m // params.M_C)})")
    return replace(params, M_C=m_c, reasons=tuple(params.reasons) + (why,))


def balance_n_c(params: BlisParams, n: int, threads: int, user_tiles: dict = ()
                ) -> Optional[BlisParams]:
    """GEPB's counterpart of :func:`balance_m_c`: ``params`` with N_C lowered (to a multiple
    of N_R) so that the ``ceil(n / N_C)`` jc blocks split evenly over ``threads``; ``None``
    when N has fewer than ``threads`` micro-panels of N_R columns (no jc loop to split)."""
    if threads <= 1 or "N_C" in dict(user_tiles):
        return params
    if n < params.N_R * threads:
        return None
    n_c = _even_blocks(n, params.N_C, params.N_R, threads)
    if n_c >= params.N_C:
        return params
    why = (f"N_C {n_c}: {-(-n // n_c)} blocks of columns for {threads} threads "
           f"(the model's {params.N_C} gives {-(-n // params.N_C)})")
    return replace(params, N_C=n_c, reasons=tuple(params.reasons) + (why,))


#: GEPB's jc split is given up for GEBP's ic split when its busiest thread has this many
#: times the share of the columns that the busiest thread has of the rows in the ic split.
#: N = 784 in N_R = 64 panels is 12 whole ones and 16 columns: one thread gets 448 to 512
#: of them.  On two Zen 4 threads, GEBP's ic split (with one thread's K_C) over GEPB's jc
#: split: f32 512x784x256 (65% of the columns on one thread) 1.33x, 256x196x2304 (65%) 1.28x;
#: f64 256x196x2304 (65%) 1.47x, 128x784x1152 (61%) 1.22x, 512x784x256 (57%) 1.14x; f32
#: 128x784x1152 (57%) 1.15x; at 1000^3 and 2088x2048x2048 the columns split within 2%.
LOPSIDED_SPLIT = 1.1


def busiest_share(size: int, block: int, unit: int, threads: int) -> float:
    """The share of ``size`` that the busiest of ``threads`` gets when blocks of ``block``
    are dealt to them in contiguous chunks (OpenMP's static schedule); with ``block`` None,
    the even split in units of ``unit``."""
    if block is None:
        units = -(-size // unit)
        return min(size, -(-units // threads) * unit) / size
    blocks = [min(block, size - s) for s in range(0, size, block)]
    per = -(-len(blocks) // threads)
    return max(sum(blocks[t * per:(t + 1) * per]) for t in range(threads)) / size


def gepb_split_problem(params: BlisParams, m: int, n: int, threads: int) -> Optional[str]:
    """Why GEPB's jc loop (after :func:`balance_n_c`) should not run on ``threads``, or None:
    N has fewer micro-panels than threads, or the split of its columns is lopsided
    (:data:`LOPSIDED_SPLIT`) where the rows would split evenly."""
    if n < params.N_R * threads:
        return f"N = {n} has fewer than {threads} GEPB micro-panels of {params.N_R} columns to split"
    jc = busiest_share(n, params.N_C, params.N_R, threads)
    ic = busiest_share(m, None, params.M_R, threads)
    if jc > LOPSIDED_SPLIT * ic:
        return (f"N = {n} in GEPB blocks of {params.N_C} columns gives one thread "
                f"{jc:.0%} of them, M = {m} in rows of {params.M_R} {ic:.0%}")
    return None


def balance_for_threads(params: BlisParams, m: int, n: int, threads: int,
                        user_tiles: dict = (), lopsided_to_rows: bool = True
                        ) -> Optional[BlisParams]:
    """The blocks of the loop that runs on the threads split evenly over them: M_C for GEBP
    (the ic loop), N_C for GEPB (the jc loop); ``None`` when GEPB's columns cannot be split,
    or (with ``lopsided_to_rows``) not evenly (:func:`gepb_split_problem`; the caller then
    takes GEBP's parameters)."""
    if params.l2_block == "B" and not one_block_of_b(params, n):
        balanced = balance_n_c(params, n, threads, user_tiles)
        if balanced is None or threads <= 1 or "l2_block" in dict(user_tiles) or \
                not lopsided_to_rows:
            return balanced
        return None if gepb_split_problem(balanced, m, n, threads) else balanced
    balanced = balance_m_c(params, m, threads, user_tiles)
    if balanced.k_outer and threads > 1:
        # a team keeps the K_C loop inside the M_C loop, one parallel region per call, each
        # thread packing its own B block: with it outside, the team packs B's block together
        # once per K_C block, in two parallel regions per K_C block, and on two Zen 4
        # threads that ran conv4_x at 163.6 GFLOPS against 199.0 (one M_C block per thread,
        # each reading half of B from the other core's cache) and conv3_x 2-5% faster in
        # most runs but at 0.73x-0.84x in 3 of 12 alternating runs beside torch
        balanced = replace(balanced, k_outer=False, reasons=tuple(
            r for r in balanced.reasons if not r.startswith("K_C loop outside")))
    return balanced


def split_short_a(params: BlisParams, gepb: BlisParams, m: int, n: int, k: int,
                  elem_bytes: int, machine, threads: int, user_tiles: dict = ()
                  ) -> Optional[BlisParams]:
    """For a short A (:func:`~polyopt.schedules.blis_schedule.short_a`), which one thread
    runs in GEBP's order with ``params``: the team's parameters that split N instead (jc),
    GEPB's order (``gepb``, the model's GEPB parameters) with each thread its own block of B
    and with one thread's register tile and K_C from ``params``, so that C's elements are
    summed as on one thread (the same bits); None when A is not short or N does not split
    into several blocks.  Split over the team, A's few micro-panels would serve each
    thread's pass over B fewer still (32x2048x2048 f64 on 2 Zen 4 threads: GEBP's ic
    40-42 GFLOPS, GEPB's jc 58-60; ResNet-50's conv5_x, 49 x 512 x 4608 f32, on 2 Zen 5
    threads: 250 -> 317-326 GFLOPS)."""
    from .blis_schedule import short_a
    if threads <= 1 or not short_a(m, n, k, elem_bytes, machine, gepb.M_R):
        return None
    gepb = replace(gepb, M_R=params.M_R, N_R=params.N_R, K_C=params.K_C, K_U=params.K_U,
                   register_order=params.register_order,
                   M_C=-(-m // params.M_R) * params.M_R,
                   N_C=max(params.N_R, gepb.N_C // params.N_R * params.N_R))
    split = balance_for_threads(gepb, m, n, threads, user_tiles)
    if split is None or one_block_of_b(split, n):
        return None
    return replace(split, reasons=split.reasons + (
        f"l2_block B for {threads} threads: M = {m} is too few rows to split; the threads "
        f"split N (jc), each with its own block of B, with one thread's "
        f"{params.M_R}x{params.N_R} tile and K_C {params.K_C}",))


def one_block_of_b(params: BlisParams, n: int) -> bool:
    """GEPB with all of N in one K_C x N_C block: there is no jc loop to split, and the ic
    loop runs on the threads (:func:`parallelize_blis_nest`)."""
    return params.l2_block == "B" and params.N_C is not None and params.N_C >= n


def _inside(op: Operation, loop: Operation) -> bool:
    return any(a is loop for a in op.ancestors())


def _region_moves_with(info, dim: int, loop: AffineForOp) -> bool:
    """Does the lower bound of the region ``info`` packs, in memref dimension ``dim``, vary
    with ``loop``'s induction variable?"""
    lbs = info.lower_bounds
    if lbs is None:
        return False
    iv = loop.induction_var
    expr = lbs.results[dim]
    ops = info.lower_bound_operands
    used = [ops[d] for d in expr.used_dims()] + \
        [ops[lbs.num_dims + s] for s in expr.used_symbols()]
    return any(v is iv for v in used)


def parallelize_blis_nest(nest_ops: list, copy_infos: list, remark: RemarkSink = None,
                          loc=None, kind: str = "hop.matmul", l2_block: str = "A",
                          output=None, threads: int = 2) -> bool:
    """Parallelize the packed BLIS nest among ``nest_ops`` (the generated top-level ops:
    allocations, the nest, deallocations) as the module docstring says; ``copy_infos`` are
    A's and B's :class:`~polyopt.memref_layout.data_copy.CopyInfo` from packing, ``l2_block``
    the nest's order (``"A"``: GEBP, the ic loop is parallel; ``"B"``: GEPB, the jc loop);
    ``output`` is the product's C, which the threads share (each writes its own rows or
    columns of it), also when it is a buffer of the function's (a raised contraction's
    temporary, copied back after the nest); ``threads`` the team's size.
    Returns whether it did; when the nest is not the expected shape it is left sequential
    with a remark."""
    def skip(why: str) -> bool:
        if remark is not None:
            remark(loc, f"{kind}: left sequential: {why}")
        return False

    if len(copy_infos) == 2 and copy_infos[0] is None and copy_infos[1] is not None and \
            copy_infos[1].buffer is not None and l2_block == "B":
        ic = _ic_loop_of_a_in_place(nest_ops, copy_infos[1], output)
        if ic is None:
            return skip("A is read in place and no loop over M_C blocks (ic) encloses the "
                        "tiles (M fits one M_C block)")
        return _parallelize_gepb_ic(ic, copy_infos[1], output, remark, loc, kind, threads,
                                    a_packed=False)
    if len(copy_infos) != 2 or any(i is None or i.buffer is None for i in copy_infos):
        return skip("the product is not packed (parallel BLIS needs --hopt-copy)")
    # the operand whose L2 block each thread packs for itself, and the shared one
    ic = _gepb_ic_loop(copy_infos) if l2_block == "B" else None
    if ic is not None:
        return _parallelize_gepb_ic(ic, copy_infos[1], output, remark, loc, kind, threads)
    if l2_block == "B":
        own, shared = copy_infos[1], copy_infos[0]
        name, other, loop_name, moving = "B", "A", "loop over N_C blocks (jc)", 1
    else:
        own, shared = copy_infos
        name, other, loop_name, moving = "A", "B", "loop over M_C blocks (ic)", 0
    copies = [op for op in own.copy_in if op.parent is not None]
    if not copies:
        return skip(f"{name} is not packed inside the nest")
    loop = copies[0].parent_op
    if not isinstance(loop, AffineForOp) or loop.inits or \
            not all(op.parent_op is loop for op in copies):
        return skip(f"{name}'s packing is not directly under the {loop_name}")
    if any(_inside(loop, op) for op in shared.copy_in if op.parent is not None):
        return skip(f"{other} is packed inside the {loop_name}")
    # the loop around the packing is the parallel one only when its iterations pack different
    # rows of A (columns of B), and so write different rows (columns) of C: when M fits one
    # M_C block (N one N_C block) there is no such loop, and the loop found here is another
    # one, e.g. pc, whose iterations all add into C
    if not _region_moves_with(own, moving, loop) or _region_moves_with(own, 1 - moving, loop):
        return skip(f"the loop around {name}'s packing does not step over blocks of "
                    f"{'its rows (M fits one M_C' if name == 'A' else 'its columns (N fits one N_C'}"
                    f" block)")
    # buffers the loop writes (the operand's block, the stack tile of partial register
    # tiles) become private to each thread; what initializes them outside (the zero padding
    # hoisted before the nest) runs in each thread's body first
    private = _private_buffers(loop, output)
    if private is None:
        return skip(f"a buffer written in the {loop_name} is also used outside it")
    shared_nests = _packing_outside(shared, loop)
    par = _run_on_team(loop, private)
    _pack_on_team(shared_nests, par)
    if remark is not None:
        remark(loc, f"{kind}: {loop_name} parallel, each thread with its own packed {name} "
                    f"block; {other}'s {'panel' if other == 'B' else 'block'} packed by the team")
    return True


def _gepb_ic_loop(copy_infos: list) -> Optional[AffineForOp]:
    """GEPB's ic loop when there is no jc loop (all of N in one block of B, so B's packing
    does not move with any loop's columns): the loop around A's packing that steps over its
    rows; ``None`` otherwise."""
    a, b = copy_infos
    a_copies = [op for op in a.copy_in if op.parent is not None]
    b_copies = [op for op in b.copy_in if op.parent is not None]
    if not a_copies or not b_copies:
        return None
    if any(_region_moves_with(b, 1, l) for l in b_copies[0].ancestors()
           if isinstance(l, AffineForOp)):
        return None
    for loop in a_copies[0].ancestors():
        if isinstance(loop, AffineForOp) and _region_moves_with(a, 0, loop):
            if loop.inits or _region_moves_with(a, 1, loop):
                return None
            return loop
    return None


def _ic_loop_of_a_in_place(nest_ops: list, b_info, output) -> Optional[AffineForOp]:
    """GEPB with one block of B and A read in place (not packed): the nest's loop over M_C
    blocks, the top-level loop around the tiles (the first dimension of BLIS's schedule,
    so its iterations write distinct rows of C), which B's packing, if inside it, does not
    depend on; None when there is no such loop (M in one M_C block)."""
    b_ops = {id(op) for op in list(b_info.copy_in) + list(b_info.zero_fill or [])}
    loops = [op for op in nest_ops if isinstance(op, AffineForOp) and id(op) not in b_ops
             and any(o.name in _STORES and o.operands[_STORES[o.name]] is output
                     for o in op.walk())]
    if len(loops) != 1 or loops[0].inits:
        return None
    loop = loops[0]
    iv = loop.induction_var

    def uses_iv(op: Operation) -> bool:
        return any(v is iv for o in op.walk() if o is not loop for v in o.operands)

    if (loop.constant_trip_count or 0) < 2 or not uses_iv(loop) or \
            any(uses_iv(op) for op in b_info.copy_in if op.parent is not None
                and _inside(op, loop)):
        return None
    return loop


def _parallelize_gepb_ic(loop: AffineForOp, b_info, output, remark: RemarkSink, loc,
                         kind: str, threads: int, a_packed: bool = True) -> bool:
    """GEPB with one block of B: the ic loop on the threads, each packing its own A blocks
    (unless ``a_packed`` is False: A read in place); B's block is the team's when packed
    once before the loop (K in one K_C block), each thread's own when packed inside it, once
    per K_C block."""
    private = _private_buffers(loop, output)
    if private is None:
        if remark is not None:
            remark(loc, f"{kind}: left sequential: a buffer written in the loop over M_C "
                        f"blocks (ic) is also used outside it")
        return False
    # (B's zero padding hoisted before the nest is no shared block: each thread's body
    # starts with it, :func:`_private_buffers`)
    shared = _packing_outside(b_info, loop)
    if not any(op in shared for op in b_info.copy_in):
        shared = []
    team = None if shared else _team_around_k_blocks(loop, b_info, threads)
    par = _run_on_team(team or loop, private)
    _pack_on_team(shared, par)
    if remark is not None:
        whose = "the team's" if shared else "each thread's own"
        if team is not None:
            whose += " packed once per K_C block (the team's region around the K_C loop)"
        a = "each thread with its own packed A block" if a_packed else "A read in place"
        remark(loc, f"{kind}: loop over M_C blocks (ic) parallel (all of N in one block of B: "
                    f"no jc loop to split), {a}; B's block {whose}")
    return True


def _team_around_k_blocks(loop: AffineForOp, b_info, threads: int
                          ) -> Optional[AffineForOp]:
    """GEPB's ic ``loop`` around the K_C loop that packs B's block: a loop over the
    ``threads`` threads around that K_C loop, each thread running its contiguous chunk of the
    ic blocks inside it, after B's packing (None, ``loop`` unchanged, when the nest is not
    that shape)::

        affine.for %ic = 0 to 14 {            affine.for %t = 0 to 2 {        (the team)
          affine.for %pc = 0 to 2 {             affine.for %pc = 0 to 2 {
            B's copy-in (%pc)          -->        B's copy-in (%pc)
            A's copy-in, tiles (%ic, %pc)         affine.for %ic = 7 * %t to 7 * %t + 7 {
                                                    A's copy-in, tiles (%ic, %pc)

    Each thread packs B's block once per K_C block instead of once per ic block and K_C
    block (conv3_x on two threads: 7 times as often, 7% of its time).  Legal: the ic
    blocks write distinct rows of C, B's copy does not depend on %ic and goes to the
    thread's own buffer, and each element of C still adds its K_C blocks in order (the same
    bits).  The chunks are OpenMP's static schedule of the ic loop."""
    body = [op for op in loop.body.ops if not isinstance(op, AffineYieldOp)]
    trips = loop.constant_trip_count
    if len(body) != 1 or not isinstance(body[0], AffineForOp) or body[0].inits or \
            not loop.has_constant_bounds or trips is None or trips <= threads:
        return None
    k_loop = body[0]
    b_copies = {id(op) for op in list(b_info.copy_in) + list(b_info.zero_fill or [])}
    ops = [op for op in k_loop.body.ops if not isinstance(op, AffineYieldOp)]
    prefix = 0
    while prefix < len(ops) and id(ops[prefix]) in b_copies:
        prefix += 1
    iv = loop.induction_var
    uses_iv = lambda op: any(v is iv for o in op.walk() for v in o.operands)
    if prefix == 0 or prefix == len(ops) or any(id(op) in b_copies for op in ops[prefix:]) or \
            any(uses_iv(op) for op in ops[:prefix]):
        return None
    chunk = -(-trips // threads) * loop.step
    lb, ub = loop.constant_lower_bound, loop.constant_upper_bound
    team = AffineForOp.build_constant(0, -(-trips // (chunk // loop.step)), loc=loop.loc)
    t = dim(0)
    inner = AffineForOp.build(AffineMap.get(1, 0, [t * chunk + lb]), [team.induction_var],
                              AffineMap.get(1, 0, [t * chunk + lb + chunk, ub]),
                              [team.induction_var], step=loop.step, loc=loop.loc)
    iv.replace_all_uses_with(inner.induction_var)
    for op in ops[prefix:]:
        op.detach()
        inner.body.insert_before(inner.body.terminator, op)
    k_loop.body.insert_before(k_loop.body.terminator, inner)
    k_loop.detach()
    team.body.insert_before(team.body.terminator, k_loop)
    loop.parent.insert_before(loop, team)
    loop.erase()
    return team


def _packing_outside(info, loop: AffineForOp) -> list:
    """The copy (and zero-padding) nests of the operand ``info`` packs outside ``loop``: the
    block the threads share."""
    return [op for op in list(info.copy_in) + list(info.zero_fill or [])
            if isinstance(op, AffineForOp) and op.parent is not None and not op.inits
            and not _inside(op, loop)]


def _pack_on_team(nests: list, par: AffineParallelOp) -> None:
    """Run the shared block's packing nests on the team: their copy loops are parallel by
    construction (distinct elements)."""
    for nest in nests:
        # (code generation may have promoted loops so that a copy encloses the rest)
        if nest.parent is None or _inside(nest, par) or _inside(par, nest) or \
                any(isinstance(a, AffineParallelOp) for a in nest.ancestors()):
            continue
        to_affine_parallel(nest)


def _private_buffers(loop: AffineForOp, output) -> Optional[list]:
    """The buffers ``loop`` writes (packed blocks, the stack tile of partial register tiles),
    each with the ops outside ``loop`` that only initialize it (the zero padding hoisted
    before the nest): they become private to each thread.  ``None`` when such a buffer is
    used outside otherwise."""
    private = []
    for buf in _written_buffers(loop):
        if buf is output:
            continue
        alloc = buf.defining_op
        if alloc is None or alloc.name not in ("memref.alloc", "memref.alloca"):
            continue
        users = [u.op for u in buf.uses if u.op.name != "memref.dealloc"]
        outside = [u for u in users if not _inside(u, loop)]
        inits = []
        for u in outside:
            top = _top_in(u, alloc.parent)
            if top is None or not _only_stores_into(top, buf) or \
                    alloc.parent.index_of(top) > alloc.parent.index_of(_top_in(loop,
                                                                            alloc.parent)):
                return None
            if all(t is not top for t in inits):
                inits.append(top)
        private.append((alloc, inits))
    return private


def _run_on_team(loop: AffineForOp, private: list) -> AffineParallelOp:
    """``loop`` as ``affine.parallel``, with each ``private`` buffer a per-thread alloca
    (its initializations run first in each thread's body)."""
    par = to_affine_parallel(loop)
    body = par.body
    at = 0
    for alloc, inits in private:
        buf = alloc.results[0]
        local = AllocaOp(operands=[], result_types=[buf.type],
                         attributes=dict(alloc.attributes), loc=alloc.loc)
        body.insert(at, local)
        at += 1
        for top in inits:
            body.insert(at, top.clone({buf: local.results[0]}))
            at += 1
            top.erase()
        for u in [u.op for u in buf.uses if u.op.name == "memref.dealloc"]:
            u.erase()
        buf.replace_all_uses_with(local.results[0])
        alloc.erase()
    return par


#: the ops that store, and the index of the memref they store into
_STORES = {"affine.store": 1, "affine.vector_store": 1, "memref.store": 1, "vector.store": 1,
           "amx.tile_store": 0}
_LOADS = ("affine.load", "affine.vector_load", "memref.load", "vector.load", "memref.copy",
          "func.call", "amx.tile_load")


def _written_buffers(op: Operation) -> list:
    """The memrefs stored into inside ``op``, in first-store order."""
    seen: dict = {}
    for o in op.walk():
        if o.name in _STORES:
            buf = o.operands[_STORES[o.name]]
            seen.setdefault(id(buf), buf)
    return list(seen.values())


def _top_in(op: Operation, block):
    """The ancestor of ``op`` (or ``op``) that sits in ``block``, or None."""
    cur = op
    while cur is not None and cur.parent is not block:
        cur = cur.parent_op
    return cur


def _only_stores_into(top: Operation, buf) -> bool:
    """Does ``top`` only write ``buf`` (no loads, no other stores): an initialization?"""
    for o in top.walk():
        if o.name in _LOADS:
            return False
        if o.name in _STORES and o.operands[_STORES[o.name]] is not buf:
            return False
    return True
