"""``vector.contract``: a contraction of two vectors into an accumulator, its loops named by
indexing maps and iterator types (``linalg.generic``'s vocabulary on vectors)::

    %r = vector.contract {indexing_maps = [#a, #b, #c],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %A, %B, %C
        : vector<4x8xf32>, vector<8x16xf32> into vector<4x16xf32>

The attributes may be given as an alias of a dictionary (``vector.contract #trait ...``).
Syntax, generic form (iterator types as ``#vector.iterator_type<...>``, the three attributes
as properties) and the verifier's messages are mlir-opt-22's.  The op is read, verified and
printed, and lowered to LLVM by :mod:`polyopt.codegen.lower_vector_contract`."""

from __future__ import annotations

from typing import Optional

from ..affine_expr import AffineDimExpr, AffineMap
from ..attributes import AffineMapAttr, ArrayAttr, DictAttr, OpaqueAttr, StringAttr
from ..diagnostics import ParseError
from ..ir import Operation, Value, register_op
from ..types import Type, VectorType
from .vector import COMBINING_KINDS, _enum_keyword, supports_kind

__all__ = ["ContractionOp"]

ITERATOR_TYPES = ("parallel", "reduction")
_TRAIT = ("indexing_maps", "iterator_types", "kind")


def _iterator_attr(name: str) -> OpaqueAttr:
    return OpaqueAttr(f"#vector.iterator_type<{name}>")


def _iterator_name(attr) -> Optional[str]:
    if isinstance(attr, StringAttr):
        return attr.value
    return _enum_keyword(attr, "#vector.iterator_type")


def _shape(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, VectorType) else ()


