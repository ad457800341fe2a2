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

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from ..affine.affine_expr import AffineExpr, AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import _AffineMemOp
from ..affine.attributes import IntegerAttr, UnitAttr
from ..affine.dialects.memref import AllocOp
from ..affine.ir import Operation, Value
from ..affine.types import MemRefType, StridedLayout, i64
from .contraction import (COL, RED, ROW, STAND_IN_ATTR, STAND_IN_RUN_ATTR,
                          STAND_IN_USER_TILES_ATTR, STAND_IN_WINDOW_RUN_ATTR, Contraction,
                          Operand, Subscript)
from .blis_schedule import row_bytes
from .packing_loops import linear_terms, panelize_rows


@dataclass(frozen=True, eq=False)
class ConvSpec:
    """A convolution to expand as an implicit GEMM, whoever produced it: a convolution op
    (:func:`conv_spec`) or a loop nest raised by :mod:`polyopt.schedules.raise_convolutions`.
    ``kind`` is the op's ``CONV_KIND`` (``"conv2d"``, ``"conv1d"``), ``layout`` ``"nhwc"``
    (NHWC input, HWCF filter, NHWF output; NWC/WCF/NWF in 1-D), ``"fhwc"`` (NHWC, FHWC, NHWF)
    or ``"nchw"`` (NCHW, FCHW, NFHW; 2-D only); ``anchor`` is what the expansion is built in front of; ``beta``/``alpha``
    as in :class:`~polyopt.schedules.contraction.Contraction`."""

    name: str
    loc: Any
    anchor: Operation
    kind: str
    input: Value
    filter: Value
    output: Value
    strides: tuple
    dilations: tuple
    layout: str = "nhwc"
    tile_params: dict = field(default_factory=dict)
    alpha: Any = None
    beta: Any = None

    @property
    def CONV_KIND(self) -> str:  # noqa: N802  (the conv ops' spelling)
        return self.kind


def conv_spec(op: Operation) -> ConvSpec:
    """The :class:`ConvSpec` of a convolution op (``hop.conv2d``, ``linalg.conv_2d_nhwc_hwcf``,
    ``linalg.conv_1d_nwc_wcf``)."""
    return ConvSpec(op.name, op.loc, op, op.CONV_KIND, op.input, op.filter, op.output,
                    tuple(op.strides), tuple(op.dilations),
                    tile_params=dict(getattr(op, "tile_params", {}) or {}))


def _collapse_to_matrix(b: Builder, v: Value, loc) -> Value:
    """``v`` (rank r) as a matrix: all dimensions but the last one folded into rows."""
    from ..affine.dialects.memref import CollapseShapeOp
    rank = v.type.rank
    return b.create(CollapseShapeOp.build, v, [list(range(rank - 1)), [rank - 1]],
                    loc=loc).results[0]


def hwcf_shape(op) -> tuple:
    """The filter's shape in HWCF order (WCF in 1-D), whatever its layout: an FHWC filter
    (``linalg.conv_2d_nhwc_fhwc``) is the same GEMM with B read transposed."""
    shape = tuple(op.filter.type.shape)
    if getattr(op, "layout", "nhwc") == "fhwc":
        return shape[1:] + shape[:1]
    return shape


def window_map(op: Operation) -> tuple[int, int, AffineMap]:
    """(R, Q, the map (r, q) -> input indices) of a convolution op."""
    out = op.output
    strides, dilations = op.strides, op.dilations
    r, q = dim(0), dim(1)
    if op.CONV_KIND == "conv2d":
        nb, oh, ow, _ = out.type.shape
        kh, kw, c, _ = hwcf_shape(op)
        (sh, sw), (dh, dw) = strides, dilations
        idx = (r.floordiv(oh * ow),
               (r.floordiv(ow) % oh) * sh + q.floordiv(kw * c) * dh,
               (r % ow) * sw + (q.floordiv(c) % kw) * dw,
               q % c)
        return nb * oh * ow, kh * kw * c, AffineMap.get(2, 0, idx)
    if op.CONV_KIND == "conv1d":
        nb, ow, _ = out.type.shape
        kw, c, _ = hwcf_shape(op)
        (sw,), (dw,) = strides, dilations
        idx = (r.floordiv(ow), (r % ow) * sw + q.floordiv(c) * dw, q % c)
        return nb * ow, kw * c, AffineMap.get(2, 0, idx)
    raise ValueError(f"{op.name} is not an implicit GEMM")


