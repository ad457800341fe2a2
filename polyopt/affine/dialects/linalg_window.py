"""linalg's sliding-window named ops on memrefs that the BLIS pipeline does not take: the
convolutions ``linalg.conv_2d_nchw_fchw``, ``linalg.conv_2d_nhwc_fhwc``, the grouped
``linalg.conv_2d_ngchw_fgchw``, the depthwise ``linalg.depthwise_conv_2d_nchw_chw`` and
``linalg.depthwise_conv_2d_nhwc_hwcm`` (a channel multiplier), the quantized
``linalg.conv_2d_nhwc_hwcf_q``, ``linalg.conv_2d_nchw_fchw_q`` and
``linalg.depthwise_conv_2d_nhwc_hwc_q`` (``O += (I - izp) * (K - kzp)``, the zero points two
scalar inputs after the filter), the 1-D and 3-D windows and the plain ``conv_1d/2d/3d`` of
:data:`_MORE_WINDOWS` (strides and dilations of their own rank; none for the plain ones), the
poolings
``linalg.pooling_nhwc_sum/max/min/max_unsigned/min_unsigned`` and
``linalg.pooling_nchw_sum/max``, and ``linalg.batch_matvec``.  They lower to naive affine
nests (:mod:`polyopt.affine.linalg_to_affine`), in MLIR's loop order::

    conv_2d_nchw_fchw (n, f, oh, ow, c, kh, kw):
        O[n, f, oh, ow] += I[n, c, oh*sh + kh*dh, ow*sw + kw*dw] * K[f, c, kh, kw]
    conv_2d_nhwc_fhwc (n, oh, ow, f, kh, kw, c):
        O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[f, kh, kw, c]
    conv_2d_ngchw_fgchw (n, g, f, oh, ow, c, kh, kw):
        O[n, g, f, oh, ow] += I[n, g, c, oh*sh + kh*dh, ow*sw + kw*dw] * K[f, g, c, kh, kw]
    depthwise_conv_2d_nchw_chw (n, oh, ow, c, kh, kw):
        O[n, c, oh, ow] += I[n, c, oh*sh + kh*dh, ow*sw + kw*dw] * K[c, kh, kw]
    depthwise_conv_2d_nhwc_hwcm (n, oh, ow, c, m, kh, kw):
        O[n, oh, ow, c, m] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, m]
    pooling_nhwc_<r> (n, oh, ow, c, kh, kw):
        O[n, oh, ow, c] = r(O[n, oh, ow, c], I[n, oh*sh + kh*dh, ow*sw + kw*dw, c])
    pooling_nchw_<r> (n, c, oh, ow, kh, kw):
        O[n, c, oh, ow] = r(O[n, c, oh, ow], I[n, c, oh*sh + kh*dh, ow*sw + kw*dw])
    batch_matvec (b, i, k):  y[b, i] += A[b, i, k] * x[b, k]

The pooling's second input (``W``, of shape ``KHxKW``) only gives the window's extent.  Inputs
are cast to the output's element type with the signed casts (the unsigned ones for the
``_unsigned`` poolings); ``r`` is ``addf``/``addi`` (sum), ``maximumf``/``maxsi`` (max),
``minimumf``/``minsi`` (min), ``maxui``/``minui``.  ``strides``/``dilations``
(``dense<..> : tensor<2xi64>``) default to 1 and print only when written, sorted in the
attribute dictionary before ``ins``, as mlir-opt-22 prints them.  Shapes are checked by
MLIR's structured-op verifier (``inferred input/output operand #2 has shape's dimension #1 to
be 8, but found 4``)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from ..affine_expr import AffineMap, dim
from ..attributes import DenseElementsAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Value, register_op
from ..types import FloatType, i64
from .linalg import (TENSOR_MESSAGE, _custom_error, _element_type, _NamedOp, _segment_sizes,
                     _strip, binary_error, build_add, build_cast, build_mul, build_sub,
                     cast_op_name)
from .linalg_elementwise import _parse_named_body
from .linalg_named import _ContractionOp, _dense_i64, _maps

__all__ = ["WINDOW_OPS", "LinalgWindowOp", "BatchMatvecOp", "LINALG_WINDOW_OPS"]


def _conv_nchw_fchw(s, d):
    e = dim
    return (AffineMap.get(7, 0, (e(0), e(4), e(2) * s[0] + e(5) * d[0], e(3) * s[1] + e(6) * d[1])),
            AffineMap.get(7, 0, (e(1), e(4), e(5), e(6))),
            AffineMap.get(7, 0, (e(0), e(1), e(2), e(3))))


def _conv_nhwc_fhwc(s, d):
    e = dim
    return (AffineMap.get(7, 0, (e(0), e(1) * s[0] + e(4) * d[0], e(2) * s[1] + e(5) * d[1], e(6))),
            AffineMap.get(7, 0, (e(3), e(4), e(5), e(6))),
            AffineMap.get(7, 0, (e(0), e(1), e(2), e(3))))


def _pool_nhwc(s, d):
    e = dim
    return (AffineMap.get(6, 0, (e(0), e(1) * s[0] + e(4) * d[0], e(2) * s[1] + e(5) * d[1], e(3))),
            AffineMap.get(6, 0, (e(4), e(5))),
            AffineMap.get(6, 0, (e(0), e(1), e(2), e(3))))


def _pool_nchw(s, d):
    e = dim
    return (AffineMap.get(6, 0, (e(0), e(1), e(2) * s[0] + e(4) * d[0], e(3) * s[1] + e(5) * d[1])),
            AffineMap.get(6, 0, (e(4), e(5))),
            AffineMap.get(6, 0, (e(0), e(1), e(2), e(3))))


def _depthwise_nchw_chw(s, d):
    e = dim
    return (AffineMap.get(6, 0, (e(0), e(3), e(1) * s[0] + e(4) * d[0], e(2) * s[1] + e(5) * d[1])),
            AffineMap.get(6, 0, (e(3), e(4), e(5))),
            AffineMap.get(6, 0, (e(0), e(3), e(1), e(2))))


def _depthwise_nhwc_hwcm(s, d):
    e = dim
    return (AffineMap.get(7, 0, (e(0), e(1) * s[0] + e(5) * d[0], e(2) * s[1] + e(6) * d[1], e(3))),
            AffineMap.get(7, 0, (e(5), e(6), e(3), e(4))),
            AffineMap.get(7, 0, (e(0), e(1), e(2), e(3), e(4))))


def _conv_ngchw_fgchw(s, d):
    e = dim
    return (AffineMap.get(8, 0, (e(0), e(1), e(5), e(3) * s[0] + e(6) * d[0],
                                 e(4) * s[1] + e(7) * d[1])),
            AffineMap.get(8, 0, (e(2), e(1), e(5), e(6), e(7))),
            AffineMap.get(8, 0, (e(0), e(1), e(2), e(3), e(4))))


def _with_zero_points(maps_fn):
    """The maps of a quantized convolution: the plain one's, with the two zero points' (no
    results) between the filter's and the output's."""
    def maps(s, d):
        i, k, o = maps_fn(s, d)
        none = AffineMap.get(i.num_dims, 0, ())
        return i, k, none, none, o
    return maps


def _conv_nhwc_hwcf(s, d):
    from .linalg_named import conv_indexing_maps
    return conv_indexing_maps("conv2d", s, d)


def _depthwise_nhwc_hwc(s, d):
    from .linalg_named import conv_indexing_maps
    return conv_indexing_maps("depthwise2d", s, d)


def _spec(loops: str, *operands: str):
    """The maps of a window op written as its loops and each operand's subscripts: a loop
    name, or ``o+k`` for the window pair of spatial dimension ``#`` in order (``o * s + k *
    d``): ``_spec("n f ow c kw", "n c ow+kw", "f c kw", "n f ow")``."""
    names = loops.split()
    pos = {n: k for k, n in enumerate(names)}

    def maps(s, d):
        out = []
        for subs in operands:
            exprs, pair = [], 0
            for sub in subs.split():
                if "+" in sub:
                    o, k = sub.split("+")
                    st, di = (s[pair], d[pair]) if s else (1, 1)
                    exprs.append(dim(pos[o]) * st + dim(pos[k]) * di)
                    pair += 1
                else:
                    exprs.append(dim(pos[sub]))
            out.append(AffineMap.get(len(names), 0, tuple(exprs)))
        return tuple(out)
    return maps


def _iterators(maps_fn, rank: int) -> tuple[str, ...]:
    """Parallel for the output's loops, reduction for the others."""
    maps = maps_fn((1,) * rank, (1,) * rank)
    out = {e.position for e in maps[-1].results if hasattr(e, "position")}
    return tuple("parallel" if k in out else "reduction" for k in range(maps[0].num_dims))


