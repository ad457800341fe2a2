"""``linalg.depthwise_conv_2d_nhwc_hwc`` (channels last, TensorFlow's and PyTorch's
``channels_last`` depthwise layout) as a register-blocked vector nest (``--hopt
--hopt-vect``).

In NHWC the channels are contiguous, in the input, the ``KH x KW x C`` filter and the output
alike: a vector of ``W`` channels is one load everywhere.  Per output row and group of ``W``
channels, the ``KH x KW`` filter vectors are loaded once and held in registers, and ``U``
consecutive output pixels are accumulated at a time (``U`` vector accumulators; an input
vector per tap and pixel, one FMA each)::

    for n, oh, c in 0..C step W:
      f[a][b] = F[a, b, c:c+W]                        (KH x KW registers)
      for ow in 0..OW step U:
        acc[u] = O[n, oh, ow + u, c:c+W]              (U registers)
        acc[u] += I[n, oh*sh + a*dh, (ow + u)*sw + b*dw, c:c+W] * f[a][b]   for a, b, u
        O[n, oh, ow + u, c:c+W] = acc[u]

The last ``OW mod U`` pixels are one smaller block, the last ``C mod W`` channels masked
vectors; the output rows run on the team.  Each output element's sum keeps the op's order
(the initial output, then the taps ``kh``-major), ``mulf``/``addf`` contracted into FMAs as
everywhere in polyopt.  The naive nest with its channel loop vectorized (the fallback) loads
and stores the output at every tap: three loads and a store per FMA.

MLIR's counterpart is ``linalg::vectorizeConvolution``'s depthwise path (``ow`` unrolled,
channels vectorized) after tiling; oneDNN's is its ``jit:avx512_core`` depthwise kernel
(``ur_w`` pixels per step).
"""

from __future__ import annotations

from typing import Optional

from ..affine.types import FloatType, MemRefType
from .depthwise_epilogue import EpilogueStores, depthwise_epilogue, replace_by_template
from .gemv import MlirLines

#: Output rows (all images) from which the rows run on the team.
PARALLEL_MIN_ELEMENTS = 32 * 1024


def operand_refusal(op) -> Optional[str]:
    """Why the operands of the depthwise convolution ``op`` do not suit a vector template
    (this module's or :mod:`~polyopt.schedules.depthwise_nchw`'s), or None."""
    types = [v.type for v in op.operands]
    if not all(isinstance(t, MemRefType) and t.has_static_shape and t.layout is None
               for t in types):
        return "its operands are not row-major memrefs of static shapes"
    et = types[2].element_type
    if not (isinstance(et, FloatType) and et.width in (32, 64) and not et.brain
            and all(t.element_type == et for t in types)):
        return "its elements are not all f32 or all f64"
    if any(0 in t.shape for t in types):
        return "it has no elements"
    return None


def nhwc_refusal(op) -> Optional[str]:
    """Why ``op`` (a ``depthwise2d`` convolution) does not take the blocked nest, or None."""
    return operand_refusal(op)


def channel_lanes(c: int, lanes: int) -> int:
    """The vector width for ``c`` channels: the target's, or for fewer channels the narrowest
    (at least 4 lanes) holding them."""
    w = lanes
    while w > 4 and w // 2 >= c:
        w //= 2
    return w


def pixels_per_step(taps: int, registers: int) -> int:
    """``U``: accumulators next to the ``taps`` filter vectors and an input vector, 2 to 8."""
    return max(2, min(8, registers - taps - 2))


