"""Parallel regions on LLVM's OpenMP runtime (libomp), as MLIR's ``convert-openmp-to-llvm``
and clang emit them.

Why libomp: it is the runtime MLIR's OpenMP lowering (``OpenMPIRBuilder``) and
``clang -fopenmp`` target (``__kmpc_fork_call``), Debian ships it as ``libomp-22-dev``
(``libomp.so.5`` under ``/usr/lib/llvm-22/lib``, installed by ``scripts/setup.sh``), and it
also exports GCC's ``GOMP_*`` entry points, so Polly's default GNU-OpenMP code runs on the
same runtime.  It is loaded into the process with ``llvm.load_library_permanently`` the first
time a module with a parallel region is lowered; when it is missing the lowering stops with a
:class:`CodegenError` at the parallel op naming the package.

The region's ABI in the LLVM IR emitted here (one pointer of captures, as
``__kmpc_fork_call``'s variadic tail allows)::

    %ctx = alloca { ptr, i64, ... }             ; the live-in values, stored before the fork
    %gtid = call i32 @__kmpc_global_thread_num(ptr @ident)
    call void @__kmpc_push_num_threads(ptr @ident, i32 %gtid, i32 <threads>)
    call void (ptr, i32, ptr, ...) @__kmpc_fork_call(ptr @ident, i32 1, ptr @f.omp_outlined.0, ptr %ctx)

    define internal void @f.omp_outlined.0(ptr %gtid, ptr %btid, ptr %ctx) {
      ; loads of the live-ins, then the body: the thread's block of iterations from
      ; __kmpc_for_static_init_8 (schedule(static)), per-thread slots indexed by *btid
    }

:func:`emit_parallel_region` lowers a body into such an outlined function without the handlers
knowing: the body is emitted with the enclosing function's LLVM values, then every value of
the enclosing function that the outlined one uses is captured (stored into ``%ctx`` before the
fork, loaded at the outlined function's entry) and substituted.
"""

from __future__ import annotations

import ctypes.util
import os
from typing import Callable, Optional

import llvmlite.binding as llvm
from llvmlite import ir

from polyopt.affine.diagnostics import CodegenError
from polyopt.codegen.llvm_helpers import I32, I64, PTR, VOID, FnAttrs, i64, opaque_alloca


def trip_count(b: ir.IRBuilder, lb: ir.Value, ub: ir.Value, step) -> ir.Value:
    """``max(0, ceil((ub - lb) / step))`` (``i64``; ``step`` an int or a positive value)."""
    span = b.sub(ub, lb)
    span = b.select(b.icmp_signed(">", span, i64(0)), span, i64(0))
    if isinstance(step, int):
        step = i64(step)
    return b.sdiv(b.add(span, b.sub(step, i64(1))), step)

