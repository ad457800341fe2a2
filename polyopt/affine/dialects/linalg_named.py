"""linalg's named contractions and convolutions on memrefs: ``linalg.matmul``,
``linalg.batch_matmul``, ``linalg.matvec``, ``linalg.vecmat``, ``linalg.dot``,
``linalg.batch_vecmat``, ``linalg.batch_reduce_matmul``, ``linalg.mmt4d`` and the
convolutions ``linalg.conv_2d_nhwc_hwcf``, ``linalg.conv_1d_nwc_wcf``,
``linalg.depthwise_conv_2d_nhwc_hwc``.

Every one accumulates into its output, ``O[...] += cast(A[...]) * cast(B[...])``, with the
inputs cast to the output's element type (``arith.extf``/``extsi``/``sitofp``/...;
``{cast = #linalg.type_fn<cast_unsigned>}`` takes the unsigned casts), over the loops and
maps MLIR gives them::

    linalg.matmul          (i, j, k):     A[i, k], B[k, j], C[i, j]
    linalg.batch_matmul    (b, i, j, k):  A[b, i, k], B[b, k, j], C[b, i, j]
    linalg.matvec          (i, k):        A[i, k], x[k], y[i]
    linalg.vecmat          (j, k):        x[k], A[k, j], y[j]
    linalg.dot             (k):           x[k], y[k], s[]
    linalg.batch_vecmat    (b, j, k):     x[b, k], A[b, k, j], y[b, j]
    linalg.batch_reduce_matmul (b, i, j, k): A[b, i, k], B[b, k, j], C[i, j]
    linalg.mmt4d           (m, n, k, m0, n0, k0): A[m, k, m0, k0], B[n, k, n0, k0],
                                          C[m, n, m0, n0]

Only ``matmul``, ``batch_matmul`` and ``batch_reduce_matmul`` declare
``{cast = #linalg.type_fn<cast_unsigned>}``; on the others MLIR keeps ``cast`` as a
discardable attribute it neither checks nor reads, and casts signed: so does polyopt.

``linalg.matmul``, ``linalg.batch_matmul`` and ``linalg.batch_reduce_matmul`` take
``indexing_maps = [...]`` to transpose or
broadcast operands (MLIR 22's replacement of ``matmul_transpose_a``/``_b``)::

    linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>]
        ins(%A, %B : memref<KxMxf32>, memref<KxNxf32>) outs(%C : memref<MxNxf32>)

The convolutions (no padding; ``strides``/``dilations`` default to 1 and print only when
given; MLIR prints ``dense<[2, 2]>`` as ``dense<2>``)::

    conv_2d_nhwc_hwcf (n, oh, ow, f, kh, kw, c):
                        O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]
    conv_1d_nwc_wcf (n, ow, f, kw, c):  O[n, ow, f] += I[n, ow*sw + kw*dw, c] * K[kw, c, f]
    depthwise_conv_2d_nhwc_hwc (n, oh, ow, c, kh, kw):
                        O[n, oh, ow, c] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c]

The 2020 form ``linalg.matmul(%A, %B, %C) : memref<..>, memref<..>, memref<..>`` parses too.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..affine_expr import AffineMap, dim
from ..attributes import AffineMapAttr, ArrayAttr, DenseElementsAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Value, register_op
from ..types import i64
from .hop import ConvOperands, verify_conv_shapes, verify_memref_operands
from .linalg_data import _UnaryNamedOp
from .linalg import (CAST_ATTRS, TENSOR_MESSAGE, _check_cast_attr, _custom_error,
                     _element_type, _merge_attrs, _NamedOp, _parse_ins_outs, _parse_legacy,
                     _print_ins_outs, _reject_tensor_results, _reject_tensors, _segment_sizes,
                     _strip, _verify_cast_attr, binary_error, build_add, build_cast, build_mul,
                     build_sub, cast_op_name, maps_attr)


def _maps(n: int, *results: Sequence[int]) -> tuple[AffineMap, ...]:
    return tuple(AffineMap.get(n, 0, tuple(dim(d) for d in r)) for r in results)


# (d0, d1, d2) = (i, j, k): A[i, k], B[k, j], C[i, j]
MATMUL_MAPS = _maps(3, (0, 2), (2, 1), (0, 1))
BATCH_MATMUL_MAPS = _maps(4, (0, 1, 3), (0, 3, 2), (0, 1, 2))


class _ContractionOp(_NamedOp):
    """``O += cast(A) * cast(B)`` over ``DEFAULT_MAPS`` (or the op's ``indexing_maps`` when
    ``USER_MAPS``)."""

    NUM_INPUTS = 2
    DEFAULT_MAPS: tuple[AffineMap, ...] = ()
    ITERATORS: tuple[str, ...] = ()
    USER_MAPS = False           # takes ``indexing_maps = [...]`` (matmul, batch_matmul)
    #: declares ``cast = #linalg.type_fn<...>`` (matmul, batch_matmul, batch_reduce_matmul);
    #: on the others ``cast`` is a discardable attribute that MLIR neither checks nor reads:
    #: their inputs are cast signed
    CAST_ATTR = False
    MAPS_REQUIRED = False       # linalg.contract: its maps are the op
    OPERAND_NAMES = ("A", "B", "C")

    @classmethod
    def build(cls, a: Value, b: Value, c: Value, indexing_maps: Optional[Sequence[AffineMap]]
              = None, unsigned: bool = False, loc=None):
        """``indexing_maps`` (matmul, batch_matmul only) left ``None`` are the defaults."""
        from ..attributes import OpaqueAttr
        attrs = {}
        if indexing_maps is not None:
            if not cls.USER_MAPS:
                raise ValueError(f"{cls.OP_NAME} takes no indexing_maps")
            attrs["indexing_maps"] = maps_attr(indexing_maps)
        if unsigned:
            if not cls.CAST_ATTR:
                raise ValueError(f"{cls.OP_NAME} takes no cast: its inputs are cast signed")
            attrs["cast"] = OpaqueAttr(CAST_ATTRS[1])
        return cls(operands=[a, b, c], attributes=attrs, loc=loc)

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def c(self) -> Value:
        return self.operands[2]

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        a = self.attributes.get("indexing_maps")
        if self.USER_MAPS and isinstance(a, ArrayAttr):
            return tuple(e.value for e in a.elements if isinstance(e, AffineMapAttr))
        return self.DEFAULT_MAPS

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return self.ITERATORS

    @property
    def has_default_maps(self) -> bool:
        return self.indexing_maps == self.DEFAULT_MAPS

    @property
    def unsigned_cast(self) -> bool:
        return self.CAST_ATTR and str(self.attributes.get("cast")) == CAST_ATTRS[1]

    @property
    def is_plain(self) -> bool:
        """Default maps, one element type, no cast: what the BLIS pipeline takes."""
        ets = {_element_type(v.type) for v in self.operands}
        return self.has_default_maps and len(ets) == 1

    def build_payload(self, b, args, loc):
        a, bv, out = args
        t = out.type
        x = build_cast(b, a, t, self.unsigned_cast, loc)
        y = build_cast(b, bv, t, self.unsigned_cast, loc)
        return [build_add(b, out, build_mul(b, x, y, loc), loc)]

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name):
        if p.peek("(") and cls.OP_NAME == "linalg.matmul":
            return cls(operands=_parse_legacy(p, 3), loc=loc)   # 2020
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        attrs: dict = {}
        if p.peek_keyword("indexing_maps"):
            if not cls.USER_MAPS:
                raise _custom_error(p, name, "does not take indexing_maps")
            p.expect_keyword("indexing_maps")
            p.expect("=")
            p.skip_ws()
            at = p.pos
            maps = p.parse_attribute()
            if not isinstance(maps, ArrayAttr):
                raise p.error(f"expected '[', found {maps}", at)
            for e in maps.elements:
                if not isinstance(e, AffineMapAttr):
                    raise _custom_error(p, name, "element of indexing_maps array is not an "
                                        "affine_map", at)
            attrs["indexing_maps"] = maps
        elif cls.MAPS_REQUIRED:
            raise _custom_error(p, name, "expected 'indexing_maps' attribute", start)
        ins, outs = _parse_ins_outs(p, name, attrs)
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        _check_cast_attr(p, name, attrs)       # a #linalg.type_fn<...> is one wherever it is
        if "indexing_maps" in attrs and not cls.USER_MAPS:
            raise _custom_error(p, name, "does not take indexing_maps", start)
        if len(ins) != 2 or len(outs) != 1:
            raise _custom_error(p, name, f"[parseNamedStructuredOpRegion] ods-gen generated "
                                f"region expects 3 args, got {len(ins) + len(outs)}", start)
        op = cls(operands=ins + outs, attributes=cls._drop_default_maps(attrs), loc=loc)
        msg = op.payload_type_error()
        if msg is not None:   # MLIR's region builder fails while parsing
            raise _custom_error(p, name, msg, start)
        return op

    @classmethod
    def _drop_default_maps(cls, attrs: dict) -> dict:
        a = attrs.get("indexing_maps")
        if isinstance(a, ArrayAttr) and tuple(getattr(e, "value", None) for e in a.elements) \
                == cls.DEFAULT_MAPS:
            return _strip(attrs, "indexing_maps")
        return attrs

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        memo = attrs.pop("linalg.memoized_indexing_maps", None)
        if memo is not None and not cls.USER_MAPS:
            got = tuple(getattr(e, "value", None) for e in getattr(memo, "elements", ()))
            if got != cls.DEFAULT_MAPS:
                raise ParseError(f"'{cls.OP_NAME}' op linalg.memoized_indexing_maps {memo} are "
                                 f"not the op's indexing maps", loc)
        if "indexing_maps" in attrs and not cls.USER_MAPS:
            raise ParseError(f"'{cls.OP_NAME}' op does not take indexing_maps", loc)
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is not None and seg != (2, 1):
            raise ParseError(f"'{cls.OP_NAME}' expects 2 input(s) and 1 output, got "
                             f"operandSegmentSizes {attrs['operandSegmentSizes']}", loc)
        attrs = cls._drop_default_maps(_strip(attrs, "operandSegmentSizes"))
        op = cls(operands=operands, attributes=attrs, loc=loc)
        op._check_generic_region(regions, loc)
        return op

    def print_custom(self, p) -> None:
        p.print(self.OP_NAME)
        if self.USER_MAPS and not self.has_default_maps:
            p.print(" indexing_maps = " + p.attr_str(self.attributes["indexing_maps"]))
        p.print_attr_dict(self.attributes, elide=("indexing_maps", "operandSegmentSizes",
                                                  "linalg.memoized_indexing_maps"))
        _print_ins_outs(p, self.inputs, self.outputs)

    # -- verification --------------------------------------------------------------------------
    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != 3:
            raise self.error("expects two inputs and one output")
        if self.CAST_ATTR:
            _verify_cast_attr(self)
        if self.MAPS_REQUIRED and "indexing_maps" not in self.attributes:
            raise self.error("requires attribute 'indexing_maps'")
        if self.USER_MAPS and "indexing_maps" in self.attributes:
            a = self.attributes["indexing_maps"]
            if not isinstance(a, ArrayAttr) or not all(isinstance(e, AffineMapAttr)
                                                       for e in a.elements):
                raise self.error("attribute 'indexing_maps' failed to satisfy constraint: "
                                 "AffineMap array attribute")
            self._verify_user_maps()
        self._verify_operand_kinds()
        self.verify_structured()

    def payload_type_error(self) -> Optional[str]:
        """Why the payload cannot be built for these element types, else ``None``."""
        out = _element_type(self.c.type)
        for v in (self.a, self.b):
            src = _element_type(v.type)
            if cast_op_name(src, out, self.unsigned_cast) is None:
                return f"cannot cast '{src}' to the output element type '{out}'"
        return binary_error(out, out)

    def _verify_payload_types(self) -> None:
        msg = self.payload_type_error()
        if msg:
            raise self.error(msg)

    def _verify_user_maps(self) -> None:
        """MLIR's checks of explicit ``indexing_maps`` (matmul, batch_matmul)."""


