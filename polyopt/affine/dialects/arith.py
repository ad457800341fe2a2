"""The arith dialect of MLIR 22, every op: constants, integer and float arithmetic (with their
``overflow<...>``, ``exact`` and ``fastmath<...>`` flags), the extended (two-result) integer
ops, comparisons, select and casts (``truncf`` with its rounding modes), on scalars and vectors.

Custom forms, generic forms, verifier messages and result names (``%c0``, ``%c3_i8``, ``%true``,
``%cst``, ``%sum, %overflow``, ``%low, %high``) are those of ``mlir-opt-22``.  The flags are
attributes of their own (:mod:`.arith_attributes`: :class:`FastMathAttr`,
:class:`OverflowAttr`) printed canonically (``fastmath<nnan,ninf>``, ``overflow<nsw, nuw>``);
the default ``none`` is not stored.
"""

from __future__ import annotations

import re
from typing import Optional

from ..attributes import DenseElementsAttr, FloatAttr, IntegerAttr, StringAttr, UnitAttr
from ..diagnostics import ParseError
from ..ir import Operation, register_op
from ..ods_counts import check_counts
from ..types import (FloatType, IndexType, IntegerType, MemRefType, Type, VectorType,
                     element_type_of, i1, i32, i64)
from .arith_attributes import (ROUNDING_MODES, FastMathAttr,  # noqa: F401 (API)
                               OverflowAttr, make_value_attr, normalize_flags,
                               normalize_value_attr, parse_fastmath, print_fastmath,
                               verify_flags, wrap_signed)

# ---------------------------------------------------------------------------------------------
# Type constraints (ODS names, for the messages)


def _elem(t: Type) -> Type:
    return element_type_of(t)


def is_signless_int_like(t: Type) -> bool:
    """``SignlessIntegerOrIndexLike``: iN, index, or a vector of them."""
    return isinstance(_elem(t), (IntegerType, IndexType))


def is_fixed_width_int_like(t: Type) -> bool:
    """``SignlessFixedWidthIntegerLike``: iN or a vector of iN (no index)."""
    return isinstance(_elem(t), IntegerType)


def is_float_like(t: Type) -> bool:
    return isinstance(_elem(t), FloatType)


def is_bool_like(t: Type) -> bool:
    return _elem(t) == i1


def vector_shape(t: Type) -> Optional[tuple]:
    return tuple(t.shape) if isinstance(t, VectorType) else None


def i1_same_shape(t: Type) -> Type:
    """``getI1SameShape``: ``i1``, or a vector of ``i1`` of ``t``'s shape."""
    return VectorType(t.shape, i1) if isinstance(t, VectorType) else i1


# ---------------------------------------------------------------------------------------------
# Shared parsing helpers


def parse_operands(p, n: int, op_name: str) -> tuple[list, int]:
    """``n`` comma-separated operands; each remembers where it was spelled, so that a type
    mismatch points at that use (MLIR resolves operands in order)."""
    p.skip_ws()
    start = p.pos
    ops = []
    while True:
        p.skip_ws()
        at = p.pos
        v = p.parse_operand()
        ops.append((v, p.spelled.get(v, (None, at))))
        if len(ops) == n or not (p.peek(",") and re.match(r",\s*%", p.text[p.pos:p.pos + 40])):
            break
        p.expect(",")
    if len(ops) != n:
        raise p.error(f"custom op '{op_name}' expected {n} operands, got {len(ops)}", start)
    return ops, start


def check_operand_types(p, ops, types) -> None:
    """``ops`` from :func:`parse_operands`: check each against its type, in order."""
    for (v, spelled), t in zip(ops, types):
        p.spelled[v] = spelled
        p.check_type(v, t)


def operand_values(ops) -> list:
    return [v for v, _ in ops]


def _parse_result_type(p) -> Type:
    p.expect(":")
    p.skip_ws()
    return p.parse_type()


# ---------------------------------------------------------------------------------------------
# Constants