#: The 1-D, 3-D and plain (no batch, no channels, no strides) windows, as ``_spec``s:
#: op name -> (spatial rank of strides/dilations, 0: none; spec; payload)
_MORE_WINDOWS = {
    "linalg.conv_1d_ncw_fcw": (1, _spec("n f ow c kw", "n c ow+kw", "f c kw", "n f ow"), "conv"),
    "linalg.depthwise_conv_1d_nwc_wc": (1, _spec("n ow c kw", "n ow+kw c", "kw c", "n ow c"),
                                        "conv"),
    "linalg.depthwise_conv_1d_ncw_cw": (1, _spec("n ow c kw", "n c ow+kw", "c kw", "n c ow"),
                                        "conv"),
    "linalg.conv_3d_ndhwc_dhwcf": (3, _spec("n od oh ow f kd kh kw c",
                                            "n od+kd oh+kh ow+kw c", "kd kh kw c f",
                                            "n od oh ow f"), "conv"),
    "linalg.conv_3d_ncdhw_fcdhw": (3, _spec("n f od oh ow c kd kh kw",
                                            "n c od+kd oh+kh ow+kw", "f c kd kh kw",
                                            "n f od oh ow"), "conv"),
    "linalg.depthwise_conv_3d_ndhwc_dhwc": (3, _spec("n od oh ow kd kh kw c",
                                                     "n od+kd oh+kh ow+kw c", "kd kh kw c",
                                                     "n od oh ow c"), "conv"),
    "linalg.depthwise_conv_1d_nwc_wcm": (1, _spec("n ow c m kw", "n ow+kw c", "kw c m",
                                                  "n ow c m"), "conv"),
    "linalg.depthwise_conv_3d_ndhwc_dhwcm": (3, _spec("n od oh ow m kd kh kw c",
                                                      "n od+kd oh+kh ow+kw c", "kd kh kw c m",
                                                      "n od oh ow c m"), "conv"),
    "linalg.conv_2d_nhwgc_gfhwc": (2, _spec("n oh ow g f kh kw c", "n oh+kh ow+kw g c",
                                            "g f kh kw c", "n oh ow g f"), "conv"),
    "linalg.conv_2d_ngchw_gfchw": (2, _spec("n g f oh ow c kh kw", "n g c oh+kh ow+kw",
                                            "g f c kh kw", "n g f oh ow"), "conv"),
    "linalg.conv_2d_nhwgc_gfhwc_q": (2, _spec("n oh ow g f kh kw c", "n oh+kh ow+kw g c",
                                              "g f kh kw c", "n oh ow g f"), "conv_q"),
    "linalg.conv_2d_ngchw_gfchw_q": (2, _spec("n g f oh ow c kh kw", "n g c oh+kh ow+kw",
                                              "g f c kh kw", "n g f oh ow"), "conv_q"),
    "linalg.depthwise_conv_2d_nhwc_hwcm_q": (2, _spec("n oh ow c m kh kw", "n oh+kh ow+kw c",
                                                      "kh kw c m", "n oh ow c m"), "conv_q"),
    "linalg.conv_3d_ndhwc_dhwcf_q": (3, _spec("n od oh ow f kd kh kw c",
                                              "n od+kd oh+kh ow+kw c", "kd kh kw c f",
                                              "n od oh ow f"), "conv_q"),
    "linalg.conv_1d": (0, _spec("ow kw", "ow+kw", "kw", "ow"), "conv"),
    "linalg.conv_2d": (0, _spec("oh ow kh kw", "oh+kh ow+kw", "kh kw", "oh ow"), "conv"),
    "linalg.conv_3d": (0, _spec("od oh ow kd kh kw", "od+kd oh+kh ow+kw", "kd kh kw",
                                "od oh ow"), "conv"),
    **{f"linalg.pooling_nwc_{r}": (1, _spec("n ow c kw", "n ow+kw c", "kw", "n ow c"), r)
       for r in ("sum", "max", "min", "max_unsigned", "min_unsigned")},
    **{f"linalg.pooling_ncw_{r}": (1, _spec("n c ow kw", "n c ow+kw", "kw", "n c ow"), r)
       for r in ("sum", "max")},
    **{f"linalg.pooling_ndhwc_{r}": (3, _spec("n od oh ow c kd kh kw", "n od+kd oh+kh ow+kw c",
                                              "kd kh kw", "n od oh ow c"), r)
       for r in ("sum", "max", "min")},
}