def _subset(explicit: AffineMap, default: AffineMap) -> bool:
    return set(explicit.results) <= set(default.results)


@register_op
class LinalgMatmulOp(_ContractionOp):
    """``linalg.matmul [indexing_maps = [...]] ins(%A, %B : ...) outs(%C : ...)``:
    C[i, j] += A[i, k] * B[k, j] (by default)."""

    OP_NAME = "linalg.matmul"
    DEFAULT_MAPS = MATMUL_MAPS
    ITERATORS = ("parallel", "parallel", "reduction")
    USER_MAPS = True
    CAST_ATTR = True

    def _verify_user_maps(self) -> None:
        maps = self.indexing_maps
        for k in range(min(2, len(maps))):
            m, d = maps[k], self.DEFAULT_MAPS[k]
            if not _subset(m, d):
                raise self.error("Unexpected dim expression in map result.")
            if m.num_results < d.num_results and not (
                    m.num_results == 1 and m.results[0].is_function_of_dim(2)):
                raise self.error("Invalid broadcast requested, should be (d2).")


@register_op
class BatchMatmulOp(_ContractionOp):
    """``linalg.batch_matmul [indexing_maps = [...]] ins(%A, %B) outs(%C)``:
    C[b, i, j] += A[b, i, k] * B[b, k, j] (by default)."""

    OP_NAME = "linalg.batch_matmul"
    DEFAULT_MAPS = BATCH_MATMUL_MAPS
    ITERATORS = ("parallel", "parallel", "parallel", "reduction")
    USER_MAPS = True
    CAST_ATTR = True

    def _verify_user_maps(self) -> None:
        maps = self.indexing_maps
        if len(maps) != 3:
            raise self.error("Indexing_map attribute must have 3 affine maps.")
        for k in range(3):
            m, d = maps[k], self.DEFAULT_MAPS[k]
            if k == 2:
                if m.num_results != 3:
                    raise self.error(f"expects 3 dims, but got ({m.num_results}).")
                if not all(m.results[r].is_function_of_dim(r) for r in range(3)):
                    raise self.error("Invalid output map result dimension.")
                continue
            _verify_batch_input_map(self, m, d, is_lhs=k == 0)