@register_op
class ContractionOp(Operation):
    """``%r = vector.contract {indexing_maps, iterator_types, kind} %lhs, %rhs, %acc :
    LHS, RHS into ACC``."""

    OP_NAME = "vector.contract"

    @property
    def lhs(self) -> Value:
        return self.operands[0]

    @property
    def rhs(self) -> Value:
        return self.operands[1]

    @property
    def acc(self) -> Value:
        return self.operands[2]

    @property
    def indexing_maps(self) -> list[AffineMap]:
        a = self.attributes.get("indexing_maps")
        if not isinstance(a, ArrayAttr):
            return []
        return [m.value for m in a.elements if isinstance(m, AffineMapAttr)]

    @property
    def iterator_types(self) -> list[Optional[str]]:
        a = self.attributes.get("iterator_types")
        return [_iterator_name(e) for e in a.elements] if isinstance(a, ArrayAttr) else []

    @property
    def kind(self) -> str:
        a = self.attributes.get("kind")
        return "add" if a is None else _enum_keyword(a, "#vector.kind") or ""

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        if p.peek("#"):
            trait = p.parse_attribute()
            if not isinstance(trait, DictAttr):
                raise ParseError(f"custom op '{name}' expected a dictionary of the op's "
                                 f"attributes, got {trait}", p.loc(start))
            attrs = dict(trait.entries)
        elif p.peek("{"):
            attrs = p.parse_attr_dict_body()
        else:
            raise p.wrong_token("expected attribute value")
        iters = attrs.get("iterator_types")
        if not isinstance(iters, ArrayAttr):
            raise ParseError(f"custom op '{name}' expected 'iterator_types' array attribute",
                             loc)
        names = []
        for e in iters.elements:
            n = _iterator_name(e)
            if n not in ITERATOR_TYPES:
                raise ParseError(f"custom op '{name}' unexpected iterator_type ({e})", loc)
            names.append(n)
        attrs["iterator_types"] = ArrayAttr(tuple(_iterator_attr(n) for n in names))
        attrs.setdefault("kind", OpaqueAttr("#vector.kind<add>"))
        p.skip_ws()
        ops_at = p.pos
        ops = p.parse_operand_list()
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        lhs_t = p.parse_type()
        p.expect(",")
        rhs_t = p.parse_type()
        p.expect_keyword("into")
        acc_t = p.parse_type()
        if len(ops) != 3:
            raise ParseError(f"custom op '{name}' expected 3 operands, got {len(ops)}", loc)
        for v, t in zip(ops, (lhs_t, rhs_t, acc_t)):
            p.check_type(v, t, ops_at)
        return cls(operands=ops, result_types=[acc_t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("vector.contract {")
        entries = []
        maps = self.attributes.get("indexing_maps")
        if maps is not None:
            entries.append(f"indexing_maps = {p.attr_str(maps)}")
        entries.append("iterator_types = [" + ", ".join(f'"{n}"' for n in self.iterator_types)
                       + "]")
        entries.append(f"kind = #vector.kind<{self.kind}>")
        p.print(", ".join(entries) + "} ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes, elide=_TRAIT)
        p.print(f" : {p.type_str(self.lhs.type)}, {p.type_str(self.rhs.type)} into "
                f"{p.type_str(self.results[0].type)}")

    def generic_properties(self) -> dict:
        props = {k: v for k, v in self.attributes.items() if k in _TRAIT}
        props.setdefault("kind", OpaqueAttr("#vector.kind<add>"))
        return props

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k not in _TRAIT}

    def verify_op(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("expects three operands and one result")
        for name in ("indexing_maps", "iterator_types"):
            if name not in self.attributes:
                raise self.error(f"requires attribute '{name}'")
        iters = self.iterator_types
        if any(n not in ITERATOR_TYPES for n in iters):
            raise self.error("attribute 'iterator_types' failed to satisfy constraint: Iterator "
                             "type should be an enum.")
        kind = self.kind
        if kind not in COMBINING_KINDS:
            raise self.error(f"requires attribute 'kind' (one of {', '.join(COMBINING_KINDS)})")
        lhs_t, rhs_t, acc_t = self.lhs.type, self.rhs.type, self.acc.type
        res_t = self.results[0].type
        for k, t in ((0, lhs_t), (1, rhs_t)):
            if not isinstance(t, VectorType):
                raise self.error(f"operand #{k} must be vector of any type values, but got '{t}'")
        if acc_t != res_t:
            raise self.error("failed to verify that result type matches type of acc")
        maps = self.indexing_maps
        if len(maps) != 3:
            raise self.error("expected an indexing map for each vector operand")
        num_iters = len(iters)
        for k, (m, t) in enumerate(zip(maps, (lhs_t, rhs_t, acc_t))):
            if m.num_symbols:
                raise self.error(f"expected indexing map {k} to have no symbols")
            if m.num_dims != num_iters:
                raise self.error(f"expected indexing map {k} to have {num_iters} number of inputs")
            if len(m.results) != len(_shape(t)):
                raise self.error(f"expected indexing map {k} to have {len(_shape(t))} number of "
                                 f"outputs")
            if not m.is_projected_permutation():
                raise self.error(f"expected indexing map {k} to be a projected permutation of "
                                 f"its inputs")
        # upstream's getContractingDimMap: the reduction loops both inputs index
        seen = [{e.position for e in m.results if isinstance(e, AffineDimExpr)}
                for m in maps[:2]]
        if not any(t == "reduction" and d in seen[0] and d in seen[1]
                   for d, t in enumerate(iters)):
            raise self.error("expected at least one contracting dimension pair")
        # a loop's size where the two inputs see it, and in the accumulator
        sizes: dict[int, int] = {}
        for m, t in zip(maps[:2], (lhs_t, rhs_t)):
            for e, size in zip(m.results, t.shape):
                if isinstance(e, AffineDimExpr):
                    if sizes.setdefault(e.position, size) != size:
                        raise self.error("invalid contracting dimension map")
        element = acc_t.element_type if isinstance(acc_t, VectorType) else acc_t
        expected = tuple(sizes.get(e.position) if isinstance(e, AffineDimExpr) else None
                         for e in maps[2].results)
        if None not in expected and expected != _shape(acc_t):
            want = VectorType(expected, element) if expected else element
            raise self.error(f"invalid accumulator/result vector shape, expected: '{want}'")
        if not supports_kind(kind, element):
            raise self.error("unsupported contraction type")