_CONV_ITERS = ("parallel",) * 4 + ("reduction",) * 3
_POOL_ITERS = ("parallel",) * 4 + ("reduction",) * 2

#: op name -> (maps(strides, dilations), iterator types, payload: "conv" or the reduction)
WINDOW_OPS: dict[str, tuple[Callable, tuple[str, ...], str]] = {
    "linalg.conv_2d_nchw_fchw": (_conv_nchw_fchw, _CONV_ITERS, "conv"),
    "linalg.conv_2d_nhwc_fhwc": (_conv_nhwc_fhwc, _CONV_ITERS, "conv"),
    "linalg.conv_2d_ngchw_fgchw": (_conv_ngchw_fgchw, ("parallel",) * 5 + ("reduction",) * 3,
                                   "conv"),
    "linalg.depthwise_conv_2d_nchw_chw": (_depthwise_nchw_chw, _POOL_ITERS, "conv"),
    "linalg.depthwise_conv_2d_nhwc_hwcm": (_depthwise_nhwc_hwcm,
                                           ("parallel",) * 5 + ("reduction",) * 2, "conv"),
    "linalg.conv_2d_nhwc_hwcf_q": (_with_zero_points(_conv_nhwc_hwcf), _CONV_ITERS, "conv_q"),
    "linalg.conv_2d_nchw_fchw_q": (_with_zero_points(_conv_nchw_fchw), _CONV_ITERS, "conv_q"),
    "linalg.depthwise_conv_2d_nhwc_hwc_q": (_with_zero_points(_depthwise_nhwc_hwc),
                                            _POOL_ITERS, "conv_q"),
    "linalg.pooling_nhwc_sum": (_pool_nhwc, _POOL_ITERS, "sum"),
    "linalg.pooling_nhwc_max": (_pool_nhwc, _POOL_ITERS, "max"),
    "linalg.pooling_nhwc_min": (_pool_nhwc, _POOL_ITERS, "min"),
    "linalg.pooling_nhwc_max_unsigned": (_pool_nhwc, _POOL_ITERS, "max_unsigned"),
    "linalg.pooling_nhwc_min_unsigned": (_pool_nhwc, _POOL_ITERS, "min_unsigned"),
    "linalg.pooling_nchw_sum": (_pool_nchw, _POOL_ITERS, "sum"),
    "linalg.pooling_nchw_max": (_pool_nchw, _POOL_ITERS, "max"),
}

