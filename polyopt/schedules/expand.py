"""Expansion of high-level ops into their naive affine loop nests (the paper's ``-hopt``,
section 2.3; MLIR's ``-convert-linalg-to-affine-loops`` for ``linalg.matmul``).

    hop.matmul %A, %B, %C : (memref<MxK>, memref<KxN>, memref<MxN>)
  becomes
    affine.for %i = 0 to M {
      affine.for %j = 0 to N {
        affine.for %k = 0 to K {
          %a = affine.load %A[%i, %k]; %b = affine.load %B[%k, %j]; %c = affine.load %C[%i, %j]
          affine.store (%c + %a * %b), %C[%i, %j]
    }}}

With ``tiled=True`` (the ``--hopt`` pass) the product nest is then rescheduled with the BLIS
schedule of :mod:`polyopt.schedules.blis_schedule` (tile sizes from the op's ``M_C``/``K_C``/
``N_C``/``M_R``/``N_R``/``K_U`` attributes, the rest from the machine model), or with the op's
``schedule`` attribute when it has one (paper section 2.5).

With ``copy=True`` as well (``--hopt --hopt-copy``, paper section 2.6) the BLIS-tiled nest packs
its operands (:func:`pack_blis_operands`): A into an M_C x K_C buffer of M_R-row micro-panels
under the K_C and M_C loops, B into a K_C x N_R panel under the N_R loop (K_C x N_C of N_R-column
micro-panels under the K_C loop when N_C is given), both zero-padded to full micro-panels,
allocated once per call; C is not packed.

``alpha``/``beta`` attributes of ``hop.matmul`` (C = alpha*A*B + beta*C) scale the product and
add a ``C *= beta`` nest first (``C = 0`` for beta = 0: C is not read, as in BLAS); values of
1 fold away.  ``hop.conv2d`` becomes the 7-d nest
``O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]``.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional

import islpy as isl

from ..affine.affine_expr import AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.dialects.arith import FLOAT_BINARY, INT_BINARY, ConstantOp
from ..affine.dialects.hop import MIXED_TYPES, HopMatmulOp
from ..affine.dialects.linalg import build_cast
from ..affine.dialects.linalg import BatchMatmulOp, LinalgMatmulOp, LinalgStructuredOp
from ..affine.dialects.linalg_softmax import SoftmaxOp
from ..affine.diagnostics import ScheduleError
from ..affine.ir import Operation, Value
from ..affine.types import FloatType
from .blis_schedule import (BlisParams, MachineModel, MicroKernelChoice, default_blis_params,
                            microkernel_params, row_bytes)
from .blis_parallel import MIN_THREADED_PRODUCT
from .contraction import (STAND_IN_ATTR, STAND_IN_USER_TILES_ATTR, STAND_IN_WINDOW_RUN_ATTR,
                          Contraction, contraction_of_op, to_matrix_form)
from ..affine.runtime_checks import guard_sizes
from .nest_building import extent_loops, memref_size, mul_add
from .parallelize import to_affine_parallel

# (loc, message) sink for remarks such as the chosen tile sizes
RemarkSink = Optional[Callable[[object, str], None]]


def expand_matmul(x) -> list[AffineForOp]:
    """The naive nest of a matmul: ``x`` is a ``hop.matmul``/``linalg.matmul`` (replaced by
    the nest) or a :class:`~polyopt.schedules.contraction.Contraction` in matrix form (the
    nest is built in front of its anchor).  Returns the loops of the product nest (the
    ``C *= beta`` nest, when present, comes before it)."""
    if isinstance(x, Operation):
        loops = expand_matmul(contraction_of_op(x))
        x.erase()
        return loops
    con: Contraction = x
    a, bmat, c = con.operands
    loc = con.loc
    alpha, beta = con.alpha, con.beta
    b = Builder.before(con.anchor)
    m, n, k = _extents(b, con)
    etype = c.type.element_type
    is_float = isinstance(etype, FloatType)
    mul = FLOAT_BINARY["mulf"] if is_float else INT_BINARY["muli"]
    if beta is not None and not _is_one(beta):
        loops, body = extent_loops(b, (m, n), loc)
        i, j = (l.induction_var for l in loops)
        beta_v = _scalar(body, beta, etype, loc)
        scaled = beta_v  # beta = 0: C is overwritten, not read (BLAS: NaNs in C do not survive)
        if not _is_zero(beta):
            cij = body.create(AffineLoadOp, c, [i, j], loc=loc).result
            scaled = body.create(mul, cij, beta_v, loc=loc).result
        body.create(AffineStoreOp, scaled, c, [i, j], loc=loc)
    loops, body = extent_loops(b, (m, n, k), loc)
    i, j, kk = (l.induction_var for l in loops)
    av = body.create(AffineLoadOp, a, [i, kk], loc=loc).result
    bv = body.create(AffineLoadOp, bmat, [kk, j], loc=loc).result
    if con.is_mixed:      # the operands cast to C's type, as linalg.matmul's payload does
        av = build_cast(body, av, etype, con.a_unsigned, loc)
        bv = build_cast(body, bv, etype, con.b_unsigned, loc)
    cv = body.create(AffineLoadOp, c, [i, j], loc=loc).result
    if alpha is not None and not _is_one(alpha):
        alpha_v = _scalar(body, alpha, etype, loc)
        av = body.create(mul, alpha_v, av, loc=loc).result
    body.create(AffineStoreOp, mul_add(body, av, bv, cv, loc), c, [i, j], loc=loc)
    return loops


def _is_one(s) -> bool:
    return isinstance(s, (int, float)) and s == 1


def _is_zero(s) -> bool:
    return isinstance(s, (int, float)) and s == 0


def _scalar(b: Builder, s, etype, loc) -> Value:
    """The alpha/beta scalar ``s``: an SSA value as it is, a number as a constant."""
    if isinstance(s, Value):
        return s
    value = s if isinstance(etype, FloatType) else int(s)
    return b.create(ConstantOp, value, etype, loc=loc).result


def _extents(b: Builder, con: Contraction):
    """(M, N, K) of a matmul: ``int`` when static, else ``memref.dim`` values; with a ``?``,
    the rest of the expansion is built under a run-time check that the operands' sizes agree
    (the returned builder is inside it)."""
    a, bmat, c = con.operands
    if all(v.type.has_static_shape for v in con.operands):
        (m, k), n = a.type.shape, bmat.type.shape[1]
        return m, n, k
    loc = con.loc
    sizes = {(v, axis): memref_size(b, v, axis, loc) for v in (a, bmat, c) for axis in (0, 1)}
    m, k, n = sizes[(a, 0)], sizes[(a, 1)], sizes[(bmat, 1)]
    inner = guard_sizes(b, [(m, sizes[(c, 0)]), (k, sizes[(bmat, 0)]),
                                    (n, sizes[(c, 1)])],
                                f"'{con.kind}' operands have sizes that do not agree at run time "
                                "(A: M x K, B: K x N, C: M x N)", loc)
    b.block, b.index = inner.block, inner.index
    return m, n, k


def matmul_blis_params(x, machine: Optional[MachineModel] = None,
                       threads: int = 1) -> BlisParams:
    """The BLIS parameters of a matmul op or a matrix-form contraction: its tile attributes,
    completed by the model; with ``threads > 1``, the blocks of the parallel loop balanced
    over the threads (:func:`~polyopt.schedules.blis_parallel.balance_for_threads`)."""
    con = contraction_of_op(x) if isinstance(x, Operation) else x
    a, bmat, c = con.operands
    m, k = a.type.shape
    n = bmat.type.shape[1]
    elem_bytes = c.type.element_type.width // 8
    given = dict(con.tile_params)
    params = default_blis_params(m, n, k, elem_bytes, machine, given,
                                 c_row_bytes=row_bytes(c.type))
    if threads <= 1:
        return params
    from .blis_parallel import (balance_for_threads, balance_n_c, gepb_split_problem,
                                split_short_a)
    if params.l2_block == "A" and params.register_form == "row" and \
            not {"l2_block", "M_C", "K_C", "N_C"} & set(given):
        gepb = default_blis_params(m, n, k, elem_bytes, machine, {**given, "l2_block": "B"},
                                   c_row_bytes=row_bytes(c.type))
        split = split_short_a(params, gepb, m, n, k, elem_bytes, machine or MachineModel(),
                              threads, con.tile_params)
        if split is not None:
            return split
    balanced = balance_for_threads(params, m, n, threads, con.tile_params)
    if balanced is None:
        # GEPB's jc loop cannot be split evenly: GEBP's ic loop runs on the threads instead
        # with one thread's register tile and K_C, so that C's elements are summed as on one
        # thread (the same bits); GEBP's own, shorter K_C ran slower too (two Zen 4 threads,
        # f32 256x196x2304: K_C 384 1.35x GEPB's jc split, GEBP's 168 1.13x)
        why = gepb_split_problem(balance_n_c(params, n, threads, con.tile_params) or params,
                                 m, n, threads)
        kept = {"K_C": params.K_C, "M_R": params.M_R, "N_R": params.N_R, "K_U": params.K_U,
                "register_form": params.register_form}
        gebp = default_blis_params(m, n, k, elem_bytes, machine,
                                   {**kept, **given, "l2_block": "A"},
                                   c_row_bytes=row_bytes(c.type))
        balanced = balance_for_threads(gebp, m, n, threads, con.tile_params)
        balanced = replace(balanced, reasons=balanced.reasons + (
            f"l2_block A for {threads} threads, with one thread's {params.M_R}x{params.N_R} "
            f"tile and K_C {params.K_C}: {why}",))
    return balanced


@dataclass(frozen=True)
class RegisterTileSteps:
    """Which register-tile steps to apply after tiling (and packing): ``--hopt-vect``,
    ``--hopt-unroll``, ``--hopt-scalrep`` (see :mod:`polyopt.schedules.register_tile`)."""

    vect: bool = False
    unroll: bool = False
    scalrep: bool = False

    @property
    def any(self) -> bool:
        return self.vect or self.unroll or self.scalrep


#: the BLIS parameters the expansions chose, while :func:`recording_blis_choices` is active
_CHOICES: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("blis_choices",
                                                                          default=None)


@contextlib.contextmanager
def recording_blis_choices() -> Iterator[list]:
    """``with recording_blis_choices() as chosen:`` the :class:`BlisParams` of every BLIS
    schedule built inside, in order (``polyopt opt --emit-script`` writes them down)."""
    chosen: list = []
    token = _CHOICES.set(chosen)
    try:
        yield chosen
    finally:
        _CHOICES.reset(token)


def expand_matmul_tiled(op, machine: Optional[MachineModel] = None,
                        remark: RemarkSink = None, copy: bool = False,
                        steps: RegisterTileSteps = RegisterTileSteps(),
                        microkernel: Optional[MicroKernelChoice] = None,
                        threads: int = 1) -> list[Operation]:
    """Expand a matmul op and apply its BLIS schedule (or its ``schedule`` attribute) through
    ISL; with ``copy``, pack A and B for the BLIS schedule (:func:`pack_blis_operands`; a
    ``schedule`` attribute is not the BLIS schedule: packing is skipped with a remark).
    With ``microkernel`` (``--hopt-blis``), the register tile is the kernel's, the operands are
    packed, and the tile's nest is marked to become a call to the kernel
    (:mod:`polyopt.schedules.microkernel_call`).  With ``threads > 1`` and packing, the nest
    runs on the thread team (:mod:`polyopt.schedules.blis_parallel`).
    ``op`` is a matmul op (replaced) or a matrix-form
    :class:`~polyopt.schedules.contraction.Contraction` (built in front of its anchor).
    Returns the generated top-level ops (with ``copy``, the buffers' allocations, the nest and
    the deallocations)."""
    from .apply import apply_schedule
    if isinstance(op, Operation):
        con = contraction_of_op(op)
        new_ops = expand_matmul_tiled(con, machine, remark, copy=copy, steps=steps,
                                      microkernel=microkernel, threads=threads)
        op.erase()
        return new_ops
    con: Contraction = op
    schedule = con.schedule
    loc = con.loc
    operands = con.operands
    a, bmat = operands[0], operands[1]
    params = None
    if microkernel is not None:
        return _expand_for_microkernel(con, machine, remark, microkernel, steps, threads)
    if schedule is None and steps.vect and not con.tile_params:
        # a vector operand: BLAS level 2 instead of a packed GEMM
        from .gemv import dot_streams_past, expand_gemv
        model = machine or MachineModel()
        new_ops = expand_gemv(con, model.stream_lanes, remark, threads,
                              dot_streams_past(model))
        if new_ops is not None:
            return new_ops
    if schedule is None:
        # (on a team too when the product is too small to split)
        unsplit = threads <= 1 or con.has_static_shape and \
            con.m * con.n * con.k <= MIN_THREADED_PRODUCT
        params = _unpacked_small_params(con, machine) if copy and steps.vect and \
            steps.unroll and unsplit else None
        if params is not None:
            copy = False
        if threads > 1 and unsplit and (params is not None or copy and not con.tile_params):
            # (given tile parameters keep the team: a schedule experiment)
            if remark is not None:
                remark(loc, f"{con.kind}: {con.m}x{con.n}x{con.k} is too little work for "
                            f"{threads} threads (at most {MIN_THREADED_PRODUCT} multiply-adds): "
                            f"one thread{', unpacked' if params is not None else ''}")
            threads = 1
        if params is None:
            params = matmul_blis_params(con, machine, threads if copy else 1)
            if copy and steps.vect and steps.unroll and threads <= 1:
                params = _gepb_reading_a_in_place(con, params, machine) or params
        schedule = params.schedule()
        if _CHOICES.get() is not None:
            _CHOICES.get().append(params)
        if remark is not None:
            why = "; ".join(params.reasons)
            remark(loc, f"{con.kind}: BLIS schedule {schedule} with {params.describe()}"
                        + (f"; why: {why}" if why else ""))
    elif remark is not None:
        remark(loc, f"{con.kind}: schedule {schedule} (from the op's 'schedule' attribute)")
        if copy:
            remark(loc, f"{con.kind}: packing (--hopt-copy) skipped: it applies to the BLIS "
                        f"schedule (tile attributes or defaults), not to a 'schedule' attribute")
    in_place = None
    if copy and steps.vect and steps.unroll and params is not None:
        in_place = _a_in_place(con, params)
    if in_place is not None:
        if remark is not None:
            remark(loc, _in_place_remark(con, params, in_place))
        params = in_place
    loops = expand_matmul(con)
    new_ops = apply_schedule(loops[0], {"S0": schedule}, check=True)
    if params is not None and steps.any:
        new_ops = _with_register_tile(new_ops, operands, params, machine, remark, loc, copy,
                                      steps, con.kind, threads,
                                      a_in_place=in_place is not None)
        return new_ops
    if not copy or params is None:
        return new_ops
    from ..memref_layout.data_copy import alias_root
    if len({id(alias_root(v)) for v in operands}) != 3:
        if remark is not None:
            remark(loc, f"{con.kind}: packing skipped: the operands share memory")
        return new_ops
    nests = [o for o in new_ops if isinstance(o, AffineForOp)]
    if len(nests) != 1:
        if remark is not None:
            remark(loc, f"{con.kind}: packing skipped: the product has no loop nest to pack")
        return new_ops
    top = nests[0]
    block = top.parent
    before, after = _neighbors(block, new_ops)
    infos = pack_blis_operands(top, a, bmat, params, remark=remark, loc=loc, op_name=con.kind)
    if threads > 1:
        from .blis_parallel import parallelize_blis_nest
        parallelize_blis_nest(_nest_ops(block, before, after), infos, remark, loc, con.kind,
                              params.l2_block, output=operands[2], threads=threads)
    return _nest_ops(block, before, after)


def _plain_operands(con: Contraction) -> bool:
    """A row-major f32/f64 product of static, contiguous, distinct matrices with no tile
    attributes, not a convolution's im2col stand-in (which only packing reads): one whose
    operands the register tile can read where they are."""
    return not con.tile_params and _plain_matrices(con) and not _stand_in(con)


def _plain_matrices(con: Contraction) -> bool:
    """Static, row-major, distinct f32/f64 matrices (A perhaps an im2col stand-in), each
    contiguous, at any offset (a batch's slices are views of this kind)."""
    from ..memref_layout.data_copy import alias_root
    operands = con.operands
    return con.is_matrix_form and con.has_static_shape and \
        str(con.element_type) in ("f32", "f64") and \
        all(_contiguous_rows(v.type) for v in operands) and \
        len({id(alias_root(v)) for v in operands}) == 3


def _contiguous_rows(t) -> bool:
    """A row-major memref of static shape whose rows follow one another (no padding between
    them), at a static or dynamic offset."""
    from ..memref_layout.layout import row_major_strides, strided_form
    if t.layout is None:
        return True
    form = strided_form(t)
    return form is not None and None not in t.shape and \
        tuple(form[0]) == tuple(row_major_strides(t.shape))


def _unpacked_small_params(con: Contraction, machine) -> Optional[BlisParams]:
    """The parameters of a small product better left unpacked
    (:func:`~polyopt.schedules.blis_schedule.unpacked_params`), for :func:`_plain_operands`."""
    from .blis_schedule import unpacked_params
    if not _plain_operands(con):
        return None
    return unpacked_params(con.m, con.n, con.k, con.element_type.width // 8, machine,
                           c_row_bytes=row_bytes(con.operands[2].type))


#: A convolution's im2col is read in place only where each micro-panel of it would serve at
#: most this many register tiles (N / N_R): the window is read again for each.  Two Zen 4
#: threads, same process, over packing: conv3_x (two tiles) 1.018x, conv3_1 3x3/2 1.026x,
#: conv4_x (four) 0.947x.
IN_PLACE_WINDOW_TILES = 2


def _a_in_place(con: Contraction, params: BlisParams) -> Optional[BlisParams]:
    """The parameters to run ``con`` with A read where it is, or None to pack it: GEPB in the
    row form with all of N in one block of B, M and K in whole tiles (M_R divides M, K_C
    divides K or K is one block; N's edge runs over B's padded panel).  A's micro-panels
    would each serve N / N_R tiles only, and the tile reads A's rows in place at no cost over
    the packed panel (the ``?x?`` function does so at run time).  Zen 4, one thread, f32
    2048x64x1024: 90 GFLOPS packing A, 106 reading it in place.  On a team the loop over M_C
    blocks runs on the threads (:func:`~polyopt.schedules.blis_parallel.parallelize_blis_nest`);
    two Zen 4 threads, same process, over packing A: f32 2048x64x1024 1.09x, 3136x64x576
    1.11x, 784x128x1152 1.05x, 2048x32x2048 1.25x; f64 3136x64x576 1.14x, 2048x32x2048 1.33x.

    A convolution's im2col (the stand-in) is read in place too, through the input's windows,
    where K_U divides the window rows' runs of consecutive input elements (the stem's 7 x 3,
    a 3x3's 3 x C), so that the K_U steps of an unrolled k iteration are one run: one
    division of k per iteration, the others constant offsets; and where N is at most
    :data:`IN_PLACE_WINDOW_TILES` register tiles wide.  K_U is lowered to a divisor
    of the run when it is not one (the stem's 21: 3).  Zen 4, one thread, same process,
    over packing im2col: the stem 1.058x (K_U 4, its steps crossing runs: 0.95x; K_U 7,
    28 broadcasts: 0.89x), conv2_x 3x3 1.058x (98.6% of the peak)."""
    if params.l2_block != "B" or params.N_C is None or params.register_form != "row":
        return None
    if _stand_in(con):
        if not _conv_operands(con) or -(-con.n // params.N_R) > IN_PLACE_WINDOW_TILES:
            return None
        params = _k_u_within_runs(params, _window_run(con), min(params.K_C, con.k))
        if params is None:
            return None
    elif not _plain_operands(con):
        return None
    m, n, k = con.m, con.n, con.k
    whole = params.N_C >= n and m % params.M_R == 0 and (k <= params.K_C or k % params.K_C == 0)
    return params if whole else None


def _gepb_reading_a_in_place(con: Contraction, params: BlisParams, machine
                             ) -> Optional[BlisParams]:
    """GEPB's parameters for a product the model gave GEBP on a tie -- K is the same number
    of K_C blocks in either order, so neither makes fewer passes over C -- where GEPB lets
    the tile read A's rows where they are (:func:`_a_in_place`): no copy of A at all, B's
    block packed once.  None when GEBP stays (GEPB's stream of B from L2 too fast for it, a
    short A, more K_C blocks, A's rows not readable in place).  Batch slices of 128^3 f32
    (``linalg.batch_matmul``, 64 of them), Emerald Rapids, one thread, same process,
    alternating, over packing A and B in GEBP's order: 1.035x-1.06x with the operands from
    L3, 1.05x-1.08x from L2; 16 x 256^3 1.03x, 16 x 128x256x64 1.01x; single products
    128^3 1.02x, 256x128x256 1.03x.  (16 x 96^3 ran 1.04x so, but slices that small take the
    unpacked path first: 1.22x.)"""
    from .blis_schedule import gepb_stream_fits, short_a
    if params.l2_block != "A" or params.register_form != "row" or not _plain_operands(con):
        return None
    m, n, k = con.m, con.n, con.k
    elem_bytes = con.element_type.width // 8
    machine = machine or MachineModel()
    gepb = default_blis_params(m, n, k, elem_bytes, machine, {"l2_block": "B"},
                               c_row_bytes=row_bytes(con.operands[2].type))
    if gepb.register_form != "row" or -(-k // gepb.K_C) > -(-k // params.K_C) or \
            not gepb_stream_fits(machine, gepb.M_R) or \
            short_a(m, n, k, elem_bytes, machine, gepb.M_R) or _a_in_place(con, gepb) is None:
        return None
    why = (f"l2_block B (GEPB: B's K_C x N_C block in L2, A's M_R x K_C micro-panel in L1): "
           f"K = {k} is {-(-k // params.K_C)} K_C block(s) in either order, and GEPB reads "
           f"A's rows in place (no copy of A)")
    reasons = tuple(why if r.startswith("l2_block B (given)") else r for r in gepb.reasons)
    return replace(gepb, reasons=reasons)


def _in_place_remark(con: Contraction, params: BlisParams, in_place: BlisParams) -> str:
    what = "A's rows in place"
    if _stand_in(con):
        what = "the input's windows (im2col) where they are"
        if in_place.K_U != params.K_U:
            what += (f", k unrolled by {in_place.K_U} (a divisor of the window rows' "
                     f"{_window_run(con)} consecutive elements)")
    return (f"{con.kind}: A not packed: all of N ({con.n}) is one block of B, so each of A's "
            f"micro-panels would serve {-(-con.n // params.N_R)} tile(s); the tile reads {what}")


def _stand_in(con: Contraction) -> bool:
    alloc = con.operands[0].defining_op
    return alloc is not None and STAND_IN_ATTR in alloc.attributes


def _window_run(con: Contraction) -> int:
    attr = con.operands[0].defining_op.attributes.get(STAND_IN_WINDOW_RUN_ATTR)
    return attr.value if attr is not None else 1


def _conv_operands(con: Contraction) -> bool:
    """:func:`_plain_operands` for a convolution's implicit GEMM: its tile parameters are the
    convolution model's own (given ones keep the packing), and the stand-in A is read
    through the input's windows."""
    return _plain_matrices(con) and \
        STAND_IN_USER_TILES_ATTR not in con.operands[0].defining_op.attributes


def _k_u_within_runs(params: BlisParams, run: int, k_c: int) -> Optional[BlisParams]:
    """``params`` with K_U, at most the model's, dividing ``run`` and the K_C block ``k_c``;
    None when only 1 would."""
    k_u = next((u for u in range(params.K_U, 1, -1) if run % u == 0 and k_c % u == 0), None)
    if k_u is None:
        return None
    if k_u == params.K_U:
        return params
    return replace(params, K_U=k_u, reasons=tuple(params.reasons) + (
        f"K_U {k_u}: divides the window rows' runs of {run} consecutive input elements, "
        f"which the tile reads in place",))


def _expand_for_microkernel(con: Contraction, machine, remark, kernel: MicroKernelChoice,
                            steps, threads: int = 1):
    """``--hopt-blis``: BLIS tiling with the kernel's M_R x N_R, packing, and the register
    tile marked for :func:`~polyopt.schedules.microkernel_call.map_to_microkernels`."""
    from ..memref_layout.data_copy import alias_root
    from .apply import apply_schedule
    from .microkernel_call import mark_register_tile
    from .register_tile import find_register_tile
    loc = con.loc
    if con.schedule is not None:
        raise ScheduleError(f"'{con.kind}' op: --hopt-blis needs the BLIS schedule (tile "
                            f"attributes), not a 'schedule' attribute", loc)
    given = dict(con.tile_params)
    for name, want in (("M_R", kernel.m_r), ("N_R", kernel.n_r)):
        if name in given and given[name] != want:
            raise ScheduleError(f"'{con.kind}' op: {name} = {given[name]} conflicts with the "
                                f"micro-kernel {kernel.symbol} ({kernel.m_r}x{kernel.n_r} "
                                f"tile of C); drop {name} or --hopt-blis", loc)
    for name, size, what in (("M_C", kernel.m_r, "M_R"), ("N_C", kernel.n_r, "N_R")):
        if name in given and given[name] % size:
            raise ScheduleError(f"'{con.kind}' op: {name} = {given[name]} is not a multiple of "
                                f"the micro-kernel {kernel.symbol}'s {what} = {size}", loc)
    given.update(M_R=kernel.m_r, N_R=kernel.n_r)
    m, k = con.a.memref.type.shape
    n = con.b.memref.type.shape[1]
    elem_bytes = con.element_type.width // 8
    params = microkernel_params(m, n, k, elem_bytes, machine, given, kernel)
    if threads > 1:
        from .blis_parallel import balance_for_threads
        # the library kernel's loop order is the one it was written for (microkernel_params),
        # kept however its columns split (not measured otherwise)
        balanced = balance_for_threads(params, m, n, threads, con.tile_params,
                                       lopsided_to_rows=False)
        if balanced is None:
            params = default_blis_params(m, n, k, elem_bytes, machine,
                                         {**given, "l2_block": "A"})
            balanced = balance_for_threads(params, m, n, threads, con.tile_params)
        params = balanced
    if _CHOICES.get() is not None:
        _CHOICES.get().append(params)
    if remark is not None:
        remark(loc, f"{con.kind}: BLIS schedule {params.schedule()} with {params.describe()}, "
                    f"register tile = micro-kernel {kernel.symbol}")
        if steps.any:
            remark(loc, f"{con.kind}: --hopt-vect/--hopt-unroll/--hopt-scalrep do nothing with "
                        f"--hopt-blis: the micro-kernel is the register tile")
    a, bmat, c = con.operands
    if len({id(alias_root(v)) for v in con.operands}) != 3:
        raise ScheduleError(f"'{con.kind}' op: --hopt-blis packs A and B, which it cannot do "
                            f"when A, B and C share memory", loc)
    if min(m, n, k) == 1:
        # code generation promotes a loop of one iteration away: there is no M_R x N_R x K_C
        # nest to map, and a matrix-vector product gains nothing from the kernel anyway
        if remark is not None:
            remark(loc, f"{con.kind}: --hopt-blis: {m}x{n}x{k} has a dimension of 1; "
                        f"generated code instead of the micro-kernel")
        return expand_matmul_tiled(con, machine, remark, copy=True, steps=steps,
                                   threads=threads)
    loops = expand_matmul(con)
    # the kernel writes C's tiles through strides: its accesses must be in bounds (packing
    # checks A's and B's)
    from .bounds_check import check_bounds
    check_bounds(loops[0], memrefs=[c])
    new_ops = apply_schedule(loops[0], {"S0": params.schedule()}, check=True)
    nests = [o for o in new_ops if isinstance(o, AffineForOp)]
    if len(nests) != 1:
        raise ScheduleError(f"'{con.kind}' op: --hopt-blis: the tiled product is not one loop "
                            f"nest", loc)
    top = nests[0]
    block = top.parent
    before, after = _neighbors(block, new_ops)
    infos = pack_blis_operands(top, a, bmat, params, remark=remark, loc=loc, op_name=con.kind)
    if not infos:
        raise ScheduleError(f"'{con.kind}' op: --hopt-blis: the tiled nest could not be packed",
                            loc)
    found = find_register_tile(top, c)
    if found is None:
        raise ScheduleError(f"'{con.kind}' op: --hopt-blis: no M_R x N_R x K_C register-tile "
                            f"nest to map to the micro-kernel", loc)
    mark_register_tile(found[0], kernel.symbol, kernel.m_r, kernel.n_r)
    if threads > 1:
        from .blis_parallel import parallelize_blis_nest
        parallelize_blis_nest(_nest_ops(block, before, after), infos, remark, loc, con.kind,
                              params.l2_block, output=c, threads=threads)
    return _nest_ops(block, before, after)


def _with_register_tile(new_ops, operands, params, machine, remark, loc, copy, steps,
                        kind: str = "hop.matmul", threads: int = 1, a_in_place: bool = False):
    """Pack (when ``copy``; B only with ``a_in_place``) then optimize the register tile;
    returns the new top-level ops."""
    from .register_tile import optimize_register_tile
    a, bmat, c = operands
    nests = [o for o in new_ops if isinstance(o, AffineForOp)]
    if len(nests) != 1:
        return new_ops
    top = nests[0]
    block = top.parent
    before, after = _neighbors(block, new_ops)
    packed = False
    infos: list = []
    if copy:
        from ..memref_layout.data_copy import alias_root
        if len({id(alias_root(v)) for v in operands}) == 3:
            infos = pack_blis_operands(top, a, bmat, params, remark=remark, loc=loc,
                                       op_name=kind, pack_a=not a_in_place)
            # (with A in place M and K are whole tiles: only N's edge runs over padding, B's)
            packed = True
    machine = machine or MachineModel()
    elem_bits = c.type.element_type.width
    m, k = a.type.shape
    n = bmat.type.shape[1]
    if min(params.M_R, m) == 1 or min(params.N_R, n) == 1 or min(params.K_C, k) == 1:
        # ISL promoted a register-tile loop that runs once: there is no tile to unroll
        if remark is not None:
            remark(loc, "register tile of extent 1: --hopt-unroll/--hopt-vect/--hopt-scalrep "
                        "skipped")
        return _nest_ops(block, before, after)
    # the packed panels' k extent is K_C, or K when the whole k range is one tile
    optimize_register_tile(top, c, m_r=params.M_R, n_r=params.N_R,
                           k_c=min(params.K_C, a.type.shape[1]),
                           k_u=params.K_U,
                           vect=steps.vect, unroll=steps.unroll, scalrep=steps.scalrep,
                           packed=packed, width=max(1, machine.vector_bits // elem_bits),
                           remark=remark, loc=loc, form=params.register_form)
    if threads > 1 and packed:
        from .blis_parallel import parallelize_blis_nest
        parallelize_blis_nest(_nest_ops(block, before, after), infos, remark, loc, kind,
                              params.l2_block, output=c, threads=threads)
    return _nest_ops(block, before, after)


def _neighbors(block, new_ops) -> tuple:
    """The ops just before and just after ``new_ops`` in ``block`` (None at the ends): they
    delimit the nest however passes rewrite it."""
    first = block.index_of(new_ops[0])
    before = block.ops[first - 1] if first else None
    after_index = block.index_of(new_ops[-1]) + 1
    after = block.ops[after_index] if after_index < len(block.ops) else None
    return before, after


def _nest_ops(block, before, after) -> list:
    """The ops of ``block`` strictly between ``before`` and ``after`` (None: the ends)."""
    start = block.index_of(before) + 1 if before is not None else 0
    end = block.index_of(after) if after is not None else len(block.ops)
    return list(block.ops[start:end])


def _perfect_chain(top: AffineForOp) -> list[AffineForOp]:
    chain = [top]
    while True:
        body = [o for o in chain[-1].body.ops if o.name != "affine.yield"]
        if len(body) != 1 or not isinstance(body[0], AffineForOp):
            return chain
        chain.append(body[0])


def blis_copy_depths(top: AffineForOp, a: Value, bmat: Value, params: BlisParams
                     ) -> Optional[tuple[int, int]]:
    """(depth of A's copy, depth of B's copy) in the BLIS-tiled nest rooted at ``top``: the
    number of leading loops of the nest that fix the tiles the panel depends on (A: the N_C,
    K_C and M_C tiles; B: the N_C and K_C tiles, and the N_R tile without N_C).

    Loops of one iteration are promoted away by code generation (e.g. the K_C loop when
    K <= K_C), so depths are not fixed: they are found with ISL by asking, for each tile
    coordinate of the schedule (``k floordiv K_C``...), how many outer loops determine it.
    ``None`` when the nest is not the single-statement product nest."""
    from .model import extract
    chain = _perfect_chain(top)
    model = extract([top])
    if len(model.statements) != 1:
        return None
    stmt = model.statements[0]
    if len(stmt.loops) != len(chain):
        return None
    loads = [x for x in stmt.accesses if not x.is_write]
    if len(loads) < 2 or loads[0].op.memref is not a or loads[1].op.memref is not bmat:
        return None
    n = len(chain)
    rel = loads[0].relation.flat_range_product(loads[1].relation)   # S[l] -> [i, k, k', j]
    rel = rel.reset_tuple_id(isl.dim_type.out)
    space = model.param_space()
    coords = {"K_C": f"floor(k / {params.K_C})", "M_C": f"floor(i / {params.M_C})",
              "N_R": f"floor(j / {params.N_R})"}
    if params.N_C is not None:
        coords["N_C"] = f"floor(j / {params.N_C})"
    levels = {}
    for key, text in coords.items():
        sigma = isl.Map(f"{space}{{ [i, k, k2, j] -> [{text}] }}")
        t = rel.apply_range(sigma)
        for d in range(n + 1):
            if t.project_out(isl.dim_type.in_, d, n - d).is_single_valued():
                levels[key] = d
                break
    if params.l2_block == "B":
        depth_a = max(levels["K_C"], levels["M_C"])
        depth_b = max(levels["K_C"], levels.get("N_C", 0))
        return depth_a, depth_b
    outer = ["N_C"] if params.N_C is not None else []
    depth_a = max(levels[k] for k in outer + ["K_C", "M_C"])
    depth_b = max(levels[k] for k in outer + (["K_C"] if params.N_C is not None
                                               else ["K_C", "N_R"]))
    return depth_a, depth_b


#: Rows of B ahead that the copy of a block of B narrower than B's rows prefetches
#: (:func:`~polyopt.schedules.packing_loops.prefetch_panel_rows`; Zen 4, f32 64x3136x576, same
#: run: 4 rows ahead +2.8%, 8 rows +4.1%, 16 rows +1.9%).
B_ROWS_AHEAD = 8
#: Where B's packing is a visible share of the time: its block feeds at most this many rows of
#: A (M_C).  Zen 4, one thread, same runs, with the prefetch / without: 64x3136x576 f32
#: 1.035-1.054x, 64x2048x2048 f32 and f64 1.035x, 1.032x; 128 to 512 rows 0.99x-1.01x (the copy
#: is 1/(2 M_C) of the work per element of B).
B_PREFETCH_MAX_M_C = 64


def _prefetch_b_rows(bmat: Value, params: BlisParams) -> bool:
    """Whether B's copy prefetches rows ahead: its block is narrower than B's rows, the rows
    are at least a page apart (so every row of the block starts a new stream for the hardware
    prefetchers) and few rows of A use the block (:data:`B_PREFETCH_MAX_M_C`)."""
    from .blis_schedule import row_bytes
    stride = row_bytes(bmat.type)
    elem = bmat.type.element_type.width // 8
    return (stride is not None and stride >= 4096 and params.N_C is not None
            and params.N_C * elem < stride and params.M_C <= B_PREFETCH_MAX_M_C)


def pack_blis_operands(top: AffineForOp, a: Value, bmat: Value, params: BlisParams, *,
                       remark: RemarkSink = None, loc=None, op_name: str = "hop.matmul",
                       pack_a: bool = True) -> list:
    """Pack A and B of the BLIS-tiled product nest ``top`` (paper section 2.6) with
    :func:`polyopt.memref_layout.data_copy.generate_copy`; returns the two ``CopyInfo``s
    (empty when the nest is not the one :func:`expand_matmul_tiled` generates).

    * A: under the K_C and M_C loops (and N_C), an M_C x K_C buffer in M_R-row micro-panels,
      ``memref<M_C x K_C x T, (d0, d1) -> (d0 floordiv M_R, d1, d0 mod M_R)>``, rows padded
      with zeros to a multiple of M_R;
    * B: under the N_R loop, a K_C x N_R buffer ``memref<K_C x N_R x T>``; with N_C, under the
      K_C loop inside the N_C loop, a K_C x N_C buffer in N_R-column micro-panels
      ``(d0, d1) -> (d1 floordiv N_R, d0, d1 mod N_R)``; columns padded to a multiple of N_R.

    Buffers smaller than the tiles are used when the matrices are (the region's extent).
    Both are allocated once, before the nest.  Without ``pack_a`` only B is packed (the
    first ``CopyInfo`` is then None).
    """
    from ..memref_layout.data_copy import generate_copy
    depths = blis_copy_depths(top, a, bmat, params)
    if depths is None:
        if remark is not None:
            remark(loc, f"{op_name}: packing skipped: the tiled nest is not a single "
                        f"perfect product nest")
        return []
    depth_a, depth_b = depths
    d0, d1 = dim(0), dim(1)
    layout_a = AffineMap.get(2, 0, (d0.floordiv(params.M_R), d1, d0 % params.M_R)) \
        if params.M_R > 1 else None
    layout_b = None
    if params.N_C is not None and params.N_R > 1:
        layout_b = AffineMap.get(2, 0, (d1.floordiv(params.N_R), d0, d1 % params.N_R))
    info_a = generate_copy(top, a, depth=depth_a, buffer_layout=layout_a,
                           pad_to=(params.M_R, 1)) if pack_a else None
    info_b = generate_copy(top, bmat, depth=depth_b, buffer_layout=layout_b,
                           pad_to=(1, params.N_R))
    elem_bytes = a.type.element_type.width // 8
    stand_in = a.defining_op is not None and STAND_IN_ATTR in a.defining_op.attributes
    if pack_a and 1 < params.M_R and params.M_R * elem_bytes < 64 and not stand_in:
        # micro-panel rows narrower than a cache line: copy a whole micro-panel row per k
        # (measured on SGEMM 1000^3: 0.93x -> 0.97x; DGEMM with 4-row (32-byte) rows, same
        # run: 2088 +1.3-1.4%, 1000^3 +2.8%; with 64-byte rows the plain copy is 3% faster)
        from .packing_loops import panelize_rows
        for nest in list(info_a.copy_in):
            if isinstance(nest, AffineForOp):
                main = panelize_rows(nest, params.M_R)
                if main is not None:    # packing nests both: on threads, the team runs them
                    info_a.copy_in.insert(info_a.copy_in.index(nest), main)
    if layout_b is not None:
        # B's rows go to N_R-wide micro-panels: copy them one panel row at a time
        from .packing_loops import panelize_columns, prefetch_panel_rows
        ahead = B_ROWS_AHEAD if _prefetch_b_rows(bmat, params) else 0
        for nest in info_b.copy_in:
            if isinstance(nest, AffineForOp):
                for loop in [op for op in nest.walk() if isinstance(op, AffineForOp)]:
                    if panelize_columns(loop, params.N_R) and ahead:
                        prefetch_panel_rows(loop, ahead)
    if remark is not None:
        for what, info, depth in (("A", info_a, depth_a), ("B", info_b, depth_b)):
            if info is not None and info.buffer_type is not None:
                remark(loc, f"{op_name}: packed {what} into {info.buffer_type} at loop depth "
                            f"{depth}")
    return [info_a, info_b]


def expand_contraction(con: Contraction, *, tiled: bool = True,
                       machine: Optional[MachineModel] = None, remark: RemarkSink = None,
                       copy: bool = False, steps: RegisterTileSteps = RegisterTileSteps(),
                       microkernel_for: Optional[Callable] = None, threads: int = 1,
                       tiles: Optional[dict] = None) -> None:
    """The one entry of the BLIS pipeline: build the nest of ``con``, whatever produced it
    (a ``hop.matmul``, a linalg op, a convolution's implicit GEMM, a raised nest), in front of
    its anchor; the caller erases what it replaces.

    The batch loops and the operand views of :func:`~polyopt.schedules.contraction.
    to_matrix_form` come first; then, with ``tiled``, the BLIS schedule through ISL
    (:func:`expand_matmul_tiled`: packing with ``copy``, the register-tile ``steps``, the
    micro-kernel ``microkernel_for(element type, loc)`` chooses), else the naive nest.  A
    contraction over ``?`` sizes in matrix form runs the one GEMM for every size
    (:mod:`polyopt.schedules.dynamic_gemm`) under ``tiled`` with packing and vectors, else the
    naive nest, with a remark under ``tiled``; both under a run-time check that the sizes
    agree.  ``tiles`` (the pass's ``mc=`` ... options, by attribute name) are the BLIS
    parameters of a static f32/f64 product where it carries none of its own."""
    if tiles and tiled and con.has_static_shape and not con.is_mixed:
        con = replace(con, tile_params={**tiles, **con.tile_params})
    if con.has_static_shape and 0 in (con.m, con.n, con.k, *con.batch):
        # nothing to tile: the nest (its C *= beta, if any) as written
        if tiled and remark is not None:
            remark(con.loc, f"{con.kind}: {con.m}x{con.n}x{con.k} has an empty dimension: "
                            f"the naive nest, no BLIS tiling")
        expand_matmul(to_matrix_form(con))
        return
    if con.is_mixed:
        _expand_mixed(con, tiled, copy and steps.vect, machine, remark, threads)
        return
    if not con.has_static_shape:
        if tiled and copy and steps.vect and microkernel_for is None and con.is_matrix_form \
                and con.schedule is None and not con.tile_params:
            from .dynamic_gemm import expand_dynamic_gemm
            if expand_dynamic_gemm(con, machine, remark, threads) is not None:
                return
        if tiled and remark is not None:
            remark(con.loc, f"{con.kind} with '?' operands runs as a naive nest: the one "
                            "GEMM for every size needs --hopt-copy and --hopt-vect, no tile "
                            "attributes or schedule, f32 or f64 row-major matrices (no batch, "
                            "no transposed or strided subscripts) that do not share memory, "
                            "and the op in the function's body")
        expand_matmul(con)
        return
    mcon = to_matrix_form(con)
    if con.batch and not mcon.batch and remark is not None and mcon.anchor is con.anchor:
        remark(con.loc, f"{con.kind}: B is shared by the batch: one product of "
                        f"{mcon.m} = {con.batch[0]} x {con.m} rows, B packed once")
    batch_loop = _batch_on_threads(con, mcon, tiled, threads, remark)
    if batch_loop is not None:
        threads = 1
    if not tiled:
        expand_matmul(mcon)
        return
    kernel = None
    if microkernel_for is not None:
        kernel = microkernel_for(str(con.element_type), con.loc)
        if con.batch:
            if remark is not None:
                remark(con.loc, f"{con.kind}: --hopt-blis: C is a batch slice (a view with a "
                                f"dynamic offset); generated register tile instead of the "
                                f"micro-kernel")
            kernel = None
    epilogue = _epilogue_to_fuse(con, mcon, copy, steps, remark) if kernel is None else None
    fill = None
    if kernel is None and not mcon.batch:
        from .zero_init import zero_fill_before
        fill = zero_fill_before(mcon)
    new_ops = expand_matmul_tiled(mcon, machine, remark,
                                  copy=copy or microkernel_for is not None, steps=steps,
                                  microkernel=kernel, threads=threads)
    if fill is not None:
        _take_fill(new_ops, mcon, fill, remark)
    if epilogue is not None:
        _fuse_epilogue(new_ops, mcon, epilogue, remark)
    if batch_loop is not None:
        _parallel_batch(batch_loop)


def _epilogue_to_fuse(con: Contraction, mcon: Contraction, copy: bool,
                      steps: RegisterTileSteps, remark: RemarkSink):
    """The elementwise nest after a static f32/f64 product (:func:`~polyopt.schedules.
    epilogue.epilogue_of`) when the register tile will keep C's tile in registers through
    each K block (packing, unroll-and-jam, scalar replacement), or None."""
    from .epilogue import epilogue_of, memrefs_read_by
    from .conv_gemm import _collapse_to_matrix
    if not (copy and steps.unroll and steps.scalrep) or mcon.batch or \
            con.schedule is not None:
        return None
    return epilogue_of(con.anchor, mcon.c.memref, mcon.m, mcon.n,
                       reads=memrefs_read_by(mcon), remark=remark,
                       loc=con.loc, collapse=lambda v: _collapse_to_matrix(
                           Builder.before(con.anchor), v, con.loc))


def _fuse_epilogue(new_ops: list, mcon: Contraction, epilogue, remark: RemarkSink) -> None:
    """:func:`~polyopt.schedules.tile_epilogue.fuse_epilogue_into_stores`, with a remark
    either way."""
    from .tile_epilogue import fuse_epilogue_into_stores
    why = fuse_epilogue_into_stores(new_ops, mcon.c.memref, epilogue, mcon.loc)
    if remark is None:
        return
    where = epilogue.nest.loc or mcon.loc
    if why is None:
        remark(where, f"fused into {mcon.kind}'s register tile after its last K block: the "
                      f"epilogue over C ({epilogue.describe()}){epilogue.lane_by_lane()}")
    else:
        remark(where, f"the epilogue over C after {mcon.kind} stays a nest of its own: {why}")


def _take_fill(new_ops: list, mcon: Contraction, fill, remark: RemarkSink) -> None:
    """:func:`~polyopt.schedules.zero_init.take_fill_into_reads`: the zero fill of C before
    the product goes where the nest's first K block can read zeros instead; a remark either
    way."""
    from .zero_init import take_fill_into_reads
    why = take_fill_into_reads(new_ops, mcon.c.memref)
    where = fill.loc or mcon.loc
    if why is None:
        fill.erase()
    if remark is None:
        return
    if why is None:
        remark(where, f"the zero fill of C taken into {mcon.kind}: its first K block adds its "
                      f"products to zeros instead of reading C")
    else:
        remark(where, f"the zero fill of C before {mcon.kind} stays: {why}")


def _parallel_batch(loop: AffineForOp) -> None:
    """``loop`` (the batch loop, its nest built for one thread) as ``affine.parallel``, with
    the buffers the nest allocated in front of it (the packed panels, reused from one matrix
    to the next, and the nests that zero their padding once) moved into its body: one set per
    thread."""
    from ..affine.dialects.memref import AllocOp, DeallocOp
    from ..affine.types import MemRefType
    block = loop.parent
    before = block.ops[:block.ops.index(loop)]

    def top(op):                  # the op of ``block`` that holds ``op``
        while op.parent is not block:
            op = op.parent_op
        return op

    allocs = [op for op in before if isinstance(op, AllocOp)]
    owned = {id(op.results[0]) for op in allocs}
    moved, frees = [], []
    for alloc in allocs:
        tops = [top(u.op) for u in alloc.results[0].uses]
        if loop not in tops:
            owned.discard(id(alloc.results[0]))
            continue
        for t in tops:
            if isinstance(t, DeallocOp) and block.ops.index(t) > block.ops.index(loop):
                frees.append(t)
            elif t is not loop and t not in moved:
                moved.append(t)
    # an op in front that touches other memrefs (or defines values) would have to stay, and
    # the buffers it fills would be shared by the threads: the batch stays sequential
    for op in moved:
        memrefs = {id(v) for inner in op.walk() for v in inner.operands
                   if isinstance(v.type, MemRefType)}
        if op.results or not memrefs <= owned:
            return
    par = to_affine_parallel(loop)
    first = par.body.ops[0]
    for op in before:             # in their order: the allocs, then what fills them
        if (isinstance(op, AllocOp) and id(op.results[0]) in owned) or op in moved:
            op.move_before(first)
    for free in frees:
        free.move_before(par.body.terminator)


def _batch_on_threads(con: Contraction, mcon: Contraction, tiled: bool, threads: int,
                      remark: RemarkSink) -> Optional[AffineForOp]:
    """On a team, the outermost batch loop :func:`to_matrix_form` built (to make
    ``affine.parallel`` with :func:`_parallel_batch` once the nest inside it is built on one
    thread: each thread its
    matrices; a 128^3 matrix is too little work to split, 64 x 128^3 f32 on 2 threads ran at
    half of one thread's speed), else None.  A B shared by the batch leaves no batch loop
    (the batch is rows of one product, split over the team as any product's are)."""
    if not (tiled and threads > 1 and con.batch and con.batch[0] >= threads) or \
            mcon.anchor is con.anchor or "b0" in con.summed_batch:
        return None
    op = mcon.anchor
    while op is not None and op.parent is not con.anchor.parent:
        op = op.parent_op
    if not isinstance(op, AffineForOp):
        return None
    if remark is not None:
        remark(con.loc, f"{con.kind}: the batch loop is affine.parallel, one matrix per thread "
                        f"at a time")
    return op


def _expand_mixed(con: Contraction, tiled: bool, vectors: bool, machine,
                  remark: RemarkSink, threads: int = 1) -> None:
    """A contraction with A and B narrower than C (:mod:`polyopt.schedules.lowp_gemm`): under
    ``tiled`` with packing and ``vectors``, the GEMM on the CPU's dot-product engine;
    otherwise the naive nest with the operands cast (a remark under ``tiled`` says why)."""
    from .lowp_gemm import expand_lowp_gemm
    batch_loop = None
    if con.has_static_shape:
        mcon = to_matrix_form(con)
        if con.batch and not mcon.batch and remark is not None and mcon.anchor is con.anchor:
            remark(con.loc, f"{con.kind}: B is shared by the batch: one product of "
                            f"{mcon.m} = {con.batch[0]} x {con.m} rows, B packed once")
        if vectors:
            batch_loop = _batch_on_threads(con, mcon, tiled, threads, remark)
        con = mcon
    if tiled and vectors and con.is_matrix_form and not con.batch and con.has_static_shape:
        # a vector operand: BLAS level 2, the matrix's elements widened as they stream
        # (per batch slice, the batch loop on the threads)
        from .gemv import dot_streams_past, expand_gemv
        model = machine or MachineModel()
        wide = model.vector_bits >= 512
        if expand_gemv(con, model.stream_lanes, remark,
                       1 if batch_loop is not None else threads, dot_streams_past(model),
                       wide and "avx512bf16" in model.features,
                       wide and "avx512vnni" in model.features) is not None:
            if batch_loop is not None:
                _parallel_batch(batch_loop)
            return
    if tiled and vectors and con.is_matrix_form and \
            expand_lowp_gemm(con, machine, remark, 1 if batch_loop is not None else threads):
        if batch_loop is not None:
            _parallel_batch(batch_loop)
        return
    if tiled and remark is not None:
        why = ("it needs --hopt-copy and --hopt-vect" if not vectors else
               "alpha is set" if con.alpha is not None else
               "a batch with '?' sizes is not supported")
        remark(con.loc, f"{con.kind} with A and B narrower than C runs as a naive nest: {why}")
    expand_matmul(con)


def expand_high_level_ops(module: Operation, *, tiled: bool = False,
                          machine: Optional[MachineModel] = None,
                          remark: RemarkSink = None, copy: bool = False,
                          steps: RegisterTileSteps = RegisterTileSteps(),
                          microkernel_for: Optional[Callable] = None, threads: int = 1,
                          tiles=None) -> int:
    """Expand every ``hop.matmul`` and ``hop.conv2d`` under ``module`` into affine nests
    (BLIS-tiled matmuls with ``tiled``, naive otherwise; with ``copy`` too, tiled matmuls pack
    A and B, see :func:`pack_blis_operands`; with ``microkernel_for``,
    ``(element type, loc) -> MicroKernelChoice``, tiled matmuls call that micro-kernel);
    with ``tiled``, ``linalg.matmul``/``linalg.batch_matmul`` (default maps, one element type,
    static shapes) and the linalg convolutions too.  Other linalg ops keep their form: they
    become their naive nest in :func:`polyopt.affine.linalg_to_affine.
    convert_linalg_to_affine_loops` (with a remark under ``tiled`` for the matmuls it leaves).
    Every matmul goes through :func:`expand_contraction`, with ``tiles`` (a dict, or
    ``tiles(i)`` for the ``i``-th op of :func:`expansion_targets`).  Returns how many ops were
    expanded."""
    todo = expansion_targets(module, tiled, remark)
    for index, op in enumerate(todo):
        expand_high_level_op(op, tiled=tiled, machine=machine, remark=remark, copy=copy,
                             steps=steps, microkernel_for=microkernel_for, threads=threads,
                             tiles=tiles(index) if callable(tiles) else tiles)
    return len(todo)


def expansion_targets(module: Operation, tiled: bool, remark: RemarkSink = None) -> list:
    """The ops :func:`expand_high_level_ops` expands, in pre-order (a remark for each linalg
    matmul it leaves)."""
    todo = []
    for op in module.walk():
        if isinstance(op, (LinalgStructuredOp, SoftmaxOp)):
            if tiled and blis_takes(op, remark):
                todo.append(op)
        elif isinstance(op, HopMatmulOp) or hasattr(op, "CONV_KIND"):
            todo.append(op)
    return todo


def expand_high_level_op(op: Operation, *, tiled: bool, machine: Optional[MachineModel],
                         remark: RemarkSink, copy: bool, steps: RegisterTileSteps,
                         microkernel_for: Optional[Callable], threads: int,
                         tiles: Optional[dict]) -> None:
    """One op of :func:`expansion_targets` becomes its loop nest (it is erased)."""
    if hasattr(op, "CONV_KIND"):
        _expand_conv(op, tiled, machine, remark, copy, steps, microkernel_for, threads, tiles)
        return
    if op.name == "linalg.depthwise_conv_2d_nchw_chw":
        if steps.vect:
            from .depthwise_nchw import expand_depthwise_nchw
            model = machine or MachineModel()
            expand_depthwise_nchw(op, lambda b: max(1, model.vector_bits // (8 * b)), remark,
                                  threads)
        else:
            from ..affine.linalg_to_affine import lower_to_affine_loops
            lower_to_affine_loops(op)
        return
    if isinstance(op, SoftmaxOp):
        # without --hopt-vect it stays, and becomes its scalar loops before lowering
        if steps.vect:
            from .softmax import expand_softmax
            model = machine or MachineModel()
            expand_softmax(op, lambda b: max(1, model.vector_bits // (8 * b)), remark, threads)
        return
    expand_contraction(contraction_of_op(op), tiled=tiled, machine=machine, remark=remark,
                       copy=copy, steps=steps, microkernel_for=microkernel_for,
                       threads=threads, tiles=tiles)
    op.erase()


def blis_takes(op, remark: RemarkSink) -> bool:
    """Does the BLIS pipeline take the linalg op ``op`` (``--hopt``)?  ``linalg.matmul`` with
    its default maps, one element type (f32 or f64) and static shapes, and the convolutions;
    a remark says why another matmul stays a naive nest."""
    if hasattr(op, "CONV_KIND"):
        return True
    if op.name == "linalg.depthwise_conv_2d_nchw_chw":
        from .depthwise_nchw import depthwise_refusal
        why = depthwise_refusal(op)
        if why is not None and remark is not None:
            remark(op.loc, f"{op.name}: its loop nest, auto-scheduled, not vector rows: {why}")
        return why is None
    if isinstance(op, SoftmaxOp):
        from .softmax import vector_softmax_refusal
        why = vector_softmax_refusal(op)
        if why is not None and remark is not None:
            remark(op.loc, f"linalg.softmax: scalar loops, not vectors: {why}")
        return why is None
    if not isinstance(op, (LinalgMatmulOp, BatchMatmulOp)):
        return False
    why = None
    if not op.has_default_maps:
        why = "its indexing_maps transpose or broadcast operands"
    elif not op.is_plain and not _mixed_takes(op):
        why = ("its operands have different element types (the pipeline takes (A, B, C) = "
               + ", ".join("(" + ", ".join(c) + ")" for c in MIXED_TYPES) + ")")
    elif op.is_plain and str(op.c.type.element_type) not in ("f32", "f64"):
        why = f"its element type is {op.c.type.element_type} (the pipeline takes f32 and f64)"
    elif not all(v.type.has_static_shape for v in op.operands):
        why = "its operands have '?' sizes"
    if why is None:
        return True
    if remark is not None:
        remark(op.loc, f"{op.name}: naive loop nest (--convert-linalg-to-affine-loops), not the "
                       f"BLIS pipeline: {why}")
    return False


def _mixed_takes(op) -> bool:
    """A ``linalg.matmul`` (or batch) of narrow A and B into a wider C of MIXED_TYPES."""
    return tuple(str(v.type.element_type) for v in op.operands) in MIXED_TYPES


def _expand_conv(op, tiled, machine, remark, copy, steps, microkernel_for,
                 threads: int = 1, tiles: Optional[dict] = None) -> None:
    """A convolution: with ``tiled`` (``--hopt``), 2-D and 1-D ones as implicit GEMMs through
    the matmul path (:mod:`polyopt.schedules.conv_gemm`; ``tiles``, the pass's BLIS
    parameters, where the op has none of its own), depthwise ones as their loop nest
    vectorized along the channels (with ``--hopt-vect``); otherwise the plain loop nest."""
    from .conv_loops import expand_conv_naive, vectorize_depthwise
    if tiled and any(0 in v.type.shape for v in op.operands):
        if remark is not None:
            remark(op.loc, f"{op.name}: an operand has an empty dimension: the loop nest, no "
                           f"BLIS tiling")
        tiled = False
    if not tiled:
        expand_conv_naive(op)
        return
    if op.CONV_KIND == "depthwise2d":
        from .depthwise_nhwc import expand_depthwise_nhwc, nhwc_refusal
        if steps.vect and nhwc_refusal(op) is None:
            model = machine or MachineModel()
            lanes = max(1, model.vector_bits // op.output.type.element_type.width)
            expand_depthwise_nhwc(op, lanes, model.num_vector_registers, remark, threads)
            return
        loops = expand_conv_naive(op)
        if steps.vect:
            width = max(1, (machine or MachineModel()).vector_bits //
                        op.output.type.element_type.width)
            vectorize_depthwise(loops, width)
        return
    from .conv_gemm import expand_conv_tiled
    expand_conv_tiled(op, expand_contraction, machine=machine, tiles=tiles, remark=remark,
                      copy=copy, steps=steps, microkernel_for=microkernel_for, threads=threads)