def nchw_window_map(spec: ConvSpec) -> tuple[int, int, AffineMap]:
    """(Q, P, the map (n, q, p) -> input indices) of an NCHW convolution, whose implicit GEMM
    per image is ``O_n[f, p] += K[f, q] * im2col_n[q, p]``, ``q = (c, kh, kw)``,
    ``p = (oh, ow)``."""
    _, _, oh, ow = spec.output.type.shape
    _, c, kh, kw = spec.filter.type.shape
    (sh, sw), (dh, dw) = spec.strides, spec.dilations
    n, q, p = dim(0), dim(1), dim(2)
    idx = (n, q.floordiv(kh * kw),
           p.floordiv(ow) * sh + (q.floordiv(kw) % kh) * dh,
           (p % ow) * sw + (q % kw) * dw)
    return c * kh * kw, oh * ow, AffineMap.get(3, 0, idx)


def conv_as_matmul(op, tiles: Optional[dict] = None
                   ) -> tuple[Contraction, Operation, AffineMap]:
    """The contraction of the NHWC convolution ``op`` (an op or a :class:`ConvSpec`):
    (stand-in A, collapsed filter, collapsed output), built in front of its anchor (left for
    the caller to erase); returns it, the stand-in's alloc and the window map to apply with
    :func:`rewrite_stand_in` once the contraction is expanded."""
    if not isinstance(op, ConvSpec):
        op = conv_spec(op)
    loc = op.loc
    b = Builder.before(op.anchor)
    rows, red, windows = window_map(op)
    elem = op.input.type.element_type     # im2col holds the input's elements
    stand_in = b.create(AllocOp.build, MemRefType((rows, red), elem), loc=loc)
    stand_in.attributes[STAND_IN_ATTR] = UnitAttr()
    # the longest aligned runs of columns that are vectors of the input (the channels of one
    # window position): the low-precision templates copy A's rows by vectors of 64 bytes
    run = next((v for v in (64, 32, 16) if runs_are_input_vectors(windows, rows, red, v)), 1)
    stand_in.attributes[STAND_IN_RUN_ATTR] = IntegerAttr(run, i64)
    stand_in.attributes[STAND_IN_WINDOW_RUN_ATTR] = IntegerAttr(
        window_run(windows, rows, red, hwcf_shape(op), op.input.type), i64)
    if tiles is None:
        tiles = dict(getattr(op, "tile_params", {}) or {})
    def matrix(v: Value, rows: str, cols: str) -> Operand:
        return Operand(v, (Subscript(rows), Subscript(cols)))
    if op.layout == "fhwc":     # F x Q, read as B[q, f]: packing takes B transposed
        from ..affine.dialects.memref import CollapseShapeOp
        kmat = b.create(CollapseShapeOp.build, op.filter, [[0], [1, 2, 3]],
                        loc=loc).results[0]
        bmat = matrix(kmat, COL, RED)
    else:
        bmat = matrix(_collapse_to_matrix(b, op.filter, loc), RED, COL)
    omat = _collapse_to_matrix(b, op.output, loc)
    con = Contraction(op.name, loc, op.anchor, matrix(stand_in.results[0], ROW, RED),
                      bmat, matrix(omat, ROW, COL), rows,
                      op.output.type.shape[-1], red, alpha=op.alpha, beta=op.beta,
                      tile_params=tiles)
    return con, stand_in, windows


