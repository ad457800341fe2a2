"""The linalg ops polyopt takes as input, on memrefs: ``linalg.fill``, ``linalg.matmul`` and
three convolutions.

Custom form as MLIR 22 prints it::

    linalg.fill ins(%cst : f64) outs(%A : memref<2048x2048xf64>)
    linalg.matmul ins(%A, %B : memref<MxKxf64>, memref<KxNxf64>) outs(%C : memref<MxNxf64>)
    linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> :
        tensor<2xi64>} ins(%I, %K : memref<NxHxWxC>, memref<KHxKWxCxF>) outs(%O : memref<NxOHxOWxF>)
    linalg.conv_1d_nwc_wcf ins(%I, %K : memref<NxWxC>, memref<KWxCxF>) outs(%O : memref<NxOWxF>)
    linalg.depthwise_conv_2d_nhwc_hwc ins(%I, %K : memref<NxHxWxC>, memref<KHxKWxC>)
        outs(%O : memref<NxOHxOWxC>)

(the attribute dictionary, sorted by name, comes first; ``strides``/``dilations`` are optional,
1 by default, and printed only when given; MLIR prints ``dense<[2, 2]>`` as ``dense<2>``).
The convolutions accumulate, without padding::

    conv_2d_nhwc_hwcf:  O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]
    conv_1d_nwc_wcf:    O[n, ow, f]     += I[n, ow*sw + kw*dw, c] * K[kw, c, f]
    depthwise_conv_2d_nhwc_hwc:
                        O[n, oh, ow, c] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c]

and the 2020 forms of the paper, ``linalg.fill(%A, %cf1) : memref<2048x2048xf64>, f64`` (output
first) and ``linalg.matmul(%A, %B, %C) : memref<..>, memref<..>, memref<..>``.  ``linalg.matmul``
means C += A * B.  Our ops carry no payload region: MLIR's generic form (with its region,
``indexing_maps`` and ``operandSegmentSizes``) parses into the same ops when the maps are the
default ones.  Tensors are not supported.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..affine_expr import AffineMap, dim
from ..attributes import AffineMapAttr, ArrayAttr, DenseArrayAttr, DenseElementsAttr
from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..types import MemRefType, Type, UnrankedMemRefType, VectorType, i64
from .hop import ConvOperands, verify_conv_shapes, verify_memref_operands

TENSOR_MESSAGE = "linalg ops on tensors are not supported; use memrefs"
_TENSOR_TYPE = re.compile(r"\btensor\s*<")
_DENSE_BEFORE = re.compile(r"\bdense\s*<[^<>]*>\s*:\s*$")

# (d0, d1, d2) = (i, j, k): A[i, k], B[k, j], C[i, j]
MATMUL_MAPS = (AffineMap.get(3, 0, (dim(0), dim(2))), AffineMap.get(3, 0, (dim(2), dim(1))),
               AffineMap.get(3, 0, (dim(0), dim(1))))


def _parse_type_no_tensor(p) -> Type:
    p.skip_ws()
    if p.peek_keyword("tensor"):
        raise p.error(TENSOR_MESSAGE)
    return p.parse_type()


def _parse_operands_and_types(p) -> tuple[list[Value], list[Type], int]:
    """``(%a, %b : t1, t2)`` after ``ins``/``outs``; types are checked against the operands."""
    p.expect("(")
    p.skip_ws()
    start = p.pos
    values = p.parse_operand_list()
    types: list[Type] = []
    if values:
        p.expect(":")
        types = [_parse_type_no_tensor(p)]
        while p.optional(","):
            types.append(_parse_type_no_tensor(p))
    p.expect(")")
    if len(types) != len(values):
        raise p.error(f"{len(values)} operands present, but expected {len(types)}", start)
    for v, t in zip(values, types):
        p.check_type(v, t, start)
    return values, types, start


def _reject_tensors(p) -> None:
    """Tensor-typed linalg ops get one clear message, before their operands are looked up
    (the tensor types of ``dense<...> : tensor<2xi64>`` attributes are fine)."""
    p.skip_ws()
    end = p.text.find("\n", p.pos)
    for m in _TENSOR_TYPE.finditer(p.text, p.pos, len(p.text) if end < 0 else end):
        if not _DENSE_BEFORE.search(p.text, p.pos, m.start()):
            raise p.error(TENSOR_MESSAGE, m.start())


def _parse_structured(p, loc, name: str, num_inputs: int) -> tuple[list[Value], dict]:
    """``[indexing_maps = [...]] [{attrs}] ins(...) outs(...) [{attrs}]`` -> (operands, attrs)."""
    _reject_tensors(p)
    attrs: dict = {}
    if p.peek_keyword("indexing_maps"):
        p.expect_keyword("indexing_maps")
        p.expect("=")
        attrs["indexing_maps"] = p.parse_attribute()
    attrs.update(p.parse_optional_attr_dict())
    p.skip_ws()
    start = p.pos
    ins: list[Value] = []
    if p.optional_keyword("ins"):
        ins, _, _ = _parse_operands_and_types(p)
    p.expect_keyword("outs")
    outs, _, _ = _parse_operands_and_types(p)
    attrs.update(p.parse_optional_attr_dict())
    if p.peek("->"):
        raise p.error(TENSOR_MESSAGE)
    if len(ins) != num_inputs or len(outs) != 1:
        raise p.error(f"'{name}' expects {num_inputs} input(s) and 1 output, got {len(ins)} "
                      f"and {len(outs)}", start)
    return ins + outs, attrs


def _parse_legacy(p, count: int) -> tuple[list[Value], list[Type]]:
    """2020 ``(%a, %b) : t1, t2``."""
    _reject_tensors(p)
    p.skip_ws()
    start = p.pos
    values = p.parse_operand_list("paren")
    p.parse_optional_attr_dict()
    p.expect(":")
    types = [_parse_type_no_tensor(p)]
    while p.optional(","):
        types.append(_parse_type_no_tensor(p))
    if len(values) != count or len(types) != count:
        raise p.error(f"expected {count} operands and {count} types, got {len(values)} and "
                      f"{len(types)}", start)
    for v, t in zip(values, types):
        p.check_type(v, t, start)
    return values, types


def _check_default_maps(attrs: dict, expected: Sequence[AffineMap], loc, name: str) -> dict:
    maps = attrs.get("indexing_maps")
    if maps is None:
        return attrs
    got = tuple(e.value for e in maps.elements if isinstance(e, AffineMapAttr)) \
        if isinstance(maps, ArrayAttr) else ()
    if got != tuple(expected):
        raise ParseError(f"'{name}' with non-default indexing_maps (transposed or broadcast "
                         "operands) is not supported", loc)
    return {k: v for k, v in attrs.items() if k != "indexing_maps"}


def _from_generic(cls, loc, operands, result_types, attrs, num_inputs):
    if result_types:
        raise ParseError(TENSOR_MESSAGE, loc)
    seg = attrs.get("operandSegmentSizes")
    if isinstance(seg, DenseArrayAttr) and tuple(seg.values) != (num_inputs, 1):
        raise ParseError(f"'{cls.OP_NAME}' expects {num_inputs} input(s) and 1 output, got "
                         f"operandSegmentSizes {seg}", loc)
    attrs = {k: v for k, v in attrs.items() if k != "operandSegmentSizes"}
    if cls.OP_NAME == "linalg.matmul":
        attrs = _check_default_maps(attrs, MATMUL_MAPS, loc, cls.OP_NAME)
    # the payload region is implied by the op: drop it
    return cls(operands=operands, attributes=attrs, loc=loc)


def _verify_memref_operands(op: Operation, names: Sequence[str]) -> None:
    for i, v in enumerate(op.operands):
        t = v.type
        if isinstance(t, (MemRefType, UnrankedMemRefType)) or isinstance(t, VectorType):
            if not isinstance(t, MemRefType):
                raise op.error(f"operand #{i} ({names[i]}) must be a ranked memref, got '{t}'")
        elif str(t).startswith("tensor"):
            raise op.error(TENSOR_MESSAGE)
        elif names[i] != "value":
            raise op.error(f"operand #{i} ({names[i]}) must be a memref, got '{t}'")


def _print_ins_outs(p, ins: Sequence[Value], outs: Sequence[Value]) -> None:
    p.print(" ins(")
    p.print_operands(ins)
    p.print(" : ")
    p.print_types(v.type for v in ins)
    p.print(") outs(")
    p.print_operands(outs)
    p.print(" : ")
    p.print_types(v.type for v in outs)
    p.print(")")


@register_op
class FillOp(Operation):
    """``linalg.fill ins(%cst : f64) outs(%A : memref<4x4xf64>)``: every element of A := cst."""

    OP_NAME = "linalg.fill"

    @classmethod
    def build(cls, value: Value, output: Value, loc=None) -> "FillOp":
        return cls(operands=[value, output], loc=loc)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def output(self) -> Value:
        return self.operands[1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        if p.peek("("):
            (out, value), _ = _parse_legacy(p, 2)   # 2020: output first, then the value
            return cls(operands=[value, out], loc=loc)
        operands, attrs = _parse_structured(p, loc, "linalg.fill", 1)
        if "indexing_maps" in attrs:
            raise p.error("'linalg.fill' does not take indexing_maps")
        return cls(operands=operands, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return _from_generic(cls, loc, operands, result_types, attrs, 1)

    def print_custom(self, p) -> None:
        p.print("linalg.fill")
        p.print_attr_dict(self.attributes)
        _print_ins_outs(p, [self.value], [self.output])

    def verify_op(self) -> None:
        if len(self.operands) != 2 or self.results:
            raise self.error("expects a value and an output memref, and no results")
        _verify_memref_operands(self, ("value", "output"))
        vt, ot = self.value.type, self.output.type
        if isinstance(vt, (MemRefType, VectorType)):
            raise self.error(f"fill value must be a scalar, got '{vt}'")
        if vt != ot.element_type:
            raise self.error(f"expected fill value type ('{vt}') to match output element type "
                             f"('{ot.element_type}')")


@register_op
class LinalgMatmulOp(Operation):
    """``linalg.matmul ins(%A, %B : ...) outs(%C : ...)``: C[i, j] += A[i, k] * B[k, j]."""

    OP_NAME = "linalg.matmul"

    @classmethod
    def build(cls, a: Value, b: Value, c: Value, loc=None) -> "LinalgMatmulOp":
        return cls(operands=[a, b, c], loc=loc)

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def c(self) -> Value:
        return self.operands[2]

    @classmethod
    def parse_custom(cls, p, loc, name):
        if p.peek("("):
            operands, _ = _parse_legacy(p, 3)
            return cls(operands=operands, loc=loc)
        operands, attrs = _parse_structured(p, loc, "linalg.matmul", 2)
        attrs = _check_default_maps(attrs, MATMUL_MAPS, loc, "linalg.matmul")
        return cls(operands=operands, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return _from_generic(cls, loc, operands, result_types, attrs, 2)

    def print_custom(self, p) -> None:
        p.print("linalg.matmul")
        p.print_attr_dict(self.attributes)
        _print_ins_outs(p, [self.a, self.b], [self.c])

    def verify_op(self) -> None:
        if len(self.operands) != 3 or self.results:
            raise self.error("expects three memref operands (A, B, C) and no results")
        _verify_memref_operands(self, ("A", "B", "C"))
        types = [v.type for v in self.operands]
        for i, t in enumerate(types):
            if t.rank != 2:
                raise self.error(f"operand #{i} ({'ABC'[i]}) must have rank 2, got '{t}'")
        ets = [t.element_type for t in types]
        if len(set(ets)) != 1:
            raise self.error("element types of A, B and C must agree (mixed-precision matmul is "
                             f"not supported), got '{ets[0]}', '{ets[1]}', '{ets[2]}'")
        # MLIR's shape inference: each loop dim takes its size from its first occurrence
        # (A gives M and K, B gives N), every other occurrence must agree
        sizes: dict[int, int | None] = {}
        for i, (t, amap) in enumerate(zip(types, MATMUL_MAPS)):
            for j, e in enumerate(amap.results):
                d = e.position
                size = t.shape[j]
                if d not in sizes:
                    sizes[d] = size
                    continue
                if size is not None and sizes[d] is not None and size != sizes[d]:
                    raise self.error(f"inferred input/output operand #{i} has shape's dimension "
                                     f"#{j} to be {sizes[d]}, but found {size}")


# ---------------------------------------------------------------------------------------------
# convolutions


def conv_indexing_maps(kind: str, strides: Sequence[int], dilations: Sequence[int]
                       ) -> tuple[AffineMap, AffineMap, AffineMap]:
    """The (input, filter, output) indexing maps MLIR gives a convolution of ``kind``, over
    its loops in MLIR's order: conv2d (n, oh, ow, f, kh, kw, c), conv1d (n, ow, f, kw, c),
    depthwise2d (n, oh, ow, c, kh, kw)."""
    d = dim
    if kind == "conv2d":
        (sh, sw), (dh, dw) = strides, dilations
        return (AffineMap.get(7, 0, (d(0), d(1) * sh + d(4) * dh, d(2) * sw + d(5) * dw, d(6))),
                AffineMap.get(7, 0, (d(4), d(5), d(6), d(3))),
                AffineMap.get(7, 0, (d(0), d(1), d(2), d(3))))
    if kind == "conv1d":
        (sw,), (dw,) = strides, dilations
        return (AffineMap.get(5, 0, (d(0), d(1) * sw + d(3) * dw, d(4))),
                AffineMap.get(5, 0, (d(3), d(4), d(2))),
                AffineMap.get(5, 0, (d(0), d(1), d(2))))
    if kind == "depthwise2d":
        (sh, sw), (dh, dw) = strides, dilations
        return (AffineMap.get(6, 0, (d(0), d(1) * sh + d(4) * dh, d(2) * sw + d(5) * dw, d(3))),
                AffineMap.get(6, 0, (d(4), d(5), d(3))),
                AffineMap.get(6, 0, (d(0), d(1), d(2), d(3))))
    raise ValueError(f"unknown convolution kind {kind!r}")


def _dense_i64(attr, n: int) -> Optional[tuple[int, ...]]:
    """The values of ``dense<..> : tensor<n x i64>``, else ``None``."""
    if isinstance(attr, DenseElementsAttr) and attr.shape == (n,) and attr.element_type == i64:
        return tuple(attr.values)
    return None


class _LinalgConvOp(ConvOperands, Operation):
    """``linalg.<conv> {strides = dense<..>, dilations = dense<..>} ins(%I, %K) outs(%O)``
    on memrefs; O += conv(I, K).  Same accessors as ``hop.conv2d``: ``input``, ``filter``,
    ``output``, ``strides``, ``dilations`` (tuples of ``SPATIAL`` ints) and ``CONV_KIND``."""

    CONV_KIND: str = ""
    SPATIAL: int = 2
    RANKS: tuple[int, int, int] = (4, 4, 4)
    OPERAND_NAMES = ("input", "filter", "output")

    @classmethod
    def build(cls, input: Value, filter: Value, output: Value,
              strides: Optional[Sequence[int]] = None,
              dilations: Optional[Sequence[int]] = None, loc=None) -> "_LinalgConvOp":
        """``strides``/``dilations`` left ``None`` are not written (MLIR's default, 1)."""
        attrs = {}
        for name, vals in (("strides", strides), ("dilations", dilations)):
            if vals is not None:
                attrs[name] = DenseElementsAttr.from_ints(vals, i64)
        return cls(operands=[input, filter, output], attributes=attrs, loc=loc)

    def _window(self, name: str) -> tuple[int, ...]:
        a = self.attributes.get(name)
        if a is None:
            return (1,) * self.SPATIAL
        vals = _dense_i64(a, self.SPATIAL)
        if vals is None:
            raise ValueError(f"{self.name}: malformed '{name}' attribute {a}")
        return vals

    @property
    def strides(self) -> tuple[int, ...]:
        return self._window("strides")

    @property
    def dilations(self) -> tuple[int, ...]:
        return self._window("dilations")

    @property
    def indexing_maps(self) -> tuple[AffineMap, AffineMap, AffineMap]:
        """MLIR's (input, filter, output) maps (see :func:`conv_indexing_maps`)."""
        return conv_indexing_maps(self.CONV_KIND, self.strides, self.dilations)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        operands, attrs = _parse_structured(p, loc, cls.OP_NAME, 2)
        if "indexing_maps" in attrs:
            raise p.error(f"'{cls.OP_NAME}' does not take indexing_maps", start)
        return cls(operands=operands, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        memo = attrs.get("linalg.memoized_indexing_maps")
        op = _from_generic(cls, loc, operands, result_types,
                           {k: v for k, v in attrs.items()
                            if k != "linalg.memoized_indexing_maps"}, 2)
        if memo is not None:
            try:
                expected = op.indexing_maps
            except ValueError:
                return op   # the verifier reports the malformed attribute
            _check_default_maps({"indexing_maps": memo}, expected, loc, cls.OP_NAME)
        return op

    def print_custom(self, p) -> None:
        p.print(self.OP_NAME)
        p.print_attr_dict(self.attributes)
        _print_ins_outs(p, [self.input, self.filter], [self.output])

    def verify_op(self) -> None:
        types = verify_memref_operands(self, self.OPERAND_NAMES, self.RANKS)
        n = self.SPATIAL
        for name in ("strides", "dilations"):
            a = self.attributes.get(name)
            if a is None:
                continue
            vals = _dense_i64(a, n)
            if vals is None:
                raise self.error(f"attribute '{name}' failed to satisfy constraint: 64-bit "
                                 f"signless int elements attribute of shape [{n}], got {a}")
            if any(v <= 0 for v in vals):
                raise self.error(f"{name} must be positive, got {a}")
        verify_conv_shapes(self, self.CONV_KIND, types, self.strides, self.dilations)


@register_op
class LinalgConv2DNhwcHwcfOp(_LinalgConvOp):
    """``linalg.conv_2d_nhwc_hwcf``: O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c]
    * K[kh, kw, c, f] (input NHWC, filter HWCF, output NHWF)."""

    OP_NAME = "linalg.conv_2d_nhwc_hwcf"
    CONV_KIND = "conv2d"
    SPATIAL = 2
    RANKS = (4, 4, 4)


@register_op
class LinalgConv1DNwcWcfOp(_LinalgConvOp):
    """``linalg.conv_1d_nwc_wcf``: O[n, ow, f] += I[n, ow*sw + kw*dw, c] * K[kw, c, f]
    (input NWC, filter WCF, output NWF)."""

    OP_NAME = "linalg.conv_1d_nwc_wcf"
    CONV_KIND = "conv1d"
    SPATIAL = 1
    RANKS = (3, 3, 3)


@register_op
class LinalgDepthwiseConv2DNhwcHwcOp(_LinalgConvOp):
    """``linalg.depthwise_conv_2d_nhwc_hwc``: O[n, oh, ow, c] += I[n, oh*sh + kh*dh,
    ow*sw + kw*dw, c] * K[kh, kw, c] (input NHWC, filter HWC, output NHWC)."""

    OP_NAME = "linalg.depthwise_conv_2d_nhwc_hwc"
    CONV_KIND = "depthwise2d"
    SPATIAL = 2
    RANKS = (4, 3, 4)


#: The linalg convolution op classes, by op name.
LINALG_CONV_OPS = {c.OP_NAME: c for c in (LinalgConv2DNhwcHwcfOp, LinalgConv1DNwcWcfOp,
                                          LinalgDepthwiseConv2DNhwcHwcOp)}
