"""The register tile of a BLIS-tiled matmul (paper sections 2.7-2.12): the ``--hopt-vect``,
``--hopt-unroll`` and ``--hopt-scalrep`` steps.

The innermost loops of the BLIS nest are the ``k`` point loop and, inside it, the ``M_R x N_R``
register-tile loops (``j`` then ``i`` in the paper's order, ``i`` then ``j`` in the permuted
one).  This pass, thin over the utilities it calls, does:

1. (``unroll`` with packing) full tiles for partial ones: the ``C`` elements of the tile are
   copied into an ``M_R x N_R`` buffer (zero where the tile sticks out of ``C``) around the
   ``k`` loop, and the tile loops get the constant trip counts ``M_R``/``N_R``; the packed ``A``
   and ``B`` panels are zero-padded, so the extra lanes compute zeros that are never stored
   (the paper's question 2 of section 2.15); with ``vect``, the tiles cut by a constant N
   edge get a version of their own that is only ``N mod N_R`` rounded up to the vector width
   wide, or, when ``N mod N_R < M_R``, one in the column form (:func:`_column_edge`);
2. (``vect``) outer-loop vectorization of the ``j`` loop (:func:`vectorize_loop`);
3. (``unroll``) full unrolling of the tile loops: the ``k`` body becomes the unrolled
   ``M_R x N_R`` tile (MLIR's unroll-and-jam of ``j`` and ``i`` into ``k``);
4. (``scalrep``) scalar replacement: the tile's ``C`` elements travel in ``iter_args`` through
   the ``k`` loop, which then has no load or store of ``C``;
5. (``unroll``) unrolling of the ``k`` loop by ``K_U``;
6. (``scalrep``) the accumulators start from zero and ``C`` is added after the ``k`` loop,
   and (with ``unroll``) the tile's lines of ``C`` are prefetched (``affine.prefetch``) before
   it, so the micro-kernel never waits for ``C``.
Each step that does not apply (e.g. a trip count that is not constant) is skipped with a remark.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.affine_expr import AffineMap
from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.ir import Operation, Value
from ..affine.loop_utils import results_over_shared_operands

Remark = Optional[Callable[[object, str], None]]


def _enclosing_loops(op: Operation) -> list[AffineForOp]:
    loops = [a for a in op.ancestors() if isinstance(a, AffineForOp)]
    return list(reversed(loops))  # outermost first


def _iv_positions(op, loops) -> list[set[int]]:
    """For each result of the access map, which of ``loops`` its IVs appear in."""
    amap, operands = op.map, op.map_operands
    out = []
    for r in amap.results:
        used = set()
        for d in r.used_dims():
            v = operands[d]
            for k, loop in enumerate(loops):
                if loop.induction_var is v:
                    used.add(k)
        out.append(used)
    return out


def find_register_tile(top: Operation, c: Value) -> Optional[tuple[AffineForOp, AffineForOp,
                                                                   AffineForOp]]:
    """(k loop, i loop, j loop) of the innermost statement that stores to ``c``."""
    stores = [op for op in top.walk() if isinstance(op, AffineStoreOp) and op.memref is c]
    if len(stores) != 1:
        return None
    store = stores[0]
    loops = _enclosing_loops(store)
    if len(loops) < 3:
        return None
    inner3 = loops[-3:]
    used = _iv_positions(store, inner3)
    if len(used) != 2:
        return None
    rows, cols = used
    if 0 in rows or 0 in cols:  # the k loop must not index C
        return None
    i_pos = [k for k in rows if k in (1, 2)]
    j_pos = [k for k in cols if k in (1, 2)]
    if len(i_pos) != 1 or len(j_pos) != 1 or i_pos == j_pos:
        return None
    return inner3[0], inner3[i_pos[0]], inner3[j_pos[0]]


def _extend_to_full_tile(loop: AffineForOp, size: int) -> None:
    """``lb to min(lb + size, ub)`` -> ``lb to lb + size`` (single-result lower bound)."""
    lb = loop.lower_map
    if lb.num_results != 1 or loop.step != 1:
        raise ScheduleError("tile loop with a max lower bound or a step", loop.loc)
    ub = AffineMap.get(lb.num_dims, lb.num_symbols, (lb.results[0] + size,))
    loop.set_upper_bound(ub, list(loop.lower_operands))


def _edge_extent(loop: AffineForOp, size: int) -> Optional[int]:
    """How many iterations every tile of the register-tile loop ``loop`` (``j`` or ``i``) cut
    by a constant edge ``N`` has (``lb to min(lb + size, N, ..)`` with ``lb`` and the other
    bounds multiples of ``size``: those tiles all run ``N mod size``); ``None`` when that is
    not provable or ``size`` divides ``N``."""
    from ..affine.affine_expr import AffineConstantExpr
    from .packing_loops import linear_terms
    lb, ub = loop.lower_map, loop.upper_map
    if lb.num_results != 1 or loop.step != 1 or \
            any(t % size for t in linear_terms(lb.results[0])):
        return None
    ends = [e.value for e in ub.results if isinstance(e, AffineConstantExpr)]
    others = [e for e in ub.results if not isinstance(e, AffineConstantExpr)]
    if len(ends) != 1 or any(t % size for e in others for t in linear_terms(e)):
        return None
    return ends[0] % size or None


def _narrow_edge_width(j_loop: AffineForOp, n_r: int, width: int) -> Optional[int]:
    """The width, a multiple of ``width`` below ``n_r``, that covers the columns of every
    ``j`` tile cut by a constant edge ``N`` (:func:`_edge_extent`); ``None`` when that is not
    provable or the edge needs the full ``N_R``."""
    columns = _edge_extent(j_loop, n_r) if width > 1 else None
    if columns is None:
        return None
    narrow = -(-columns // width) * width
    return narrow if narrow < n_r else None


def _column_edge(j_loop: AffineForOp, m_r: int, n_r: int, width: int) -> Optional[int]:
    """The columns of the tiles cut by N's edge when they are better computed in the column
    form (vector loads of A's packed column of ``M_R`` rows, one broadcast element of B per
    column: ``r`` FMAs per k) than in the row form (``M_R`` FMAs of a ``width``-lane vector
    per k, however few of its lanes are inside C): when ``r < M_R`` and a column of the tile
    fits one vector.  N = 65 f32 on 4x64 tiles: 1 FMA per k instead of 4 on the 65th column,
    measured 0.91x -> 1.03x numpy at 129x65x257 on Zen 4."""
    columns = _edge_extent(j_loop, n_r)
    if columns is None or width <= 1 or not columns < m_r <= width or m_r & (m_r - 1):
        return None
    return columns


def _full_tile_condition(loops_sizes) -> tuple:
    """(IntegerSet, operands) true exactly when each ``lb to min(lb + size, ...)`` loop runs
    ``size`` iterations: every upper-bound result is at least ``lb + size``."""
    from ..affine.affine_expr import IntegerSet, dim
    operands: list[Value] = []

    def remap(amap, ops):
        return results_over_shared_operands(amap, ops, operands)

    constraints = []
    for loop, size in loops_sizes:
        if loop.lower_map.num_results != 1:
            # e.g. N_C not a multiple of N_R: a tile may start at an N_C block boundary
            raise ScheduleError("a register-tile loop has a max lower bound", loop.loc)
        (lb,) = remap(loop.lower_map, loop.lower_operands)
        for ub in remap(loop.upper_map, loop.upper_operands):
            diff = ub - (lb + size)
            if not (diff.is_symbolic_or_constant() and not diff.used_dims()
                    and diff.evaluate([0] * len(operands)) >= 0):
                constraints.append(diff)
    return IntegerSet(len(operands), 0, tuple(constraints), (False,) * len(constraints)), \
        operands


def _version_full_tiles(k_loop: AffineForOp, loops_sizes, c: Value):
    """Loop versioning: ``affine.if (full tile) { copy of the k loop } else { k loop }``;
    returns the copy (the original stays in the else branch)."""
    from ..affine.dialects.affine import AffineIfOp
    cond, operands = _full_tile_condition(loops_sizes)
    if_op = AffineIfOp.build(cond, operands, with_else=True, loc=k_loop.loc)
    k_loop.parent.insert_before(k_loop, if_op)
    full = k_loop.clone()
    if_op.then_block.insert_before(if_op.then_block.terminator, full)
    k_loop.detach()
    if_op.else_block.insert_before(if_op.else_block.terminator, k_loop)
    return full


def optimize_register_tile(top: Operation, c: Value, *, m_r: int, n_r: int, k_c: int, k_u: int,
                           vect: bool, unroll: bool, scalrep: bool, packed: bool,
                           width: int, remark: Remark = None, loc=None,
                           form: str = "row") -> None:
    """Apply the enabled register-tile steps to the BLIS nest ``top`` computing into ``c``.

    ``form="row"`` vectorizes along ``j`` (broadcast A, vector loads of B's packed row);
    ``form="col"`` along ``i`` (vector loads of A's packed column, broadcast B): with packing
    and ``unroll`` or ``vect``, C's tile is then accumulated in an ``N_R x M_R`` buffer
    (:func:`_transposed_tile_buffer`) that is added to C after the ``k`` loop."""
    from ..affine.loop_utils import (constant_trip_count, split_sum_chains,
                                     unroll as unroll_loop, unroll_full)
    from ..affine.scalrep import scalar_replace
    from ..affine.vectorize import vectorize_loop
    from ..memref_layout.normalize import normalize_buffer
    from .vector_legality import check_parallel

    def note(message: str) -> None:
        if remark is not None:
            remark(loc, message)

    found = find_register_tile(top, c)
    if found is None:
        note("register tile not found: --hopt-unroll/--hopt-vect/--hopt-scalrep skipped")
        return
    k_loop, i_loop, j_loop = found
    func = next(a for a in top.ancestors() if a.name == "func.func")

    sized = ((i_loop, m_r), (j_loop, n_r), (k_loop, k_c))
    partial = [(loop, size) for loop, size in sized if constant_trip_count(loop) != size]
    versions = [(k_loop, j_loop)]
    lanes = {}                  # id(loop): its vector width, when not ``width``
    column_acc = None           # (k loop, tile buffer) of N's edge in the column form
    acc_memref = c
    if form == "col":
        versions = [(k_loop, i_loop)]
    prefetch = None
    if form == "col" and packed and (unroll or vect):
        prefetch = _c_tile_prefetcher(k_loop, c, m_r, n_r) if unroll and scalrep else None
        try:
            acc_memref = _transposed_tile_buffer(k_loop, c, m_r, n_r, func)
            for loop, size in partial:
                _extend_to_full_tile(loop, size)
            # its accesses as [column, row]: the i loop vectorizes along the buffer's last
            # index, and scalar replacement sees the vectors
            normalize_buffer(acc_memref)
        except ScheduleError as e:
            note(f"column form: C's tile stays in C: {e.message}")
    elif form == "col":
        pass
    elif unroll and packed and partial == [(k_loop, k_c)]:
        # only the last K_C block is short: the packed panels are zero-padded to K_C, so
        # every tile runs the full K_C iterations (the extra ones add zeros)
        _extend_to_full_tile(k_loop, k_c)
    elif unroll and packed and partial:
        # Full tiles (all but the last in each dimension) run on C directly in a versioned copy
        # of the k loop; partial ones get C's tile in a zero-padded M_R x N_R buffer, and since
        # the A and B panels are zero-padded to M_R/N_R and K_C by the packing, every loop can
        # run the full tile: the extra iterations add products of zeros that are never stored.
        from ..memref_layout.data_copy import generate_copy
        try:
            # the short last K_C block does not need the slow version: the full tiles of the
            # M/N interior run K_C iterations on the zero-padded panels as well
            mn_partial = [(loop, size) for loop, size in partial if loop is not k_loop]
            # the tiles cut by M's edge compute its r = M mod M_R rows only, not M_R (r
            # broadcasts of A, r x N_R / lanes FMAs per k), where they have a version of
            # their own: 49x512x4608 f64 spent 6% of its FMAs on the 49th row's padding
            edge_rows = _edge_extent(i_loop, m_r)
            fk, fi, fj = find_register_tile(_version_full_tiles(k_loop, mn_partial, c), c)
            for loop, size in ((fi, m_r), (fj, n_r), (fk, k_c)):
                if constant_trip_count(loop) != size:
                    _extend_to_full_tile(loop, size)
            versions.insert(0, (fk, fj))
            generate_copy(k_loop, c, depth=0, pad_to=(m_r, n_r), hoist_alloc_to=func)
            column_edge = _column_edge(j_loop, m_r, n_r, width) if vect and unroll else None
            narrow = column_edge or (_narrow_edge_width(j_loop, n_r, width) if vect else None)
            buf = next(op.memref for op in k_loop.walk() if isinstance(op, AffineStoreOp))
            if narrow is not None:
                # the tiles cut by N's edge (all r = N mod N_R columns wide) compute only
                # r rounded up to the vector width, not N_R (or r in the column form): a
                # third version, after the one for tiles whose j extent is full
                wk, wi, wj = find_register_tile(
                    _version_full_tiles(k_loop, [(j_loop, n_r)], c), buf)
                for loop, size in ((wi, edge_rows or m_r), (wj, n_r), (wk, k_c)):
                    if constant_trip_count(loop) != size:
                        _extend_to_full_tile(loop, size)
                versions.insert(1, (wk, wj))
            n_edge = any(loop is j_loop for loop, _ in partial)
            for loop, size in partial:
                if loop is j_loop and narrow:
                    size = narrow
                elif loop is i_loop and edge_rows and not n_edge:   # only M's edge is left
                    size = edge_rows
                _extend_to_full_tile(loop, size)
            if column_edge:
                # the edge tiles accumulate r columns of M_R rows in a buffer indexed
                # [column, row] (normalized now: the row loop vectorizes along its last
                # index, and scalar replacement sees whole vectors), added to C's tile after
                column_buf = _transposed_tile_buffer(k_loop, buf, m_r, column_edge, func)
                normalize_buffer(column_buf)
                ck, _, ci = find_register_tile(k_loop, column_buf)   # rows: its last index
                versions[-1] = (ck, ci)
                column_acc = (ck, column_buf)
                lanes[id(ci)] = m_r
                if _compact_edge_columns_of_b(ck, ci, column_buf, func):
                    note(f"N's edge: its {column_edge} column(s) of packed B copied "
                         f"contiguously once per panel")
        except ScheduleError as e:
            note(f"partial register tiles stay partial: {e.message}")

    if form != "col":
        prefetch = _c_tile_prefetcher(versions[0][0], c, m_r, n_r) if unroll and scalrep \
            else None

    for n, (kl, jl) in enumerate(versions):
        if vect and width > 1:
            try:
                vectorize_loop(jl, lanes.get(id(jl), width), check=check_parallel)
            except ScheduleError as e:
                note(f"--hopt-vect: j loop not vectorized: {e.message}")
        if unroll:
            # the register-tile loops inside k (vectorization may have replaced or promoted
            # j), innermost first, so that the k body becomes the unrolled tile
            tile_loops = [op for op in kl.walk(pre_order=False)
                          if isinstance(op, AffineForOp) and op is not kl]
            for loop in tile_loops:
                if constant_trip_count(loop) is None:
                    note("--hopt-unroll: a register-tile loop has no constant trip count "
                         "(partial tiles without --hopt-copy): not unrolled")
                    break
                unroll_full(loop)

    if scalrep:
        scalar_replace(top)

    if unroll and k_u > 1:
        for kl, _ in versions:
            try:
                unroll_loop(kl, k_u)
            except ScheduleError as e:
                note(f"--hopt-unroll: k loop not unrolled by {k_u}: {e.message}")

    if scalrep and column_acc is not None:
        if unroll and k_u > 1:
            # M_R rows of one column are one vector: a single chain of FMAs would wait for
            # each other's latency, K_U partial sums do not
            split_sum_chains(column_acc[0], k_u)
        _start_from_zero(*column_acc)
    if scalrep and acc_memref is not c:
        _start_from_zero(versions[0][0], acc_memref)
    elif scalrep:
        _accumulate_from_zero(versions[0][0], c)
    if prefetch is not None:
        prefetch()


#: How many k iterations before the end of the full tile's k loop its lines of C are fetched
#: into L1: early enough that 16 to 32 lines arrive from L2 in time, late enough that B's
#: micro-panels streaming through L1 during the loop (64 KiB for a 4x32 f64 tile of K_C 256)
#: do not evict them first.
C_TILE_LEAD = 32


def _c_tile_prefetcher(k_loop: AffineForOp, c: Value, m_r: int, n_r: int):
    """A closure that prefetches the tile's ``M_R x N_R`` block of ``C`` around the full-tile
    ``k`` loop, called once the loop is unrolled (by ``K_U``); ``None`` when the tile's shape
    is not the plain ``lb to lb + size`` one.  With the accumulators starting from zero
    (:func:`_accumulate_from_zero`) ``C`` is read only after the ``k`` loop, so:

    * before the loop (or the ``affine.if`` choosing it), the lines of the tile ``M_R`` rows
      below go to L2 (``locality<1>``: x86's ``prefetcht2``): the tile the nest reaches next
      (GEBP) or one ``N_C / N_R`` tiles later (GEPB), from memory, with a whole micro-kernel
      of lead;
    * :data:`C_TILE_LEAD` k iterations before the loop ends (its last iterations peeled into
      a loop of their own, :func:`~polyopt.affine.loop_utils.peel_last_iterations`), the
      tile's own lines go to L1 (``locality<3>``, ``prefetcht0``), from L2.

    A loop too short to peel prefetches its own tile into L1 before it starts (BLIS's and
    OpenBLAS's kernels prefetch C there).  Measured on Zen 4 (GEPB, 4x32 f64, K_C 256, C of
    2088x2048 in memory) with the same micro-kernel in C: 53-56 GFLOPS with the L1 prefetch at
    the start, 55-57 with this placement."""
    from ..affine.affine_expr import dim
    from ..affine.dialects.affine import AffineIfOp, AffinePrefetchOp
    from ..affine.loop_utils import constant_trip_count, peel_last_iterations
    found = find_register_tile(k_loop, c)
    stores = [op for op in k_loop.walk() if isinstance(op, AffineStoreOp) and op.memref is c]
    if found is None or len(stores) != 1:
        return None
    _, i_loop, j_loop = found
    store = stores[0]
    if any(loop.lower_map.num_results != 1 or loop.step != 1 for loop in (i_loop, j_loop)):
        return None
    i_iv, j_iv = i_loop.induction_var, j_loop.induction_var
    # all operands as dimensions: the store's (but i and j), then the two lower bounds'
    keep = [v for v in store.map_operands if v is not i_iv and v is not j_iv]
    operands = keep + list(i_loop.lower_operands) + list(j_loop.lower_operands)

    def origin(lb_map, base):
        return lb_map.results[0].replace(
            [dim(base + t) for t in range(lb_map.num_dims)],
            [dim(base + lb_map.num_dims + t) for t in range(lb_map.num_symbols)])

    i_origin = origin(i_loop.lower_map, len(keep))
    j_origin = origin(j_loop.lower_map, len(keep) + i_loop.lower_map.num_inputs)
    per_line = max(1, 64 // max(1, c.type.element_type.width // 8))
    # the first element of each line, and the last element (the rows need not be aligned)
    columns = sorted(set(range(0, n_r, per_line)) | {n_r - 1})
    smap = store.map
    # which of the store's operands is i, j or another value (read now: unrolling rewrites
    # the store's operands before the prefetches are inserted)
    roles = ["i" if v is i_iv else "j" if v is j_iv else "other" for v in store.map_operands]
    owner = k_loop.parent.parent_op if k_loop.parent is not None else None
    anchor = owner if isinstance(owner, AffineIfOp) else k_loop

    def prefetch_tile(before: Operation, first_row: int, locality: int) -> None:
        for r in range(first_row, first_row + m_r):
            for col in columns:
                subst, n = [], 0
                for role in roles:
                    if role == "i":
                        subst.append(i_origin + r)
                    elif role == "j":
                        subst.append(j_origin + col)
                    else:
                        subst.append(dim(n))
                        n += 1
                results = tuple(e.replace(subst[:smap.num_dims], subst[smap.num_dims:])
                                for e in smap.results)
                amap = AffineMap.get(len(operands), 0, results)
                before.parent.insert_before(before, AffinePrefetchOp.build(
                    c, operands, amap, locality=locality, loc=anchor.loc))

    def insert():
        if anchor.parent is None or k_loop.parent is None:   # promoted away (one iteration)
            return
        trips = constant_trip_count(k_loop)
        lead = -(-C_TILE_LEAD // max(1, k_loop.step))
        tail = peel_last_iterations(k_loop, lead) if trips and trips >= 4 * lead else None
        if tail is None:
            prefetch_tile(anchor, 0, 3)
            return
        prefetch_tile(anchor, m_r, 1)
        prefetch_tile(tail, 0, 3)
    return insert


def _accumulate_from_zero(k_loop: AffineForOp, c: Value) -> None:
    """The tile's accumulators start at zero and ``C`` is added once after the ``k`` loop
    (``iter_args(%acc = %zero)``, then ``C + %acc``): a ``C`` load at the start of the
    micro-kernel stalls every FMA until it arrives, one after the loop waits for nothing.
    The sum is the same up to rounding (``C + (p0 + p1 + ...)`` instead of
    ``(C + p0) + p1 + ...``)."""
    from ..affine.dialects.affine import AffineVectorLoadOp, AffineVectorStoreOp, AffineLoadOp
    from ..affine.dialects.arith import ConstantOp
    from ..affine.ir import OP_REGISTRY
    from ..affine.types import FloatType
    is_float = isinstance(c.type.element_type, FloatType)
    AddF = OP_REGISTRY["arith.addf" if is_float else "arith.addi"]   # integer tiles: addi
    block = k_loop.parent
    if block is None:  # promoted away
        return
    loads = {}
    for n, v in enumerate(k_loop.inits):
        op = v.defining_op
        if isinstance(op, (AffineVectorLoadOp, AffineLoadOp)) and op.memref is c \
                and len(v.uses) == 1 and op.parent is block:
            key = (op.map, tuple(id(x) for x in op.map_operands))
            loads[key] = (n, op)
    if not loads:
        return
    stores = [op for op in block.ops if isinstance(op, (AffineVectorStoreOp, AffineStoreOp))
              and op.memref is c and block.index_of(op) > block.index_of(k_loop)]
    zero_for = {}
    for st in stores:
        key = (st.map, tuple(id(x) for x in st.map_operands))
        if key not in loads:
            continue
        n, ld = loads.pop(key)
        t = ld.results[0].type
        if t not in zero_for:
            zero_for[t] = ConstantOp.build(0.0 if is_float else 0, t, loc=ld.loc)
            block.insert_before(k_loop, zero_for[t])
        k_loop.set_operand(k_loop.lower_map.num_inputs + k_loop.upper_map.num_inputs + n,
                           zero_for[t].results[0])
        # all loads (and adds) before the first store: a load after a store to an address
        # 4 KiB apart (C's rows often are) waits for it as if they overlapped
        ld.detach()
        block.insert_before(stores[0], ld)
        add = AddF.build(ld.results[0], st.value, loc=st.loc)
        block.insert_before(stores[0], add)
        st.set_operand(0, add.results[0])



def _compact_edge_columns_of_b(ck: AffineForOp, ci: AffineForOp, column_buf: Value,
                               func) -> bool:
    """The column form's edge tiles read one element of B's packed panel per k and column,
    each in its own line: ``N_R`` elements apart (N = 65 f32 on 4x64 tiles: 256 bytes, so the
    panel's 513 lines of K fall in 16 of Zen 5's 64 L1 sets and miss L1 on every tile; 33 of
    the 212 us of 513x65x513).  Copy those ``N mod N_R`` columns into a buffer of their own,
    contiguous along k, once, before the outermost loop around the tiles that neither writes
    the packed panel nor moves the copied columns (MLIR's ``affineDataCopyGenerate`` with the
    copy hoisted).  Returns whether it did; nothing changes when no such loop exists."""
    from ..memref_layout.data_copy import generate_copy
    iv = ci.induction_var
    b_loads = [op for op in ck.walk() if isinstance(op, AffineLoadOp)
               and op.memref is not column_buf and iv not in list(op.map_operands)]
    memrefs = {id(op.memref): op.memref for op in b_loads}
    if len(memrefs) != 1:
        return False
    b = next(iter(memrefs.values()))

    def defined_inside(v: Value, op: Operation) -> bool:
        owner = v.defining_op if v.defining_op is not None else v.block.parent.parent
        return owner is op or op.is_proper_ancestor_of(owner)

    # the indices of B's loads that do not run inside the k loop (the panel's): the copy can
    # go before the outermost loop around the tiles that defines none of them and holds no
    # write of B (the panel is packed outside it)
    outer = [v for op in b_loads for v in op.map_operands if not defined_inside(v, ck)]
    dest = None
    for anc in ck.ancestors():
        if anc is func or any(defined_inside(v, anc) for v in outer) or any(
                b in list(op.operands) and not isinstance(op, AffineLoadOp)
                for op in anc.walk()):
            break
        if isinstance(anc, AffineForOp):
            dest = anc
    if dest is None:
        return False
    block = ck.parent
    index = block.ops.index(ck)
    info = generate_copy((block, index, index + 1), b, depth=0, hoist_alloc_to=func,
                         copy_out=False)
    nests = list(info.copy_in) + list(info.zero_fill)
    if info.buffer is None:
        return False
    for nest in nests:
        nest.move_before(dest)
    return True


def _transposed_tile_buffer(k_loop: AffineForOp, c: Value, m_r: int, n_r: int, func) -> Value:
    """The column form's C tile: the ``k`` loop accumulates into an ``N_R x M_R`` buffer (layout
    ``(d0, d1) -> (d1, d0)``: a column of the tile is contiguous, so it vectorizes along ``i``),
    which starts at zero instead of holding a copy of C, and ``C[i, j] += buf[j, i]`` after the
    loop (the box of C the tile covers: partial tiles add only their part).  Returns the
    buffer."""
    from ..affine.dialects.arith import ConstantOp
    from ..affine.ir import OP_REGISTRY
    from ..affine.types import FloatType
    from ..memref_layout.data_copy import generate_copy
    from ..affine.affine_expr import dim
    layout = AffineMap.get(2, 0, (dim(1), dim(0)))
    info = generate_copy(k_loop, c, depth=0, pad_to=(m_r, n_r), buffer_layout=layout,
                         hoist_alloc_to=func)
    if info.buffer is None:
        raise ScheduleError("the tile never runs", k_loop.loc)
    # no copy in: the accumulators start from zero (what the buffer holds before the k loop
    # is never read once the k loop's accumulators are scalar-replaced; without scalar
    # replacement the zero fill below is what the k loop adds to)
    etype = c.type.element_type
    is_float = isinstance(etype, FloatType)
    for nest in info.copy_in:
        for op in nest.walk():
            if isinstance(op, AffineLoadOp) and op.memref is c:
                zero = ConstantOp.build(0.0 if is_float else 0, etype, loc=op.loc)
                op.parent.insert_before(op, zero)
                op.results[0].replace_all_uses_with(zero.results[0])
                op.erase()
                break
    AddF = OP_REGISTRY["arith.addf" if is_float else "arith.addi"]
    for nest in info.copy_out:
        stores = [op for op in (nest.walk() if hasattr(nest, "walk") else [nest])
                  if isinstance(op, AffineStoreOp) and op.memref is c]
        for st in stores:
            old = AffineLoadOp.build(c, list(st.map_operands), st.map, loc=st.loc)
            st.parent.insert_before(st, old)
            add = AddF.build(old.results[0], st.value, loc=st.loc)
            st.parent.insert_before(st, add)
            st.set_operand(0, add.results[0])
    return info.buffer


def _start_from_zero(k_loop: AffineForOp, buf: Value) -> None:
    """The scalar-replaced accumulators of the column form's tile buffer start at zero (the
    buffer was zero-filled: its loads before the ``k`` loop are replaced by a zero vector, so
    the fill is dead except for the lanes no store covers)."""
    from ..affine.dialects.affine import AffineVectorLoadOp
    from ..affine.dialects.arith import ConstantOp
    from ..affine.types import FloatType
    block = k_loop.parent
    if block is None:
        return
    is_float = isinstance(buf.type.element_type, FloatType)
    zero_for = {}
    for n, v in enumerate(k_loop.inits):
        op = v.defining_op
        if isinstance(op, (AffineVectorLoadOp, AffineLoadOp)) and op.memref is buf \
                and len(v.uses) == 1 and op.parent is block:
            t = op.results[0].type
            if t not in zero_for:
                zero_for[t] = ConstantOp.build(0.0 if is_float else 0, t, loc=op.loc)
                block.insert_before(k_loop, zero_for[t])
            k_loop.set_operand(k_loop.lower_map.num_inputs + k_loop.upper_map.num_inputs + n,
                               zero_for[t].results[0])
            op.erase()
