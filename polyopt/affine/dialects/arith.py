"""The arith dialect: constants, float and integer arithmetic, comparisons, select, casts."""

from __future__ import annotations

import re

from ..attributes import DenseElementsAttr, FloatAttr, IntegerAttr, OpaqueAttr
from ..ir import Operation, register_op
from ..types import (FloatType, IndexType, IntegerType, Type, VectorType, element_type_of, i1)


def _is_float_like(t: Type) -> bool:
    return isinstance(element_type_of(t), FloatType)


def _is_int_like(t: Type) -> bool:
    return isinstance(element_type_of(t), (IntegerType, IndexType))


@register_op
class ConstantOp(Operation):
    """``arith.constant 0 : index``, ``arith.constant 1.0 : f64``, ``dense<0.0> : vector<4xf64>``."""

    OP_NAME = "arith.constant"

    @classmethod
    def build(cls, value, type_: Type, loc=None) -> "ConstantOp":
        if isinstance(type_, VectorType):
            attr = DenseElementsAttr(type_.shape, type_.element_type, (value,), "vector")
        elif isinstance(type_, FloatType):
            attr = FloatAttr(float(value), type_)
        else:
            attr = IntegerAttr(int(value), type_)
        return cls(result_types=[type_], attributes={"value": attr}, loc=loc)

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
        if isinstance(attr, (IntegerAttr, FloatAttr)) or \
                isinstance(attr, DenseElementsAttr) and attr.kind == "vector":
            t = attr.type
        elif isinstance(attr, DenseElementsAttr):
            raise p.error(f"tensor values are not supported by polyopt (memref-based IR: "
                          f"bufferize first); got '{attr.type}'", start)
        else:
            raise p.error("arith.constant expects an integer, float or dense vector value", start)
        attrs["value"] = attr
        return cls(result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("arith.constant ")
        p.print_attr_dict(self.attributes, elide=("value",))
        p.print(str(self.attributes["value"]))

    def result_name_hint(self):
        a = self.attributes["value"]
        t = self.results[0].type
        if isinstance(a, IntegerAttr):
            if isinstance(t, IndexType):
                return f"c{a.value}"
            if isinstance(t, IntegerType) and t.width == 1:
                return "true" if a.value else "false"
            return f"c{a.value}_{t}"
        return "cst"

    def verify_op(self) -> None:
        a = self.attributes.get("value")
        if a is None:
            raise self.error("requires attribute 'value'")
        t = self.results[0].type
        if getattr(a, "type", None) != t:
            raise self.error(f"value type '{getattr(a, 'type', '?')}' must match return type '{t}'")


_FASTMATH = re.compile(r"#arith\.fastmath<\s*(none|reassoc|nnan|ninf|nsz|arcp|contract|afn|fast)"
                       r"(\s*,\s*(reassoc|nnan|ninf|nsz|arcp|contract|afn|fast))*\s*>")


class _BinaryOp(Operation):
    """``%r = arith.addf %a, %b [fastmath<...>] : f64`` (operands and result share a type)."""

    FLOAT = True

    @classmethod
    def build(cls, lhs, rhs, loc=None):
        return cls(operands=[lhs, rhs], result_types=[lhs.type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops = p.parse_operand_list()
        if len(ops) != 2:
            raise p.error(f"'{cls.OP_NAME}' expects 2 operands, got {len(ops)}")
        attrs = {}
        if p.peek_keyword("fastmath"):
            attrs["fastmath"] = OpaqueAttr("#arith." + p._skip_balanced_attr())
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        p.skip_ws()
        start = p.pos
        t = p.parse_type()
        for v in ops:
            p.check_type(v, t, start)
        return cls(operands=ops, result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operands(self.operands)
        fm = self.attributes.get("fastmath")
        if fm is not None and str(fm) != "#arith.fastmath<none>":
            p.print(" " + str(fm)[len("#arith."):])
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        t = self.results[0].type
        if any(v.type != t for v in self.operands):
            raise self.error("requires the same type for all operands and results")
        fm = self.attributes.get("fastmath")
        if fm is not None and not _FASTMATH.fullmatch(str(fm)):
            # printed as fastmath<...> after the operands, which must read back
            raise self.error(f"attribute 'fastmath' failed to satisfy constraint: Floating point "
                             f"fast math flags (got {fm})")
        if self.FLOAT and not _is_float_like(t):
            raise self.error(f"operand #0 must be floating-point-like, but got '{t}'")
        if not self.FLOAT and not _is_int_like(t):
            raise self.error(f"operand #0 must be signless-integer-like, but got '{t}'")


def _binary(name: str, is_float: bool):
    cls = type(name.replace(".", "_"), (_BinaryOp,), {"OP_NAME": name, "FLOAT": is_float})
    return register_op(cls)


FLOAT_BINARY = {n: _binary(f"arith.{n}", True)
                for n in ("addf", "subf", "mulf", "divf", "maximumf", "minimumf", "maxnumf",
                          "minnumf", "remf")}
INT_BINARY = {n: _binary(f"arith.{n}", False)
              for n in ("addi", "subi", "muli", "divsi", "remsi", "divui", "remui", "floordivsi",
                        "ceildivsi", "andi", "ori", "xori", "maxsi", "minsi", "shli", "shrsi")}


@register_op
class NegFOp(Operation):
    OP_NAME = "arith.negf"

    @classmethod
    def parse_custom(cls, p, loc, name):
        v = p.parse_operand()
        p.parse_optional_attr_dict()
        t = p.parse_colon_type()
        p.check_type(v, t)
        return cls(operands=[v], result_types=[t], loc=loc)

    def print_custom(self, p) -> None:
        p.print("arith.negf ")
        p.print_operand(self.operands[0])
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        if not _is_float_like(self.operands[0].type) or self.operands[0].type != self.results[0].type:
            raise self.error("operand must be floating-point-like and match the result type")


CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                   "ult", "ule", "une", "uno", "true"]


class _CmpOp(Operation):
    PREDICATES: list[str] = []

    @property
    def predicate(self) -> str:
        return self.PREDICATES[self.attributes["predicate"].value]

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        pred = p.parse_string() if p.peek('"') else p.parse_bare_id("comparison predicate")
        if pred not in cls.PREDICATES:
            raise p.error(f"unknown comparison predicate \"{pred}\" for {cls.OP_NAME}; expected one "
                          f"of {', '.join(cls.PREDICATES)}", start)
        p.expect(",")
        ops = p.parse_operand_list()
        if len(ops) != 2:
            raise p.error(f"'{cls.OP_NAME}' expects 2 operands")
        attrs = p.parse_optional_attr_dict()
        t = p.parse_colon_type()
        for v in ops:
            p.check_type(v, t)
        rt = VectorType(t.shape, i1) if isinstance(t, VectorType) else i1
        attrs["predicate"] = IntegerAttr(cls.PREDICATES.index(pred), IntegerType(64))
        return cls(operands=ops, result_types=[rt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} {self.predicate}, ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes, elide=("predicate", "fastmath"))
        p.print(" : " + p.type_str(self.operands[0].type))

    def verify_op(self) -> None:
        a, b = self.operands
        if a.type != b.type:
            raise self.error("requires all operands to have the same type")
        if self.name == "arith.cmpf" and not _is_float_like(a.type):
            raise self.error(f"operand #0 must be floating-point-like, but got '{a.type}'")
        if self.name == "arith.cmpi" and not _is_int_like(a.type):
            raise self.error(f"operand #0 must be signless-integer-like, but got '{a.type}'")


@register_op
class CmpIOp(_CmpOp):
    OP_NAME = "arith.cmpi"
    PREDICATES = CMPI_PREDICATES


@register_op
class CmpFOp(_CmpOp):
    OP_NAME = "arith.cmpf"
    PREDICATES = CMPF_PREDICATES


@register_op
class SelectOp(Operation):
    """``arith.select %c, %a, %b : f64`` (or ``: vector<4xi1>, vector<4xf64>``)."""

    OP_NAME = "arith.select"

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops = p.parse_operand_list()
        if len(ops) != 3:
            raise p.error(f"'arith.select' expects 3 operands, got {len(ops)}")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        types = p.parse_type_list()
        if len(types) == 2:
            p.check_type(ops[0], types[0])
            t = types[1]
        else:
            p.check_type(ops[0], i1)
            t = types[0]
        p.check_type(ops[1], t)
        p.check_type(ops[2], t)
        return cls(operands=ops, result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("arith.select ")
        p.print_operands(self.operands)
        p.print(" : ")
        if self.operands[0].type != i1:
            p.print(p.type_str(self.operands[0].type) + ", ")
        p.print(p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        c, a, b = self.operands
        if a.type != b.type or a.type != self.results[0].type:
            raise self.error("requires the same type for true/false values and the result")
        if element_type_of(c.type) != i1:
            raise self.error(f"condition must be i1 or a vector of i1, got '{c.type}'")


class _CastOp(Operation):
    """``arith.index_cast %x : index to i64``."""

    @classmethod
    def build(cls, value, to_type, loc=None):
        return cls(operands=[value], result_types=[to_type], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.skip_ws()
        start = p.pos
        src = p.parse_type()
        p.check_type(v, src, start)
        p.expect_keyword("to")
        dst = p.parse_type()
        return cls(operands=[v], result_types=[dst], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operand(self.operands[0])
        p.print(f" : {p.type_str(self.operands[0].type)} to {p.type_str(self.results[0].type)}")

    def verify_op(self) -> None:
        src, dst = self.operands[0].type, self.results[0].type
        if isinstance(src, VectorType) != isinstance(dst, VectorType) or \
                isinstance(src, VectorType) and src.shape != dst.shape:
            raise self.error(f"'{src}' and '{dst}' are not cast compatible (shapes differ)")
        es, ed = element_type_of(src), element_type_of(dst)
        ok = {
            "arith.index_cast": lambda: isinstance(es, (IndexType, IntegerType)) and
            isinstance(ed, (IndexType, IntegerType)) and isinstance(es, IndexType) != isinstance(ed, IndexType),
            "arith.sitofp": lambda: isinstance(es, IntegerType) and isinstance(ed, FloatType),
            "arith.uitofp": lambda: isinstance(es, IntegerType) and isinstance(ed, FloatType),
            "arith.fptosi": lambda: isinstance(es, FloatType) and isinstance(ed, IntegerType),
            "arith.fptoui": lambda: isinstance(es, FloatType) and isinstance(ed, IntegerType),
            "arith.extf": lambda: isinstance(es, FloatType) and isinstance(ed, FloatType) and ed.width > es.width,
            "arith.truncf": lambda: isinstance(es, FloatType) and isinstance(ed, FloatType) and ed.width < es.width,
            "arith.extsi": lambda: isinstance(es, IntegerType) and isinstance(ed, IntegerType) and ed.width > es.width,
            "arith.extui": lambda: isinstance(es, IntegerType) and isinstance(ed, IntegerType) and ed.width > es.width,
            "arith.trunci": lambda: isinstance(es, IntegerType) and isinstance(ed, IntegerType) and ed.width < es.width,
        }[self.name]
        if not ok():
            raise self.error(f"operand type '{src}' and result type '{dst}' are cast incompatible")


CASTS = {n: register_op(type(n, (_CastOp,), {"OP_NAME": f"arith.{n}"}))
         for n in ("index_cast", "sitofp", "uitofp", "fptosi", "fptoui", "extf", "truncf", "extsi",
                   "extui", "trunci")}