WINDOW_OPS.update({name: (_with_zero_points(maps) if kind == "conv_q" else maps,
                          _iterators(maps, rank), kind)
                   for name, (rank, maps, kind) in _MORE_WINDOWS.items()})
#: the length of an op's strides and dilations (0: it takes none; 2 unless listed)
WINDOW_RANK = {name: rank for name, (rank, _, _) in _MORE_WINDOWS.items()}

_WINDOW_ATTRS = ("strides", "dilations")


def _reduce(b, kind: str, acc: Value, x: Value, loc) -> Value:
    from .arith import FLOAT_BINARY, INT_BINARY
    if kind == "sum":
        return build_add(b, acc, x, loc)
    is_float = isinstance(acc.type, FloatType)
    if is_float and kind in ("max", "min"):
        name = "maximumf" if kind == "max" else "minimumf"
        return b.create(FLOAT_BINARY[name], acc, x, loc=loc).result
    if is_float:
        raise ValueError(f"unsupported operation: unsigned {kind.split('_')[0]} not on uint")
    name = {"max": "maxsi", "min": "minsi", "max_unsigned": "maxui",
            "min_unsigned": "minui"}[kind]
    return b.create(INT_BINARY[name], acc, x, loc=loc).result


class LinalgWindowOp(_NamedOp):
    """A convolution or pooling of :data:`WINDOW_OPS`: ``{strides = dense<..>, dilations =
    dense<..>} ins(%I, %K : ...) outs(%O : ...)``.  Accessors ``input``, ``filter``
    (the pooling's window shape), ``output``, ``strides``, ``dilations``."""

    NUM_INPUTS = 2
    OPERAND_NAMES = ("input", "filter", "output")

    @classmethod
    def build(cls, input: Value, filter: Value, output: Value,
              strides: Optional[Sequence[int]] = None,
              dilations: Optional[Sequence[int]] = None, loc=None):
        """``strides``/``dilations`` left ``None`` are not written (MLIR's default, 1)."""
        attrs = {}
        for name, vals in (("strides", strides), ("dilations", dilations)):
            if vals is not None:
                attrs[name] = DenseElementsAttr.from_ints(vals, i64)
        return cls(operands=[input, filter, output], attributes=attrs, loc=loc)

    @property
    def input(self) -> Value:
        return self.operands[0]

    @property
    def filter(self) -> Value:
        return self.operands[1]

    @property
    def output(self) -> Value:
        return self.operands[-1]

    @property
    def payload_kind(self) -> str:
        return WINDOW_OPS[self.OP_NAME][2]

    def _window(self, name: str) -> tuple[int, ...]:
        if not self.RANK:
            return ()
        vals = _dense_i64(self.attributes.get(name), self.RANK)
        return vals if vals is not None else (1,) * self.RANK

    @property
    def strides(self) -> tuple[int, ...]:
        return self._window("strides")

    @property
    def dilations(self) -> tuple[int, ...]:
        return self._window("dilations")

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return WINDOW_OPS[self.OP_NAME][0](self.strides, self.dilations)

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return WINDOW_OPS[self.OP_NAME][1]

    @property
    def unsigned_cast(self) -> bool:
        return self.payload_kind.endswith("_unsigned")

    def build_payload(self, b, args, loc):
        x, k, out = args[0], args[1], args[-1]
        t = out.type
        xi = build_cast(b, x, t, self.unsigned_cast, loc)
        if self.payload_kind == "conv_q":       # (x - x's zero point) * (k - k's)
            xs = build_sub(b, xi, build_cast(b, args[2], t, False, loc), loc)
            ki = build_cast(b, k, t, False, loc)
            ks = build_sub(b, ki, build_cast(b, args[3], t, False, loc), loc)
            return [build_add(b, out, build_mul(b, xs, ks, loc), loc)]
        if self.payload_kind == "conv":
            ki = build_cast(b, k, t, False, loc)
            return [build_add(b, out, build_mul(b, xi, ki, loc), loc)]
        return [_reduce(b, self.payload_kind, out, xi, loc)]

    def payload_type_error(self) -> Optional[str]:
        out = _element_type(self.output.type)
        srcs = (self.input,) if not self.payload_kind.startswith("conv") else \
            tuple(self.operands[:self.NUM_INPUTS])
        for v in srcs:
            src = _element_type(v.type)
            if cast_op_name(src, out, self.unsigned_cast) is None:
                return f"cannot cast '{src}' to the output element type '{out}'"
        msg = binary_error(out, out)
        if msg is None and isinstance(out, FloatType) and self.unsigned_cast:
            kind = self.payload_kind.split("_")[0]
            msg = f"unsupported operation: unsigned {kind} not on uint"
        return msg

    def _verify_payload_types(self) -> None:
        msg = self.payload_type_error()
        if msg:
            raise self.error(msg)

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name):
        from .linalg import _reject_tensors
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        if p.peek_keyword("indexing_maps"):
            raise _custom_error(p, name, "[parseNamedStructuredOpRegion] ods-gen generated "
                                "region expects 3 args, got 0", start)
        attrs: dict = {}
        operands = _parse_named_body(p, name, cls.NUM_INPUTS, attrs)
        for a in _WINDOW_ATTRS if cls.RANK else ():   # checked while the op is built
            if a in attrs and _dense_i64(attrs[a], cls.RANK) is None:
                raise _custom_error(p, name, f"'{name}' op attribute '{a}' failed to satisfy "
                                    "constraint: 64-bit signless int elements attribute of "
                                    f"shape [{cls.RANK}]", start)
        op = cls(operands=operands, attributes=attrs, loc=loc)
        msg = op.payload_type_error()
        if msg is not None:
            raise _custom_error(p, name, msg, start)
        return op

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        attrs = dict(attrs)
        memo = attrs.pop("linalg.memoized_indexing_maps", None)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is not None and seg != (cls.NUM_INPUTS, 1):
            raise ParseError(f"'{cls.OP_NAME}' expects {cls.NUM_INPUTS} input(s) and 1 output, got "
                             f"operandSegmentSizes {attrs['operandSegmentSizes']}", loc)
        op = cls(operands=operands, attributes=_strip(attrs, "operandSegmentSizes"), loc=loc)
        if memo is not None:
            got = tuple(getattr(e, "value", None) for e in getattr(memo, "elements", ()))
            if got != tuple(op.indexing_maps):
                raise ParseError(f"'{cls.OP_NAME}' op linalg.memoized_indexing_maps {memo} are "
                                 "not the op's indexing maps", loc)
        op._check_generic_region(regions, loc)
        return op

    def print_custom(self, p) -> None:
        p.print(self.OP_NAME)
        p.print_attr_dict(self.attributes)
        from .linalg import _print_ins_outs
        _print_ins_outs(p, self.inputs, self.outputs)

    # -- verification --------------------------------------------------------------------------
    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != self.NUM_INPUTS + 1:
            raise self.error(f"expects {self.NUM_INPUTS} inputs and 1 output, got "
                             f"{len(self.operands)} operands")
        for a in _WINDOW_ATTRS if self.RANK else ():     # (none declared: discardable)
            attr = self.attributes.get(a)
            if attr is None:
                continue
            vals = _dense_i64(attr, self.RANK)
            if vals is None:
                raise self.error(f"attribute '{a}' failed to satisfy constraint: 64-bit "
                                 f"signless int elements attribute of shape [{self.RANK}]")
            if any(v <= 0 for v in vals):
                # MLIR's convolution interface: a zero stride leaves a loop out of the input
                raise VerifyError("unexpected loop dimension for convolution op", self.loc)
        self._verify_operand_kinds()
        self.verify_structured()