@register_op
class ConstantOp(Operation):
    """``arith.constant 0 : index``, ``arith.constant 1.5 : bf16``, ``arith.constant true``,
    ``arith.constant dense<[1, 2]> : vector<2xi8>`` (MLIR's ``arith.constant``)."""

    OP_NAME = "arith.constant"

    @classmethod
    def build(cls, value, type_: Type, loc=None) -> "ConstantOp":
        return cls(result_types=[type_], attributes={"value": make_value_attr(value, type_)},
                   loc=loc)

    @property
    def value(self):
        a = self.attributes["value"]
        if isinstance(a, DenseElementsAttr):
            return a.values
        return a.value

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ConstantOp":
        attrs = p.parse_optional_attr_dict()
        p.skip_ws()
        start = p.pos
        attr = p.parse_attribute()
        if isinstance(attr, DenseElementsAttr):
            if attr.kind != "vector":
                raise p.error(f"tensor values are not supported by polyopt (memref-based IR: "
                              f"bufferize first); got '{attr.type}'", start)
        elif isinstance(attr, (IntegerAttr, FloatAttr)):
            attr = normalize_value_attr(attr)
        else:
            raise ParseError("'arith.constant' op value must be an integer, float, or "
                             "elements attribute", loc)
        attrs["value"] = attr
        return cls(result_types=[attr.type], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        v = attrs.get("value")
        if isinstance(v, (IntegerAttr, FloatAttr)):
            attrs["value"] = normalize_value_attr(v)
        elif isinstance(v, DenseElementsAttr) and v.kind != "vector":
            raise ParseError(f"tensor values are not supported by polyopt (memref-based IR: "
                             f"bufferize first); got '{v.type}'", loc)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("arith.constant ")
        p.print_attr_dict(self.attributes, elide=("value",))
        a = self.attributes["value"]
        if isinstance(a, IntegerAttr) and a.type == i1:
            p.print("true" if a.value else "false")
        else:
            p.print(str(a))

    def result_name_hint(self):
        a = self.attributes.get("value")
        t = self.results[0].type
        if isinstance(a, IntegerAttr):
            if isinstance(t, IndexType):
                return f"c{a.value}"
            if t == i1:
                return "true" if a.value else "false"
            return f"c{a.value}_{t}"
        return "cst"

    def verify_op(self) -> None:
        check_counts(self, 0)
        a = self.attributes.get("value")
        if a is None:
            raise self.error("requires attribute 'value'")
        t = self.results[0].type
        if isinstance(a, StringAttr):       # a typed attribute, of type none
            raise self.error("failed to verify that all of {value, result} have same type")
        if not isinstance(a, (IntegerAttr, FloatAttr, DenseElementsAttr)):
            raise self.error("attribute 'value' failed to satisfy constraint: TypedAttr instance")
        if a.type != t:
            raise self.error("failed to verify that all of {value, result} have same type")


# ---------------------------------------------------------------------------------------------
# Elementwise ops with one type (binary and unary)


class _ElementwiseOp(Operation):
    """``%r = arith.<op> %a, %b [flags] attr-dict : type``: operands and result of one type.

    ``ARITY`` operands; ``KIND`` is ``int`` (signless-integer-like) or ``float``;
    ``FLAG`` is None, ``overflow``, ``exact`` or ``fastmath``.
    """

    ARITY = 2
    KIND = "int"
    FLAG: Optional[str] = None
    FLOAT = False    # kept for code that asks (vectorize, expand)

    @classmethod
    def build(cls, *operands, loc=None, **attrs):
        return cls(operands=list(operands), result_types=[operands[0].type],
                   attributes={k: v for k, v in attrs.items() if v is not None}, loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, cls.ARITY, cls.OP_NAME)
        attrs: dict = {}
        if cls.FLAG == "overflow" and p.optional_keyword("overflow"):
            flags = OverflowAttr.parse_body(p, cls.OP_NAME)
            if not flags.is_none:
                attrs["overflowFlags"] = flags
        elif cls.FLAG == "exact" and p.optional_keyword("exact"):
            attrs["isExact"] = UnitAttr()
        elif cls.FLAG == "fastmath":
            parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = _parse_result_type(p)
        check_operand_types(p, ops, [t] * len(ops))
        return cls(operands=operand_values(ops), result_types=[t], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if cls.FLAG == "overflow":
            attrs = normalize_flags(attrs, "overflowFlags", OverflowAttr)
        elif cls.FLAG == "fastmath":
            attrs = normalize_flags(attrs, "fastmath", FastMathAttr)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operands(self.operands)
        elide = ()
        if self.FLAG == "overflow":
            ov = self.attributes.get("overflowFlags")
            if isinstance(ov, OverflowAttr):
                elide = ("overflowFlags",)
                if not ov.is_none:
                    p.print(f" overflow<{ov.keyword()}>")
        elif self.FLAG == "exact" and isinstance(self.attributes.get("isExact"), UnitAttr):
            p.print(" exact")
            elide = ("isExact",)
        elif self.FLAG == "fastmath" and "fastmath" in self.attributes:
            print_fastmath(p, self.attributes)
            elide = ("fastmath",)
        p.print_attr_dict(self.attributes, elide=elide)
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        check_counts(self, self.ARITY)
        if self.FLAG == "overflow":
            verify_flags(self, "overflowFlags", OverflowAttr, "Integer overflow arith flags")
        if self.FLAG == "fastmath":
            verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        if self.FLAG == "exact" and "isExact" in self.attributes and \
                not isinstance(self.attributes["isExact"], UnitAttr):
            raise self.error("attribute 'isExact' failed to satisfy constraint: unit attribute")
        check, what = ((is_float_like, "floating-point-like") if self.KIND == "float" else
                       (is_signless_int_like, "signless-integer-like"))
        for i, v in enumerate(self.operands):
            if not check(v.type):
                raise self.error(f"operand #{i} must be {what}, but got '{v.type}'")
        if not check(self.results[0].type):
            raise self.error(f"result #0 must be {what}, but got '{self.results[0].type}'")
        t = self.results[0].type
        if any(v.type != t for v in self.operands):
            raise self.error("requires the same type for all operands and results")


def _elementwise(short: str, kind: str, flag: Optional[str], arity: int = 2):
    name = f"arith.{short}"
    cls = type(short, (_ElementwiseOp,), {"OP_NAME": name, "KIND": kind, "FLAG": flag,
                                          "ARITY": arity, "FLOAT": kind == "float"})
    return register_op(cls)


FLOAT_BINARY = {n: _elementwise(n, "float", "fastmath")
                for n in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "maxnumf",
                          "minimumf", "minnumf")}
INT_BINARY = {n: _elementwise(n, "int", flag)
              for n, flag in (("addi", "overflow"), ("subi", "overflow"), ("muli", "overflow"),
                              ("shli", "overflow"), ("divui", "exact"), ("divsi", "exact"),
                              ("shrui", "exact"), ("shrsi", "exact"), ("ceildivui", None),
                              ("ceildivsi", None), ("floordivsi", None), ("remui", None),
                              ("remsi", None), ("andi", None), ("ori", None), ("xori", None),
                              ("maxsi", None), ("maxui", None), ("minsi", None),
                              ("minui", None))}
NegFOp = _elementwise("negf", "float", "fastmath", arity=1)


# ---------------------------------------------------------------------------------------------
# Extended integer ops: two results


class _ExtendedOp(Operation):
    """``%sum, %overflow = arith.addui_extended %a, %b : i32, i1`` and
    ``%low, %high = arith.mulsi_extended %a, %b : i32``."""

    NAMES: tuple = ()

    @classmethod
    def build(cls, lhs, rhs, loc=None):
        second = i1_same_shape(lhs.type) if cls.NAMES[1] == "overflow" else lhs.type
        return cls(operands=[lhs, rhs], result_types=[lhs.type, second], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 2, cls.OP_NAME)
        attrs = p.parse_optional_attr_dict()
        t = _parse_result_type(p)
        if cls.NAMES[1] == "overflow":
            p.expect(",")
            second = p.parse_type()
        else:
            second = t
        check_operand_types(p, ops, [t, t])
        return cls(operands=operand_values(ops), result_types=[t, second], attributes=attrs,
                   loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.results[0].type))
        if self.NAMES[1] == "overflow":
            p.print(", " + p.type_str(self.results[1].type))

    def result_name_hint(self):
        return list(self.NAMES)

    def verify_op(self) -> None:
        if len(self.operands) != 2 or len(self.results) != 2:
            raise self.error("expects 2 operands and 2 results")
        for i, v in enumerate(self.operands):
            if not is_signless_int_like(v.type):
                raise self.error(f"operand #{i} must be signless-integer-like, but got '{v.type}'")
        a, b = self.results
        if not is_signless_int_like(a.type):
            raise self.error(f"result #0 must be signless-integer-like, but got '{a.type}'")
        if self.NAMES[1] == "overflow":
            if not is_bool_like(b.type):
                raise self.error(f"result #1 must be bool-like, but got '{b.type}'")
            types = [self.operands[0].type, self.operands[1].type, a.type]
            if any(x != types[0] for x in types):
                raise self.error("failed to verify that all of {lhs, rhs, sum} have same type")
        else:
            if not is_signless_int_like(b.type):
                raise self.error(f"result #1 must be signless-integer-like, but got '{b.type}'")
            types = [self.operands[0].type, self.operands[1].type, a.type, b.type]
            if any(x != types[0] for x in types):
                raise self.error("failed to verify that all of {lhs, rhs, low, high} have same "
                                 "type")
        _verify_elementwise_shapes(self)