def nchw_conv_as_matmul(spec: ConvSpec, tiles: Optional[dict] = None
                        ) -> tuple[Contraction, Operation, AffineMap]:
    """The contraction of the NCHW convolution ``spec``, one GEMM per image:
    ``O_n[f, p] += K[f, q] * im2col_n[q, p]`` with A the filter collapsed to ``F x Q`` and C
    the output collapsed to ``N x F x P`` (both row-major already), B a stand-in
    ``N x Q x P`` memref (a batch dimension ``n``); built in front of ``spec.anchor``.
    Returns it, the stand-in's alloc and the window map ``(n, q, p) -> input indices`` to
    apply with :func:`rewrite_stand_in` once the contraction is expanded (its batch loop
    makes B a ``memref.subview`` of the stand-in, which the rewrite sees through)."""
    from ..affine.dialects.memref import CollapseShapeOp
    loc = spec.loc
    b = Builder.before(spec.anchor)
    red, cols, windows = nchw_window_map(spec)
    nb, nf = spec.output.type.shape[:2]
    elem = spec.output.type.element_type
    # column-major in (q, p): no register tile vectorizes its loads along p (j), which
    # would become vector loads of windows that are not contiguous in the input; packing
    # copies B element by element, and the packed panels are what the tile reads
    layout = StridedLayout((red * cols, 1, red), 0)
    stand_in = b.create(AllocOp.build, MemRefType((nb, red, cols), elem, layout), loc=loc)
    stand_in.attributes[STAND_IN_ATTR] = UnitAttr()
    kmat = b.create(CollapseShapeOp.build, spec.filter, [[0], [1, 2, 3]], loc=loc).results[0]
    omat = b.create(CollapseShapeOp.build, spec.output, [[0], [1], [2, 3]],
                    loc=loc).results[0]
    batch = Subscript("b0")
    con = Contraction(spec.name, loc, spec.anchor,
                      Operand(kmat, (Subscript(ROW), Subscript(RED))),
                      Operand(stand_in.results[0], (batch, Subscript(RED), Subscript(COL))),
                      Operand(omat, (batch, Subscript(ROW), Subscript(COL))),
                      nf, cols, red, batch=(nb,), alpha=spec.alpha, beta=spec.beta,
                      tile_params=dict(tiles if tiles is not None else spec.tile_params))
    return con, stand_in, windows


def rewrite_stand_in(stand_in: Operation, inp: Value, windows: AffineMap) -> None:
    """Every access ``A[e0, e1]`` of the stand-in becomes ``I[windows(e0, e1)]``; then the
    stand-in is erased.  A vector load inside one of the stand-in's window runs that span
    several window positions (:func:`window_run`) reads the input with W and C folded into
    one dimension.  A stand-in with a batch dimension (``windows`` over ``(b, e0, e1)``)
    is accessed through the ``memref.subview`` per batch of
    :func:`~polyopt.schedules.contraction.to_matrix_form`: ``view[e0, e1]`` of
    ``view = subview A[%b, 0, 0]`` becomes ``I[windows(%b, e0, e1)]`` and the views go."""
    from ..affine.dialects.memref_views import SubViewOp
    value = stand_in.results[0]
    batched = windows.num_dims == 3
    run = stand_in.attributes.get(STAND_IN_WINDOW_RUN_ATTR)
    views = _InputViews(inp, windows, run.value if run is not None else 1, stand_in)
    for use in list(value.uses):
        access = use.op
        if batched and isinstance(access, SubViewOp):
            offsets = [v for v in access.operands[1:]]
            if len(offsets) != 1:
                raise AssertionError("the batched im2col stand-in is viewed at a static or "
                                     "computed batch offset")
            for vuse in list(access.results[0].uses):
                _rewrite_access(vuse, views, offsets[0])
            access.erase()
            continue
        _rewrite_access(use, views, None)
    stand_in.erase()


