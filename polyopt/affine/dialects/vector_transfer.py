"""``vector.transfer_read`` / ``vector.transfer_write`` and the mask ops of MLIR 22's vector
dialect (``vector.create_mask``, ``vector.constant_mask``): what ``--affine-super-vectorize``
emits for an affine loop.

A transfer moves a vector between a memref and registers at ``%m[%i, ...]``: its
``permutation_map`` (a projected permutation of the memref's dims, ``0`` for a broadcast dim)
says which memref dim each vector dim walks along; ``in_bounds`` (one flag per vector dim)
says which dims may be assumed to stay inside the memref.  Along a dim that is not in bounds,
a read returns the padding value for the positions past the memref's end and a write skips
them.  The optional mask operand (its shape is the vector's, in the memref's dim order, without
the broadcast dims) disables positions the same way.

As upstream, both attributes are always held (``in_bounds`` all false, ``permutation_map`` the
minor identity by default), printed in the custom form only when they differ from the default,
and in the generic form always, with ``operandSegmentSizes``.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..affine_expr import AffineConstantExpr, AffineDimExpr, AffineMap
from ..attributes import AffineMapAttr, ArrayAttr, DenseArrayAttr, IntegerAttr
from ..diagnostics import VerifyError
from ..ir import Operation, Value, register_op
from ..types import IndexType, IntegerType, MemRefType, Type, VectorType, bitwidth, i1, index
from .memref import parse_indices, print_indexed

_PROJECTED = ("requires a projected permutation_map (at most one dim or the zero constant can "
              "appear in each result)")


def bool_array(values: Sequence[bool]) -> ArrayAttr:
    return ArrayAttr(tuple(IntegerAttr(1 if v else 0, i1) for v in values))


def minor_identity_for(source: Type, vector: VectorType) -> Optional[AffineMap]:
    """MLIR's ``getTransferMinorIdentityMap``: the memref's last dims, one per vector dim (not
    counting the dims of a vector element type); None when the memref has too few dims."""
    if not isinstance(source, MemRefType):
        return None
    rank = len(vector.shape)
    if isinstance(source.element_type, VectorType):
        rank -= len(source.element_type.shape)
    if rank > source.rank or rank < 0:
        return None
    return AffineMap.minor_identity(source.rank, rank)


def inferred_mask_type(vector: VectorType, pmap: AffineMap) -> Optional[VectorType]:
    """MLIR's ``inferTransferOpMaskType``: the vector's shape in the memref's dim order, without
    the broadcast dims (None when the map is not a projected permutation)."""
    if not pmap.is_projected_permutation(allow_zero_in_results=True) or \
            len(pmap.results) != len(vector.shape):
        return None
    size_of = {r.position: n for r, n in zip(pmap.results, vector.shape)
               if isinstance(r, AffineDimExpr)}
    # upstream makes a 0-D mask a single-element 1-D one
    return VectorType(tuple(size_of[d] for d in sorted(size_of)) or (1,), i1)


class _TransferOp(Operation):
    """What transfer_read and transfer_write share: the memref, its indices, the mask, the
    two attributes and their checks.  ``_segments`` holds (number of indices, has a mask) as
    written; without it (an op built by name) they follow from the memref's rank."""

    FIRST = 0       # operand number of the memref

    def _layout(self) -> tuple[int, bool]:
        seg = getattr(self, "_segments", None)
        if seg is not None:
            return seg
        rest = len(self.operands) - self.FIRST - 1 - (1 if self.OP_NAME.endswith("read") else 0)
        t = self.operands[self.FIRST].type if len(self.operands) > self.FIRST else None
        rank = t.rank if isinstance(t, MemRefType) else rest
        return (rank, rest > rank) if rest > rank else (rest, False)

    @property
    def source(self) -> Value:
        return self.operands[self.FIRST]

    memref = source

    @property
    def indices(self) -> list[Value]:
        n, _ = self._layout()
        return self.operands[self.FIRST + 1:self.FIRST + 1 + n]

    @property
    def mask(self) -> Optional[Value]:
        _, has_mask = self._layout()
        return self.operands[-1] if has_mask else None

    @property
    def permutation_map(self) -> AffineMap:
        return self.attributes["permutation_map"].value

    @property
    def in_bounds(self) -> list[bool]:
        return [bool(a.value) for a in self.attributes["in_bounds"].elements]

    @property
    def vector_type(self) -> VectorType:
        raise NotImplementedError

    # -- syntax --------------------------------------------------------------------------------

    @staticmethod
    def _parse_tail(p, source: Value, src_start: int, vt_first: bool, mask, mask_start,
                    attrs: dict):
        """``: memref, vector`` (read) or ``: vector, memref`` (write), the default attributes
        and the mask's type; -> (memref type, vector type)."""
        p.skip_ws()
        types_at = p.pos
        p.expect(":")
        types = p.parse_type_list()
        if len(types) != 2:
            raise p.error(f"custom op '{p.op_stack[-1]}' requires two types", types_at)
        t0, t1 = types
        st, vt = (t1, t0) if vt_first else (t0, t1)
        checks = [(isinstance(st, MemRefType), "requires memref or ranked tensor type"),
                  (isinstance(vt, VectorType), "requires vector type")]
        for ok, message in reversed(checks) if vt_first else checks:  # the first type first
            if not ok:
                raise p.error(f"custom op '{p.op_stack[-1]}' {message}", types_at)
        if "permutation_map" not in attrs:
            pmap = minor_identity_for(st, vt)
            if pmap is None:
                raise p.error(f"custom op '{p.op_stack[-1]}' expected a custom permutation_map "
                              "when rank(source) != rank(destination)", types_at)
            attrs["permutation_map"] = AffineMapAttr(pmap)
        pattr = attrs["permutation_map"]
        if "in_bounds" not in attrs and isinstance(pattr, AffineMapAttr):
            attrs["in_bounds"] = bool_array([False] * len(pattr.value.results))
        p.check_type(source, st, src_start)
        if mask is not None:
            if isinstance(st.element_type, VectorType):
                raise p.error(f"custom op '{p.op_stack[-1]}' does not support masks with vector "
                              "element type", mask_start)
            if isinstance(pattr, AffineMapAttr):
                if len(pattr.value.results) != len(vt.shape):
                    raise p.error(f"custom op '{p.op_stack[-1]}' expected the same rank for the "
                                  "vector and the results of the permutation map", types_at)
                mt = inferred_mask_type(vt, pattr.value)
                if mt is not None:
                    p.check_type(mask, mt, mask_start)
        return st, vt

    @staticmethod
    def _parse_optional_mask(p):
        if p.peek(","):
            p.expect(",")
            p.skip_ws()
            start = p.pos
            return p.parse_operand(), start
        return None, None

    def _custom_attrs(self) -> tuple:
        """The attributes the custom form leaves out (they have their default value)."""
        elide = []
        pattr = self.attributes.get("permutation_map")
        if isinstance(pattr, AffineMapAttr) and pattr.value.is_minor_identity():
            elide.append("permutation_map")
        ib = self.attributes.get("in_bounds")
        if isinstance(ib, ArrayAttr) and all(isinstance(a, IntegerAttr) and not a.value
                                             for a in ib.elements):
            elide.append("in_bounds")
        return tuple(elide)

    def _segment_sizes(self) -> tuple:
        raise NotImplementedError

    def generic_properties(self) -> dict:
        props = {k: v for k, v in self.attributes.items()
                 if k in ("in_bounds", "permutation_map")}
        props["operandSegmentSizes"] = DenseArrayAttr(IntegerType(32), self._segment_sizes())
        return props

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items()
                if k not in ("in_bounds", "permutation_map")}

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        seg = attrs.get("operandSegmentSizes")
        attrs = {k: v for k, v in attrs.items() if k != "operandSegmentSizes"}
        op = cls(operands=operands, result_types=result_types, attributes=attrs,
                 regions=regions, loc=loc)
        if isinstance(seg, DenseArrayAttr) and len(seg.values) == 4 and \
                sum(seg.values) == len(operands):
            n_idx = seg.values[1] if cls.OP_NAME.endswith("read") else seg.values[2]
            op._segments = (n_idx, bool(seg.values[3]))
        return op

    # -- verification --------------------------------------------------------------------------

    def _verify_attributes(self) -> None:
        pattr = self.attributes.get("permutation_map")
        if not isinstance(pattr, AffineMapAttr):
            raise self.error("requires attribute 'permutation_map'")
        ib = self.attributes.get("in_bounds")
        if ib is None:
            raise self.error("requires attribute 'in_bounds'")
        if not isinstance(ib, ArrayAttr) or not all(
                isinstance(a, IntegerAttr) and a.type == i1 for a in ib.elements):
            raise self.error("attribute 'in_bounds' failed to satisfy constraint: 1-bit boolean "
                             "array attribute")

    def _verify_transfer(self, st: Type, vt: Type) -> None:
        """MLIR's ``verifyTransferOp`` and the index count."""
        if not isinstance(st, MemRefType):
            raise self.error("requires source to be a memref or ranked tensor type")
        if not isinstance(vt, VectorType):
            raise self.error(f"{'result' if self.OP_NAME.endswith('read') else 'operand #0'} "
                             f"must be vector of any type values, but got '{vt}'")
        if len(self.indices) != st.rank:
            raise self.error(f"requires {st.rank} indices")
        for k, v in enumerate(self.indices):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{self.FIRST + 1 + k} must be variadic of index, but "
                                 f"got '{v.type}'")
        pmap = self.permutation_map
        et = st.element_type
        if isinstance(et, VectorType):
            if _minor_bits(vt) % _minor_bits(et) != 0:
                raise self.error("requires the bitwidth of the minor 1-D vector to be an "
                                 "integral multiple of the bitwidth of the minor 1-D vector of "
                                 "the source")
            if len(et.shape) > len(vt.shape):
                raise self.error("requires source vector element and vector result ranks to "
                                 "match.")
            if len(pmap.results) != len(vt.shape) - len(et.shape):
                raise self.error("requires a permutation_map with result dims of the same rank "
                                 "as the vector type")
            if self.mask is not None:
                raise self.error("does not support masks with vector element type")
        else:
            if _minor_bits(vt) % bitwidth(et) != 0:
                raise self.error("requires the bitwidth of the minor 1-D vector to be an "
                                 "integral multiple of the bitwidth of the source element type")
            if len(pmap.results) != len(vt.shape):
                raise self.error("requires a permutation_map with result dims of the same rank "
                                 "as the vector type")
        if pmap.num_symbols:
            raise self.error("requires permutation_map without symbols")
        if pmap.num_dims != st.rank:
            raise self.error("requires a permutation_map with input dims of the same rank as "
                             "the source type")
        if self.mask is not None:
            want = inferred_mask_type(vt, pmap)
            if want is not None and self.mask.type != want:
                raise self.error(f"inferred mask type ('{want}') and mask operand type "
                                 f"('{self.mask.type}') don't match")
        if len(pmap.results) != len(self.in_bounds):
            raise self.error(f"expects the in_bounds attr of same rank as permutation_map "
                             f"results: affine_map<{pmap}> vs inBounds of size: "
                             f"{len(self.in_bounds)}")

    def _verify_permutation_map(self) -> None:
        pmap = self.permutation_map
        seen = set()
        for r in pmap.results:
            if isinstance(r, AffineConstantExpr):
                if r.value != 0:
                    raise self.error(_PROJECTED)
                continue
            if not isinstance(r, AffineDimExpr):
                raise self.error(_PROJECTED)
            if r.position in seen:
                raise self.error("requires a permutation_map that is a permutation (found one "
                                 "dim used more than once)")
            seen.add(r.position)