def nhwc_source(n: int, ih: int, iw: int, c: int, kh: int, kw: int, oh: int, ow: int,
                strides: tuple[int, int], dilations: tuple[int, int], etype: str, lanes: int,
                pixels: int, parallel: bool, stores=None) -> str:
    """``func.func @dw(%I, %F, %O)`` (see the module docstring); ``stores``
    (:class:`~polyopt.schedules.depthwise_epilogue.EpilogueStores`) writes the output's
    stores (through a fused epilogue, whose operands follow ``%O``)."""
    (sh, sw), (dh, dw) = strides, dilations
    w = channel_lanes(c, lanes)
    ti, tf, to = (f"memref<{n}x{ih}x{iw}x{c}x{etype}>", f"memref<{kh}x{kw}x{c}x{etype}>",
                  f"memref<{n}x{oh}x{ow}x{c}x{etype}>")
    vt, mk = f"vector<{w}x{etype}>", f"vector<{w}xi1>"
    c_vec = c - c % w
    u_all = ow - ow % pixels
    hoist = kh * kw <= 16       # more taps than registers: each filter vector loaded at its use
    stores = stores or EpilogueStores(None, to, w)
    t = MlirLines()
    t.add(0, f"func.func @dw(%I: {ti}, %F: {tf}, %O: {to}{stores.signature()}) {{")
    t.add(1, f"%zero = arith.constant dense<0.0> : {vt}")
    if c > c_vec:
        t.add(1, f"%cmask = vector.constant_mask [{c - c_vec}] : {mk}")
        t.add(1, f"%ctail = arith.constant {c_vec} : index")
    t.add(1, f"affine.for %n = 0 to {n} {{")
    t.add(2, f"affine.parallel (%oh) = (0) to ({oh}) {{" if parallel else
          f"affine.for %oh = 0 to {oh} {{")

    def access(memref: str, mt: str, index: str, masked: bool, value: str = None) -> str:
        """A vector of ``memref`` at ``index`` (its channel subscript last), or the store of
        ``value`` there."""
        if masked:
            if value is not None:
                t.add(5, f"vector.maskedstore {memref}[{index}], %cmask, {value} : {mt}, {mk}, "
                         f"{vt}")
                return value
            v = t.fresh("v")
            t.add(5, f"{v} = vector.maskedload {memref}[{index}], %cmask, %zero : {mt}, {mk}, "
                     f"{vt} into {vt}")
            return v
        if value is not None:
            t.add(5, f"affine.vector_store {value}, {memref}[{index}] : {mt}, {vt}")
            return value
        v = t.fresh("v")
        t.add(5, f"{v} = affine.vector_load {memref}[{index}] : {mt}, {vt}")
        return v

    def channel_group(depth: int, cidx: str, masked: bool) -> None:
        """The output row %oh for channels ``cidx`` .. + W (``%ctail`` and masked: the last
        ones)."""
        def index_values(exprs: list[str]) -> str:
            """Subscripts as SSA values where masked ops need them (no affine maps there)."""
            if not masked:
                return ", ".join(exprs + [cidx])
            names = []
            for e in exprs:
                if e.lstrip("-").isdigit():
                    name = t.fresh("k")
                    t.add(5, f"{name} = arith.constant {e} : index")
                elif e in ("%n", "%oh", "%p"):
                    name = e
                else:
                    name = t.fresh("x")
                    dims = [d for d in ("%n", "%oh", "%p") if d in e]
                    body = e
                    for k, d in enumerate(dims):
                        body = body.replace(d, f"d{k}")
                    ds = ", ".join(f"d{k}" for k in range(len(dims)))
                    t.add(5, f"{name} = affine.apply affine_map<({ds}) -> ({body})>"
                             f"({', '.join(dims)})")
                names.append(name)
            return ", ".join(names + [cidx])

        taps = {}

        def tap(a: int, b: int) -> str:
            if (a, b) not in taps or not hoist:
                taps[a, b] = access("%F", tf, index_values([str(a), str(b)]), masked)
            return taps[a, b]
        if hoist:
            for a in range(kh):
                for b in range(kw):
                    tap(a, b)
        # the epilogue's per-channel operands (a bias), once per row and channel group
        stores.hoist(t, 5, ["%n", "%oh", "", cidx], (0, 1, 3),
                     (["%n", "%oh", "", cidx], "%cmask") if masked else None)

        def pixels_block(start: str, count: int) -> None:
            """Output pixels ``start`` .. ``start + count - 1`` of the row (``start`` uses %p
            in the loop over blocks)."""
            def col(u: int) -> str:
                return f"{start} + {u}" if u else start
            accs = [access("%O", to, index_values(["%n", "%oh", col(u)]), masked)
                    for u in range(count)]
            for a in range(kh):
                row = f"%oh * {sh} + {a * dh}" if a * dh else f"%oh * {sh}"
                for b in range(kw):
                    f = tap(a, b)
                    for u in range(count):
                        x = f"({col(u)}) * {sw} + {b * dw}" if b * dw else f"({col(u)}) * {sw}"
                        v = access("%I", ti, index_values(["%n", row, x]), masked)
                        p, s = t.fresh("p"), t.fresh("s")
                        t.add(5, f"{p} = arith.mulf {v}, {f} : {vt}")
                        t.add(5, f"{s} = arith.addf {accs[u]}, {p} : {vt}")
                        accs[u] = s
            for u in range(count):
                ssa = (index_values(["%n", "%oh", col(u)]).split(", "), "%cmask") if masked \
                    else None
                stores.store(t, 5, accs[u], ["%n", "%oh", col(u), cidx], ssa)

        if u_all:
            t.add(depth, f"affine.for %p = 0 to {u_all} step {pixels} {{")
            pixels_block("%p", pixels)
            t.add(depth, "}")
        if ow > u_all:
            pixels_block(str(u_all), ow - u_all)

    if c_vec:
        t.add(3, f"affine.for %c = 0 to {c_vec} step {w} {{")
        channel_group(4, "%c", False)
        t.add(3, "}")
    if c > c_vec:
        channel_group(3, "%ctail", True)
    t.add(2, "}")
    t.add(1, "}")
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def expand_depthwise_nhwc(op, lanes: int, registers: int, remark=None,
                          threads: int = 1) -> bool:
    """Replace ``op`` by :func:`nhwc_source`'s nest in front of it; False (nothing changed)
    where :func:`nhwc_refusal` gives a reason."""
    if nhwc_refusal(op) is not None:
        return False
    (n, ih, iw, c), (kh, kw, _), (_, oh, ow, _) = (v.type.shape for v in op.operands)
    et = op.output.type.element_type
    pixels = pixels_per_step(kh * kw if kh * kw <= 16 else 1, registers)
    parallel = threads > 1 and oh >= 2 and n * oh * ow * c >= PARALLEL_MIN_ELEMENTS
    epilogue = depthwise_epilogue(op, remark)
    stores = EpilogueStores(epilogue, op.output.type, channel_lanes(c, lanes))
    text = nhwc_source(n, ih, iw, c, kh, kw, oh, ow, tuple(op.strides), tuple(op.dilations),
                       str(et), lanes, pixels, parallel, stores)
    replace_by_template(op, text, stores, remark)
    if remark is not None:
        how = f", the output rows on {threads} threads" if parallel else ""
        remark(op.loc, f"{op.name}: channels as vectors of {channel_lanes(c, lanes)} {et}, the "
                       f"{kh}x{kw} filter vectors held per row and channel group, {pixels} "
                       f"output pixels at a time{how}")
    return True
