"""Convolutions as implicit GEMMs (issue 7): the same BLIS schedule, packing and register tile
as ``hop.matmul``, without materializing im2col.

For ``O[n,oh,ow,f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh,kw,c,f]`` (NHWC, HWCF, NHWF)
the product is ``C[r, f] += A[r, q] * B[q, f]`` with rows ``r = (n, oh, ow)``, columns ``f``
and reduction ``q = (kh, kw, c)`` (1-D: ``r = (n, ow)``, ``q = (kw, c)``):

* ``B`` and ``C`` are the filter and the output themselves, seen as ``Q x F`` and ``R x F``
  matrices through ``memref.collapse_shape`` (HWCF and NHWF are row-major in ``q`` and ``r``);
* ``A`` is im2col, which is never built: the matmul is expanded on a stand-in ``R x Q`` memref
  and every access to it is then rewritten into the input window it denotes,
  ``I[r floordiv (OH*OW), ((r floordiv OW) mod OH)*sh + (q floordiv (KW*C))*dh, ...]``.  With
  packing the only such access is the A packing nest, which so becomes im2col done one
  ``M_C x K_C`` tile at a time, straight into the micro-panel layout.

MLIR has no counterpart pass (upstream lowers convolutions to loops or to im2col + matmul in
the tensor world).
"""

from __future__ import annotations

from typing import Optional

from ..affine.affine_expr import AffineExpr, AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import _AffineMemOp
from ..affine.attributes import UnitAttr
from ..affine.dialects.memref import AllocOp
from ..affine.ir import Operation, Value
from ..affine.types import MemRefType
from .contraction import COL, RED, ROW, STAND_IN_ATTR, Contraction, Operand, Subscript
from .packing_loops import linear_terms, panelize_rows


def _collapse_to_matrix(b: Builder, v: Value, loc) -> Value:
    """``v`` (rank r) as a matrix: all dimensions but the last one folded into rows."""
    from ..affine.dialects.memref import CollapseShapeOp
    rank = v.type.rank
    return b.create(CollapseShapeOp.build, v, [list(range(rank - 1)), [rank - 1]],
                    loc=loc).results[0]


def window_map(op: Operation) -> tuple[int, int, AffineMap]:
    """(R, Q, the map (r, q) -> input indices) of a convolution op."""
    flt, out = op.filter, op.output
    strides, dilations = op.strides, op.dilations
    r, q = dim(0), dim(1)
    if op.CONV_KIND == "conv2d":
        nb, oh, ow, _ = out.type.shape
        kh, kw, c, _ = flt.type.shape
        (sh, sw), (dh, dw) = strides, dilations
        idx = (r.floordiv(oh * ow),
               (r.floordiv(ow) % oh) * sh + q.floordiv(kw * c) * dh,
               (r % ow) * sw + (q.floordiv(c) % kw) * dw,
               q % c)
        return nb * oh * ow, kh * kw * c, AffineMap.get(2, 0, idx)
    if op.CONV_KIND == "conv1d":
        nb, ow, _ = out.type.shape
        kw, c, _ = flt.type.shape
        (sw,), (dw,) = strides, dilations
        idx = (r.floordiv(ow), (r % ow) * sw + q.floordiv(c) * dw, q % c)
        return nb * ow, kw * c, AffineMap.get(2, 0, idx)
    raise ValueError(f"{op.name} is not an implicit GEMM")


def conv_as_matmul(op: Operation, tiles: Optional[dict] = None
                   ) -> tuple[Contraction, Operation, AffineMap]:
    """The contraction of the convolution ``op``: (stand-in A, collapsed filter, collapsed
    output), built in front of ``op`` (its anchor; ``op`` is left for the caller to erase);
    returns it, the stand-in's alloc and the window map to apply with
    :func:`rewrite_stand_in` once the contraction is expanded."""
    loc = op.loc
    b = Builder.before(op)
    rows, red, windows = window_map(op)
    elem = op.output.type.element_type
    stand_in = b.create(AllocOp.build, MemRefType((rows, red), elem), loc=loc)
    stand_in.attributes[STAND_IN_ATTR] = UnitAttr()
    kmat = _collapse_to_matrix(b, op.filter, loc)
    omat = _collapse_to_matrix(b, op.output, loc)
    if tiles is None:
        tiles = dict(getattr(op, "tile_params", {}) or {})
    def matrix(v: Value, rows: str, cols: str) -> Operand:
        return Operand(v, (Subscript(rows), Subscript(cols)))
    con = Contraction(op.name, loc, op, matrix(stand_in.results[0], ROW, RED),
                      matrix(kmat, RED, COL), matrix(omat, ROW, COL), rows,
                      op.output.type.shape[-1], red, tile_params=tiles)
    return con, stand_in, windows