def _minor_bits(t: VectorType) -> int:
    return bitwidth(t.element_type) * (t.shape[-1] if t.shape else 1)


@register_op
class TransferReadOp(_TransferOp):
    """``%v = vector.transfer_read %m[%i, %j], %pad [, %mask] {in_bounds = [true],
    permutation_map = affine_map<(d0, d1) -> (0)>} : memref<13x21xf32>, vector<8xf32>``."""

    OP_NAME = "vector.transfer_read"

    @classmethod
    def build(cls, memref: Value, indices: Sequence[Value], padding: Value,
              vector_type: VectorType, permutation_map: Optional[AffineMap] = None,
              in_bounds: Optional[Sequence[bool]] = None, mask: Optional[Value] = None,
              loc=None) -> "TransferReadOp":
        pmap = permutation_map or minor_identity_for(memref.type, vector_type)
        if pmap is None:
            raise ValueError(f"no default permutation map for '{vector_type}' from "
                             f"'{memref.type}'")
        ib = list(in_bounds) if in_bounds is not None else [False] * len(pmap.results)
        operands = [memref, *indices, padding] + ([mask] if mask is not None else [])
        op = cls(operands=operands, result_types=[vector_type],
                 attributes={"permutation_map": AffineMapAttr(pmap),
                             "in_bounds": bool_array(ib)}, loc=loc)
        op._segments = (len(indices), mask is not None)
        return op

    @property
    def padding(self) -> Value:
        n, _ = self._layout()
        return self.operands[1 + n]

    @property
    def vector_type(self) -> VectorType:
        return self.results[0].type

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        src_start = p.pos
        src = p.parse_operand()
        idx = parse_indices(p)
        p.expect(",")
        p.skip_ws()
        pad_start = p.pos
        pad = p.parse_operand()
        mask, mask_start = cls._parse_optional_mask(p)
        attrs = p.parse_optional_attr_dict()
        st, vt = cls._parse_tail(p, src, src_start, False, mask, mask_start, attrs)
        p.check_type(pad, st.element_type, pad_start)
        operands = [src, *idx, pad] + ([mask] if mask is not None else [])
        op = cls(operands=operands, result_types=[vt], attributes=attrs, loc=loc)
        op._segments = (len(idx), mask is not None)
        return op

    def print_custom(self, p) -> None:
        p.print("vector.transfer_read ")
        print_indexed(p, self.source, self.indices)
        p.print(", ")
        p.print_operand(self.padding)
        if self.mask is not None:
            p.print(", ")
            p.print_operand(self.mask)
        p.print_attr_dict(self.attributes, elide=self._custom_attrs())
        p.print(f" : {p.type_str(self.source.type)}, {p.type_str(self.vector_type)}")

    def _segment_sizes(self) -> tuple:
        n, has_mask = self._layout()
        return (1, n, 1, int(has_mask))

    def verify_op(self) -> None:
        if len(self.results) != 1 or len(self.operands) < 2:
            raise self.error("expects a memref, indices, a padding value and one result")
        self._verify_attributes()
        st, vt = self.source.type, self.vector_type
        self._verify_transfer(st, vt)
        et, pt = st.element_type, self.padding.type
        if isinstance(et, VectorType):
            if et != pt:
                raise self.error("requires source element type and padding type to match.")
        elif pt != et:
            raise self.error("requires formal padding and source of the same elemental type")
        self._verify_permutation_map()


