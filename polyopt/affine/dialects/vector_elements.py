"""The vector ops of MLIR 22 that move elements between vectors: ``vector.extract``,
``vector.insert`` (static positions, ``-1`` for poison, and ``index`` values), ``vector.shuffle``,
``vector.shape_cast``, ``vector.transpose``, ``vector.extract_strided_slice`` and
``vector.insert_strided_slice``.

Positions are held as upstream holds them: ``static_position = array<i64: ...>`` with
:data:`DYNAMIC` where an operand gives the position (the operands after the vector), the shuffle
``mask`` as an ``array<i64>``, the strided slices' ``offsets``/``sizes``/``strides`` as arrays of
integers; the generic form prints them as properties (``<{...}>``).
"""

from __future__ import annotations

from typing import Sequence, Union

from ..attributes import ArrayAttr, DenseArrayAttr, IntegerAttr
from ..diagnostics import VerifyError
from ..ir import Operation, Value, register_op
from ..types import IndexType, IntegerType, Type, VectorType, element_type_of, i64, index
from .memref import parse_cast_like, print_cast_like
from .vector import parse_vector_type

#: ``ShapedType::kDynamic``: a position given by an operand.
DYNAMIC = -(1 << 63)
#: ``vector::kPoisonIndex``: a position whose element is poison.
POISON = -1

Position = Union[int, Value]


def _i64_array(values: Sequence[int]) -> DenseArrayAttr:
    return DenseArrayAttr(IntegerType(64), tuple(values))


def _parse_positions(p) -> tuple[list[int], list[Value]]:
    """``[0, %i, -1]`` -> (static positions with :data:`DYNAMIC` for operands, the operands)."""
    static: list[int] = []
    dynamic: list[Value] = []

    def one():
        if p.peek("%"):
            dynamic.append(p.parse_operand(index))
            static.append(DYNAMIC)
        else:
            static.append(p.parse_integer("integer or SSA value"))
    p.parse_comma_separated("[", "]", one)
    return static, dynamic


def _valid_position(pos: int, size: int, poison_ok: bool = True) -> bool:
    return 0 <= pos < size or (poison_ok and pos == POISON)


class _PositionOp(Operation):
    """extract/insert: ``static_position`` and the dynamic position operands after the
    ``FIXED`` operands."""

    FIXED = 1

    @property
    def static_position(self) -> tuple[int, ...]:
        a = self.attributes.get("static_position")
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    @property
    def dynamic_position(self) -> list[Value]:
        return self.operands[self.FIXED:]

    @property
    def mixed_position(self) -> list[Position]:
        """Each position as an ``int`` or the ``Value`` giving it."""
        it = iter(self.dynamic_position)
        return [next(it, None) if s == DYNAMIC else s for s in self.static_position]

    def _print_position(self, p) -> None:
        p.print("[" + ", ".join(p.value_name(x) if isinstance(x, Value) else str(x)
                                for x in self.mixed_position) + "]")

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "static_position"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "static_position"}

    def _verify_positions(self, vt: VectorType, dest: bool) -> None:
        a = self.attributes.get("static_position")
        if not isinstance(a, DenseArrayAttr) or a.element_type != IntegerType(64):
            raise self.error("requires attribute 'static_position'")
        if sum(s == DYNAMIC for s in self.static_position) != len(self.dynamic_position):
            raise self.error("mismatch between dynamic and static positions")
        for k, v in enumerate(self.dynamic_position):
            if not isinstance(v.type, IndexType):
                raise self.error(f"operand #{self.FIXED + k} must be variadic of index, but got "
                                 f"'{v.type}'")
        if len(self.static_position) > len(vt.shape):
            raise self.error("expected position attribute of rank no greater than "
                             f"{'dest ' if dest else ''}vector rank")

    def _verify_static_ranges(self, vt: VectorType, dest: bool) -> None:
        for k, (s, d) in enumerate(zip(self.static_position, vt.shape)):
            if s != DYNAMIC and not _valid_position(s, d):
                tail = "dest vector dimension" if dest else "vector dimension or poison (-1)"
                raise self.error(f"expected position attribute #{k + 1} to be a non-negative "
                                 f"integer smaller than the corresponding {tail}")