def _verify_batch_input_map(op, m: AffineMap, default: AffineMap, is_lhs: bool) -> None:
    """MLIR's checks of an explicit map of a batched matmul's A or B (batch_matmul,
    batch_reduce_matmul): the default's dims only, a broadcast MLIR allows, the batch first."""
    if not _subset(m, default):
        raise op.error("Unexpected result dim expression (outside the set of default result "
                       "dims).")
    if m.num_results > 3:
        raise op.error("no. of result dim expressions exceeds 3.")
    if m.num_results < default.num_results:
        if not _valid_batch_broadcast(m, is_lhs):
            raise op.error("Invalid broadcast requested.")
    elif not m.results[0].is_function_of_dim(0):
        raise op.error("Invalid batch dimension expression.")


def _valid_batch_broadcast(m: AffineMap, is_lhs: bool) -> bool:
    """MLIR's BatchMatmulOp::isValidLhsRhsBroadcastMap (b, m, n, k = d0, d1, d2, d3)."""
    r = m.results
    if len(r) == 1:
        return r[0].is_function_of_dim(3)
    if len(r) == 2:
        if is_lhs:
            return (r[0].is_function_of_dim(0) or r[0].is_function_of_dim(1)) and \
                r[1].is_function_of_dim(3)
        return (r[0].is_function_of_dim(0) and r[1].is_function_of_dim(3)) or \
            (r[0].is_function_of_dim(3) and r[1].is_function_of_dim(2))
    return False