@register_op
class TransferWriteOp(_TransferOp):
    """``vector.transfer_write %v, %m[%i, %j] [, %mask] {in_bounds = [true]} :
    vector<8xf32>, memref<13x21xf32>``."""

    OP_NAME = "vector.transfer_write"
    FIRST = 1

    @classmethod
    def build(cls, value: Value, memref: Value, indices: Sequence[Value],
              permutation_map: Optional[AffineMap] = None,
              in_bounds: Optional[Sequence[bool]] = None, mask: Optional[Value] = None,
              loc=None) -> "TransferWriteOp":
        pmap = permutation_map or minor_identity_for(memref.type, value.type)
        if pmap is None:
            raise ValueError(f"no default permutation map for '{value.type}' into "
                             f"'{memref.type}'")
        ib = list(in_bounds) if in_bounds is not None else [False] * len(pmap.results)
        operands = [value, memref, *indices] + ([mask] if mask is not None else [])
        op = cls(operands=operands, attributes={"permutation_map": AffineMapAttr(pmap),
                                                "in_bounds": bool_array(ib)}, loc=loc)
        op._segments = (len(indices), mask is not None)
        return op

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def vector_type(self) -> VectorType:
        return self.value.type

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        v_start = p.pos
        v = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        src_start = p.pos
        src = p.parse_operand()
        idx = parse_indices(p)
        mask, mask_start = cls._parse_optional_mask(p)
        attrs = p.parse_optional_attr_dict()
        st, vt = cls._parse_tail(p, src, src_start, True, mask, mask_start, attrs)
        p.check_type(v, vt, v_start)
        operands = [v, src, *idx] + ([mask] if mask is not None else [])
        op = cls(operands=operands, attributes=attrs, loc=loc)
        op._segments = (len(idx), mask is not None)
        return op

    def print_custom(self, p) -> None:
        p.print("vector.transfer_write ")
        p.print_operand(self.value)
        p.print(", ")
        print_indexed(p, self.source, self.indices)
        if self.mask is not None:
            p.print(", ")
            p.print_operand(self.mask)
        p.print_attr_dict(self.attributes, elide=self._custom_attrs())
        p.print(f" : {p.type_str(self.vector_type)}, {p.type_str(self.source.type)}")

    def _segment_sizes(self) -> tuple:
        n, has_mask = self._layout()
        return (1, 1, n, int(has_mask))

    def verify_op(self) -> None:
        if self.results or len(self.operands) < 2:
            raise self.error("expects a vector, a memref, indices and no results")
        self._verify_attributes()
        st, vt = self.source.type, self.vector_type
        if isinstance(st, MemRefType) and len(self.indices) != st.rank:
            raise self.error(f"requires {st.rank} indices")
        if any(isinstance(r, AffineConstantExpr) and r.value == 0
               for r in self.permutation_map.results):
            raise self.error("should not have broadcast dimensions")
        self._verify_transfer(st, vt)
        self._verify_permutation_map()


