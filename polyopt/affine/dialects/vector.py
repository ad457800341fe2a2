"""The vector dialect ops polyopt's vectorizer emits: broadcast, fma, reduction, print, load/store.

MLIR 22 has no ``vector.splat``: the 2020 ``splat %x : vector<4xf64>`` and ``vector.splat`` parse
as ``vector.broadcast %x : f64 to vector<4xf64>``, which is how they print.

Enum-valued properties are kept as MLIR spells them in generic form
(``kind = #vector.kind<add>``, ``punctuation = #vector.punctuation<comma>``), so the generic
printer's output is accepted by ``mlir-opt-22``; the accessors return the plain keyword.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import OpaqueAttr, StringAttr
from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..types import (FloatType, IndexType, IntegerType, MemRefType, Type, VectorType,
                     element_type_of)
from .arith_attributes import FastMathAttr, normalize_flags, parse_fastmath, print_fastmath
from .memref import (IndexedLoadAccessors, IndexedStoreAccessors, check_index_operands,
                     parse_cast_like, print_cast_like,
                     parse_load_prefix, parse_memref_type, parse_store_prefix,
                     print_attrs_without_default_nontemporal, print_indexed,
                     strides_and_offset, verify_access_attributes)


def parse_vector_type(p) -> VectorType:
    """A type that must be a vector (mlir-opt-22's message otherwise)."""
    p.skip_ws()
    start = p.pos
    t = p.parse_type()
    if not isinstance(t, VectorType):
        raise p.error(f"{p.custom_op_prefix()}invalid kind of type specified: "
                      f"expected builtin.vector, but found '{t}'", start)
    return t


def _enum_keyword(attr, prefix: str) -> Optional[str]:
    """``#vector.kind<add>`` -> ``add``."""
    text = str(attr) if attr is not None else ""
    if text.startswith(prefix + "<") and text.endswith(">"):
        return text[len(prefix) + 1:-1].strip()
    return None


# ---------------------------------------------------------------------------------------------
# broadcast (and the 2020 splat)

class _SourceToResultOp(Operation):
    """An op ``%r = vector.<op> %x : T to U`` (broadcast, bitcast)."""

    @classmethod
    def build(cls, source: Value, result_type: VectorType, loc=None):
        return cls(operands=[source], result_types=[result_type], loc=loc)

    @property
    def source(self) -> Value:
        return self.operands[0]

    def print_custom(self, p) -> None:
        print_cast_like(p, self)


@register_op
class BroadcastOp(_SourceToResultOp):
    """``%v = vector.broadcast %x : f64 to vector<4xf64>`` (also vector to higher-rank vector)."""

    OP_NAME = "vector.broadcast"

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        if name in ("splat", "vector.splat"):
            # `splat %x : vector<4xf64>`: the source is a scalar of the element type
            dst = parse_vector_type(p)
            src = dst.element_type
        else:
            src = p.parse_type()
            p.expect_keyword("to")
            dst = parse_vector_type(p)
        p.check_type(v, src, start)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        src, dst = self.source.type, self.results[0].type
        if not isinstance(dst, VectorType):
            raise self.error(f"result #0 must be vector of any type values, but got '{dst}'")
        # upstream's getElementTypeOrSelf: a memref's element type too
        src_element = src.element_type if isinstance(src, MemRefType) else element_type_of(src)
        if src_element != dst.element_type:
            raise self.error("failed to verify that source operand and result have same element "
                             f"type ('{src}' vs '{dst}')")
        if not isinstance(src, (VectorType, IntegerType, IndexType, FloatType)):
            raise self.error("source type is not a vector")
        if isinstance(src, VectorType):
            if len(src.shape) > len(dst.shape):
                raise self.error("source rank higher than destination rank")
            for s, d in zip(reversed(src.shape), reversed(dst.shape)):
                if s != 1 and s != d:
                    raise self.error(f"dimension mismatch ({s} vs. {d})")


# ---------------------------------------------------------------------------------------------
# fma

@register_op
class VectorFMAOp(Operation):
    """``%r = vector.fma %a, %b, %acc : vector<4xf64>`` (``a * b + acc``, one rounding)."""

    OP_NAME = "vector.fma"

    @classmethod
    def build(cls, lhs: Value, rhs: Value, acc: Value, loc=None) -> "VectorFMAOp":
        return cls(operands=[lhs, rhs, acc], result_types=[acc.type], loc=loc)

    @property
    def lhs(self) -> Value:
        return self.operands[0]

    @property
    def rhs(self) -> Value:
        return self.operands[1]

    @property
    def acc(self) -> Value:
        return self.operands[2]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        if len(ops) != 3:
            raise p.error(f"'vector.fma' expects 3 operands, got {len(ops)}", start)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        t = parse_vector_type(p)
        for v in ops:
            p.check_type(v, t, start)
        return cls(operands=ops, result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.fma ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("expects three operands and one result")
        t = self.results[0].type
        if any(v.type != t for v in self.operands):
            raise self.error("failed to verify that all of {lhs, rhs, acc, result} have same type")
        if not isinstance(t, VectorType) or not isinstance(t.element_type, FloatType):
            raise self.error(f"operand #0 must be vector of floating-point values, but got '{t}'")


# ---------------------------------------------------------------------------------------------
# reduction

INT_KINDS = ("minui", "minsi", "maxui", "maxsi", "and", "or", "xor")
FLOAT_KINDS = ("minnumf", "maxnumf", "maximumf", "minimumf")
COMBINING_KINDS = ("add", "mul", "minui", "minsi", "minnumf", "maxui", "maxsi", "maxnumf", "and",
                   "or", "xor", "maximumf", "minimumf")


def supports_kind(kind: str, element_type: Type) -> bool:
    """MLIR's ``isSupportedCombiningKind``: the integer kinds on integers and ``index``, the
    float ones on floats, ``add`` and ``mul`` on either."""
    is_int = isinstance(element_type, (IntegerType, IndexType))
    is_float = isinstance(element_type, FloatType)
    if kind in INT_KINDS:
        return is_int
    if kind in FLOAT_KINDS:
        return is_float
    return kind in ("add", "mul") and (is_int or is_float)


@register_op
class OuterProductOp(Operation):
    """``%r = vector.outerproduct %a, %b, %acc {kind = #vector.kind<add>} : vector<4xf32>,
    vector<8xf32>``: ``r[i][j] = acc[i][j] <kind> a[i] * b[j]`` (a ``vector<4x8xf32>``); with
    a scalar ``%b``, the AXPY ``r[i] = acc[i] <kind> a[i] * b``.  The attribute dictionary
    (the kind with it) is printed only after an accumulator, as upstream prints it."""

    OP_NAME = "vector.outerproduct"

    @property
    def lhs(self) -> Value:
        return self.operands[0]

    @property
    def rhs(self) -> Value:
        return self.operands[1]

    @property
    def acc(self) -> Optional[Value]:
        return self.operands[2] if len(self.operands) > 2 else None

    @property
    def kind(self) -> str:
        """``add`` when the generic form leaves the property out (its default)."""
        a = self.attributes.get("kind")
        return "add" if a is None else _enum_keyword(a, "#vector.kind") or ""

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        tl = p.parse_type()
        p.expect(",")
        tr = p.parse_type()
        if len(ops) < 2:
            raise ParseError(f"custom op '{name}' expected at least 2 operands", loc)
        if not isinstance(tl, VectorType):
            raise ParseError(f"custom op '{name}' expected vector type for operand #1", loc)
        if isinstance(tr, VectorType):
            rt = VectorType((tl.shape[0], tr.shape[0]), tl.element_type)
        else:
            rt = VectorType((tl.shape[0],), tl.element_type)
        for v, t in zip(ops, (tl, tr, rt)):
            p.check_type(v, t, start)
        if len(ops) > 3:
            raise ParseError(f"custom op '{name}' expected at most 3 operands", loc)
        attrs.setdefault("kind", OpaqueAttr("#vector.kind<add>"))
        return cls(operands=ops, result_types=[rt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.outerproduct ")
        p.print_operands(self.operands)
        if self.acc is not None:
            p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.lhs.type)}, {p.type_str(self.rhs.type)}")

    def generic_properties(self) -> dict:
        return {"kind": self.attributes.get("kind", OpaqueAttr("#vector.kind<add>"))}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "kind"}

    def verify_op(self) -> None:
        if not 2 <= len(self.operands) <= 3 or len(self.results) != 1:
            raise self.error("expects two or three operands and one result")
        kind = self.kind
        if kind not in COMBINING_KINDS:
            raise self.error(f"requires attribute 'kind' (one of {', '.join(COMBINING_KINDS)}), "
                             f"got '{self.attributes.get('kind')}'")
        vl, tr, vres = self.lhs.type, self.rhs.type, self.results[0].type
        if not isinstance(vl, VectorType):
            raise self.error(f"operand #0 must be vector of any type values, but got '{vl}'")
        if not isinstance(vres, VectorType):
            raise self.error(f"result #0 must be vector of any type values, but got '{vres}'")
        if len(vl.shape) != 1:
            raise self.error("expected 1-d vector for operand #1")
        if isinstance(tr, VectorType):
            if len(tr.shape) != 1:
                raise self.error("expected 1-d vector for operand #2")
            if len(vres.shape) != 2:
                raise self.error("expected 2-d vector result")
            if vl.shape[0] != vres.shape[0]:
                raise self.error("expected #1 operand dim to match result dim #1")
            if tr.shape[0] != vres.shape[1]:
                raise self.error("expected #2 operand dim to match result dim #2")
        else:
            if len(vres.shape) != 1:
                raise self.error("expected 1-d vector result")
            if vl.shape[0] != vres.shape[0]:
                raise self.error("expected #1 operand dim to match result dim #1")
        if self.acc is not None and self.acc.type != vres:
            raise self.error("expected operand #3 of same type as result type")
        if not supports_kind(kind, vres.element_type):
            raise self.error("unsupported outerproduct type")


@register_op
class ReductionOp(Operation):
    """``%r = vector.reduction <add>, %v [, %acc] : vector<4xf64> into f64``."""

    OP_NAME = "vector.reduction"

    @classmethod
    def build(cls, kind: str, vector: Value, acc: Optional[Value] = None, loc=None):
        if kind not in COMBINING_KINDS:
            raise ValueError(f"unknown reduction kind {kind!r}")
        operands = [vector] if acc is None else [vector, acc]
        return cls(operands=operands, result_types=[vector.type.element_type],
                   attributes={"kind": OpaqueAttr(f"#vector.kind<{kind}>")}, loc=loc)

    @property
    def kind(self) -> str:
        return _enum_keyword(self.attributes.get("kind"), "#vector.kind") or ""

    @property
    def vector(self) -> Value:
        return self.operands[0]

    @property
    def acc(self) -> Optional[Value]:
        return self.operands[1] if len(self.operands) > 1 else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.expect("<")
        p.skip_ws()
        kstart = p.pos
        kind = p.parse_bare_id("reduction kind")
        if kind not in COMBINING_KINDS:
            raise p.error(f"unknown reduction kind '{kind}'; expected one of: "
                          + ", ".join(COMBINING_KINDS), kstart)
        p.expect(">")
        p.expect(",")
        p.skip_ws()
        vstart = p.pos
        ops = p.parse_operand_list()
        if len(ops) not in (1, 2):
            raise p.error(f"'vector.reduction' expects a vector and an optional accumulator, got "
                          f"{len(ops)} operands", vstart)
        attrs = {"kind": OpaqueAttr(f"#vector.kind<{kind}>")}
        parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        vt = parse_vector_type(p)
        p.expect_keyword("into")
        rt = p.parse_type()
        p.check_type(ops[0], vt, vstart)
        if len(ops) == 2:
            p.check_type(ops[1], rt, vstart)
        return cls(operands=ops, result_types=[rt], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return cls(operands=operands, result_types=result_types,
                   attributes=normalize_flags(attrs, "fastmath", FastMathAttr),
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"vector.reduction <{self.kind}>, ")
        p.print_operands(self.operands)
        print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("kind", "fastmath"))
        p.print(f" : {p.type_str(self.vector.type)} into {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if len(self.operands) not in (1, 2) or len(self.results) != 1:
            raise self.error("expects a vector, an optional accumulator and one result")
        kind = self.kind
        if kind not in COMBINING_KINDS:
            raise self.error(f"requires attribute 'kind' (one of {', '.join(COMBINING_KINDS)}), "
                             f"got '{self.attributes.get('kind')}'")
        vt, rt = self.vector.type, self.results[0].type
        if not isinstance(vt, VectorType):
            raise self.error(f"operand #0 must be vector of any type values, but got '{vt}'")
        if len(vt.shape) > 1:
            raise self.error(f"unsupported reduction rank: {len(vt.shape)}")
        if vt.element_type != rt:
            raise self.error("failed to verify that source operand and result have same element "
                             f"type ('{vt}' vs '{rt}')")
        if self.acc is not None and self.acc.type != rt:
            raise self.error(f"accumulator type '{self.acc.type}' must match the result type "
                             f"'{rt}'")
        is_int = isinstance(rt, (IntegerType, IndexType))
        is_float = isinstance(rt, FloatType)
        if kind in INT_KINDS and not is_int or kind in FLOAT_KINDS and not is_float:
            raise self.error(f"unsupported reduction type '{rt}' for kind '{kind}'")


# ---------------------------------------------------------------------------------------------
# print

PUNCTUATIONS = ("no_punctuation", "newline", "comma", "open", "close")


@register_op
class PrintOp(Operation):
    """``vector.print %v : vector<4xf64>`` (or a scalar; ``punctuation <comma>``, ``str "..."``).

    Prints the value followed by a newline (the default punctuation) on stdout, as MLIR's
    ``vector.print`` does through the runtime.
    """

    OP_NAME = "vector.print"

    @classmethod
    def build(cls, source: Optional[Value] = None, punctuation: str = "newline",
              string: Optional[str] = None, loc=None) -> "PrintOp":
        attrs = {}
        if string is not None:
            attrs["stringLiteral"] = StringAttr(string)
        if punctuation != "newline":
            attrs["punctuation"] = OpaqueAttr(f"#vector.punctuation<{punctuation}>")
        return cls(operands=[] if source is None else [source], attributes=attrs, loc=loc)

    @property
    def source(self) -> Optional[Value]:
        return self.operands[0] if self.operands else None

    @property
    def punctuation(self) -> str:
        return _enum_keyword(self.attributes.get("punctuation"), "#vector.punctuation") or "newline"

    @property
    def string(self) -> Optional[str]:
        s = self.attributes.get("stringLiteral")
        return s.value if isinstance(s, StringAttr) else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        operands = []
        attrs = {}
        if p.peek_operand():
            p.skip_ws()
            start = p.pos
            v = p.parse_operand()
            t = p.parse_colon_type()
            p.check_type(v, t, start)
            operands.append(v)
        if p.optional_keyword("str"):
            attrs["stringLiteral"] = StringAttr(p.parse_string())
        if p.optional_keyword("punctuation"):
            p.expect("<")
            p.skip_ws()
            pstart = p.pos
            punct = p.parse_bare_id("punctuation")
            if punct not in PUNCTUATIONS:
                raise p.error(f"unknown punctuation '{punct}'; expected one of: "
                              + ", ".join(PUNCTUATIONS), pstart)
            p.expect(">")
            if punct != "newline":
                attrs["punctuation"] = OpaqueAttr(f"#vector.punctuation<{punct}>")
        attrs.update(p.parse_optional_attr_dict())
        return cls(operands=operands, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if cls._is_default_punct(attrs.get("punctuation")):
            attrs = {k: v for k, v in attrs.items() if k != "punctuation"}
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    @staticmethod
    def _is_default_punct(attr) -> bool:
        return attr is not None and _enum_keyword(attr, "#vector.punctuation") == "newline"

    def print_custom(self, p) -> None:
        p.print("vector.print")
        if self.source is not None:
            p.print(" ")
            p.print_operand(self.source)
            p.print(" : " + p.type_str(self.source.type))
        if self.string is not None:
            p.print(" str " + str(self.attributes["stringLiteral"]))
        if self.punctuation != "newline":
            p.print(f" punctuation <{self.punctuation}>")
        elide = ["stringLiteral", "punctuation"]
        p.print_attr_dict(self.attributes, elide=elide)

    def verify_op(self) -> None:
        if len(self.operands) > 1 or self.results:
            raise self.error("expects at most one operand and no results")
        if self.punctuation not in PUNCTUATIONS:
            raise self.error(f"unknown punctuation '{self.attributes.get('punctuation')}'")
        if self.source is not None:
            t = self.source.type
            et = element_type_of(t)
            if not isinstance(et, (IntegerType, IndexType, FloatType)):
                raise self.error(f"operand #0 must be a scalar or vector of integers, index or "
                                 f"floats, but got '{t}'")
            if self.string is not None:
                raise self.error("cannot print a value and a string literal at once")


# ---------------------------------------------------------------------------------------------
# load / store

def last_dim_unit_stride(vtype: VectorType, mt: MemRefType) -> bool:
    """Can ``vtype`` be read from ``mt`` as one contiguous run (MLIR's
    ``verifyLoadStoreMemRefLayout``): a vector of one element always can; otherwise the
    memref's most minor stride must be 1 -- not dynamic, not another number, not an affine
    map that is not strided."""
    if not vtype.shape or vtype.num_elements == 1 or mt.rank == 0:
        return True
    so = strides_and_offset(mt)
    return so is not None and so[0][-1] == 1


def _verify_vector_access(op: Operation, memref: Value, indices: Sequence[Value],
                          vtype: Type, first_index: int, what: str) -> None:
    mt = memref.type
    if not isinstance(mt, MemRefType):
        raise op.error(f"base operand must be a memref, but got '{mt}'")
    if not isinstance(vtype, VectorType):
        raise op.error(f"{what} must be a vector, but got '{vtype}'")
    if not last_dim_unit_stride(vtype, mt):
        raise op.error("most minor memref dim must have unit stride")
    verify_access_attributes(op)
    if len(indices) != mt.rank:
        raise op.error(f"requires {mt.rank} indices")
    check_index_operands(op, indices, first_index)
    if isinstance(mt.element_type, VectorType):
        if mt.element_type != vtype:
            raise op.error(f"base memref and {'result' if what == 'result' else 'valueToStore'} "
                           "vector types should match")
    elif mt.element_type != vtype.element_type:
        if what == "result":
            raise op.error("base and result element types should match")
        raise op.error("base and valueToStore element type should match")


@register_op
class VectorLoadOp(IndexedLoadAccessors, Operation):
    """``%v = vector.load %m[%i, %j] : memref<16x16xf32>, vector<8xf32>`` (contiguous load)."""

    OP_NAME = "vector.load"

    @classmethod
    def build(cls, memref: Value, indices: Sequence[Value], vector_type: VectorType, loc=None):
        return cls(operands=[memref, *indices], result_types=[vector_type], loc=loc)

    @property
    def vector_type(self) -> VectorType:
        return self.results[0].type

    @classmethod
    def parse_custom(cls, p, loc, name):
        m, start, idx, attrs = parse_load_prefix(p)
        mt = parse_memref_type(p)
        p.expect(",")
        vt = parse_vector_type(p)
        p.check_type(m, mt, start)
        return cls(operands=[m, *idx], result_types=[vt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.load ")
        print_indexed(p, self.memref, self.indices)
        print_attrs_without_default_nontemporal(p, self.attributes)
        p.print(f" : {p.type_str(self.memref.type)}, {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if not self.operands or len(self.results) != 1:
            raise self.error("expects a memref operand and one result")
        _verify_vector_access(self, self.memref, self.indices, self.results[0].type, 1, "result")


@register_op
class VectorStoreOp(IndexedStoreAccessors, Operation):
    """``vector.store %v, %m[%i, %j] : memref<16x16xf32>, vector<8xf32>``."""

    OP_NAME = "vector.store"

    @classmethod
    def build(cls, value: Value, memref: Value, indices: Sequence[Value], loc=None):
        return cls(operands=[value, memref, *indices], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, vstart, m, mstart, idx, attrs = parse_store_prefix(p)
        mt = parse_memref_type(p)
        p.expect(",")
        vt = parse_vector_type(p)
        p.check_type(m, mt, mstart)
        p.check_type(v, vt, vstart)
        return cls(operands=[v, m, *idx], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.store ")
        p.print_operand(self.value)
        p.print(", ")
        print_indexed(p, self.memref, self.indices)
        print_attrs_without_default_nontemporal(p, self.attributes)
        p.print(f" : {p.type_str(self.memref.type)}, {p.type_str(self.value.type)}")

    def verify_op(self) -> None:
        if len(self.operands) < 2 or self.results:
            raise self.error("expects a value and a memref operand and no results")
        _verify_vector_access(self, self.memref, self.indices, self.value.type, 2, "valueToStore")


# ---------------------------------------------------------------------------------------------
# bitcast

@register_op
class VectorBitCastOp(_SourceToResultOp):
    """``%r = vector.bitcast %v : vector<2xbf16> to vector<1xi32>``: the same bits seen as
    another vector type; only the last dimension may change, and its bit size may not."""

    OP_NAME = "vector.bitcast"

    @classmethod
    def parse_custom(cls, p, loc, name):
        v, attrs, dst = parse_cast_like(p, parse_vector_type)
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one operand and one result")
        src, dst = self.source.type, self.results[0].type
        if not isinstance(src, VectorType) or not isinstance(dst, VectorType):
            raise self.error(f"operand #0 and result must be vectors, got '{src}' and '{dst}'")
        if len(src.shape) != len(dst.shape):
            raise self.error("failed to verify that all of {source, result} have same rank")
        if src.shape[:-1] != dst.shape[:-1]:
            raise self.error("dimension size mismatch")
        bits = [t.shape[-1] * _bit_width(t.element_type) for t in (src, dst)]
        if bits[0] != bits[1]:
            raise self.error(f"source/result bitwidth of the minor 1-D vectors must be equal "
                             f"({bits[0]} vs {bits[1]})")


def _bit_width(t: Type) -> int:
    if isinstance(t, (FloatType, IntegerType)):
        return t.width
    raise ValueError(f"'{t}' has no bit width")


# ---------------------------------------------------------------------------------------------
# interleave

@register_op
class InterleaveOp(Operation):
    """``%r = vector.interleave %a, %b : vector<16xbf16> -> vector<32xbf16>``: the elements of
    ``a`` and ``b`` alternating along the last dimension (``a0, b0, a1, b1, ...``)."""

    OP_NAME = "vector.interleave"

    @classmethod
    def build(cls, a: Value, b: Value, loc=None) -> "InterleaveOp":
        t = a.type
        return cls(operands=[a, b], result_types=[VectorType((*t.shape[:-1], 2 * t.shape[-1]),
                                                             t.element_type)], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        ops = p.parse_operand_list()
        if len(ops) != 2:
            raise p.error(f"'vector.interleave' expects 2 operands, got {len(ops)}", start)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        src = parse_vector_type(p)
        p.expect("->")
        dst = parse_vector_type(p)
        for v in ops:
            p.check_type(v, src, start)
        return cls(operands=ops, result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.interleave ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(f" : {p.type_str(self.operands[0].type)} -> {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 1:
            raise self.error("expects two operands and one result")
        a, b = (v.type for v in self.operands)
        dst = self.results[0].type
        if a != b or not isinstance(a, VectorType):
            raise self.error("failed to verify that all of {lhs, rhs} have same type")
        want = VectorType((*a.shape[:-1], 2 * a.shape[-1]), a.element_type)
        if dst != want:
            raise self.error("failed to verify that type of 'result' is double the width of "
                             "the inputs")