class _InputViews:
    """The input as the stand-in's accesses read it: itself through ``windows``, or (built
    on first use, in front of ``anchor``) with W and C folded into one dimension through
    the windows with their last two subscripts folded alike, for vectors inside a window
    run of ``run`` columns that spans several window positions, and for every scalar read
    where the run does (a window row's offset is then one remainder by the run, not a
    position and a channel: :func:`_fold_mod_pairs`)."""

    def __init__(self, inp: Value, windows: AffineMap, run: int, anchor: Operation):
        self.inp, self.windows, self.run, self.anchor = inp, windows, run, anchor
        self._flat: Optional[Value] = None

    def flat(self) -> tuple[Value, AffineMap]:
        if self._flat is None:
            self._flat = _collapse_width_channels(self.anchor, self.inp)
        return self._flat, flat_windows(self.windows, self.inp.type.shape[-1])

    def of(self, access) -> tuple[Value, AffineMap]:
        """The view and windows through which ``access`` reads; AssertionError when a vector
        of consecutive im2col elements is no vector of the input."""
        if "vector" not in access.name:
            if self.run > self.inp.type.shape[-1]:
                return self.flat()
            return self.inp, self.windows
        how = _vector_of_the_input(access, self.windows, self.run, self.inp.type.shape[-1])
        if how is None:
            # (a vector of consecutive im2col elements is no vector of the input, but where
            # it starts at a multiple of its length and stays in one window position's
            # channels, or lies inside one of the stand-in's window runs)
            raise AssertionError(f"the im2col stand-in is used by '{access.name}'")
        return self.flat() if how == "flat" else (self.inp, self.windows)


def _rewrite_access(use, views: _InputViews, batch: Optional[Value]) -> None:
    access = use.op
    if not isinstance(access, _AffineMemOp) or use.index != access.MEMREF_INDEX:
        raise AssertionError(f"the im2col stand-in is used by '{access.name}'")
    inp, windows = views.of(access)
    amap = access.map
    operands = list(access.map_operands)
    nd = amap.num_dims
    if batch is None:
        subst = list(amap.results)
    else:
        subst = [dim(nd)] + list(amap.results)
        operands = operands[:nd] + [batch] + operands[nd:]
        nd += 1
    exprs = _windows_of(windows, subst, [_iv_divisor(x) for x in operands[:nd]])
    new = AffineMap.get(nd, amap.num_symbols, tuple(exprs))
    access.set_operand(access.MEMREF_INDEX, inp)
    access.set_map(new, operands)


def _windows_of(windows: AffineMap, subst: list, divisors: list) -> list[AffineExpr]:
    """``windows`` at the access's subscripts ``subst``, with what is known of its column:
    where the column is ``p + r`` with ``p`` a multiple of ``d`` and 0 <= r < d (loops
    stepping by d: the k loop unrolled by K_U), its division by a multiple of d is ``p``'s,
    and its remainder ``p``'s plus r.  So the K_U steps of an unrolled k iteration read
    ``[kh + k floordiv 21, ..., r]`` rather than ``(k + r) floordiv 21`` each: the window
    position is computed once per iteration.  On the stem's K_U 3 a division of ``k + r``
    by 21 per step was 15 integer instructions per 16 FMAs, 1.15x slower."""
    column = subst[-1]
    d, offset = _known_divisor_and_offset(column, divisors)
    if d <= 1:
        return [w.replace(subst, []) for w in windows.results]
    r = offset % d
    p = dim(windows.num_dims)           # stands for column - r, a multiple of d
    split = [w.replace([*(dim(i) for i in range(windows.num_dims - 1)), p + r], [])
             for w in windows.results]
    return [_fold_mod_pairs(_divided_as_multiple(w, p, d, r), p, d).replace(
        [*subst, column - r], []) for w in split]


def _fold_mod_pairs(e: AffineExpr, p: AffineExpr, d: int) -> AffineExpr:
    """A sum with ``((x floordiv a) mod b) * a`` and ``x mod a`` as ``x mod (a * b)``, the
    second term 0 where ``x`` is ``p``, a multiple of ``d``, and ``a`` divides ``d``: the
    window's column in the input with W and C folded, ``w * C + c``, as the offset in its
    run (one division of k by the run, where there were three)."""
    from ..affine.affine_expr import AffineExprKind as K, constant
    terms, stack = [], [e]
    while stack:
        t = stack.pop()
        if t.kind == K.ADD:
            stack += [t.lhs, t.rhs]
        elif t.kind == K.MUL and t.rhs.kind == K.CONSTANT and t.lhs.kind == K.ADD:
            stack += [t.lhs.lhs * t.rhs.value, t.lhs.rhs * t.rhs.value]
        else:
            terms.append(t)
    for n, t in enumerate(terms):
        if t.kind != K.MUL or t.rhs.kind != K.CONSTANT or t.lhs.kind != K.MOD or \
                t.lhs.lhs.kind != K.FLOORDIV or t.lhs.rhs.kind != K.CONSTANT:
            continue
        a, b, x = t.rhs.value, t.lhs.rhs.value, t.lhs.lhs.lhs
        if t.lhs.lhs.rhs != constant(a) or a <= 0 or b <= 0:
            continue
        rem = x % a
        implicit = x == p and d % a == 0
        if rem in terms or implicit:
            rest = [u for m, u in enumerate(terms) if m != n]
            if not implicit:
                rest.remove(rem)
            out = x % (a * b)
            for u in rest:
                out = out + u
            return _fold_mod_pairs(out, p, d)
    return e


