"""The plain loop nests of the convolution ops (MLIR's ``-convert-linalg-to-affine-loops`` for
``linalg.conv_2d_nhwc_hwcf``, ``linalg.conv_1d_nwc_wcf``, ``linalg.depthwise_conv_2d_nhwc_hwc``,
and the naive expansion of ``hop.conv2d``), and the vectorization of the depthwise nest.

Every op with a ``CONV_KIND`` (``"conv2d"``, ``"conv1d"``, ``"depthwise2d"``) and the accessors
``input``/``filter``/``output``/``strides``/``dilations`` expands the same way: one perfect nest
over the output and the filter window, no padding, O += I * K::

    linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<2> : tensor<2xi64>}
        ins(%I, %K : memref<1x9x9x12xf32>, memref<3x3x12xf32>) outs(%O : memref<1x4x4x12xf32>)
  becomes
    affine.for %n = 0 to 1 {
     affine.for %oh = 0 to 4 {
      affine.for %ow = 0 to 4 {
       affine.for %kh = 0 to 3 {
        affine.for %kw = 0 to 3 {
         affine.for %c = 0 to 12 {
          %i = affine.load %I[%n, %oh * 2 + %kh, %ow * 2 + %kw, %c]
          %k = affine.load %K[%kh, %kw, %c]
          %o = affine.load %O[%n, %oh, %ow, %c]
          affine.store (%o + %i * %k), %O[%n, %oh, %ow, %c]
    }}}}}}

Loop orders (outermost first): conv2d (n, oh, ow, f, kh, kw, c), the order ``hop.conv2d`` always had
in :mod:`polyopt.schedules.expand`; conv1d (n, ow, f, kw, c); depthwise2d (n, oh, ow, kh, kw, c):
the channel loop innermost, where every access is contiguous, so that
:func:`vectorize_depthwise` can vectorize it.
"""

from __future__ import annotations

from ..affine.affine_expr import AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.ir import Operation
from .nest_building import constant_loops, mul_add

__all__ = ["CONV_LOOP_ORDERS", "expand_conv_naive", "vectorize_depthwise"]

#: The loops :func:`expand_conv_naive` creates for each ``CONV_KIND``, outermost first.
CONV_LOOP_ORDERS = {
    "conv2d": ("n", "oh", "ow", "f", "kh", "kw", "c"),
    "conv1d": ("n", "ow", "f", "kw", "c"),
    "depthwise2d": ("n", "oh", "ow", "kh", "kw", "c"),
}


def _extents(kind: str, op: Operation) -> dict[str, int]:
    """The trip count of every loop of the nest, by loop name."""
    kt, ot = op.filter.type, op.output.type
    if kind == "conv2d":
        n, oh, ow, f = ot.shape
        kh, kw, c, _ = kt.shape
        return dict(n=n, oh=oh, ow=ow, f=f, kh=kh, kw=kw, c=c)
    if kind == "conv1d":
        n, ow, f = ot.shape
        kw, c, _ = kt.shape
        return dict(n=n, ow=ow, f=f, kw=kw, c=c)
    n, oh, ow, c = ot.shape
    kh, kw, _ = kt.shape
    return dict(n=n, oh=oh, ow=ow, kh=kh, kw=kw, c=c)


def _subscripts(kind: str, strides, dilations, pos: dict[str, int]):
    """(input map, filter dims, output dims) over the loop IVs in nest order (``pos`` gives the
    dim position of each loop)."""
    d = {name: dim(p) for name, p in pos.items()}
    if kind == "conv1d":
        (sw,), (dw,) = strides, dilations
        inp = (d["n"], d["ow"] * sw + d["kw"] * dw, d["c"])
        return inp, ("kw", "c", "f"), ("n", "ow", "f")
    (sh, sw), (dh, dw) = strides, dilations
    inp = (d["n"], d["oh"] * sh + d["kh"] * dh, d["ow"] * sw + d["kw"] * dw, d["c"])
    if kind == "conv2d":
        return inp, ("kh", "kw", "c", "f"), ("n", "oh", "ow", "f")
    return inp, ("kh", "kw", "c"), ("n", "oh", "ow", "c")


