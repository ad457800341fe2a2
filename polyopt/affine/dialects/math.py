"""The math dialect of MLIR 22, every op, on scalars and vectors.

* float ops with ``fastmath<...>`` after the operands: the unary ones (``math.exp %x : f32``:
  :data:`FLOAT_UNARY`), ``atan2``/``copysign``/``powf``, ``fma``, ``clampf`` (``math.clampf %x
  to [%lo, %hi] : f32``), ``fpowi`` (``math.fpowi %x, %n : f32, i32``), ``sincos`` (two results,
  ``%sin, %cos``);
* integer ops: ``absi``, ``ctlz``, ``cttz``, ``ctpop``, ``ipowi``;
* classification: ``isnan``, ``isinf``, ``isfinite``, ``isnormal`` (an ``i1`` result; their
  fastmath flags are printed in the attribute dictionary, as mlir-opt does).

The 2020 ``fma`` op parses to ``math.fma``.  ``fastmath<none>`` (the default) is not stored.
"""

from __future__ import annotations

from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..ods_counts import check_counts
from .arith import (check_operand_types, i1_same_shape, is_bool_like, is_float_like,
                    is_signless_int_like, operand_values, parse_operands, vector_shape)
from .arith_attributes import (FastMathAttr, normalize_flags, parse_fastmath, print_fastmath,
                               verify_flags)

FLOAT_UNARY_NAMES = ("absf", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil",
                     "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "floor", "log",
                     "log10", "log1p", "log2", "round", "roundeven", "rsqrt", "sin", "sinh",
                     "sqrt", "tan", "tanh", "trunc")
FLOAT_BINARY_NAMES = ("atan2", "copysign", "powf")
INT_UNARY_NAMES = ("absi", "ctlz", "cttz", "ctpop")
CLASSIFY_NAMES = ("isnan", "isinf", "isfinite", "isnormal")

_FLOAT = (is_float_like, "floating-point-like")
_INT = (is_signless_int_like, "signless-integer-like")


class _FastMathOp(Operation):
    """An op with fastmath flags: in generic form they are an attribute, ``none`` dropped."""

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return cls(operands=operands, result_types=result_types,
                   attributes=normalize_flags(attrs, "fastmath", FastMathAttr), regions=regions,
                   loc=loc)