@register_op
class MatvecOp(_ContractionOp):
    """``linalg.matvec ins(%A, %x : memref<MxK>, memref<K>) outs(%y : memref<M>)``:
    y[i] += A[i, k] * x[k]."""

    OP_NAME = "linalg.matvec"
    DEFAULT_MAPS = _maps(2, (0, 1), (1,), (0,))
    ITERATORS = ("parallel", "reduction")


@register_op
class VecmatOp(_ContractionOp):
    """``linalg.vecmat ins(%x, %A : memref<K>, memref<KxN>) outs(%y : memref<N>)``:
    y[j] += x[k] * A[k, j]."""

    OP_NAME = "linalg.vecmat"
    DEFAULT_MAPS = _maps(2, (1,), (1, 0), (0,))
    ITERATORS = ("parallel", "reduction")


@register_op
class DotOp(_ContractionOp):
    """``linalg.dot ins(%x, %y : memref<K>, memref<K>) outs(%s : memref<T>)``:
    s[] += x[k] * y[k]."""

    OP_NAME = "linalg.dot"
    DEFAULT_MAPS = _maps(1, (0,), (0,), ())
    ITERATORS = ("reduction",)


@register_op
class BatchVecmatOp(_ContractionOp):
    """``linalg.batch_vecmat ins(%x, %A : memref<BxK>, memref<BxKxN>) outs(%y : memref<BxN>)``:
    y[b, j] += x[b, k] * A[b, k, j]."""

    OP_NAME = "linalg.batch_vecmat"
    DEFAULT_MAPS = _maps(3, (0, 2), (0, 2, 1), (0, 1))
    ITERATORS = ("parallel", "parallel", "reduction")


