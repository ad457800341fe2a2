"""linalg's elementwise named ops on memrefs (MLIR 22): ``linalg.add``, ``sub``, ``mul``,
``div``, ``div_unsigned``, ``max``, ``min``, ``powf``, the unary ``exp``, ``log``, ``abs``,
``ceil``, ``floor``, ``negf``, ``reciprocal``, ``round``, ``sqrt``, ``rsqrt``, ``square``,
``tanh``, ``erf``, the ternary ``select``, and ``linalg.elementwise kind=...``::

    linalg.add ins(%a, %b : memref<3x5xf32>, memref<3x5xf32>) outs(%c : memref<3x5xf32>)
    linalg.exp {foo = 1 : i64} ins(%a : memref<3x5xf32>) outs(%c : memref<3x5xf32>)
    linalg.elementwise kind=#linalg.elementwise_kind<add> indexing_maps = [#map, #map1, #map1]
        ins(%v, %b : memref<5xf32>, memref<3x5xf32>) outs(%c : memref<3x5xf32>)

The named ops are rank-polymorphic: one ``parallel`` loop per output dimension, the identity
map for every operand of the output's rank and ``() -> ()`` for a rank-0 memref or a scalar
(MLIR's OpDSL).  ``linalg.elementwise`` takes every operand with the identity map unless
``indexing_maps`` says otherwise (transposes, broadcasts).  No operand is cast: the payload
(:func:`build_fn`, MLIR's ``buildUnaryFn``/``buildBinaryFn``) works on the input element
types, and the output must have the type it yields.

Errors are mlir-opt-22's: the region builder's (``unsupported non numeric type``,
``Cannot build binary Linalg operation: ...``, ``unsupported operation: sub with bools``) while
parsing, the payload ops' own (``'arith.addf' op requires the same type for all operands and
results``, the implied ``linalg.yield``'s) while verifying, located at the linalg op (mlir-opt
says ``<unknown>:0`` for those).  Where mlir-opt-22 crashes (``linalg.elementwise`` with an
unsigned kind on floats, a unary kind on integers) the named op's message is given.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..affine_expr import AffineMap
from ..attributes import AffineMapAttr, ArrayAttr, OpaqueAttr
from ..diagnostics import ParseError, PolyoptError
from ..ir import Block, Value, register_op
from ..types import FloatType, IntegerType
from .linalg import (TENSOR_MESSAGE, LinalgYieldOp, _custom_error, _element_type, _merge_attrs,
                     _NamedOp, _parse_ins_outs, _print_ins_outs, _rank, _reject_tensor_results,
                     _reject_tensors, _segment_sizes, _strip, binary_error, maps_attr)

__all__ = ["UNARY_FNS", "BINARY_FNS", "ELEMENTWISE_KINDS", "build_fn", "ElementwiseOp",
           "LINALG_ELEMENTWISE_OPS"]

UNARY_FNS = ("exp", "log", "abs", "ceil", "floor", "negf", "reciprocal", "round", "sqrt",
             "rsqrt", "square", "tanh", "erf")
BINARY_FNS = ("add", "sub", "mul", "div", "div_unsigned", "max_signed", "min_signed",
              "max_unsigned", "min_unsigned", "powf")
#: ``#linalg.elementwise_kind<...>`` values, in MLIR's order (its error message lists them so)
ELEMENTWISE_KINDS = UNARY_FNS + BINARY_FNS + ("select",)

_MATH_UNARY = {"exp": "exp", "log": "log", "abs": "absf", "ceil": "ceil", "floor": "floor",
               "round": "round", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh", "erf": "erf"}


class BuilderError(Exception):
    """The region builder cannot build the payload (mlir-opt reports it while parsing)."""


def _arity(fn: str) -> int:
    return 1 if fn in UNARY_FNS else 3 if fn == "select" else 2


def build_fn(b, fn: str, args: Sequence[Value], loc) -> Value:
    """The payload of elementwise function ``fn`` over ``args`` at builder ``b`` (MLIR's
    ``RegionBuilderHelper``); raises :class:`BuilderError` with MLIR's message when the types
    do not allow it."""
    from .arith import FLOAT_BINARY, INT_BINARY, ConstantOp, NegFOp, SelectOp
    from .math import FLOAT_BINARY as MATH_BINARY
    from .math import FLOAT_UNARY
    if fn == "select":
        return b.create(SelectOp, *args, loc=loc).result
    if fn in UNARY_FNS:
        (x,) = args
        if not isinstance(x.type, FloatType):
            raise BuilderError("unsupported non numeric type")
        if fn == "negf":
            return b.create(NegFOp, x, loc=loc).result
        if fn == "square":
            return b.create(FLOAT_BINARY["mulf"], x, x, loc=loc).result
        if fn == "reciprocal":
            one = b.create(ConstantOp, 1.0, x.type, loc=loc).result
            return b.create(FLOAT_BINARY["divf"], one, x, loc=loc).result
        return b.create(FLOAT_UNARY[_MATH_UNARY[fn]], x, loc=loc).result
    x, y = args
    msg = binary_error(x.type, y.type)
    if msg is not None:
        raise BuilderError(msg)
    is_float = isinstance(x.type, FloatType)
    is_bool = isinstance(x.type, IntegerType) and x.type.width == 1
    if fn == "powf":
        return b.create(MATH_BINARY["powf"], x, y, loc=loc).result
    if fn in ("sub", "div") and is_bool:
        raise BuilderError(f"unsupported operation: {fn} with bools")
    if fn.endswith("_unsigned") and (is_float or is_bool):
        what = fn.split("_")[0]
        raise BuilderError(f"unsupported operation: unsigned {what} not on uint")
    if is_float:
        name = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf",
                "max_signed": "maximumf", "min_signed": "minimumf"}[fn]
        return b.create(FLOAT_BINARY[name], x, y, loc=loc).result
    if is_bool and fn in ("add", "mul"):
        name = "ori" if fn == "add" else "andi"
    else:
        name = {"add": "addi", "sub": "subi", "mul": "muli", "div": "divsi",
                "div_unsigned": "divui", "max_signed": "maxsi", "min_signed": "minsi",
                "max_unsigned": "maxui", "min_unsigned": "minui"}[fn]
    return b.create(INT_BINARY[name], x, y, loc=loc).result


class _ElementwiseBase(_NamedOp):
    """What the named elementwise ops and ``linalg.elementwise`` share: one parallel loop per
    output dimension, a payload of one function, no casts."""

    @property
    def fn(self) -> str:
        raise NotImplementedError

    @property
    def num_inputs(self) -> int:
        return _arity(self.fn)

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * _rank(self.operands[-1].type)

    def build_payload(self, b, args, loc):
        try:
            return [build_fn(b, self.fn, list(args[:self.num_inputs]), loc)]
        except BuilderError as e:
            raise ValueError(str(e)) from None

    def builder_error(self) -> Optional[str]:
        """MLIR's region-builder message for these element types, else ``None``."""
        from ..builder import Builder
        block = Block([_element_type(v.type) for v in self.operands])
        try:
            build_fn(Builder.at_end(block), self.fn, list(block.args[:self.num_inputs]),
                     self.loc)
        except BuilderError as e:
            return str(e)
        return None

    def _verify_payload_types(self) -> None:
        """The payload's ops verify (built apart, reported at this op) and yield the output's
        element type."""
        from ..builder import Builder
        msg = self.builder_error()
        if msg is not None:
            raise self.error(msg)
        block = Block([_element_type(v.type) for v in self.operands])
        value = build_fn(Builder.at_end(block), self.fn, list(block.args[:self.num_inputs]),
                         self.loc)
        for op in block.ops:
            try:
                op.verify_op()
            except PolyoptError as e:
                raise type(e)(e.message, self.loc) from None
        out = _element_type(self.operands[-1].type)
        if value.type != out:
            from .linalg import _yield_type_error
            raise _yield_type_error(self, out, value.type)

    def _verify_common(self) -> None:
        self._verify_no_region()
        n = self.num_inputs
        if len(self.operands) != n + 1:
            raise self.error(f"expects {n} input(s) and 1 output, got {len(self.operands)} "
                             "operands")
        self._verify_operand_kinds()
        self.verify_structured()

    def print_named(self, p, head: str) -> None:
        p.print(head)
        p.print_attr_dict(self.attributes, elide=("kind", "indexing_maps",
                                                  "operandSegmentSizes"))
        _print_ins_outs(p, self.inputs, self.outputs)