def _window_op(op_name: str) -> type:
    short = op_name.split(".", 1)[1]
    maps_fn, _, kind = WINDOW_OPS[op_name]
    cls = type("".join(w.capitalize() for w in short.split("_")) + "Op", (LinalgWindowOp,),
               {"OP_NAME": op_name, "NUM_INPUTS": 4 if kind == "conv_q" else 2,
                "RANK": WINDOW_RANK.get(op_name, 2),
                "__doc__": f"``{op_name}``: a {'convolution' if kind == 'conv' else kind} "
                           "window op (see the module's table)."})
    return register_op(cls)


@register_op
class BatchMatvecOp(_ContractionOp):
    """``linalg.batch_matvec ins(%A, %x : memref<BxMxK>, memref<BxK>) outs(%y : memref<BxM>)``:
    y[b, i] += A[b, i, k] * x[b, k]."""

    OP_NAME = "linalg.batch_matvec"
    DEFAULT_MAPS = _maps(3, (0, 1, 2), (0, 2), (0, 1))
    ITERATORS = ("parallel", "parallel", "reduction")


#: The op classes of this module, by op name.
LINALG_WINDOW_OPS = {**{n: _window_op(n) for n in WINDOW_OPS},
                     BatchMatvecOp.OP_NAME: BatchMatvecOp}