def _divided_as_multiple(e: AffineExpr, p: AffineExpr, d: int, r: int) -> AffineExpr:
    """``e`` with ``(p + r) floordiv c`` as ``p floordiv c`` and ``(p + r) mod c`` as ``p mod
    c + r`` (``r`` where c is d) for every multiple c of d: exact for ``p`` a multiple of d
    and 0 <= r < d, which MLIR's simplifications do not know."""
    from ..affine.affine_expr import AffineExprKind, constant, get_affine_binary_op_expr
    if not e.kind.is_binary:
        return e
    lhs, rhs = (_divided_as_multiple(x, p, d, r) for x in (e.lhs, e.rhs))
    c = rhs.value if rhs.kind == AffineExprKind.CONSTANT else None
    if c is not None and c > 0 and c % d == 0 and lhs == p + r:
        if e.kind == AffineExprKind.FLOORDIV:
            return p.floordiv(c)
        if e.kind == AffineExprKind.MOD:
            return (constant(0) if c == d else p % c) + r
    return get_affine_binary_op_expr(e.kind, lhs, rhs)


def flat_windows(windows: AffineMap, channels: int) -> AffineMap:
    """``windows`` into the input with its last two dimensions (W, C) folded into one."""
    *outer, w, c = windows.results
    return AffineMap.get(windows.num_dims, windows.num_symbols, (*outer, w * channels + c))


def _vector_of_the_input(access, windows: AffineMap, run: int = 1,
                         channels: int = 1) -> Optional[str]:
    """Is the vector load ``access`` of the stand-in (rows x K) a vector of the input too:
    ``"input"`` when its column is a multiple of its length V and every aligned run of V
    columns is consecutive elements of one input row (the channels of one window position);
    ``"input"`` or ``"flat"`` (the input with W and C folded) when its column is
    ``run * t + o`` with the V columns from ``o mod run`` inside one aligned run of ``run``
    columns, consecutive elements of that view (the stem's 21 as 16 at 0 and 8 at 13;
    ``channels``: the input's C); else None.
    Runs are checked on every aligned run of K, at the first, a middle and the last row."""
    from ..affine.dialects.affine import AffineVectorLoadOp
    if not isinstance(access, AffineVectorLoadOp) or windows.num_dims != 2:
        return None
    v = access.vector_type.shape[-1]
    rows, k = access.memref.type.shape
    divisors = [_iv_divisor(x) for x in access.map_operands]
    column = access.map.results[-1]
    if _known_divisor(column, divisors) % v == 0 and runs_are_input_vectors(windows, rows, k, v):
        return "input"
    if run <= 1:
        return None
    step, offset = _known_divisor_and_offset(column, divisors)
    if step % run or offset % run + v > run:
        return None
    if runs_are_input_vectors(windows, rows, k, run):
        return "input"
    if runs_are_input_vectors(flat_windows(windows, channels), rows, k, run):
        return "flat"
    return None


def window_run(windows: AffineMap, rows: int, red: int, filter_shape,
               input_type: MemRefType) -> int:
    """The longest runs of im2col columns, aligned from column 0, that are consecutive input
    elements: a window row's ``kw * c`` (read through the input with W and C folded, where
    the window has no dilation along W and the input's W and C are contiguous: the 7x7
    stem's 21), else one window position's ``c`` channels, else 1."""
    kw, c = filter_shape[-3], filter_shape[-2]
    foldable = folds_width_and_channels(input_type)
    for r in (kw * c, c):
        if r > 1 and (runs_are_input_vectors(windows, rows, red, r) or
                      foldable and runs_are_input_vectors(flat_windows(windows, c), rows, red,
                                                          r)):
            return r
    return 1