# ---------------------------------------------------------------------------------------------
# masks

def _check_mask_result(op: Operation) -> VectorType:
    t = op.results[0].type if len(op.results) == 1 else None
    if not isinstance(t, VectorType) or t.element_type != i1:
        raise op.error(f"result #0 must be vector of 1-bit signless integer values, but got "
                       f"'{t}'")
    return t


@register_op
class CreateMaskOp(Operation):
    """``%m = vector.create_mask %a, %b : vector<4x8xi1>``: position ``(p, q)`` is set when
    ``p < %a`` and ``q < %b`` (a bound below 0 clears every position, one above the size sets
    them all)."""

    OP_NAME = "vector.create_mask"

    @classmethod
    def build(cls, sizes: Sequence[Value], mask_type: VectorType, loc=None) -> "CreateMaskOp":
        return cls(operands=list(sizes), result_types=[mask_type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        ops = p.parse_operand_list()
        for v in ops:
            p.check_type(v, index)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = p.parse_type()
        return cls(operands=ops, result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.create_mask ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        t = _check_mask_result(self)
        for k, v in enumerate(self.operands):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{k} must be variadic of index, but got '{v.type}'")
        if not t.shape:
            if len(self.operands) != 1:
                raise self.error("must specify exactly one operand for 0-D create_mask")
        elif len(self.operands) != len(t.shape):
            raise self.error("must specify an operand for each result vector dimension")


@register_op
class ConstantMaskOp(Operation):
    """``%m = vector.constant_mask [1, 3] : vector<2x4xi1>``: the positions below the given
    sizes are set."""

    OP_NAME = "vector.constant_mask"

    @classmethod
    def build(cls, sizes: Sequence[int], mask_type: VectorType, loc=None) -> "ConstantMaskOp":
        return cls(result_types=[mask_type],
                   attributes={"mask_dim_sizes": DenseArrayAttr(IntegerType(64), tuple(sizes))},
                   loc=loc)

    @property
    def mask_dim_sizes(self) -> tuple:
        a = self.attributes.get("mask_dim_sizes")
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    @classmethod
    def parse_custom(cls, p, loc, name):
        sizes = p.parse_comma_separated("[", "]", p.parse_integer)
        attrs = p.parse_optional_attr_dict()
        attrs["mask_dim_sizes"] = DenseArrayAttr(IntegerType(64), tuple(sizes))
        p.expect(":")
        t = p.parse_type()
        return cls(result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.constant_mask [" + ", ".join(map(str, self.mask_dim_sizes)) + "]")
        p.print_attr_dict(self.attributes, elide=("mask_dim_sizes",))
        p.print(" : " + p.type_str(self.results[0].type))

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "mask_dim_sizes"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "mask_dim_sizes"}

    def verify_op(self) -> None:
        t = _check_mask_result(self)
        a = self.attributes.get("mask_dim_sizes")
        if not isinstance(a, DenseArrayAttr) or a.element_type != IntegerType(64):
            raise self.error("requires attribute 'mask_dim_sizes'")
        sizes = self.mask_dim_sizes
        if not t.shape:     # upstream reports these two without the op's name
            if len(sizes) != 1:
                raise VerifyError("array attr must have length 1 for 0-D vectors", self.loc)
            if sizes[0] not in (0, 1):
                raise VerifyError("mask dim size must be either 0 or 1 for 0-D vectors",
                                  self.loc)
            return
        if len(sizes) != len(t.shape):
            raise self.error("must specify array attr of size equal vector result rank")
        if any(s < 0 or s > d for s, d in zip(sizes, t.shape)):
            raise self.error("array attr of size out of bounds of vector result dimension size")
        if 0 in sizes and any(sizes):
            raise self.error("expected all mask dim sizes to be zeros, as a result of "
                             "conjunction with zero mask dim")