def expand_conv_naive(op: Operation) -> list[AffineForOp]:
    """Replace the convolution ``op`` (``linalg.conv_2d_nhwc_hwcf``, ``linalg.conv_1d_nwc_wcf``,
    ``linalg.depthwise_conv_2d_nhwc_hwc`` or ``hop.conv2d``) by its plain loop nest; returns the
    loops, outermost first, in the order of :data:`CONV_LOOP_ORDERS` for the op's
    ``CONV_KIND``.

    Precondition: ``op`` verifies (static shapes that agree; see ``verify_conv_shapes``).  The
    nest sits where ``op`` was; ``op`` is erased.  Tile attributes of ``hop.conv2d`` are ignored
    (this is the untiled nest)::

        linalg.conv_1d_nwc_wcf ins(%I, %K : memref<2x9x3xf64>, memref<3x3x5xf64>)
                               outs(%O : memref<2x7x5xf64>)
      ->
        affine.for %n = 0 to 2 { affine.for %ow = 0 to 7 { affine.for %f = 0 to 5 {
          affine.for %kw = 0 to 3 { affine.for %c = 0 to 3 {
            O[%n, %ow, %f] += I[%n, %ow + %kw, %c] * K[%kw, %c, %f] }}}}}
    """
    kind = getattr(op, "CONV_KIND", None)
    if kind not in CONV_LOOP_ORDERS:
        raise TypeError(f"expand_conv_naive expects a convolution op (linalg.conv_2d_nhwc_hwcf, "
                        f"linalg.conv_1d_nwc_wcf, linalg.depthwise_conv_2d_nhwc_hwc, hop.conv2d),"
                        f" got '{getattr(op, 'name', op)}'")
    order = CONV_LOOP_ORDERS[kind]
    extents = _extents(kind, op)
    loc = op.loc
    loops, body = constant_loops(Builder.before(op), [extents[k] for k in order], loc)
    ivs = {name: loop.induction_var for name, loop in zip(order, loops)}
    inp_exprs, flt_names, out_names = _subscripts(kind, op.strides, op.dilations,
                                                  {name: k for k, name in enumerate(order)})
    in_map = AffineMap.get(len(order), 0, inp_exprs)
    iv = body.create(AffineLoadOp, op.input, [ivs[k] for k in order], map=in_map,
                     loc=loc).result
    kv = body.create(AffineLoadOp, op.filter, [ivs[k] for k in flt_names], loc=loc).result
    out_ivs = [ivs[k] for k in out_names]
    ov = body.create(AffineLoadOp, op.output, out_ivs, loc=loc).result
    etype = op.output.type.element_type
    if op.input.type.element_type != etype:     # bf16 x bf16 -> f32, i8 x i8 -> i32
        from ..affine.dialects.linalg import build_cast
        iv = build_cast(body, iv, etype, False, loc)
        kv = build_cast(body, kv, etype, False, loc)
    body.create(AffineStoreOp, mul_add(body, iv, kv, ov, loc), op.output, out_ivs, loc=loc)
    op.erase()
    return loops


def vectorize_depthwise(loops: list[AffineForOp], width: int, *, fma: bool = False
                        ) -> AffineForOp:
    """Vectorize the channel loop of a depthwise nest from :func:`expand_conv_naive` by
    ``width`` lanes (:func:`polyopt.affine.vectorize.vectorize_loop`, legality proven with ISL
    by :func:`polyopt.schedules.vector_legality.check_parallel`); returns the vector loop.

    Arguments:
        loops: the loops :func:`expand_conv_naive` returned for a
            ``linalg.depthwise_conv_2d_nhwc_hwc`` (n, oh, ow, kh, kw, c), untransformed.
        width: the number of lanes, e.g. ``host_target().vector_width(32)`` for f32.
        fma: as in ``vectorize_loop`` (by default LLVM contracts ``mulf`` + ``addf``).

    Every access is contiguous along c (``I[.., c]``, ``K[kh, kw, c]``, ``O[.., c]``), so each
    becomes an ``affine.vector_load``/``vector_store``.  When ``width`` does not divide C the
    vector loop covers ``C - C mod width`` channels and a scalar loop the rest; when C < width
    nothing changes::

        affine.for %c = 0 to 12 { O[.., %c] += I[.., %c] * K[%kh, %kw, %c] }
      -> (width 8)
        affine.for %c = 0 to 8 step 8 { vector<8xf32> O[.., %c] += I[.., %c] * K[.., %c] }
        affine.for %c = 8 to 12 { O[.., %c] += I[.., %c] * K[%kh, %kw, %c] }

    Raises :class:`~polyopt.affine.diagnostics.ScheduleError` (nothing changed) when the nest
    cannot be vectorized (e.g. a memref whose last dimension is not contiguous).
    """
    from ..affine.vectorize import vectorize_loop
    from .vector_legality import check_parallel
    if len(loops) != len(CONV_LOOP_ORDERS["depthwise2d"]) or \
            not all(isinstance(loop, AffineForOp) for loop in loops):
        raise ValueError(f"vectorize_depthwise expects the 6 loops (n, oh, ow, kh, kw, c) of "
                         f"expand_conv_naive on a depthwise convolution, got {len(loops)} "
                         f"loop(s)")
    c_loop = loops[-1]
    if c_loop.parent_op is not loops[-2]:
        raise ValueError("vectorize_depthwise: the channel loop is not directly inside the kw "
                         "loop (the nest was transformed)")
    return vectorize_loop(c_loop, width, check=check_parallel, fma=fma)