#: Where Debian's libomp-22-dev puts the runtime, then the names the loader searches.
OPENMP_LIBRARIES = ("/usr/lib/llvm-22/lib/libomp.so.5", "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                    "libomp.so.5", "libomp.so")
OPENMP_PACKAGE = "libomp-22-dev"

_loaded: Optional[str] = None
_ENTRY_POINTS = ("__kmpc_fork_call", "__kmpc_global_thread_num", "__kmpc_push_num_threads",
                 "__kmpc_barrier", "__kmpc_for_static_init_8", "__kmpc_for_static_fini",
                 "__kmpc_serialized_parallel", "__kmpc_end_serialized_parallel")

#: Below this much work (ops x iterations, :func:`iteration_cost`) a region runs on the
#: calling thread alone: waking the team and joining it costs a few microseconds.
MIN_PARALLEL_WORK = 200_000
#: The trip count assumed for loops whose bounds are not constants.
UNKNOWN_TRIPS = 32
#: What :func:`iteration_cost` counts for a ``func.call``: a callee is opaque, and the calls in
#: parallel loops are micro-kernels (``--hopt-blis``: ``M_R x N_R x K_C`` FMAs, a thousand
#: vector FMAs for a 14x16 tile and K_C 64); counted as one op, a BLIS-mode nest of 2088 rows
#: looked too small to fork and ran on one thread.
CALL_COST = 1000
#: Regions whose outlined body has at most this many LLVM instructions get a second, inline
#: copy for when they run alone (:func:`emit_parallel_region`); larger bodies (BLIS nests)
#: would double their compile time for it.
MAX_INLINE_OPS = 500


def iteration_cost(block) -> int:
    """A static estimate of the element operations one execution of ``block`` runs: its ops
    (an op on vectors counts its lanes: a GEMV's 16-lane loads and FMAs do the work of 16
    scalar ones, and counted as one op a 4 MiB matrix-vector product looked too small to fork;
    a ``func.call`` :data:`CALL_COST`), the bodies of ``affine.for`` loops times their trip
    counts (:data:`UNKNOWN_TRIPS` when not constant), other regions once."""
    total = 0
    for op in block.ops:
        total += CALL_COST if op.name == "func.call" else _lanes(op)
        inner = sum(iteration_cost(b) for r in op.regions for b in r.blocks)
        if op.name == "affine.for":
            extent = _extent_bound(op)
            inner *= UNKNOWN_TRIPS if extent is None else max(0, -(-extent // op.step))
        total += inner
    return total


def _extent_bound(op) -> Optional[int]:
    """The smallest constant difference between an upper and a lower bound of the
    ``affine.for`` ``op``: its extent when both are constants, at most a tile's size in a tile
    loop such as ``max(16 * t, x) to min(16 * t + 16, y)``; ``None`` when no pair of bounds
    differs by a constant."""
    from ..affine.affine_expr import AffineConstantExpr, AffineDimExpr
    positions: dict[int, int] = {}

    def results(amap, operands):
        dims = [AffineDimExpr(positions.setdefault(id(v), len(positions))) for v in operands]
        return [amap.get_result(k).replace(dims[:amap.num_dims], dims[amap.num_dims:])
                for k in range(amap.num_results)]

    lows = results(op.lower_map, op.lower_operands)
    highs = results(op.upper_map, op.upper_operands)
    best = None
    for high in highs:
        for low in lows:
            d = high - low
            if isinstance(d, AffineConstantExpr) and (best is None or d.value < best):
                best = d.value
    return best


def _lanes(op) -> int:
    """The most lanes of a vector ``op`` reads or writes (1 for scalar ops)."""
    from ..affine.types import VectorType
    lanes = 1
    for v in (*op.results, *op.operands):
        if isinstance(v.type, VectorType):
            lanes = max(lanes, v.type.num_elements)
    return lanes


#: The largest team accepted: past it a request is a typo, not oversubscription (torch's
#: thread pool crashed the process at 100000).
MAX_THREADS = 1024


def resolve_threads(threads: Optional[int] = None) -> int:
    """The team size to compile for: ``threads`` when given, else ``OMP_NUM_THREADS`` (its
    first entry, as OpenMP reads it), else the number of cores this process may run on."""
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if threads > MAX_THREADS:
            raise ValueError(f"threads must be at most {MAX_THREADS}, got {threads} (this "
                             f"machine has {os.cpu_count()} cores)")
        return threads
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_THREADS:
            raise ValueError(f"OMP_NUM_THREADS must be an integer from 1 to {MAX_THREADS}, "
                             f"got {env!r}")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def load_openmp_runtime(loc=None) -> str:
    """Load libomp into the process for the JIT (once); returns its path.  Raises
    :class:`CodegenError` at ``loc`` naming the Debian package when it cannot be found.
    ``POLYOPT_OPENMP_LIB`` names another copy (tests use a missing path to check the error)."""
    global _loaded
    override = os.environ.get("POLYOPT_OPENMP_LIB")
    if _loaded is not None and override in (None, _loaded):
        return _loaded
    # idle workers spin for KMP_BLOCKTIME ms before sleeping (200 by default): on a shared,
    # often oversubscribed machine that spinning steals the cores from other work
    os.environ.setdefault("KMP_BLOCKTIME", "1")
    candidates = [override] if override else list(OPENMP_LIBRARIES)
    if not override:
        found = ctypes.util.find_library("omp")
        if found:
            candidates.append(found)
    for path in candidates:
        if os.path.isabs(path) and not os.path.exists(path):
            continue
        try:
            llvm.load_library_permanently(path)
            lib = ctypes.CDLL(path)
        except (RuntimeError, OSError):
            continue
        # the JIT binds the runtime's entry points to this library, whatever else the process
        # has loaded
        for name in _ENTRY_POINTS:
            llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        _loaded = path
        return path
    raise CodegenError(
        f"parallel loops need LLVM's OpenMP runtime (libomp.so.5), which was not found "
        f"(tried {', '.join(candidates)}): install Debian's {OPENMP_PACKAGE} "
        f"(scripts/setup.sh does), or compile with threads=1 (--threads 1)", loc)


def _ident(ml) -> ir.GlobalVariable:
    """The ``ident_t`` source location every ``__kmpc_*`` call takes (flags KMP_IDENT_KMPC)."""
    gv = ml.llmod.globals.get("__polyopt_omp_ident")
    if gv is None:
        psource = ml.c_string(";unknown;unknown;0;0;;")
        ty = ir.LiteralStructType([I32, I32, I32, I32, PTR])
        gv = ir.GlobalVariable(ml.llmod, ty, "__polyopt_omp_ident")
        gv.global_constant = True
        gv.linkage = "private"
        gv.initializer = ir.Constant(ty, [ir.Constant(I32, 0), ir.Constant(I32, 2),
                                          ir.Constant(I32, 0), ir.Constant(I32, 0), psource])
    return gv


def omp_function(ml, name: str) -> ir.Function:
    """A declaration of one of the runtime's entry points used here."""
    sigs = {
        "__kmpc_fork_call": ir.FunctionType(VOID, [PTR, I32, PTR], var_arg=True),
        "__kmpc_global_thread_num": ir.FunctionType(I32, [PTR]),
        "__kmpc_push_num_threads": ir.FunctionType(VOID, [PTR, I32, I32]),
        "__kmpc_barrier": ir.FunctionType(VOID, [PTR, I32]),
        "__kmpc_for_static_init_8": ir.FunctionType(VOID, [PTR, I32, I32, PTR, PTR, PTR, PTR,
                                                           I64, I64]),
        "__kmpc_for_static_fini": ir.FunctionType(VOID, [PTR, I32]),
        "__kmpc_serialized_parallel": ir.FunctionType(VOID, [PTR, I32]),
        "__kmpc_end_serialized_parallel": ir.FunctionType(VOID, [PTR, I32]),
    }
    return ml.get_function(name, sigs[name])


#: ``kmp_sch_static``: iterations in equal contiguous blocks, one per thread (OpenMP's
#: ``schedule(static)``, what clang emits for ``#pragma omp for``).
KMP_SCH_STATIC = 34
#: ``kmp_sch_static_chunked``: chunks dealt round-robin (``schedule(static, chunk)``).
KMP_SCH_STATIC_CHUNKED = 33


def _clamp(b: ir.IRBuilder, v: ir.Value, trips: ir.Value) -> ir.Value:
    """``v`` (an iteration number the runtime gave) clamped to ``[0, trips]``: a no-op at
    run time, but it tells LLVM the range.  Without it, a loaded bound times a block size
    (``i * 572``) might wrap for all SCEV knows, the packing copies indexed from it were no
    affine recurrences, and the loop vectorizer gave up on them ("cannot identify array
    bounds"; the stem convolution's im2col copy ran scalar on two threads)."""
    v = b.select(b.icmp_signed("<", v, i64(0)), i64(0), v)
    return b.select(b.icmp_signed(">", v, trips), trips, v)


class Region:
    """What the body of a parallel region is emitted with: the thread's number in the team
    (``i64``, from the microtask's ``btid`` argument), :meth:`static_chunk` and
    :meth:`barrier` (``__kmpc_barrier``, all threads of the team).  Everything goes through
    libomp's own ``__kmpc_*`` entry points, never the ``omp_*`` API, whose names another
    OpenMP runtime in the process (GCC's libgomp) may also export."""

    def __init__(self, L, gtid_ptr: ir.Value, btid_ptr: ir.Value):
        self.L = L
        b = L.b
        self.gtid = b.load(gtid_ptr, typ=I32, name="omp.gtid")
        self.thread = b.sext(b.load(btid_ptr, typ=I32), I64, name="omp.tid")
        L.leaf_ranges[id(self.thread)] = (0, None)

    def barrier(self) -> None:
        self.L.b.call(omp_function(self.L.ml, "__kmpc_barrier"), [_ident(self.L.ml), self.gtid])

    def _static_init(self, trips: ir.Value, schedule: int) -> tuple:
        """``__kmpc_for_static_init_8`` over iterations ``0 .. trips - 1`` with ``schedule``
        (a chunk of one when chunked): this thread's first chunk ``(lower, upper)``
        (inclusive) and the ``stride`` to its next one."""
        L = self.L
        b = L.b
        last, lower, upper, stride = (opaque_alloca(L.entry_builder, t)
                                      for t in (I32, I64, I64, I64))
        b.store(ir.Constant(I32, 0), last)
        b.store(i64(0), lower)
        b.store(b.sub(trips, i64(1)), upper)
        b.store(i64(1), stride)
        ident = _ident(L.ml)
        b.call(omp_function(L.ml, "__kmpc_for_static_init_8"),
               [ident, self.gtid, ir.Constant(I32, schedule), last, lower, upper, stride,
                i64(1), i64(1)])
        first, last_ = b.load(lower, typ=I64), b.load(upper, typ=I64)
        out = (_clamp(b, first, trips), _clamp(b, last_, trips), b.load(stride, typ=I64))
        b.call(omp_function(L.ml, "__kmpc_for_static_fini"), [ident, self.gtid])
        return out

    def cyclic_iterations(self, lb: ir.Value, ub: ir.Value, step: int, accs: list,
                          emit: Callable[[ir.Value, ir.Value, list], list]) -> list:
        """This thread's iterations of ``for iv = lb to ub step step`` under OpenMP's
        ``schedule(static, 1)`` (``__kmpc_for_static_init_8`` with a chunk of one, as clang
        emits it): iterations ``tid, tid + nthreads, ...``, so that threads share evenly a
        loop whose iterations grow or shrink (a triangular nest); a serialized region gets
        them all as one chunk.  ``emit(lo, hi, accs)`` lowers the iterations in ``[lo, hi)``
        from the accumulators ``accs`` and returns them updated; returns the accumulators
        after this thread's last chunk."""
        L = self.L
        b = L.b
        trips = trip_count(b, lb, ub, step)
        first, last_first, every = self._static_init(trips, KMP_SCH_STATIC_CHUNKED)
        # chunks [lo, hi] (inclusive, as the runtime gives them: one iteration in a team, all
        # of them when the region runs serialized), each the next by ``every``
        pre = b.block
        header = L.fn.append_basic_block("omp.cyclic.header")
        body = L.fn.append_basic_block("omp.cyclic.body")
        exit_ = L.fn.append_basic_block("omp.cyclic.exit")
        b.branch(header)
        b.position_at_end(header)
        k = b.phi(I64, "omp.lo")
        kk = b.phi(I64, "omp.hi")
        phis = [b.phi(a.type) for a in accs]
        b.cbranch(b.icmp_signed("<", k, trips), body, exit_)
        b.position_at_end(body)
        hi = b.add(kk, i64(1))
        hi = b.select(b.icmp_signed("<", hi, trips), hi, trips)
        out = emit(b.add(lb, b.mul(k, i64(step))), b.add(lb, b.mul(hi, i64(step))), phis)
        nxt, nxt_hi = b.add(k, every), b.add(kk, every)
        latch = b.block
        b.branch(header)
        k.add_incoming(first, pre)
        k.add_incoming(nxt, latch)
        kk.add_incoming(last_first, pre)
        kk.add_incoming(nxt_hi, latch)
        for phi, a, v in zip(phis, accs, out):
            phi.add_incoming(a, pre)
            phi.add_incoming(v, latch)
        b.position_at_end(exit_)
        return phis

    def static_chunk(self, lb: ir.Value, ub: ir.Value, step) -> tuple:
        """This thread's part ``[lb', ub')`` of ``for iv = lb to ub step step`` under OpenMP's
        ``schedule(static)`` (``__kmpc_for_static_init_8`` on the trip count, as clang emits
        it): contiguous blocks, thread 0 first."""
        b = self.L.b
        if isinstance(step, int):
            step = i64(step)
        trips = trip_count(b, lb, ub, step)
        first, upper, _ = self._static_init(trips, KMP_SCH_STATIC)
        end = b.add(upper, i64(1))
        end = b.select(b.icmp_signed("<", end, trips), end, trips)
        end = b.select(b.icmp_signed("<", end, first), first, end)
        lo = b.add(lb, b.mul(first, step))
        hi = b.add(lb, b.mul(end, step))
        return lo, hi


class SerialRegion:
    """:class:`Region`'s interface for a body emitted in place, on the calling thread alone:
    thread 0 of a team of one, every iteration its own, barriers empty."""

    def __init__(self, L):
        self.L = L
        self.thread = i64(0)

    def barrier(self) -> None:
        pass

    def static_chunk(self, lb: ir.Value, ub: ir.Value, step) -> tuple:
        return lb, ub

    def cyclic_iterations(self, lb: ir.Value, ub: ir.Value, step: int, accs: list,
                          emit: Callable[[ir.Value, ir.Value, list], list]) -> list:
        return emit(lb, ub, accs)


def emit_parallel_region(L, loc, threads: int, body: Callable[[Region], None],
                         trips: Optional[ir.Value] = None, cost: int = 0) -> None:
    """Emit ``body(region)`` as an outlined function run by a team of ``threads`` threads
    (``__kmpc_fork_call``) at the current point of ``L`` (a FunctionLowering).

    ``body`` emits through ``L`` as usual (``L.b``, ``L.entry_builder``, ``L.values``...); it
    may use every LLVM value of the enclosing function: they are captured.  ``alloca``s and
    heap buffers the body hoists go to the outlined function's entry (one per thread), and
    nothing the body binds in ``L`` outlives the region.  Parallel ops inside ``body`` run
    sequentially (``L.in_parallel``).

    ``trips`` (the parallel dimension's trip count, ``i64``) and ``cost`` (the ops of one
    iteration, :func:`iteration_cost`): when ``trips < 2`` or ``trips * cost`` is below
    :data:`MIN_PARALLEL_WORK`, the region runs on the calling thread alone (OpenMP's ``if``
    clause).  Bodies of at most :data:`MAX_INLINE_OPS` LLVM instructions then run as a plain
    loop emitted in place (:class:`SerialRegion`): a stencil's sweep forked a thousand times
    paid 0.7 microseconds per call in the serialized outlined function (jacobi-1d LARGE 1.0 ms
    against 0.34 ms sequential); larger ones call the outlined function on the calling thread
    (``__kmpc_serialized_parallel``)."""
    ml = L.ml
    load_openmp_runtime(loc)
    saved = _save_bindings(L)
    try:
        L.in_parallel = True
        child = _outline(L, body)
    finally:
        _restore_bindings(L, saved)
    captured = _capture(child, L.fn, child.args[2])
    b = L.b
    ident = _ident(ml)
    if trips is None:
        _fork(L, ident, threads, child, _store_captured(L, captured))
        return
    min_trips = max(2, -(-MIN_PARALLEL_WORK // max(1, cost)))
    small = _instruction_count(child) <= MAX_INLINE_OPS
    with b.if_else(b.icmp_signed(">=", trips, i64(min_trips))) as (team, alone):
        with team:
            _fork(L, ident, threads, child, _store_captured(L, captured))
        with alone:
            if small:
                saved = _save_bindings(L)
                try:
                    L.in_parallel = True
                    body(SerialRegion(L))
                finally:
                    _restore_bindings(L, saved)
            else:
                _call_serialized(L, ident, child, _store_captured(L, captured))


def _store_captured(L, captured: list) -> ir.Value:
    """The outlined function's ``ctx`` argument: ``captured`` stored into a struct."""
    if not captured:
        return ir.Constant(PTR, None)
    b = L.b
    ty = ir.LiteralStructType([v.type for v in captured])
    slot = opaque_alloca(L.entry_builder, ty)
    for k, v in enumerate(captured):
        b.store(v, b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=ty))
    return slot


def _save_bindings(L) -> tuple:
    return (L.fn, L.b, L.entry, L.entry_builder, L.heap_buffers, dict(L.values),
            dict(L.forms), dict(L.leaf_values), dict(L.leaf_ranges),
            getattr(L, "in_parallel", False))


def _restore_bindings(L, saved: tuple) -> None:
    """Undo what a body bound in ``L``: nothing it binds outlives its region.  The builder
    is kept when it still emits into the same function (an inline body moves it on)."""
    (fn, b, L.entry, L.entry_builder, L.heap_buffers, values, forms, leaf_values,
     leaf_ranges, L.in_parallel) = saved
    if L.fn is not fn:
        L.fn, L.b = fn, b
    L.values.clear(), L.values.update(values)
    L.forms.clear(), L.forms.update(forms)
    L.leaf_values.clear(), L.leaf_values.update(leaf_values)
    L.leaf_ranges.clear(), L.leaf_ranges.update(leaf_ranges)


def _instruction_count(fn: ir.Function) -> int:
    return sum(len(block.instructions) for block in fn.blocks)


def _call_serialized(L, ident, child, slot) -> None:
    """Run the outlined ``child`` on the calling thread, as a team of one."""
    b = L.b
    gtid = b.call(omp_function(L.ml, "__kmpc_global_thread_num"), [ident])
    ids = opaque_alloca(L.entry_builder, ir.ArrayType(I32, 2))
    gtid_slot = b.gep(ids, [ir.Constant(I32, 0), ir.Constant(I32, 0)],
                      source_etype=ir.ArrayType(I32, 2))
    btid_slot = b.gep(ids, [ir.Constant(I32, 0), ir.Constant(I32, 1)],
                      source_etype=ir.ArrayType(I32, 2))
    b.store(gtid, gtid_slot)
    b.store(ir.Constant(I32, 0), btid_slot)
    b.call(omp_function(L.ml, "__kmpc_serialized_parallel"), [ident, gtid])
    b.call(child, [gtid_slot, btid_slot, slot])
    b.call(omp_function(L.ml, "__kmpc_end_serialized_parallel"), [ident, gtid])


def _outline(L, body: Callable[["Region"], None]) -> ir.Function:
    """``body`` emitted into a new outlined function ``(gtid, btid, ctx)``, still using the
    enclosing function's values (:func:`_capture` substitutes them)."""
    ml = L.ml
    ml._omp_regions = getattr(ml, "_omp_regions", 0) + 1
    name = f"{L.fn.name}.omp_outlined.{ml._omp_regions - 1}"
    child = ir.Function(ml.llmod, ir.FunctionType(VOID, [PTR, PTR, PTR]), name)
    child.linkage = "internal"
    child.attributes = FnAttrs(ml.fn_attr_strings)
    child.attributes.add("nounwind")
    gtid_ptr, btid_ptr, ctx = child.args
    gtid_ptr.name, btid_ptr.name, ctx.name = "gtid", "btid", "ctx"
    L.fn = child
    L.entry = child.append_basic_block("entry")
    start = child.append_basic_block("body")
    L.entry_builder = ir.IRBuilder(L.entry)
    L.b = ir.IRBuilder(start)
    L.heap_buffers = []
    body(Region(L, gtid_ptr, btid_ptr))
    for p in L.heap_buffers:
        L.heap_free(L.b, p)
    L.b.ret_void()
    L.entry_builder.branch(start)
    return child


def _fork(L, ident, threads: int, child, ctx) -> None:
    b = L.b
    gtid = b.call(omp_function(L.ml, "__kmpc_global_thread_num"), [ident])
    b.call(omp_function(L.ml, "__kmpc_push_num_threads"),
           [ident, gtid, ir.Constant(I32, threads)])
    b.call(omp_function(L.ml, "__kmpc_fork_call"), [ident, ir.Constant(I32, 1), child, ctx])


def _used_values(instr: ir.Instruction) -> list:
    vals = list(instr.operands)
    if isinstance(instr, ir.GEPInstr):
        vals += [instr.pointer, *instr.indices]
    elif isinstance(instr, ir.PhiInstr):
        vals += [v for v, _ in instr.incomings]
    elif isinstance(instr, (ir.ExtractValue, ir.InsertValue)):
        vals.append(instr.aggregate)
        if isinstance(instr, ir.InsertValue):
            vals.append(instr.value)
    return vals


def _substitute(instr: ir.Instruction, new: dict) -> None:
    def sub(v):
        return new.get(id(v), v)
    ops = instr.operands
    instr.operands = type(ops)(sub(v) for v in ops)
    if isinstance(instr, ir.GEPInstr):
        instr.pointer = sub(instr.pointer)
        instr.indices = [sub(v) for v in instr.indices]
    elif isinstance(instr, ir.PhiInstr):
        instr.incomings = [(sub(v), blk) for v, blk in instr.incomings]
    elif isinstance(instr, (ir.ExtractValue, ir.InsertValue)):
        instr.aggregate = sub(instr.aggregate)
        if isinstance(instr, ir.InsertValue):
            instr.value = sub(instr.value)


def _owner(v) -> Optional[ir.Function]:
    if isinstance(v, ir.Argument):
        return v.parent
    if isinstance(v, ir.Instruction):
        return v.parent.parent
    return None


def _capture(child: ir.Function, parent: ir.Function, ctx: ir.Value) -> list:
    """The values of ``parent`` that ``child`` uses, in first-use order; each use in ``child``
    now reads a load from ``ctx`` (``{captured types}``) at ``child``'s entry."""
    captured: dict[int, ir.Value] = {}
    for block in child.blocks:
        for instr in block.instructions:
            for v in _used_values(instr):
                if _owner(v) is parent and id(v) not in captured:
                    captured[id(v)] = v
    if not captured:
        return []
    values = list(captured.values())
    ty = ir.LiteralStructType([v.type for v in values])
    b = ir.IRBuilder(child.entry_basic_block)
    b.position_at_start(child.entry_basic_block)
    new = {}
    for k, v in enumerate(values):
        ptr = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=ty)
        new[id(v)] = b.load(ptr, typ=v.type, name=f"cap{k}")
    loads = {id(x) for x in new.values()}
    for block in child.blocks:
        for instr in block.instructions:
            if id(instr) not in loads:
                _substitute(instr, new)
    return values