def _parse_named_body(p, name: str, arity: int, attrs: dict, at_maps: bool = False):
    """``[indexing_maps = [...]] [{attrs}] ins(...) outs(...) [{attrs}]`` with MLIR's
    arity message (at the token after the op)."""
    ins, outs = _parse_ins_outs(p, name, attrs)
    p.skip_ws()
    _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
    _reject_tensor_results(p)
    p.skip_ws()
    if len(ins) != arity or len(outs) != 1:
        raise _custom_error(p, name, f"[parseNamedStructuredOpRegion] ods-gen generated region "
                            f"expects {arity + 1} args, got {len(ins) + len(outs)}", p.pos)
    return ins + outs


class _NamedElementwiseOp(_ElementwiseBase):
    """``linalg.<fn> [{attrs}] ins(...) outs(...)``: rank-polymorphic, no indexing_maps."""

    FN = ""

    @property
    def fn(self) -> str:
        return self.FN

    @classmethod
    def build(cls, *operands: Value, loc=None):
        """``operands``: the inputs then the output."""
        return cls(operands=list(operands), loc=loc)

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = _rank(self.operands[-1].type)
        return tuple(AffineMap.get(rank, 0, ()) if _rank(v.type) == 0 and rank
                     else AffineMap.identity(rank) for v in self.operands)

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        if p.peek_keyword("indexing_maps"):   # MLIR reads nothing more and counts no args
            raise _custom_error(p, name, f"[parseNamedStructuredOpRegion] ods-gen generated "
                                f"region expects {_arity(cls.FN) + 1} args, got 0", start)
        attrs: dict = {}
        operands = _parse_named_body(p, name, _arity(cls.FN), attrs)
        op = cls(operands=operands, attributes=attrs, loc=loc)
        msg = op.builder_error()
        if msg is not None:
            raise _custom_error(p, name, msg, start)
        return op

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        attrs = dict(attrs)
        attrs.pop("linalg.memoized_indexing_maps", None)
        n = _arity(cls.FN)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is not None and seg != (n, 1):
            raise ParseError(f"'{cls.OP_NAME}' expects {n} input(s) and 1 output, got "
                             f"operandSegmentSizes {attrs['operandSegmentSizes']}", loc)
        op = cls(operands=operands, attributes=_strip(attrs, "operandSegmentSizes"), loc=loc)
        op._check_generic_region(regions, loc)
        return op

    def print_custom(self, p) -> None:
        self.print_named(p, self.OP_NAME)

    def verify_op(self) -> None:
        self._verify_common()