@register_op
class ExtractOp(_PositionOp):
    """``%e = vector.extract %v[1, %i] : f32 from vector<2x4xf32>`` (a row when fewer
    positions than dims: ``vector.extract %v[1] : vector<4xf32> from vector<2x4xf32>``)."""

    OP_NAME = "vector.extract"

    @classmethod
    def build(cls, vector: Value, position: Sequence[Position], loc=None) -> "ExtractOp":
        vt = vector.type
        static = [DYNAMIC if isinstance(x, Value) else int(x) for x in position]
        dyn = [x for x in position if isinstance(x, Value)]
        rest = vt.shape[len(static):]
        rt = VectorType(rest, vt.element_type) if rest else vt.element_type
        return cls(operands=[vector, *dyn], result_types=[rt],
                   attributes={"static_position": _i64_array(static)}, loc=loc)

    @property
    def vector(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        static, dyn = _parse_positions(p)
        attrs = p.parse_optional_attr_dict()
        attrs["static_position"] = _i64_array(static)
        p.expect(":")
        rt = p.parse_type()
        p.expect_keyword("from")
        vt = parse_vector_type(p)
        p.check_type(v, vt, start)
        return cls(operands=[v, *dyn], result_types=[rt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.extract ")
        p.print_operand(self.vector)
        self._print_position(p)
        p.print_attr_dict(self.attributes, elide=("static_position",))
        p.print(f" : {p.type_str(self.results[0].type)} from {p.type_str(self.vector.type)}")

    def verify_op(self) -> None:
        if not self.operands or len(self.results) != 1:
            raise self.error("expects a vector operand and one result")
        vt, rt = self.vector.type, self.results[0].type
        if not isinstance(vt, VectorType):
            raise self.error(f"operand #0 must be vector of any type values, but got '{vt}'")
        if element_type_of(rt) != vt.element_type:
            raise self.error("failed to verify that operand and result have same element type")
        if isinstance(rt, VectorType) and not rt.shape:
            # upstream emits this one without the op name
            raise VerifyError("expected a scalar instead of a 0-d vector as the result type",
                              self.loc)
        self._verify_positions(vt, dest=False)
        self._verify_static_ranges(vt, dest=False)
        rest = vt.shape[len(self.static_position):]
        want = VectorType(rest, vt.element_type) if rest else vt.element_type
        if rt != want:
            raise self.error(f"inferred type(s) '{want}' are incompatible with return type(s) "
                             f"of operation '{rt}'")


@register_op
class InsertOp(_PositionOp):
    """``%r = vector.insert %s, %v [1, %i] : f32 into vector<2x4xf32>`` (a row when the source
    is a vector)."""

    OP_NAME = "vector.insert"
    FIXED = 2

    @classmethod
    def build(cls, value: Value, dest: Value, position: Sequence[Position],
              loc=None) -> "InsertOp":
        static = [DYNAMIC if isinstance(x, Value) else int(x) for x in position]
        dyn = [x for x in position if isinstance(x, Value)]
        return cls(operands=[value, dest, *dyn], result_types=[dest.type],
                   attributes={"static_position": _i64_array(static)}, loc=loc)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def dest(self) -> Value:
        return self.operands[1]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        vstart = p.pos
        v = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        dstart = p.pos
        d = p.parse_operand()
        static, dyn = _parse_positions(p)
        attrs = p.parse_optional_attr_dict()
        attrs["static_position"] = _i64_array(static)
        p.expect(":")
        st = p.parse_type()
        p.expect_keyword("into")
        dt = parse_vector_type(p)
        p.check_type(v, st, vstart)
        p.check_type(d, dt, dstart)
        return cls(operands=[v, d, *dyn], result_types=[dt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.insert ")
        p.print_operands([self.value, self.dest])
        p.print(" ")
        self._print_position(p)
        p.print_attr_dict(self.attributes, elide=("static_position",))
        p.print(f" : {p.type_str(self.value.type)} into {p.type_str(self.dest.type)}")

    def verify_op(self) -> None:
        if len(self.operands) < 2 or len(self.results) != 1:
            raise self.error("expects a value, a vector and one result")
        st, dt, rt = self.value.type, self.dest.type, self.results[0].type
        if not isinstance(dt, VectorType):
            raise self.error(f"operand #1 must be vector of any type values, but got '{dt}'")
        if dt != rt:
            raise self.error("failed to verify that all of {dest, result} have same type")
        if element_type_of(st) != dt.element_type:
            raise self.error("failed to verify that source operand and result have same element "
                             "type")
        if isinstance(st, VectorType) and not st.shape:
            # upstream emits this one without the op name
            raise VerifyError("expected a scalar instead of a 0-d vector as the source operand",
                              self.loc)
        self._verify_positions(dt, dest=True)
        n = len(self.static_position)
        if isinstance(st, VectorType) and len(st.shape) + n != len(dt.shape):
            raise self.error("expected position attribute rank + source rank to match dest "
                             "vector rank")
        if not isinstance(st, VectorType) and n != len(dt.shape):
            raise self.error("expected position attribute rank to match the dest vector rank")
        self._verify_static_ranges(dt, dest=True)


# ---------------------------------------------------------------------------------------------
# shape_cast, shuffle

@register_op
class ShapeCastOp(Operation):
    """``%r = vector.shape_cast %v : vector<2x4xf32> to vector<8xf32>``: the same elements in
    row-major order, another shape."""

    OP_NAME = "vector.shape_cast"

    @classmethod
    def build(cls, source: Value, result_type: VectorType, loc=None) -> "ShapeCastOp":
        return cls(operands=[source], result_types=[result_type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, attrs, dst = parse_cast_like(p, parse_vector_type)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        print_cast_like(p, self)

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        src, dst = self.source.type, self.results[0].type
        for k, t in (("operand #0", src), ("result #0", dst)):
            if not isinstance(t, VectorType):
                raise self.error(f"{k} must be vector of any type values, but got '{t}'")
        if src.element_type != dst.element_type:
            raise self.error("has different source and result element types")
        if src.num_elements != dst.num_elements:
            raise self.error(f"has different number of elements at source ({src.num_elements}) "
                             f"and result ({dst.num_elements})")


@register_op
class TransposeOp(Operation):
    """``%r = vector.transpose %v, [1, 0] : vector<3x7xf32> to vector<7x3xf32>``: dimension k
    of the result is dimension ``permutation[k]`` of the source."""

    OP_NAME = "vector.transpose"

    @classmethod
    def build(cls, source: Value, permutation: Sequence[int], loc=None) -> "TransposeOp":
        st = source.type
        shape = tuple(st.shape[k] for k in permutation)
        return cls(operands=[source], result_types=[VectorType(shape, st.element_type)],
                   attributes={"permutation": _i64_array(permutation)}, loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def permutation(self) -> tuple[int, ...]:
        a = self.attributes.get("permutation")
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        p.expect(",")
        perm = p.parse_comma_separated("[", "]", lambda: p.parse_integer("integer value",
                                                                         op_name=name))
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_vector_type(p)
        p.expect_keyword("to")
        dst = parse_vector_type(p)
        p.check_type(v, src, start)
        attrs["permutation"] = _i64_array(perm)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.transpose ")
        p.print_operand(self.source)
        p.print(", [" + ", ".join(str(k) for k in self.permutation) + "]")
        p.print_attr_dict(self.attributes, elide=("permutation",))
        p.print(f" : {p.type_str(self.source.type)} to {p.type_str(self.results[0].type)}")

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "permutation"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "permutation"}

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        a = self.attributes.get("permutation")
        if not (isinstance(a, DenseArrayAttr) and a.element_type == IntegerType(64)):
            raise self.error("requires attribute 'permutation'")
        src, dst = self.source.type, self.results[0].type
        for k, t in (("operand #0", src), ("result #0", dst)):
            if not isinstance(t, VectorType):
                raise self.error(f"{k} must be vector of any type values, but got '{t}'")
        if src.element_type != dst.element_type:
            raise self.error("failed to verify that all of {vector, result} have same element "
                             "type")
        rank = len(dst.shape)
        if len(src.shape) != rank:
            raise self.error(f"vector result rank mismatch: {rank}")
        perm = self.permutation
        if len(perm) != rank:
            raise self.error(f"transposition length mismatch: {len(perm)}")
        seen = set()
        for k, d in enumerate(perm):
            if not 0 <= d < rank:
                raise self.error(f"transposition index out of range: {d}")
            if d in seen:
                raise self.error(f"duplicate position index: {d}")
            seen.add(d)
            if dst.shape[k] != src.shape[d]:
                raise self.error(f"dimension size mismatch at: {d}")


@register_op
class ShuffleOp(Operation):
    """``%r = vector.shuffle %a, %b [0, 4, 1, 5] : vector<4xf32>, vector<4xf32>``: the rows
    (elements of a 1-D vector) of ``a`` then ``b``, picked by the mask (``-1``: poison)."""

    OP_NAME = "vector.shuffle"

    @classmethod
    def build(cls, v1: Value, v2: Value, mask: Sequence[int], loc=None) -> "ShuffleOp":
        t = v1.type
        rt = VectorType((len(mask), *t.shape[1:]), t.element_type)
        return cls(operands=[v1, v2], result_types=[rt],
                   attributes={"mask": _i64_array(mask)}, loc=loc)

    @property
    def mask(self) -> tuple[int, ...]:
        a = self.attributes.get("mask")
        return tuple(a.values) if isinstance(a, DenseArrayAttr) else ()

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v1 = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        start2 = p.pos
        v2 = p.parse_operand()
        mask = p.parse_comma_separated("[", "]", p.parse_integer)
        attrs = p.parse_optional_attr_dict()
        attrs["mask"] = _i64_array(mask)
        p.expect(":")
        t1 = parse_vector_type(p)
        p.expect(",")
        t2 = parse_vector_type(p)
        p.check_type(v1, t1, start)
        p.check_type(v2, t2, start2)
        rt = VectorType((len(mask), *t1.shape[1:]), t1.element_type)
        return cls(operands=[v1, v2], result_types=[rt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.shuffle ")
        p.print_operands(self.operands)
        p.print(" [" + ", ".join(map(str, self.mask)) + "]")
        p.print_attr_dict(self.attributes, elide=("mask",))
        p.print(f" : {p.type_str(self.operands[0].type)}, {p.type_str(self.operands[1].type)}")

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k == "mask"}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "mask"}

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1:
            raise self.error("expects two operands and one result")
        t1, t2, rt = (*(v.type for v in self.operands), self.results[0].type)
        for k, t in (("operand #0", t1), ("operand #1", t2), ("result #0", rt)):
            if not isinstance(t, VectorType):
                raise self.error(f"{k} must be fixed-length vector of any type values, but got "
                                 f"'{t}'")
        if t1.element_type != rt.element_type:
            raise self.error("failed to verify that first operand v1 and result have same "
                             "element type")
        if t2.element_type != rt.element_type:
            raise self.error("failed to verify that second operand v2 and result have same "
                             "element type")
        a = self.attributes.get("mask")
        if not isinstance(a, DenseArrayAttr) or a.element_type != IntegerType(64):
            raise self.error("requires attribute 'mask'")
        r, r1, r2 = len(rt.shape), len(t1.shape), len(t2.shape)
        if not (r1 == 0 and r2 == 0 and r == 1) and not (r1 == r and r2 == r):
            raise self.error("rank mismatch")
        for k in range(1, r1):
            if not rt.shape[k] == t1.shape[k] == t2.shape[k]:
                raise self.error("dimension mismatch")
        mask = self.mask
        if not mask:
            raise self.error("invalid mask length")
        if len(mask) != rt.shape[0]:
            raise self.error("mask length mismatch")
        limit = (t1.shape[0] if t1.shape else 1) + (t2.shape[0] if t2.shape else 1)
        for k, m in enumerate(mask):
            if not _valid_position(m, limit):
                raise self.error(f"mask index #{k + 1} out of range")


# ---------------------------------------------------------------------------------------------
# strided slices

def _int_list(op: Operation, name: str) -> list[int]:
    a = op.attributes.get(name)
    if not isinstance(a, ArrayAttr) or not all(
            isinstance(e, IntegerAttr) and e.type == i64 for e in a.elements):
        raise op.error(f"requires attribute '{name}'" if a is None else
                       f"attribute '{name}' failed to satisfy constraint: 64-bit integer array "
                       "attribute")
    return [e.value for e in a.elements]


def _int_array_attr(values: Sequence[int]) -> ArrayAttr:
    return ArrayAttr(tuple(IntegerAttr(int(v), i64) for v in values))


def _confined(op: Operation, values, shape, name: str, lo: int, half_open: bool = True) -> None:
    """MLIR's ``isIntegerArrayAttrConfinedToShape``."""
    for k, (v, d) in enumerate(zip(values, shape)):
        hi = d if half_open else d + 1
        if not lo <= v < hi:
            raise op.error(f"expected {name} dimension {k} to be confined to [{lo}, {hi})")


def _strides_are_one(op: Operation, strides) -> None:
    if any(s != 1 for s in strides):
        raise op.error("expected strides to be confined to [1, 2)")


def _sum_confined(op: Operation, offsets, sizes, shape, names: str) -> None:
    for k, (o, s, d) in enumerate(zip(offsets, sizes, shape)):
        if not 1 <= o + s < d + 1:
            raise op.error(f"expected sum({names}) dimension {k} to be confined to [1, {d + 1})")


class _StridedSliceOp(Operation):
    PROPERTIES: tuple = ()

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k in self.PROPERTIES}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k not in self.PROPERTIES}

    def _print_tail(self, p, keyword: str) -> None:
        p.print_attr_dict(self.attributes)
        src = self.operands[0].type
        p.print(f" : {p.type_str(src)} {keyword} {p.type_str(self.results[0].type)}")


@register_op
class ExtractStridedSliceOp(_StridedSliceOp):
    """``%r = vector.extract_strided_slice %v {offsets = [2], sizes = [4], strides = [1]} :
    vector<8xf32> to vector<4xf32>`` (strides are 1, as upstream requires)."""

    OP_NAME = "vector.extract_strided_slice"
    PROPERTIES = ("offsets", "sizes", "strides")

    @classmethod
    def build(cls, source: Value, offsets: Sequence[int], sizes: Sequence[int],
              loc=None) -> "ExtractStridedSliceOp":
        t = source.type
        rt = VectorType((*sizes, *t.shape[len(sizes):]), t.element_type)
        return cls(operands=[source], result_types=[rt],
                   attributes={"offsets": _int_array_attr(offsets),
                               "sizes": _int_array_attr(sizes),
                               "strides": _int_array_attr([1] * len(sizes))}, loc=loc)

    @property
    def offsets(self) -> list[int]:
        return _int_list(self, "offsets")

    @property
    def sizes(self) -> list[int]:
        return _int_list(self, "sizes")

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, attrs, dst = parse_cast_like(p, parse_vector_type)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.extract_strided_slice ")
        p.print_operand(self.operands[0])
        self._print_tail(p, "to")

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        t, rt = self.operands[0].type, self.results[0].type
        if not isinstance(t, VectorType):
            raise self.error(f"operand #0 must be vector of any type values, but got '{t}'")
        offsets, sizes = _int_list(self, "offsets"), _int_list(self, "sizes")
        strides = _int_list(self, "strides")
        if not len(offsets) == len(sizes) == len(strides):
            raise self.error("expected offsets, sizes and strides attributes of same size")
        for name, values in (("offsets", offsets), ("sizes", sizes), ("strides", strides)):
            if len(values) > len(t.shape):
                raise self.error(f"expected {name} attribute of rank no greater than vector "
                                 "rank")
        _confined(self, offsets, t.shape, "offsets", 0)
        _confined(self, sizes, t.shape, "sizes", 1, half_open=False)
        _strides_are_one(self, strides)
        _sum_confined(self, offsets, sizes, t.shape, "offsets, sizes")
        want = VectorType((*sizes, *t.shape[len(sizes):]), t.element_type)
        if rt != want:
            raise self.error(f"expected result type to be '{want}'")


@register_op
class InsertStridedSliceOp(_StridedSliceOp):
    """``%r = vector.insert_strided_slice %s, %v {offsets = [2], strides = [1]} :
    vector<4xf32> into vector<8xf32>``."""

    OP_NAME = "vector.insert_strided_slice"
    PROPERTIES = ("offsets", "strides")

    @classmethod
    def build(cls, source: Value, dest: Value, offsets: Sequence[int],
              loc=None) -> "InsertStridedSliceOp":
        return cls(operands=[source, dest], result_types=[dest.type],
                   attributes={"offsets": _int_array_attr(offsets),
                               "strides": _int_array_attr([1] * len(source.type.shape))},
                   loc=loc)

    @property
    def offsets(self) -> list[int]:
        return _int_list(self, "offsets")

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        p.expect(",")
        p.skip_ws()
        dstart = p.pos
        d = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_vector_type(p)
        p.expect_keyword("into")
        dst = parse_vector_type(p)
        p.check_type(v, src, start)
        p.check_type(d, dst, dstart)
        return cls(operands=[v, d], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.insert_strided_slice ")
        p.print_operands(self.operands)
        self._print_tail(p, "into")

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1:
            raise self.error("expects two operands and one result")
        st, dt, rt = self.operands[0].type, self.operands[1].type, self.results[0].type
        for k, t in (("operand #0", st), ("operand #1", dt)):
            if not isinstance(t, VectorType):
                raise self.error(f"{k} must be vector of any type values, but got '{t}'")
        if st.element_type != element_type_of(rt):
            raise self.error("failed to verify that operand #0 and result have same element "
                             "type")
        if dt != rt:
            raise self.error("failed to verify that all of {dest, result} have same type")
        offsets, strides = _int_list(self, "offsets"), _int_list(self, "strides")
        if len(offsets) != len(dt.shape):
            raise self.error("expected offsets of same size as destination vector rank")
        if len(strides) != len(st.shape):
            raise self.error("expected strides of same size as source vector rank")
        if len(st.shape) > len(dt.shape):
            raise self.error("expected source rank to be no greater than destination rank")
        _confined(self, offsets, dt.shape, "offsets", 0)
        _strides_are_one(self, strides)
        padded = [0] * (len(dt.shape) - len(st.shape)) + list(st.shape)
        _sum_confined(self, offsets, padded, dt.shape, "offsets, source vector shape")