class _MathOp(_FastMathOp):
    """``%r = math.<op> %a[, %b[, %c]] [fastmath<...>] attr-dict : type``: operands and result
    share one type (``KIND`` ``float`` or ``int``; ``FASTMATH``: the op has the flags)."""

    ARITY = 1
    KIND = "float"
    FASTMATH = True

    @classmethod
    def build(cls, *operands: Value, fastmath: str | None = None, loc=None):
        attrs = {}
        if fastmath is not None and fastmath != "none":
            attrs["fastmath"] = FastMathAttr.from_keywords(fastmath.split(","))
        return cls(operands=list(operands), result_types=[operands[0].type], attributes=attrs,
                   loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, cls.ARITY, cls.OP_NAME)
        attrs: dict = {}
        if cls.FASTMATH:
            parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = p.parse_colon_type()
        check_operand_types(p, ops, [t] * cls.ARITY)
        return cls(operands=operand_values(ops), result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operands(self.operands)
        print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        check_counts(self, self.ARITY)
        verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        ok, what = _FLOAT if self.KIND == "float" else _INT
        for i, v in enumerate(self.operands):
            if not ok(v.type):
                raise self.error(f"operand #{i} must be {what}, but got '{v.type}'")
        t = self.results[0].type
        if not ok(t):
            raise self.error(f"result #0 must be {what}, but got '{t}'")
        if any(v.type != t for v in self.operands):
            raise self.error("requires the same type for all operands and results")


def _register(short: str, base: type, **fields):
    fields["OP_NAME"] = f"math.{short}"
    return register_op(type(short, (base,), fields))


FLOAT_UNARY = {n: _register(n, _MathOp) for n in FLOAT_UNARY_NAMES}
FLOAT_BINARY = {n: _register(n, _MathOp, ARITY=2) for n in FLOAT_BINARY_NAMES}
INT_UNARY = {n: _register(n, _MathOp, KIND="int", FASTMATH=False) for n in INT_UNARY_NAMES}
IPowIOp = _register("ipowi", _MathOp, KIND="int", FASTMATH=False, ARITY=2)


@register_op
class MathFMAOp(_MathOp):
    """``%r = math.fma %a, %b, %c : f64`` computes ``a * b + c`` with a single rounding."""

    OP_NAME = "math.fma"
    ARITY = 3

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def c(self) -> Value:
        return self.operands[2]


@register_op
class ClampFOp(_MathOp):
    """``%r = math.clampf %x to [%lo, %hi] [fastmath<...>] : f32``."""

    OP_NAME = "math.clampf"
    ARITY = 3

    @classmethod
    def parse_custom(cls, p, loc, name):
        first, _ = parse_operands(p, 1, cls.OP_NAME)
        p.expect_keyword("to")
        p.expect("[")
        bounds, _ = parse_operands(p, 2, cls.OP_NAME)
        p.expect("]")
        attrs: dict = {}
        parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = p.parse_colon_type()
        ops = first + bounds
        check_operand_types(p, ops, [t] * 3)
        return cls(operands=operand_values(ops), result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        x, lo, hi = self.operands
        p.print("math.clampf ")
        p.print_operand(x)
        p.print(" to [")
        p.print_operands([lo, hi])
        p.print("]")
        print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(" : " + p.type_str(self.results[0].type))


@register_op
class FPowIOp(_FastMathOp):
    """``%r = math.fpowi %x, %n [fastmath<...>] : f32, i32`` (a float to an integer power)."""

    OP_NAME = "math.fpowi"

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 2, cls.OP_NAME)
        attrs: dict = {}
        parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = p.parse_colon_type()
        p.expect(",")
        tn = p.parse_type()
        check_operand_types(p, ops, [t, tn])
        return cls(operands=operand_values(ops), result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("math.fpowi ")
        p.print_operands(self.operands)
        print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(f" : {p.type_str(self.operands[0].type)}, {p.type_str(self.operands[1].type)}")

    def verify_op(self) -> None:
        check_counts(self, 2)
        verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        x, n = self.operands
        if not is_float_like(x.type):
            raise self.error(f"operand #0 must be floating-point-like, but got '{x.type}'")
        if not is_signless_int_like(n.type):
            raise self.error(f"operand #1 must be signless-integer-like, but got '{n.type}'")
        r = self.results[0].type
        if not is_float_like(r):
            raise self.error(f"result #0 must be floating-point-like, but got '{r}'")
        if not (vector_shape(x.type) == vector_shape(n.type) == vector_shape(r)):
            raise self.error("requires the same shape for all operands and results")
        if x.type != r:
            raise self.error("failed to verify that all of {lhs, result} have same type")


class _ClassifyOp(_FastMathOp):
    """``%r = math.isnan %x : f32`` (``i1``, or a vector of ``i1``); the fastmath flags go in the
    attribute dictionary."""

    @classmethod
    def build(cls, x: Value, loc=None):
        return cls(operands=[x], result_types=[i1_same_shape(x.type)], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 1, cls.OP_NAME)
        attrs = normalize_flags(p.parse_optional_attr_dict(), "fastmath", FastMathAttr)
        t = p.parse_colon_type()
        check_operand_types(p, ops, [t])
        if not is_float_like(t):
            raise ParseError(f"custom op '{cls.OP_NAME}' 'operand' must be floating-point-like, "
                             f"but got '{t}'", loc)
        return cls(operands=operand_values(ops), result_types=[i1_same_shape(t)], attributes=attrs,
                   loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} ")
        p.print_operand(self.operands[0])
        p.print_attr_dict(self.attributes)
        p.print(" : " + p.type_str(self.operands[0].type))

    def verify_op(self) -> None:
        check_counts(self, 1)
        verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        x = self.operands[0].type
        if not is_float_like(x):
            raise self.error(f"operand #0 must be floating-point-like, but got '{x}'")
        r = self.results[0].type
        if not is_bool_like(r):
            raise self.error(f"result #0 must be bool-like, but got '{r}'")
        if r != i1_same_shape(x):
            raise self.error("failed to verify that result type has i1 element type and same "
                             "shape as operands")


CLASSIFY = {n: _register(n, _ClassifyOp) for n in CLASSIFY_NAMES}


@register_op
class SinCosOp(_FastMathOp):
    """``%sin, %cos = math.sincos %x [fastmath<...>] : f32``."""

    OP_NAME = "math.sincos"

    @classmethod
    def parse_custom(cls, p, loc, name):
        ops, _ = parse_operands(p, 1, cls.OP_NAME)
        attrs: dict = {}
        parse_fastmath(p, attrs, cls.OP_NAME)
        attrs.update(p.parse_optional_attr_dict())
        t = p.parse_colon_type()
        check_operand_types(p, ops, [t])
        return cls(operands=operand_values(ops), result_types=[t, t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("math.sincos ")
        p.print_operand(self.operands[0])
        print_fastmath(p, self.attributes)
        p.print_attr_dict(self.attributes, elide=("fastmath",))
        p.print(" : " + p.type_str(self.operands[0].type))

    def result_name_hint(self):
        return ["sin", "cos"]

    def verify_op(self) -> None:
        if len(self.operands) != 1 or len(self.results) != 2:
            raise self.error("expects one operand and two results")
        verify_flags(self, "fastmath", FastMathAttr, "Floating point fast math flags")
        x = self.operands[0].type
        if not is_float_like(x):
            raise self.error(f"operand #0 must be floating-point-like, but got '{x}'")
        for i, r in enumerate(self.results):
            if not is_float_like(r.type):
                raise self.error(f"result #{i} must be floating-point-like, but got '{r.type}'")
        if any(r.type != x for r in self.results):
            raise self.error("failed to verify that all of {operand, sin, cos} have same type")