def _named(fn: str, op_name: Optional[str] = None) -> type:
    name = op_name or f"linalg.{fn}"
    cls = type(f"Linalg_{fn}_Op", (_NamedElementwiseOp,),
               {"OP_NAME": name, "FN": fn,
                "__doc__": f"``{name} ins(...) outs(...)``: the elementwise ``{fn}``."})
    return register_op(cls)


#: The named elementwise op classes, by op name.
LINALG_ELEMENTWISE_OPS = {c.OP_NAME: c for c in (
    *(_named(fn) for fn in UNARY_FNS),
    *(_named(fn) for fn in ("add", "sub", "mul", "div", "div_unsigned", "powf")),
    _named("max_signed", "linalg.max"), _named("min_signed", "linalg.min"),
    _named("select"))}

_KIND_ATTR = re.compile(r"#linalg\.elementwise_kind<\s*([A-Za-z_0-9]*)\s*>")


def kind_attr(kind: str) -> OpaqueAttr:
    return OpaqueAttr(f"#linalg.elementwise_kind<{kind}>")


def _kind_of(attr) -> Optional[str]:
    m = _KIND_ATTR.fullmatch(str(attr)) if attr is not None else None
    return m.group(1) if m and m.group(1) in ELEMENTWISE_KINDS else None