def folds_width_and_channels(t: MemRefType) -> bool:
    """Can the input's W and C be seen as one dimension (``memref.collapse_shape``): are a
    pixel's channels contiguous and the pixels of a row one after the other?  Not in a view
    of some of the channels or of every other column."""
    from ..affine.dialects.memref import collapsed_type
    rank = t.rank
    try:
        collapsed_type(t, [[d] for d in range(rank - 2)] + [[rank - 2, rank - 1]])
    except ValueError:
        return False
    return True


def runs_are_input_vectors(windows: AffineMap, rows: int, k: int, v: int) -> bool:
    """Is every aligned run of ``v`` im2col columns (the last one possibly cut by K)
    consecutive elements of one input row?  Checked on every run, at the first, a middle and
    the last row."""
    for r in {0, rows // 2, rows - 1}:
        for q0 in range(0, k, v):
            first = windows.evaluate([r, q0])
            last = windows.evaluate([r, min(q0 + v, k) - 1])
            if tuple(first[:-1]) != tuple(last[:-1]) or \
                    last[-1] - first[-1] != min(q0 + v, k) - 1 - q0:
                return False
    return True


def _iv_divisor(x: Value) -> int:
    """A divisor of every value of ``x``: an ``affine.for`` induction variable from a constant
    ``lb`` by ``step`` is a multiple of gcd(lb, step), or is ``lb`` itself (0: a multiple of
    anything) when the loop runs once (a K_C block loop over a K of one block); anything
    else of 1."""
    import math
    from ..affine.dialects.affine import AffineForOp
    block = x.owner_block
    loop = block.parent_op if block is not None else None
    if isinstance(loop, AffineForOp) and x is loop.induction_var and \
            loop.lower_map.is_constant():
        lb = loop.lower_map.single_constant_result
        if _upper_bound(loop) is not None and _upper_bound(loop) <= lb + loop.step:
            return lb
        return math.gcd(lb, loop.step) or 1
    return 1


def _upper_bound(loop) -> Optional[int]:
    """The constant value of ``loop``'s upper bound (the least of its results) where its
    operands are constants, else None."""
    from ..affine.loop_utils import constant_index
    values = [constant_index(v) for v in loop.upper_operands]
    if any(v is None for v in values):
        return None
    amap = loop.upper_map
    dims, syms = values[:amap.num_dims], values[amap.num_dims:]
    return min(e.evaluate(dims, syms) for e in amap.results)


def _known_divisor(e: AffineExpr, dims: list) -> int:
    """A divisor of ``e``'s every value when dim ``i`` is a multiple of ``dims[i]`` (0 for the
    constant 0: a multiple of anything)."""
    import math
    return math.gcd(*_known_divisor_and_offset(e, dims))


def _known_divisor_and_offset(e: AffineExpr, dims: list) -> tuple[int, int]:
    """``(d, o)``: ``e - o`` is a multiple of ``d`` when dim ``i`` is a multiple of
    ``dims[i]``, ``o`` the constant term of a sum of multiples of dims (else ``(1, 0)``)."""
    import math
    from ..affine.affine_expr import AffineExprKind
    kind = e.kind
    if kind == AffineExprKind.CONSTANT:
        return 0, e.value
    if kind == AffineExprKind.DIM:
        return dims[e.position], 0
    if kind == AffineExprKind.ADD:
        (dl, ol), (dr, o_r) = (_known_divisor_and_offset(x, dims) for x in (e.lhs, e.rhs))
        return math.gcd(dl, dr), ol + o_r
    if kind == AffineExprKind.MUL:
        for x, c in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if c.kind == AffineExprKind.CONSTANT:
                d, o = _known_divisor_and_offset(x, dims)
                return d * abs(c.value), o * c.value
    return 1, 0


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
    whole_rows = dilations[-1] == 1 and kw > 1 and folds_width_and_channels(inp.type)
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


def _output_row_bytes(spec: ConvSpec) -> int:
    """The distance between rows of the NHWC (NWC) output seen as a matrix: its channels."""
    out = spec.output.type
    return out.shape[-1] * (out.element_type.width // 8)


def _register_rows(con: Contraction, machine) -> int:
    """The M_R the expansion will use (the tile attribute or the model's)."""
    from .blis_schedule import default_blis_params
    return default_blis_params(con.m, con.n, con.k, con.element_type.width // 8, machine,
                               dict(con.tile_params),
                               c_row_bytes=row_bytes(con.c.memref.type)).M_R


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


def expand_conv_tiled(op, expand_contraction, machine=None, tiles: Optional[dict] = None,
                      **options) -> None:
    """Expand ``op`` (a conv2d or conv1d op, or a :class:`ConvSpec`) as an implicit GEMM with
    ``expand_contraction`` (the BLIS pipeline's entry, given ``machine`` and the ``options``);
    ``tiles`` (BLIS parameters by attribute name, a pass's options) apply where the op has
    none of its own.  An op is erased; a spec's anchor is left for its producer to erase."""
    spec = op if isinstance(op, ConvSpec) else conv_spec(op)
    given = {**(tiles or {}), **spec.tile_params}
    if spec.layout == "nchw":
        _expand_nchw(spec, expand_contraction, machine, given, **options)
        if spec is not op:
            op.erase()
        return
    inp = spec.input
    kind = spec.kind
    out_shape, flt_shape = spec.output.type.shape, hwcf_shape(spec)
    rows_hw = tuple(out_shape[1:-1])
    kw, channels = flt_shape[-3] if kind == "conv2d" else flt_shape[0], flt_shape[-2]
    rows, red, _ = window_map(spec)
    strides, dilations = spec.strides, spec.dilations
    tiles = dict(given)
    if "K_C" not in tiles:
        tiles.update(_k_c_and_order(spec, rows, red, channels, tiles, machine,
                                    options.get("threads", 1)))
    con, stand_in, windows = conv_as_matmul(spec, tiles)
    if given:
        stand_in.attributes[STAND_IN_USER_TILES_ATTR] = UnitAttr()
    m_r = _register_rows(con, machine)
    expand_contraction(con, machine=machine, **options)
    if spec is not op:
        op.erase()
    split_im2col_copies(stand_in, kind, (rows_hw, (kw, channels)), strides, dilations, inp,
                        m_r=m_r)
    rewrite_stand_in(stand_in, inp, windows)


#: The most bytes of B's K_C x N_C block that :func:`conv_k_c` may raise K_C to fill (else
#: half of L2, whichever is less).  On an Emerald Rapids Xeon (2 MiB L2, 4x64 f32 tile,
#: GEPB), half of L2 let K_C be 1152, the whole reduction of 128 channels.  One thread, same
#: process, ``hopt-expand{kc=...}`` against that: conv3_x K_C 576 1.07x, 384 1.09x-1.10x;
#: conv3_1 3x3/2 576 1.03x, 384 1.11x; conv4_x (1152 of 2304) 768 1.04x, 576 1.04x-1.06x,
#: 384 1.06x-1.08x; conv2_x's whole 576 (147 KiB) stays ahead of 288 and 192 (0.85x).  With
#: this bound (conv3_x and conv3_1 576 with A read in place, conv4_x 768), over the old
#: choice: conv3_x 1.01x and 1.14x in two runs, conv3_1 1.09x, conv4_x 1.04x.  On Zen 4 (1
#: MiB L2: half of it is this bound) 384 was the best K_C of conv4_x too, and conv3_x ran
#: within 4% from 64 to 576 (see :func:`conv_k_c`).
CONV_B_BLOCK_BYTES = 256 * 1024


def _k_c_and_order(spec: ConvSpec, rows: int, red: int, channels: int, tiles: dict, machine,
                   threads: int) -> dict:
    """K_C and the loop order of an NHWC convolution's implicit GEMM (``rows`` x F x ``red``):
    the model's order (``l2_block``; a given K_C alone would mean GEBP, the paper's order)
    and K_C by :func:`conv_k_c` from the model's K_C, B's K_C x N_C block taking at most half
    of L2 and :data:`CONV_B_BLOCK_BYTES` (it is packed once per K_C block and read again for
    every M_C block of A).  A team
    runs GEPB with B as one block (N_C = N) where a K_C x N block takes at most half of L2,
    K_C lowered below the model's where that makes it fit (Zen 5's model K_C of 1152 for
    conv4_x, 384 on its team: 1.05x-1.26x over GEBP on two threads), so that the threads
    split the M_C blocks, each packing its own im2col'd A; otherwise
    GEBP: GEPB's team would split N, each thread then packing the whole of A (on two Zen 4
    threads, GFLOPS against GEBP's: split by N, conv3_x 0.86x and the strided conv3_1 0.55x;
    B as one block, conv2_x's 3x3 1.07x, conv3_x 1.03x, conv4_x 1.07x, the 1x1 256->64
    1.06x).  A short image, whose few rows one thread runs in GEBP's order
    (:func:`~polyopt.schedules.blis_parallel.split_short_a`), is the exception: its team
    splits N, each thread packing all of its little A and its own blocks of B."""
    from .blis_parallel import split_short_a
    from .blis_schedule import MachineModel, default_blis_params
    elem_bytes = spec.output.type.element_type.width // 8
    n = spec.output.type.shape[-1]
    budget = (machine or MachineModel()).l2_bytes / 2
    one_thread_budget = min(budget, CONV_B_BLOCK_BYTES)

    def model_for(given: dict):
        return default_blis_params(rows, n, red, elem_bytes, machine, {**tiles, **given},
                                   c_row_bytes=_output_row_bytes(spec))

    def k_c_of(model, n_c: int) -> int:
        return conv_k_c(channels, red, model.K_C, int(one_thread_budget / (n_c * elem_bytes)))

    model = model_for({})
    k_c, order = k_c_of(model, min(n, model.N_C or n)), model.l2_block
    if threads > 1 and order == "A" and model.register_form == "row" and \
            not {"l2_block", "M_C", "N_C"} & set(tiles):
        gepb = model_for({"l2_block": "B", "K_C": k_c})
        split = split_short_a(replace(model, K_C=k_c), gepb, rows, n, red, elem_bytes,
                              machine or MachineModel(), threads, tiles)
        if split is not None:
            return {"K_C": split.K_C, "l2_block": "B", "N_C": split.N_C, "M_C": split.M_C,
                    "M_R": split.M_R, "N_R": split.N_R}
    if threads > 1 and order == "B" and "l2_block" not in tiles:
        n_c = tiles.get("N_C")
        if n_c is None:
            # B as one block, in half of L2, even where that takes K_C below the model's
            # (whose deeper A micro-panel is for one thread's N_C block)
            cap = int(budget / (n * elem_bytes))
            whole = conv_k_c(channels, red, max(8, min(model.K_C, cap)), cap)
            if whole * n * elem_bytes <= budget:
                return {"K_C": whole, "l2_block": "B", "N_C": n}
            n_c = model_for({"K_C": k_c, "l2_block": "B"}).N_C
        if n_c < n:
            gebp = model_for({"l2_block": "A"})
            k_c, order = k_c_of(gebp, min(n, gebp.N_C or n)), "A"
    return {"K_C": k_c, "l2_block": tiles.get("l2_block", order)}


def _expand_nchw(spec: ConvSpec, expand_contraction, machine, tiles: dict,
                 **options) -> None:
    """The NCHW implicit GEMM (:func:`nchw_conv_as_matmul`) through ``expand_contraction``;
    the B packing nests of the stand-in become im2col copies of the image."""
    from .delinearize_copy import delinearize_copy_loop
    con, stand_in, windows = nchw_conv_as_matmul(spec, tiles)
    expand_contraction(con, machine=machine, **options)
    rewrite_stand_in(stand_in, spec.input, windows)
    # the im2col copies: runs along the output's rows instead of a division per element
    for use in list(spec.input.uses):
        if use.op.name == "affine.load":
            delinearize_copy_loop(use.op.parent_op)