def rewrite_stand_in(stand_in: Operation, inp: Value, windows: AffineMap) -> None:
    """Every access ``A[e0, e1]`` of the stand-in becomes ``I[windows(e0, e1)]``; then the
    stand-in is erased."""
    value = stand_in.results[0]
    for use in list(value.uses):
        access = use.op
        if not isinstance(access, _AffineMemOp) or use.index != access.MEMREF_INDEX:
            raise AssertionError(f"the im2col stand-in is used by '{access.name}'")
        amap = access.map
        exprs: list[AffineExpr] = [w.replace(list(amap.results), []) for w in windows.results]
        new = AffineMap.get(amap.num_dims, amap.num_symbols, tuple(exprs))
        access.set_operand(access.MEMREF_INDEX, inp)
        access.set_map(new, list(access.map_operands))
    stand_in.erase()


def conv_k_c(channels: int, reduction: int, k_c: int, limit: Optional[int] = None) -> int:
    """The K_C of a convolution's implicit GEMM, between the model's ``k_c`` and ``limit``
    (default 1.5 ``k_c``; :func:`expand_conv_tiled` passes what lets B's K_C x N_C block take
    half of L2):

    * the whole reduction ``q = (kh, kw, c)`` when it fits (one K_C block: C is loaded and
      stored once, A is im2col-packed in one sweep);
    * else the largest multiple of 8 that splits the reduction exactly (the last block runs a
      full, zero-padded K_C otherwise) and shares a run of at least 8 channels with the channel
      count, so that each block holds whole runs (:func:`split_im2col_copies`), down to half of
      ``k_c``;
    * else the old rule: multiples of the channel count (or of its largest divisor that is a
      multiple of 8) up to ``limit``, the least padding of the last block, then fewest blocks.

    Measured on Zen 4 (32 KiB L1d, 1 MiB L2, 4x64 f32 tile, model K_C 80, so 64 before this
    rule), best GFLOPS of 31-41 runs: ResNet-50's 3x3 on 64 channels (q = 576) 104.7 at 64,
    109.5 at 192, 108.6 at 576, 76 at 256 and 384 (padded to 768); 128 channels (q = 1152)
    105-109 at 64..576, 97.5 at 256 (padded); 256 channels (q = 2304) 102.2 at 64, 105.0 at
    256, 107.2 at 384, 94.3 at 512 (padded), 98.9 at 768 and 90.3 at 2304 (B's block beyond
    L2); 512 channels 75.1 at 64, 77.6 at 256, 50.5 at 4608; the 1x1 on 256 channels 97.7 at
    64, 104.9 at 256.  B's micro-panel then no longer fits L1, but the 4x64 tile reads 256
    bytes of B per 16 FMAs, which L2 sustains; fewer K_C blocks save passes over C and A."""
    from math import gcd
    limit = max(k_c, limit if limit is not None else int(k_c * 1.5))
    if reduction <= limit:
        return reduction
    run = min(8, channels)
    exact = [d for d in range(limit - limit % 8, max(8, k_c // 2) - 1, -8)
             if reduction % d == 0 and gcd(d, channels) >= run]
    if exact:
        return exact[0]
    if channels <= limit:
        step = channels
    else:
        divisors = [d for d in range(8, limit + 1, 8) if channels % d == 0]
        if not divisors:
            return k_c
        step = max(divisors)
    candidates = [m * step for m in range(1, limit // step + 1)]
    return min(candidates, key=lambda c: (-(-reduction // c) * c, -(-reduction // c)))


def split_im2col_copies(stand_in: Operation, op_kind: str, shapes, strides, dilations,
                        inp: Value, m_r: int = 1) -> int:
    """Rewrite the A packing nests (``for r { for q { buf[..] = A[r, q] } }``) of the stand-in
    as im2col copies whose inner loop runs over ``g = gcd(K_C-aligned bounds, C)`` consecutive
    channels: ``for r { for qq { for c < g { buf[.., qq*g + c] = I[.., (qq mod C/g)*g + c] }}}``
    -- contiguous reads, and the window's ``floordiv``/``mod`` only once per run instead of
    once per element.  Without width dilation the runs span whole window rows (``g`` divides
    KW*C), read through the input with W and C folded into one dimension.  Returns how many nests were rewritten (the others keep the generic
    rewrite of :func:`rewrite_stand_in`)."""
    from math import gcd

    from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
    from ..affine.loop_utils import simplify_affine_expr
    value = stand_in.results[0]
    out_rows, (kw, channels) = shapes
    # with no dilation along the width, a window row (kw, c) is kw*C consecutive elements of
    # the input: runs span it, read through a view whose last dimension is W*C (ResNet-50's
    # 7x7 stem on 3 channels: runs of 21 instead of 3, below the 8 a run needs)
    whole_rows = dilations[-1] == 1 and kw > 1
    run = kw * channels if whole_rows else channels
    flat: Optional[Value] = None
    done = 0
    for use in list(value.uses):
        load = use.op
        if not isinstance(load, AffineLoadOp) or load.map != AffineMap.identity(2):
            continue
        r_iv, q_iv = load.map_operands
        q_loop = load.parent.parent_op
        if not isinstance(q_loop, AffineForOp) or q_loop.induction_var is not q_iv or \
                q_loop.step != 1 or len(load.result.uses) != 1:
            continue
        store = load.result.uses[0].op
        if not isinstance(store, AffineStoreOp) or len(q_loop.body.ops) != 3:
            continue
        # g divides every bound of q (constants and multiples of the K_C tile)
        g = run
        for amap in (q_loop.lower_map, q_loop.upper_map):
            for e in amap.results:
                for t in linear_terms(e):
                    g = gcd(g, t)
        if g < 8:
            continue
        lb = AffineMap.get(q_loop.lower_map.num_dims, q_loop.lower_map.num_symbols,
                           tuple(simplify_affine_expr(e.floordiv(g))
                                 for e in q_loop.lower_map.results))
        ub = AffineMap.get(q_loop.upper_map.num_dims, q_loop.upper_map.num_symbols,
                           tuple(simplify_affine_expr(e.floordiv(g))
                                 for e in q_loop.upper_map.results))
        b = Builder.before(q_loop)
        qq_loop = b.create(AffineForOp.build, lb, list(q_loop.lower_operands), ub,
                           list(q_loop.upper_operands), loc=q_loop.loc)
        c_loop = Builder.before_terminator(qq_loop.body).create(
            AffineForOp.build_constant, 0, g, loc=q_loop.loc)
        inner = Builder.before_terminator(c_loop.body)
        qq, c = qq_loop.induction_var, c_loop.induction_var
        # I[window(r, qq, c)] over dims (r, qq, c)
        if whole_rows and flat is None:
            flat = _collapse_width_channels(stand_in, inp)
        idx = _split_window(op_kind, shapes, strides, dilations, g, whole_rows)
        new_load = inner.create(AffineLoadOp.build, flat if whole_rows else inp, [r_iv, qq, c],
                                map=AffineMap.get(3, 0, idx), loc=load.loc)
        # the buffer subscript with q := qq*g + c (every operand as a dim)
        smap = store.map
        kept = [v for v in store.map_operands if v is not q_iv]
        operands = kept + [qq, c]
        pos = {id(v): k for k, v in enumerate(kept)}
        subst = [dim(len(kept)) * g + dim(len(kept) + 1) if v is q_iv else dim(pos[id(v)])
                 for v in store.map_operands]
        results = tuple(simplify_affine_expr(e.replace(subst[:smap.num_dims],
                                                       subst[smap.num_dims:]))
                        for e in smap.results)
        inner.create(AffineStoreOp.build, new_load.result, store.memref, operands,
                     map=AffineMap.get(len(operands), 0, results), loc=store.loc)
        q_loop.erase()
        r_loop = qq_loop.parent.parent_op
        if m_r > 1 and isinstance(r_loop, AffineForOp) and r_loop.induction_var is r_iv:
            panelize_rows(r_loop, m_r)
        done += 1
    return done


def _register_rows(con: Contraction, machine) -> int:
    """The M_R the expansion will use (the tile attribute or the model's)."""
    from .blis_schedule import default_blis_params
    return default_blis_params(con.m, con.n, con.k, con.element_type.width // 8, machine,
                               dict(con.tile_params)).M_R


def _collapse_width_channels(anchor: Operation, inp: Value) -> Value:
    """``inp`` (NHWC or NWC) seen with its last two dimensions folded into one (W*C), built in
    front of ``anchor``."""
    from ..affine.dialects.memref import CollapseShapeOp
    rank = inp.type.rank
    groups = [[d] for d in range(rank - 2)] + [[rank - 2, rank - 1]]
    return Builder.before(anchor).create(CollapseShapeOp.build, inp, groups,
                                         loc=anchor.loc).results[0]


def _split_window(kind: str, shapes, strides, dilations, g: int,
                  whole_rows: bool = False) -> tuple:
    """Input subscripts over (r, qq, c) with q = qq*g + c (no floordiv/mod on the innermost c):
    g divides C, or, with ``whole_rows``, KW*C and the subscripts are into the input with W
    and C folded into one dimension (:func:`_collapse_width_channels`)."""
    (rows_hw), (kw, channels) = shapes
    r, qq, c = dim(0), dim(1), dim(2)
    run = kw * channels if whole_rows else channels
    m = run // g
    kk = qq.floordiv(m) if m > 1 else qq              # (kh, kw) index, or kh with whole rows
    chan = (qq % m) * g + c if m > 1 else c           # c, or kw*C + c with whole rows
    if kind == "conv2d":
        oh, ow = rows_hw
        (sh, sw), (dh, dw) = strides, dilations
        if whole_rows:
            return (r.floordiv(oh * ow), (r.floordiv(ow) % oh) * sh + kk * dh,
                    (r % ow) * (sw * channels) + chan)
        return (r.floordiv(oh * ow), (r.floordiv(ow) % oh) * sh + kk.floordiv(kw) * dh,
                (r % ow) * sw + (kk % kw) * dw, chan)
    (ow,) = rows_hw
    (sw,), (dw,) = strides, dilations
    if whole_rows:       # q < KW*C: one window row
        return (r.floordiv(ow), (r % ow) * (sw * channels) + chan)
    return (r.floordiv(ow), (r % ow) * sw + kk * dw, chan)


def expand_conv_tiled(op: Operation, expand_contraction, machine=None, **options) -> None:
    """Expand ``op`` (conv2d or conv1d) as an implicit GEMM with ``expand_contraction`` (the
    BLIS pipeline's entry, given ``machine`` and the ``options``); ``op`` is erased."""
    from .blis_schedule import default_blis_params
    inp = op.input
    kind = op.CONV_KIND
    out_shape, flt_shape = op.output.type.shape, op.filter.type.shape
    rows_hw = tuple(out_shape[1:-1])
    kw, channels = flt_shape[-3] if kind == "conv2d" else flt_shape[0], flt_shape[-2]
    rows, red, _ = window_map(op)
    strides, dilations = op.strides, op.dilations
    tiles = dict(getattr(op, "tile_params", {}) or {})
    if "K_C" not in tiles:
        from .blis_schedule import MachineModel
        elem_bytes = op.output.type.element_type.width // 8
        model = default_blis_params(rows, out_shape[-1], red, elem_bytes, machine, tiles)
        # B's K_C x N_C block is packed once per K_C block and read again for every M_C
        # block of A (a third of L2): half of L2 for it
        n_c = min(out_shape[-1], model.N_C or out_shape[-1])
        limit = int((machine or MachineModel()).l2_bytes / 2 / (n_c * elem_bytes))
        tiles["K_C"] = conv_k_c(channels, red, model.K_C, limit)
    con, stand_in, windows = conv_as_matmul(op, tiles)
    m_r = _register_rows(con, machine)
    expand_contraction(con, machine=machine, **options)
    op.erase()
    split_im2col_copies(stand_in, kind, (rows_hw, (kw, channels)), strides, dilations, inp,
                        m_r=m_r)
    rewrite_stand_in(stand_in, inp, windows)