@register_op
class ElementwiseOp(_ElementwiseBase):
    """``linalg.elementwise kind=#linalg.elementwise_kind<add> [indexing_maps = [...]]
    [{attrs}] ins(...) outs(...)``: ``kind`` applied elementwise; the maps default to the
    identity of the output's rank for every operand."""

    OP_NAME = "linalg.elementwise"

    @classmethod
    def build(cls, kind: str, *operands: Value,
              indexing_maps: Optional[Sequence[AffineMap]] = None, loc=None):
        if kind not in ELEMENTWISE_KINDS:
            raise ValueError(f"unknown elementwise kind {kind!r}")
        attrs = {"kind": kind_attr(kind)}
        if indexing_maps is not None:
            attrs["indexing_maps"] = maps_attr(indexing_maps)
        op = cls(operands=list(operands), attributes=attrs, loc=loc)
        if indexing_maps is not None and tuple(indexing_maps) == op.default_maps:
            del op.attributes["indexing_maps"]
        return op

    @property
    def fn(self) -> str:
        return _kind_of(self.attributes.get("kind")) or "exp"

    @property
    def default_maps(self) -> tuple[AffineMap, ...]:
        return (AffineMap.identity(_rank(self.operands[-1].type)),) * len(self.operands)

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        a = self.attributes.get("indexing_maps")
        if isinstance(a, ArrayAttr):
            return tuple(e.value for e in a.elements if isinstance(e, AffineMapAttr))
        return self.default_maps

    @property
    def iterator_types(self) -> tuple[str, ...]:
        maps = self.indexing_maps
        n = maps[-1].num_dims if maps else 0
        return ("parallel",) * n

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        p.skip_ws()
        if not p.optional_keyword("kind"):
            raise _custom_error(p, name, "expected 'kind'")
        p.expect("=")
        p.skip_ws()
        at = p.pos
        m = _KIND_ATTR.match(p.text, p.pos)
        if not m or m.group(1) not in ELEMENTWISE_KINDS:
            col = at + len("#linalg.elementwise_kind<")
            raise p.error("expected ::mlir::linalg::ElementwiseKind to be one of: " +
                          ", ".join(ELEMENTWISE_KINDS), col if p.text.startswith(
                              "#linalg.elementwise_kind<", at) else at)
        p.pos = m.end()
        kind = m.group(1)
        attrs: dict = {"kind": kind_attr(kind)}
        p.skip_ws()
        if p.optional_keyword("indexing_maps"):
            p.expect("=")

            def one():
                a = p.parse_attribute()
                if not isinstance(a, AffineMapAttr):   # MLIR points after the attribute
                    raise _custom_error(p, name, "expected affine map attribute", p.pos)
                return a
            attrs["indexing_maps"] = ArrayAttr(tuple(p.parse_comma_separated("[", "]", one)))
        p.skip_ws()
        start = p.pos
        operands = _parse_named_body(p, name, _arity(kind), attrs)
        op = cls(operands=operands, attributes=attrs, loc=loc)
        op._drop_default_maps()
        msg = op.builder_error()
        if msg is not None:
            raise _custom_error(p, name, msg, start)
        return op

    def _drop_default_maps(self) -> None:
        a = self.attributes.get("indexing_maps")
        if isinstance(a, ArrayAttr) and len(a.elements) == len(self.operands) and \
                tuple(getattr(e, "value", None) for e in a.elements) == self.default_maps:
            del self.attributes["indexing_maps"]

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        attrs = _strip(dict(attrs), "operandSegmentSizes")
        op = cls(operands=operands, attributes=attrs, loc=loc)
        op._drop_default_maps()
        op._check_generic_region(regions, loc)
        return op

    def print_custom(self, p) -> None:
        head = f"linalg.elementwise kind=#linalg.elementwise_kind<{self.fn}>"
        if "indexing_maps" in self.attributes:
            head += " indexing_maps = " + p.attr_str(self.attributes["indexing_maps"])
        self.print_named(p, head)

    def verify_op(self) -> None:
        a = self.attributes.get("kind")
        if a is None:
            raise self.error("requires attribute 'kind'")
        if _kind_of(a) is None:
            raise self.error(f"attribute 'kind' failed to satisfy constraint: allowed "
                             f"elementwise kinds, got {a}")
        m = self.attributes.get("indexing_maps")
        if m is not None and (not isinstance(m, ArrayAttr) or not all(
                isinstance(e, AffineMapAttr) for e in m.elements)):
            raise self.error("attribute 'indexing_maps' failed to satisfy constraint: AffineMap "
                             "array attribute")
        self._verify_common()