@register_op
class BatchReduceMatmulOp(_ContractionOp):
    """``linalg.batch_reduce_matmul [indexing_maps = [...]] ins(%A, %B) outs(%C)``:
    C[i, j] += A[b, i, k] * B[b, k, j], summed over the batch too (by default)."""

    OP_NAME = "linalg.batch_reduce_matmul"
    DEFAULT_MAPS = _maps(4, (0, 1, 3), (0, 3, 2), (1, 2))
    ITERATORS = ("reduction", "parallel", "parallel", "reduction")
    USER_MAPS = True
    CAST_ATTR = True

    def _verify_user_maps(self) -> None:
        maps = self.indexing_maps
        if len(maps) != 3:
            raise self.error("Indexing_map attribute must have 3 affine maps.")
        out = maps[2]
        if out.num_results != 2:
            raise self.error(f"expects 2 dims, but got ({out.num_results}).")
        if not (out.results[0].is_function_of_dim(1) and out.results[1].is_function_of_dim(2)):
            raise self.error("Invalid output map result dimension.")
        for k in range(2):
            m, d = maps[k], self.DEFAULT_MAPS[k]
            _verify_batch_input_map(self, m, d, is_lhs=k == 0)


@register_op
class Mmt4dOp(_ContractionOp):
    """``linalg.mmt4d ins(%A, %B : memref<MxKxM0xK0>, memref<NxKxN0xK0>) outs(%C :
    memref<MxNxM0xN0>)``: C[m, n, m0, n0] += A[m, k, m0, k0] * B[n, k, n0, k0], the
    tiled (data-tiled) matmul with B transposed inside its tiles."""

    OP_NAME = "linalg.mmt4d"
    DEFAULT_MAPS = _maps(6, (0, 2, 3, 5), (1, 2, 4, 5), (0, 1, 3, 4))
    ITERATORS = ("parallel", "parallel", "reduction", "parallel", "parallel", "reduction")