def _verify_elementwise_shapes(op: Operation) -> None:
    """``ElementwiseMappable``: vectors among operands and results all have one shape."""
    ins = [vector_shape(v.type) for v in op.operands]
    outs = [vector_shape(r.type) for r in op.results]
    if any(s is not None for s in outs) and all(s is None for s in ins):
        raise op.error("if a result is non-scalar, then at least one operand must be non-scalar")
    if any(s is not None for s in ins):       # in upstream's order (verifyElementwise)
        if all(s is None for s in outs):
            raise op.error("if an operand is non-scalar, then there must be at least one "
                           "non-scalar result")
        if any(s is None for s in outs):
            raise op.error("if an operand is non-scalar, then all results must be non-scalar")
    shapes = {s for s in ins + outs if s is not None}
    if len(shapes) > 1:
        raise op.error("all non-scalar operands/results must have the same shape and base type")


AddUIExtendedOp = register_op(type("addui_extended", (_ExtendedOp,),
                                   {"OP_NAME": "arith.addui_extended",
                                    "NAMES": ("sum", "overflow")}))
MulSIExtendedOp = register_op(type("mulsi_extended", (_ExtendedOp,),
                                   {"OP_NAME": "arith.mulsi_extended", "NAMES": ("low", "high")}))
MulUIExtendedOp = register_op(type("mului_extended", (_ExtendedOp,),
                                   {"OP_NAME": "arith.mului_extended", "NAMES": ("low", "high")}))