@register_op
class ContractOp(_ContractionOp):
    """``linalg.contract indexing_maps = [#a, #b, #c] ins(%A, %B) outs(%C)``: C[c(d)] +=
    cast(A[a(d)]) * cast(B[b(d)]) over the iteration space of the maps (MLIR 22's general
    contraction, the einsum of two operands): a dim in C's map is parallel, the others
    (contracting: in both inputs, not in C) reductions."""

    OP_NAME = "linalg.contract"
    USER_MAPS = True
    CAST_ATTR = True
    MAPS_REQUIRED = True

    @property
    def iterator_types(self) -> tuple[str, ...]:
        maps = self.indexing_maps
        if len(maps) < 3:
            return ()
        out = {e.position for e in maps[2].results if hasattr(e, "position")}
        return tuple("parallel" if d in out else "reduction" for d in range(maps[0].num_dims))

    def _verify_user_maps(self) -> None:
        """MLIR's ContractOp::verify, in its order and words (emitError: no op prefix)."""
        from ..affine_expr import AffineDimExpr
        dims = None
        used_in: list[int] = []
        used_out: list[int] = []
        for k, (m, v) in enumerate(zip(self.indexing_maps, self.operands)):
            if not m.is_projected_permutation():
                raise VerifyError("provided affine_map is not a projected permutation", self.loc)
            rank = getattr(v.type, "rank", None)
            if rank is not None and m.num_results != rank:
                raise VerifyError("ranks of shaped operand and results of corresponding "
                                  "affine_map differ", self.loc)
            if rank is None and m.num_results:
                raise VerifyError("affine_map specifies shaped access while operand has "
                                  "non-shaped type", self.loc)
            if dims is None:
                dims = m.num_dims
                used_in, used_out = [0] * dims, [0] * dims
            elif dims != m.num_dims:
                raise VerifyError("iteration spaces of provided affine_maps differ", self.loc)
            for e in m.results:
                if isinstance(e, AffineDimExpr):
                    (used_in if k < 2 else used_out)[e.position] += 1
        contracting = False
        for d in range(dims or 0):
            n_in, n_out = used_in[d], used_out[d]
            contracting |= n_in == 2 and n_out == 0
            if n_in == 0 and n_out == 0:
                raise VerifyError(f"iteration space dim at index {d} not used to access any "
                                  f"operand", self.loc)
            if n_in == 1 and n_out != 1:
                raise VerifyError(f"iteration space dim at index {d} is neither a contracting "
                                  f"dim nor of parallel iteration type", self.loc)
        if not contracting:
            raise VerifyError("'indexing_maps' do not specify a contracting dimension", self.loc)


@register_op
class QuantizedMatmulOp(_UnaryNamedOp):
    """``linalg.quantized_matmul ins(%A, %B, %az, %bz : memref<MxKxi8>, memref<KxNxi8>, i32,
    i32) outs(%C : memref<MxNxi32>)``: C[i, j] += (A[i, k] - az) * (B[k, j] - bz), every
    operand cast (signed) to C's element type first.  (--hopt: a ``linalg.matmul`` of A and B
    and the zero points' share taken off, :mod:`polyopt.schedules.quantized`.)"""

    OP_NAME = "linalg.quantized_matmul"
    NUM_INPUTS = 4

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return _maps(3, (0, 2), (2, 1), (), (), (0, 1))

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel", "parallel", "reduction")

    @property
    def unsigned_cast(self) -> bool:
        return False

    def build_payload(self, b, args, loc):
        a, bv, az, bz, out = args
        t = out.type
        x = build_sub(b, build_cast(b, a, t, False, loc), build_cast(b, az, t, False, loc), loc)
        y = build_sub(b, build_cast(b, bv, t, False, loc), build_cast(b, bz, t, False, loc), loc)
        return [build_add(b, out, build_mul(b, x, y, loc), loc)]

    def payload_type_error(self) -> Optional[str]:
        out = _element_type(self.operands[4].type)
        for v in self.operands[:4]:
            src = _element_type(v.type)
            if cast_op_name(src, out, False) is None:
                return f"cannot cast '{src}' to the output element type '{out}'"
        return binary_error(out, out)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        memo = attrs.pop("linalg.memoized_indexing_maps", None)
        op = super().from_generic(p, loc, operands, result_types, attrs, regions)
        got = tuple(getattr(e, "value", None) for e in getattr(memo, "elements", ()))
        if memo is not None and got != op.indexing_maps:
            raise ParseError(f"'{cls.OP_NAME}' op linalg.memoized_indexing_maps {memo} are "
                             f"not the op's indexing maps", loc)
        return op

    @classmethod
    def parse_custom(cls, p, loc, name):
        op = cls._parse_named(p, loc, name)
        msg = op.payload_type_error()
        if msg is not None:
            raise _custom_error(p, name, msg)
        return op

    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != 5:
            raise self.error("expects four inputs and one output")
        self._verify_operand_kinds()
        self.verify_structured()


@register_op
class BatchMmt4dOp(_ContractionOp):
    """``linalg.batch_mmt4d``: mmt4d per batch, C[b, m, n, m0, n0] += A[b, m, k, m0, k0] *
    B[b, n, k, n0, k0]."""

    OP_NAME = "linalg.batch_mmt4d"
    DEFAULT_MAPS = _maps(7, (0, 1, 3, 4, 6), (0, 2, 3, 5, 6), (0, 1, 2, 4, 5))
    ITERATORS = ("parallel", "parallel", "parallel", "reduction", "parallel", "parallel",
                 "reduction")


# ---------------------------------------------------------------------------------------------
# convolutions
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


_CONV_ITERATORS = {
    "conv2d": ("parallel",) * 4 + ("reduction",) * 3,
    "conv1d": ("parallel",) * 3 + ("reduction",) * 2,
    "depthwise2d": ("parallel",) * 4 + ("reduction",) * 2,
}


def _dense_i64(attr, n: int) -> Optional[tuple[int, ...]]:
    """The values of ``dense<..> : tensor<n x i64>``, else ``None``."""
    if isinstance(attr, DenseElementsAttr) and attr.shape == (n,) and attr.element_type == i64:
        return tuple(attr.values)
    return None


class _LinalgConvOp(ConvOperands, _ContractionOp):
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

    @property
    def DEFAULT_MAPS(self):  # noqa: N802  (the maps follow from strides and dilations)
        return self.indexing_maps

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return _CONV_ITERATORS[self.CONV_KIND]

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        attrs: dict = {}
        if p.peek_keyword("indexing_maps"):
            raise p.error(f"'{cls.OP_NAME}' does not take indexing_maps", start)
        ins, outs = _parse_ins_outs(p, name, attrs)
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        if "indexing_maps" in attrs:
            raise p.error(f"'{cls.OP_NAME}' does not take indexing_maps", start)
        if len(ins) != 2 or len(outs) != 1:
            raise p.error(f"'{name}' expects 2 input(s) and 1 output, got {len(ins)} and "
                          f"{len(outs)}", start)
        return cls(operands=ins + outs, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        memo = attrs.pop("linalg.memoized_indexing_maps", None)
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is not None and seg != (2, 1):
            raise ParseError(f"'{cls.OP_NAME}' expects 2 input(s) and 1 output, got "
                             f"operandSegmentSizes {attrs['operandSegmentSizes']}", loc)
        op = cls(operands=operands, attributes=_strip(attrs, "operandSegmentSizes"), loc=loc)
        if memo is not None:
            try:
                expected = op.indexing_maps
            except ValueError:
                return op   # the verifier reports the malformed attribute
            got = tuple(getattr(e, "value", None) for e in getattr(memo, "elements", ()))
            if got != tuple(expected):
                raise ParseError(f"'{cls.OP_NAME}' with non-default indexing_maps (transposed "
                                 "or broadcast operands) is not supported", loc)
        op._check_generic_region(regions, loc)
        return op

    def print_custom(self, p) -> None:
        p.print(self.OP_NAME)
        p.print_attr_dict(self.attributes)
        _print_ins_outs(p, [self.input, self.filter], [self.output])

    def verify_op(self) -> None:
        types = verify_memref_operands(self, self.OPERAND_NAMES, self.RANKS,
                                       mixed=self.CONV_KIND != "depthwise2d")
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

__all__ = ["MATMUL_MAPS", "BATCH_MATMUL_MAPS", "LinalgMatmulOp", "BatchMatmulOp", "MatvecOp",
           "VecmatOp", "DotOp", "conv_indexing_maps", "LinalgConv2DNhwcHwcfOp",
           "LinalgConv1DNwcWcfOp", "LinalgDepthwiseConv2DNhwcHwcOp", "LINALG_CONV_OPS",
           "BatchVecmatOp", "BatchReduceMatmulOp", "Mmt4dOp", "QuantizedMatmulOp", "ContractOp", "BatchMmt4dOp"]