# ---------------------------------------------------------------------------------------------
# Comparisons and select

CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                   "ult", "ule", "une", "uno", "true"]


class _CmpOp(Operation):
    PREDICATES: list[str] = []
    FLOAT = False

    @classmethod
    def build(cls, predicate: str, lhs, rhs, loc=None):
        attrs = {"predicate": IntegerAttr(cls.PREDICATES.index(predicate), i64)}
        return cls(operands=[lhs, rhs], result_types=[i1_same_shape(lhs.type)], attributes=attrs,
                   loc=loc)

    @property
    def predicate(self) -> str:
        return self.PREDICATES[self.attributes["predicate"].value]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        pred = p.parse_string() if p.peek('"') else p.optional_bare_id()
        if pred not in cls.PREDICATES:
            raise p.error(f"custom op '{cls.OP_NAME}' expected string or keyword containing one "
                          f"of the following enum values for attribute 'predicate' "
                          f"[{', '.join(cls.PREDICATES)}]", start)
        p.expect(",")
        ops, _ = parse_operands(p, 2, cls.OP_NAME)
        attrs: dict = {}
        if cls.FLOAT:
            parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = _parse_result_type(p)
        check_operand_types(p, ops, [t, t])
        ok, what = (is_float_like, "floating-point-like") if cls.FLOAT else \
            (is_signless_int_like, "signless-integer-like")
        if not ok(t):
            raise ParseError(f"custom op '{cls.OP_NAME}' 'lhs' must be {what}, but got '{t}'",
                             loc)
        attrs["predicate"] = IntegerAttr(cls.PREDICATES.index(pred), i64)
        return cls(operands=operand_values(ops), result_types=[i1_same_shape(t)], attributes=attrs,
                   loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if cls.FLOAT:
            attrs = normalize_flags(attrs, "fastmath", FastMathAttr)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} {self.predicate}, ")
        p.print_operands(self.operands)
        if self.FLOAT:
            print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("predicate", "fastmath"))
        p.print(" : " + p.type_str(self.operands[0].type))

    def verify_op(self) -> None:
        check_counts(self, 2)
        pred = self.attributes.get("predicate")
        if pred is None:
            raise self.error("requires attribute 'predicate'")
        n = len(self.PREDICATES)
        if not isinstance(pred, IntegerAttr) or pred.type != i64 or not 0 <= pred.value < n:
            raise self.error("attribute 'predicate' failed to satisfy constraint: allowed 64-bit "
                             "signless integer cases: " + ", ".join(map(str, range(n))))
        if self.FLOAT:
            verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        ok, what = (is_float_like, "floating-point-like") if self.FLOAT else \
            (is_signless_int_like, "signless-integer-like")
        for i, v in enumerate(self.operands):
            if not ok(v.type):
                raise self.error(f"operand #{i} must be {what}, but got '{v.type}'")
        r = self.results[0].type
        if not is_bool_like(r):
            raise self.error(f"result #0 must be bool-like, but got '{r}'")
        a, b = self.operands
        if a.type != b.type:
            raise self.error("requires all operands to have the same type")
        if r != i1_same_shape(a.type):
            raise self.error("failed to verify that result type has i1 element type and same "
                             "shape as operands")


@register_op
class CmpIOp(_CmpOp):
    """``%r = arith.cmpi slt, %a, %b : i32`` (``vector<4xi1>`` for vector operands)."""

    OP_NAME = "arith.cmpi"
    PREDICATES = CMPI_PREDICATES


@register_op
class CmpFOp(_CmpOp):
    """``%r = arith.cmpf olt, %a, %b [fastmath<...>] : f32``."""

    OP_NAME = "arith.cmpf"
    PREDICATES = CMPF_PREDICATES
    FLOAT = True


@register_op
class SelectOp(Operation):
    """``arith.select %c, %a, %b : f64`` (or ``: vector<4xi1>, vector<4xf64>``)."""

    OP_NAME = "arith.select"

    @classmethod
    def build(cls, cond, a, b, loc=None):
        return cls(operands=[cond, a, b], result_types=[a.type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 3, cls.OP_NAME)
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        types = p.parse_type_list()
        if len(types) > 2:
            raise p.error("expected at most two types: the condition's and the result's")
        cond_t, t = (types[0], types[1]) if len(types) == 2 else (i1, types[0])
        check_operand_types(p, ops, [cond_t, t, t])
        return cls(operands=operand_values(ops), result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("arith.select ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        p.print(" : ")
        if self.operands[0].type != i1:
            p.print(p.type_str(self.operands[0].type) + ", ")
        p.print(p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        check_counts(self, 3)
        c, a, b = self.operands
        if not is_bool_like(c.type):
            raise self.error(f"operand #0 must be bool-like, but got '{c.type}'")
        r = self.results[0].type
        if a.type != b.type or a.type != r:
            raise self.error("failed to verify that all of {true_value, false_value, result} "
                             "have same type")
        if c.type != i1 and vector_shape(c.type) != vector_shape(r):
            raise self.error("failed to verify that condition is signless i1 or has matching "
                             "shape")


# ---------------------------------------------------------------------------------------------
# Casts


class _CastOp(Operation):
    """``%r = arith.<cast> %x [flags] attr-dict : T to U``.

    ``SRC``/``DST`` name the operand and result constraints (``int``: signless-fixed-width
    integers, ``float``, ``index_int``: integers or index (or memrefs of them), ``bits``:
    integers or floats (or memrefs of them)); ``WIDTH`` is ``>``/``<`` for the extensions and
    truncations, ``=`` for bitcast, ``index`` for index_cast(ui).
    """

    SRC = "int"
    DST = "int"
    WIDTH: Optional[str] = None
    FLAGS: tuple = ()      # "overflow", "rounding", "fastmath"

    _CONSTRAINT = {
        "int": (is_fixed_width_int_like, "signless-fixed-width-integer-like"),
        "float": (is_float_like, "floating-point-like"),
        "index_int": (lambda t: is_signless_int_like(t) or isinstance(t, MemRefType) and
                      isinstance(t.element_type, (IntegerType, IndexType)),
                      "signless-integer-like or memref of signless-integer"),
        "bits": (lambda t: isinstance(_elem(t), (IntegerType, FloatType)) or
                 isinstance(t, MemRefType) and isinstance(t.element_type, (IntegerType,
                                                                           FloatType)),
                 "signless-integer-or-float-like or memref of signless-integer or float"),
    }

    @classmethod
    def build(cls, value, to_type, loc=None, **attrs):
        return cls(operands=[value], result_types=[to_type],
                   attributes={k: v for k, v in attrs.items() if v is not None}, loc=loc)

    @property
    def rounding_mode(self) -> Optional[str]:
        a = self.attributes.get("roundingmode")
        return ROUNDING_MODES[a.value] if isinstance(a, IntegerAttr) and \
            0 <= a.value < len(ROUNDING_MODES) else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        v = p.parse_operand()
        attrs: dict = {}
        if "overflow" in cls.FLAGS and p.optional_keyword("overflow"):
            flags = OverflowAttr.parse_body(p, cls.OP_NAME)
            if not flags.is_none:
                attrs["overflowFlags"] = flags
        if "rounding" in cls.FLAGS:
            p.skip_ws()
            save = p.pos
            word = p.optional_bare_id()
            if word in ROUNDING_MODES:
                attrs["roundingmode"] = IntegerAttr(ROUNDING_MODES.index(word), i32)
            else:
                p.pos = save
        if "fastmath" in cls.FLAGS and p.optional_keyword("fastmath"):
            # an optional attribute: fastmath<none> given explicitly is kept
            attrs["fastmath"] = FastMathAttr.parse_body(p, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        src = p.parse_type()
        p.check_type(v, src)
        p.expect_keyword("to")
        dst = p.parse_type()
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if "overflow" in cls.FLAGS:
            attrs = normalize_flags(attrs, "overflowFlags", OverflowAttr)
        if "fastmath" in cls.FLAGS:
            attrs = normalize_flags(attrs, "fastmath", FastMathAttr, keep_none=True)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operand(self.operands[0])
        elide = []
        ov = self.attributes.get("overflowFlags")
        if "overflow" in self.FLAGS and isinstance(ov, OverflowAttr):
            elide.append("overflowFlags")
            if not ov.is_none:
                p.print(f" overflow<{ov.keyword()}>")
        if "rounding" in self.FLAGS and self.rounding_mode is not None:
            p.print(" " + self.rounding_mode)
            elide.append("roundingmode")
        fm = self.attributes.get("fastmath")
        if "fastmath" in self.FLAGS and isinstance(fm, FastMathAttr):
            p.print(f" fastmath<{fm.keyword()}>")
            elide.append("fastmath")
        p.print_attr_dict(self.attributes, elide=elide)
        p.print(f" : {p.type_str(self.operands[0].type)} to {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        check_counts(self, 1)
        if "overflow" in self.FLAGS:
            verify_flags(self, "overflowFlags", OverflowAttr, "Integer overflow arith flags")
        if "fastmath" in self.FLAGS:
            verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        rm = self.attributes.get("roundingmode")
        if "rounding" in self.FLAGS and rm is not None and self.rounding_mode is None:
            raise self.error("attribute 'roundingmode' failed to satisfy constraint: Floating "
                             "point rounding mode")
        src, dst = self.operands[0].type, self.results[0].type
        ok, what = self._CONSTRAINT[self.SRC]
        if not ok(src):
            raise self.error(f"operand #0 must be {what}, but got '{src}'")
        ok, what = self._CONSTRAINT[self.DST]
        if not ok(dst):
            raise self.error(f"result #0 must be {what}, but got '{dst}'")
        if isinstance(src, MemRefType) != isinstance(dst, MemRefType) or \
                vector_shape(src) != vector_shape(dst) or \
                isinstance(src, MemRefType) and src.shape != dst.shape:
            raise self.error("requires the same shape for all operands and results")
        if not self._compatible(src, dst):
            raise self.error(f"operand type '{src}' and result type '{dst}' are cast "
                             "incompatible")

    def _compatible(self, src: Type, dst: Type) -> bool:
        es = src.element_type if isinstance(src, (VectorType, MemRefType)) else src
        ed = dst.element_type if isinstance(dst, (VectorType, MemRefType)) else dst
        if self.WIDTH == "index":
            return isinstance(es, IndexType) != isinstance(ed, IndexType)
        if self.WIDTH == "=":
            return _bit_width(es) == _bit_width(ed)
        if self.WIDTH == ">":
            return type(es) is type(ed) and ed.width > es.width
        if self.WIDTH == "<":
            return type(es) is type(ed) and ed.width < es.width
        return True


def _bit_width(t: Type) -> int:
    return 64 if isinstance(t, IndexType) else t.width


def _cast(short: str, src: str, dst: str, width: Optional[str], flags: tuple = ()):
    cls = type(short, (_CastOp,), {"OP_NAME": f"arith.{short}", "SRC": src, "DST": dst,
                                   "WIDTH": width, "FLAGS": flags})
    return register_op(cls)


CASTS = {
    "extui": _cast("extui", "int", "int", ">"),
    "extsi": _cast("extsi", "int", "int", ">"),
    "trunci": _cast("trunci", "int", "int", "<", ("overflow",)),
    "extf": _cast("extf", "float", "float", ">", ("fastmath",)),
    "truncf": _cast("truncf", "float", "float", "<", ("rounding", "fastmath")),
    "uitofp": _cast("uitofp", "int", "float", None),
    "sitofp": _cast("sitofp", "int", "float", None),
    "fptoui": _cast("fptoui", "float", "int", None),
    "fptosi": _cast("fptosi", "float", "int", None),
    "index_cast": _cast("index_cast", "index_int", "index_int", "index"),
    "index_castui": _cast("index_castui", "index_int", "index_int", "index"),
    "bitcast": _cast("bitcast", "bits", "bits", "="),
}


# ---------------------------------------------------------------------------------------------
# Scaling casts (OCP MX): arith.scaling_extf / arith.scaling_truncf


class _ScalingCastOp(Operation):
    """``%r = arith.scaling_extf %x, %scale : f16, f16 to f32`` (``x * 2^e(scale)``) and
    ``arith.scaling_truncf %x, %scale [rounding] : f32, f32 to f16`` (``x / 2^e(scale)``), where
    ``2^e(scale)`` is the scale reduced to an ``f8E8M0FNU`` (its f32 exponent), as
    ``--arith-expand`` defines them."""

    EXTEND = True

    @property
    def rounding_mode(self) -> Optional[str]:
        a = self.attributes.get("roundingmode")
        return ROUNDING_MODES[a.value] if isinstance(a, IntegerAttr) and \
            0 <= a.value < len(ROUNDING_MODES) else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 2, cls.OP_NAME)
        attrs: dict = {}
        if not cls.EXTEND:
            p.skip_ws()
            save = p.pos
            word = p.optional_bare_id()
            if word in ROUNDING_MODES:
                attrs["roundingmode"] = IntegerAttr(ROUNDING_MODES.index(word), i32)
            else:
                p.pos = save
        if p.optional_keyword("fastmath"):
            attrs["fastmath"] = FastMathAttr.parse_body(p, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        t_in = p.parse_type()
        p.expect(",")
        t_scale = p.parse_type()
        p.expect_keyword("to")
        t_out = p.parse_type()
        check_operand_types(p, ops, [t_in, t_scale])
        return cls(operands=operand_values(ops), result_types=[t_out], attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = normalize_flags(attrs, "fastmath", FastMathAttr, keep_none=True)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operands(self.operands)
        elide = []
        if not self.EXTEND and self.rounding_mode is not None:
            p.print(" " + self.rounding_mode)
            elide.append("roundingmode")
        fm = self.attributes.get("fastmath")
        if isinstance(fm, FastMathAttr):
            p.print(f" fastmath<{fm.keyword()}>")
            elide.append("fastmath")
        p.print_attr_dict(self.attributes, elide=elide)
        a, s = self.operands
        p.print(f" : {p.type_str(a.type)}, {p.type_str(s.type)} to "
                f"{p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        check_counts(self, 2)
        verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        for i, v in enumerate(self.operands):
            if not is_float_like(v.type):
                raise self.error(f"operand #{i} must be floating-point-like, but got '{v.type}'")
        r = self.results[0].type
        if not is_float_like(r):
            raise self.error(f"result #0 must be floating-point-like, but got '{r}'")
        a, s = self.operands
        wa, wr = _elem(a.type).width, _elem(r).width
        if (wr <= wa) if self.EXTEND else (wr >= wa):
            raise self.error(f"operand types '{a.type}', '{s.type}' and result type '{r}' are "
                             "cast incompatible")
        if not (vector_shape(a.type) == vector_shape(s.type) == vector_shape(r)):
            raise self.error("requires the same shape for all operands and results")


ScalingExtFOp = register_op(type("scaling_extf", (_ScalingCastOp,),
                                 {"OP_NAME": "arith.scaling_extf", "EXTEND": True}))
ScalingTruncFOp = register_op(type("scaling_truncf", (_ScalingCastOp,),
                                   {"OP_NAME": "arith.scaling_truncf", "EXTEND": False}))
