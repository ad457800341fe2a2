"""The affine dialect: ``affine.for``, ``affine.parallel``, ``affine.if``, ``affine.yield``,
``affine.load``/``store``, ``affine.vector_load``/``vector_store``, ``affine.prefetch``,
``affine.apply``, ``affine.min``, ``affine.max``, ``affine.delinearize_index``,
``affine.linearize_index``.

Custom forms parse and print exactly as ``mlir-opt-22`` does; the generic forms parse too.
Maps live in ``attributes`` under MLIR's names (``lowerBoundMap``, ``upperBoundMap``, ``step``,
``condition``, ``map``), so cloning and generic printing need nothing special.  ``affine.for``
does not store ``operandSegmentSizes``: the split of its operands follows from the bound maps'
arities and the number of results (it is recomputed for generic printing).

The 2020 spellings of the paper parse as well: bare maps and sets written in place of an alias
(``affine.for %i = (d0) -> (d0 * 16)(%j) to ...``, ``affine.if (d0) : (d0 >= 0)(%i)``).

Validity of map operands as dimensions or symbols follows :mod:`polyopt.affine.affine_rules`.
Deliberate differences from mlir-opt-22: ``affine.for`` with ``step 0`` is rejected by the
verifier (mlir-opt-22 accepts it and loops forever), and so is an ``affine.parallel`` with a
non-positive step, with operands that do not match its bound maps (mlir-opt-22 crashes when it
prints one) or with non-``index`` body arguments.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..affine_expr import (AffineConstantExpr, AffineExpr, AffineMap, AffineSymbolExpr,
                           IntegerSet, dim, symbol)
from ..affine_rules import get_affine_scope, is_valid_dim, is_valid_symbol, \
    verify_dim_and_symbol_identifiers
from ..attributes import (AffineMapAttr, ArrayAttr, DenseArrayAttr, DenseElementsAttr,
                          IntegerAttr, IntegerSetAttr, UnitAttr)
from ..diagnostics import Location, ParseError, VerifyError
from ..ir import Block, Operation, Region, Value, register_op
from ..types import (FloatType, FunctionType, IndexType, IntegerType, MemRefType, Type,
                     VectorType, i1, i64, index)

__all__ = [
    "AffineForOp", "AffineIfOp", "AffineYieldOp", "AffineLoadOp", "AffineStoreOp",
    "AffineVectorLoadOp", "AffineVectorStoreOp", "AffinePrefetchOp", "AffineApplyOp", "AffineMinOp", "AffineMaxOp",
    "AffineParallelOp", "AffineParallelDim", "AffineDelinearizeIndexOp", "AffineLinearizeIndexOp",
    "ATOMIC_RMW_KINDS",
]


# ---------------------------------------------------------------------------------------------
# parsing helpers (MLIR's OpAsmParser behaviour: operands are resolved against the type the op
# expects, with MLIR's message naming the value)


def _custom_error(op_name: str, message: str, loc: Location) -> ParseError:
    """An error raised by an op's custom parser: mlir-opt prefixes ``custom op 'NAME'``."""
    return ParseError(f"custom op '{op_name}' {message}", loc)


def _parse_use(p) -> tuple[str, int]:
    """``%name`` -> (name, offset of the ``%``), not yet resolved."""
    p.skip_ws()
    offset = p.pos
    name, _ = p.parse_ssa_name()
    return name, offset


def _resolve(p, name: str, offset: int, expected: Optional[Type]) -> Value:
    value = p._lookup(name, offset)
    if expected is not None and value.type != expected:
        raise p.error(f"use of value '%{name}' expects different type than prior uses: "
                      f"'{expected}' vs '{value.type}'", offset)
    return value


def _parse_dim_and_symbol_list(p) -> tuple[list[Value], int]:
    """``(%d0, %d1)[%s0]`` (parentheses required, brackets optional), resolved as ``index``."""
    dims = p.parse_comma_separated("(", ")", lambda: _parse_use(p))
    syms = p.parse_comma_separated("[", "]", lambda: _parse_use(p)) if p.peek("[") else []
    values = [_resolve(p, n, off, index) for n, off in dims + syms]
    return values, len(dims)


def _parse_map_ref(p) -> tuple[AffineMap, int]:
    p.skip_ws()
    start = p.pos
    return p.parse_affine_map_or_set_ref(want="map"), start


class _SsaIds:
    """The dimensions and symbols of one ``parseAffineMapOfSSAIds``/``parseAffineExprOfSSAIds``.

    Each SSA name becomes a dimension in order of first appearance, or a symbol when its first
    appearance is wrapped in ``symbol(...)``; later uses of the same name reuse that position.
    Operands are ``index`` values (checked where they are written).
    """

    def __init__(self, p):
        self.p = p
        self.seen: dict[str, AffineExpr] = {}
        self.dims: list[Value] = []
        self.syms: list[Value] = []

    def lookup(self, name: str, offset: int) -> Optional[AffineExpr]:
        p = self.p
        if name.startswith("symbol:"):
            key, is_symbol = name[len("symbol:"):], True
            offset = p.text.find("%", offset)
        elif name.startswith("%"):
            key, is_symbol = name[1:], False
        else:
            return None
        if key in self.seen:
            return self.seen[key]
        value = _resolve(p, key, offset, index)
        if is_symbol:
            expr = symbol(len(self.syms))
            self.syms.append(value)
        else:
            expr = dim(len(self.dims))
            self.dims.append(value)
        self.seen[key] = expr
        return expr

    def map(self, results: Sequence[AffineExpr]) -> tuple[AffineMap, list[Value]]:
        return AffineMap.get(len(self.dims), len(self.syms), tuple(results)), \
            self.dims + self.syms


def _parse_ssa_exprs(p, open_: str = "[", close: str = "]") -> tuple[AffineMap, list[Value]]:
    """``[%i + 1, %j * 2, symbol(%n)]`` (MLIR's ``parseAffineMapOfSSAIds``): the map over the
    names used (see :class:`_SsaIds`) and its operands, dimensions first."""
    ids = _SsaIds(p)
    results = p.parse_comma_separated(open_, close, lambda: p.parse_affine_expr(ids.lookup))
    return ids.map(results)


def _parse_subscripts(p) -> tuple[AffineMap, list[Value]]:
    """``[%i + 1, %j * 2, symbol(%n)]``: the subscripts of an affine memory access."""
    return _parse_ssa_exprs(p)


def _parse_typed_type(p, op_name: str, kind, kind_name: str, lead: str) -> Type:
    """``: memref<...>`` or ``, vector<...>``: a type that must be of ``kind`` (MLIR's ``invalid
    kind of type specified``, pointing at the ``:`` or at the type after the ``,``)."""
    p.skip_ws()
    start = p.pos
    p.expect(lead)
    if lead == ",":
        p.skip_ws()
        start = p.pos
    t = p.parse_type()
    if not isinstance(t, kind):
        raise _custom_error(op_name, f"invalid kind of type specified: expected {kind_name}, but "
                            f"found '{t}'", p.loc(start))
    return t


def _parse_optional_arrow_types(p) -> list[Type]:
    if p.optional("->"):
        return p.parse_result_types()
    return []


def _ensure_terminator(region: Region, loc) -> None:
    """MLIR's ``ensureTerminator``: an empty-operand ``affine.yield`` when the block lacks one."""
    if not region.blocks:
        region.add_block(Block())
    block = region.blocks[-1]
    if not block.ops or block.ops[-1].name != "affine.yield":
        block.append(AffineYieldOp.build(loc=loc))


def _print_arrow_types(p, types: Sequence[Type]) -> None:
    """MLIR's ``printOptionalArrowTypeList``."""
    if not types:
        return
    if len(types) == 1 and not isinstance(types[0], FunctionType):
        p.print(" -> " + p.type_str(types[0]))
    else:
        p.print(" -> (" + ", ".join(p.type_str(t) for t in types) + ")")


# ---------------------------------------------------------------------------------------------
# verification helpers


def _attr(op: Operation, name: str, kind, what: str):
    a = op.attributes.get(name)
    if a is None:
        raise op.error(f"requires attribute '{name}'")
    if not isinstance(a, kind):
        raise op.error(f"attribute '{name}' failed to satisfy constraint: {what}")
    return a.value


def _check_index_operands(op: Operation, first: int, count: int) -> None:
    """ODS ``Variadic<Index>``: ``operand #K must be variadic of index, but got 'T'``."""
    for k in range(first, first + count):
        t = op.operands[k].type
        if not isinstance(t, IndexType):
            raise op.error(f"operand #{k} must be variadic of index, but got '{t}'")


# ---------------------------------------------------------------------------------------------
# affine.yield


@register_op
class AffineYieldOp(Operation):
    """``affine.yield %a, %b : f64, index`` (printed only when it has operands)."""

    OP_NAME = "affine.yield"

    @classmethod
    def build(cls, operands: Sequence[Value] = (), loc=None) -> "AffineYieldOp":
        return cls(operands=list(operands), loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineYieldOp":
        attrs = p.parse_optional_attr_dict()
        uses = []
        if p.peek("%"):
            uses.append(_parse_use(p))
            while p.optional(","):
                uses.append(_parse_use(p))
        values = []
        if uses:
            p.expect(":")
            p.skip_ws()
            tstart = p.pos
            types = p.parse_type_list()
            if len(types) != len(uses):
                raise p.error(f"{len(uses)} operands present, but expected {len(types)}", tstart)
            values = [_resolve(p, n, off, t) for (n, off), t in zip(uses, types)]
        return cls(operands=values, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.yield")
        p.print_attr_dict(self.attributes)
        if self.operands:
            p.print(" ")
            p.print_operands(self.operands)
            p.print(" : ")
            p.print_types(v.type for v in self.operands)

    def verify_op(self) -> None:
        # the Terminator trait comes before AffineYieldOp::verify in MLIR
        if self.parent is not None and self.parent.ops[-1] is not self:
            raise self.error("must be the last operation in the parent block")
        parent = self.parent_op
        if parent is None or parent.name not in ("affine.for", "affine.if", "affine.parallel"):
            raise self.error("only terminates affine.if/for/parallel regions")
        if len(parent.results) != self.num_operands:
            raise self.error("parent of yield must have same number of results as the yield "
                             "operands")
        for r, v in zip(parent.results, self.operands):
            if r.type != v.type:
                raise self.error("types mismatch between yield op and its parent")


# ---------------------------------------------------------------------------------------------
# affine.for


def _parse_bound(p, loc, is_lower: bool) -> tuple[AffineMap, list[Value]]:
    """One ``affine.for`` bound (MLIR's ``parseBound``)."""
    op_name = "affine.for"
    prefix = "max" if is_lower else "min"
    has_prefix = p.optional_keyword(prefix)
    p.skip_ws()
    if p.peek("%"):
        name, off = _parse_use(p)
        if p.peek(",") and p.text[p.pos:p.pos + 40].lstrip(", \t\n").startswith("%"):
            raise _custom_error(op_name, "expected only one loop bound operand", loc)
        value = _resolve(p, name, off, index)
        return AffineMap.get(0, 1, (symbol(0),)), [value]
    attr_start = p.pos
    if p.peek("#") or p.peek_keyword("affine_map") or p.peek("("):
        amap = p.parse_affine_map_or_set_ref(want="map")
        operands, num_dims = _parse_dim_and_symbol_list(p)
        if amap.num_dims != num_dims:
            raise _custom_error(op_name, "dim operand count and affine map dim count must match",
                                loc)
        if num_dims + amap.num_symbols != len(operands):
            raise _custom_error(op_name, "symbol operand count and affine map symbol count must "
                                "match", loc)
        if amap.num_results > 1 and not has_prefix:
            which = "lower" if is_lower else "upper"
            raise _custom_error(op_name, f"{which} loop bound affine map with multiple results "
                                f"requires '{prefix}' prefix", p.loc(attr_start))
        return amap, operands
    if p.peek("-") or p.peek_char().isdigit():
        return AffineMap.constant_map(_parse_index_integer(p)), []
    p.parse_attribute()     # mlir-opt's "expected attribute value" when none is next
    raise _custom_error(op_name, "expected valid affine map representation for loop bounds",
                        loc)


_NUMBER = re.compile(r"0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*(?:[eE][-+]?[0-9]+)?)?")


def _parse_index_integer(p) -> int:
    """An integer attribute of type ``index`` where MLIR's custom parsers call
    ``parseAttribute`` (a loop bound, a step), with mlir-opt's messages for a float, a value
    out of the 64-bit range, or a ``-`` with no number after it."""
    p.skip_ws()
    start = p.pos
    neg = p.optional("-")
    p.skip_ws()
    m = _NUMBER.match(p.text, p.pos)
    if m is None:
        raise p.wrong_token("expected constant integer or floating point value" if neg
                            else "expected attribute value")
    p.pos = m.end()
    if "." in m.group(0):
        p.skip_ws()
        raise ParseError("floating point value not valid for specified type", p.loc())
    value = p._int_value(m.group(0), m.start())
    if value > (1 << 63) - 1 + (1 if neg else 0):
        raise ParseError("integer constant out of range for attribute", p.loc(start))
    return -value if neg else value


def _print_bound(p, amap: AffineMap, operands: Sequence[Value], prefix: str) -> None:
    """MLIR's ``printBound``: constants inline, a lone symbol as its operand, else the map."""
    if amap.num_results == 1:
        expr = amap.results[0]
        if amap.num_dims == 0 and amap.num_symbols == 0 and isinstance(expr, AffineConstantExpr):
            p.print(str(expr.value))
            return
        if amap.num_dims == 0 and amap.num_symbols == 1 and isinstance(expr, AffineSymbolExpr):
            p.print_operand(operands[0])
            return
    else:
        p.print(prefix + " ")
    p.print(p.alias(amap))
    p.print_dim_and_symbol_list(operands, amap.num_dims)


@register_op
class AffineForOp(Operation):
    """``affine.for %i = LB to UB [step S] [iter_args(%a = %init) -> (T)] { ... }``.

    Operands: lower-bound operands, upper-bound operands, then the loop-carried inits.  The body
    block's arguments are the induction variable followed by the region iter args.
    """

    OP_NAME = "affine.for"

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def build(cls, lb_map: AffineMap, lb_operands: Sequence[Value], ub_map: AffineMap,
              ub_operands: Sequence[Value], step: int = 1, inits: Sequence[Value] = (),
              loc=None) -> "AffineForOp":
        """A loop with an empty body (an ``affine.yield`` terminator unless there are inits:
        then the caller appends ``affine.yield`` with the next values)."""
        if len(lb_operands) != lb_map.num_inputs or len(ub_operands) != ub_map.num_inputs:
            raise ValueError("bound operand counts must match the bound maps' inputs")
        if step <= 0:
            raise ValueError(f"affine.for step must be positive, got {step}")
        inits = list(inits)
        attrs = {"lowerBoundMap": AffineMapAttr(lb_map), "upperBoundMap": AffineMapAttr(ub_map),
                 "step": IntegerAttr(int(step), index)}
        body = Block([index] + [v.type for v in inits])
        op = cls(operands=list(lb_operands) + list(ub_operands) + inits,
                 result_types=[v.type for v in inits], attributes=attrs,
                 regions=[Region([body])], loc=loc)
        if not inits:
            body.append(AffineYieldOp.build(loc=loc))
        return op

    @classmethod
    def build_constant(cls, lb: int, ub: int, step: int = 1, inits: Sequence[Value] = (),
                       loc=None) -> "AffineForOp":
        """``affine.for %i = lb to ub step step``."""
        return cls.build(AffineMap.constant_map(lb), [], AffineMap.constant_map(ub), [], step,
                         inits, loc)

    # -- accessors -----------------------------------------------------------------------------
    @property
    def lower_map(self) -> AffineMap:
        return self.attributes["lowerBoundMap"].value

    @property
    def upper_map(self) -> AffineMap:
        return self.attributes["upperBoundMap"].value

    @property
    def step(self) -> int:
        return self.attributes["step"].value

    @property
    def lower_operands(self) -> tuple[Value, ...]:
        return self.operands[:self.lower_map.num_inputs]

    @property
    def upper_operands(self) -> tuple[Value, ...]:
        n = self.lower_map.num_inputs
        return self.operands[n:n + self.upper_map.num_inputs]

    @property
    def inits(self) -> tuple[Value, ...]:
        return self.operands[self.lower_map.num_inputs + self.upper_map.num_inputs:]

    @property
    def num_iter_operands(self) -> int:
        return len(self.inits)

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def induction_var(self) -> Value:
        return self.body.args[0]

    @property
    def region_iter_args(self) -> list[Value]:
        return self.body.args[1:]

    @property
    def yield_op(self) -> "AffineYieldOp":
        return self.body.ops[-1]

    @property
    def has_constant_lower_bound(self) -> bool:
        return self.lower_map.is_single_constant()

    @property
    def has_constant_upper_bound(self) -> bool:
        return self.upper_map.is_single_constant()

    @property
    def has_constant_bounds(self) -> bool:
        return self.has_constant_lower_bound and self.has_constant_upper_bound

    @property
    def constant_lower_bound(self) -> int:
        return self.lower_map.single_constant_result

    @property
    def constant_upper_bound(self) -> int:
        return self.upper_map.single_constant_result

    @property
    def constant_trip_count(self) -> Optional[int]:
        """The number of iterations when both bounds are constants, else ``None``."""
        if not self.has_constant_bounds:
            return None
        span = self.constant_upper_bound - self.constant_lower_bound
        return max(0, -(-span // self.step))

    # -- mutation (keeps maps and operands consistent) -----------------------------------------
    def set_lower_bound(self, amap: AffineMap, operands: Sequence[Value]) -> None:
        if len(operands) != amap.num_inputs:
            raise ValueError("operand count must match the map's inputs")
        self.set_operands(list(operands) + list(self.upper_operands) + list(self.inits))
        self.attributes["lowerBoundMap"] = AffineMapAttr(amap)

    def set_upper_bound(self, amap: AffineMap, operands: Sequence[Value]) -> None:
        if len(operands) != amap.num_inputs:
            raise ValueError("operand count must match the map's inputs")
        self.set_operands(list(self.lower_operands) + list(operands) + list(self.inits))
        self.attributes["upperBoundMap"] = AffineMapAttr(amap)

    def set_step(self, step: int) -> None:
        if step <= 0:
            raise ValueError(f"affine.for step must be positive, got {step}")
        self.attributes["step"] = IntegerAttr(int(step), index)

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineForOp":
        iv_name, _ = _parse_use(p)
        p.expect("=")
        lb_map, lb_ops = _parse_bound(p, loc, True)
        if not p.optional_keyword("to"):
            raise _custom_error(cls.OP_NAME, "expected 'to' between bounds", p.loc())
        ub_map, ub_ops = _parse_bound(p, loc, False)
        step = 1
        if p.optional_keyword("step"):
            p.skip_ws()
            step_off = p.pos
            step = _parse_index_integer(p)
            if step < 0:
                raise _custom_error(cls.OP_NAME, "expected step to be representable as a positive "
                                    "signed integer", p.loc(step_off))
        arg_names: list[tuple[str, int]] = []
        init_uses: list[tuple[str, int]] = []
        result_types: list[Type] = []
        if p.optional_keyword("iter_args"):
            def assignment():
                arg_names.append(_parse_use(p))
                p.expect("=")
                init_uses.append(_parse_use(p))
            p.parse_comma_separated("(", ")", assignment)
            p.expect("->")
            result_types = p.parse_result_types()
        inits = [_resolve(p, n, off, t) for (n, off), t in zip(init_uses, result_types)]
        if len(arg_names) != len(result_types):
            raise _custom_error(cls.OP_NAME, "mismatch between the number of loop-carried values "
                                "and results", loc)
        body = Block([index] + result_types)
        entry = [(iv_name, body.args[0])]
        entry += [(n, a) for (n, _), a in zip(arg_names, body.args[1:])]
        region = p.parse_region(entry_args=entry)
        _ensure_terminator(region, loc)
        attrs = p.parse_optional_attr_dict()
        attrs.update({"lowerBoundMap": AffineMapAttr(lb_map),
                      "upperBoundMap": AffineMapAttr(ub_map), "step": IntegerAttr(step, index)})
        return cls(operands=lb_ops + ub_ops + inits, result_types=result_types, attributes=attrs,
                   regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions) -> "AffineForOp":
        attrs = dict(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        lb, ub = attrs.get("lowerBoundMap"), attrs.get("upperBoundMap")
        if isinstance(lb, AffineMapAttr) and isinstance(ub, AffineMapAttr):
            expected = (lb.value.num_inputs, ub.value.num_inputs, len(result_types))
            # a missing operandSegmentSizes counts as all zeros (as in mlir-opt)
            sizes = tuple(seg.values) if isinstance(seg, DenseArrayAttr) else (0, 0, 0)
            if sum(sizes) != len(operands):
                raise ParseError(f"'affine.for' op operand count ({len(operands)}) does not match "
                                 f"with the total size ({sum(sizes)}) specified in attribute "
                                 f"'operandSegmentSizes'", loc)
            if sizes != expected:
                raise ParseError(f"'affine.for' op operandSegmentSizes {list(sizes)} does not "
                                 f"match the bound maps and results {list(expected)}", loc)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def generic_attributes(self) -> dict:
        """The attributes as MLIR's generic form spells them (with ``operandSegmentSizes``)."""
        attrs = dict(self.attributes)
        try:
            sizes = (len(self.lower_operands), len(self.upper_operands), len(self.inits))
        except (KeyError, AttributeError):
            return attrs
        attrs["operandSegmentSizes"] = DenseArrayAttr(IntegerType(32), sizes)
        return dict(sorted(attrs.items()))

    def print_custom(self, p) -> None:
        p.print("affine.for ")
        p.print_operand(self.induction_var)
        p.print(" = ")
        _print_bound(p, self.lower_map, self.lower_operands, "max")
        p.print(" to ")
        _print_bound(p, self.upper_map, self.upper_operands, "min")
        if self.step != 1:
            p.print(f" step {self.step}")
        if self.inits:
            p.print(" iter_args(")
            p.print(", ".join(f"{p.value_name(a)} = {p.value_name(v)}"
                              for a, v in zip(self.region_iter_args, self.inits)))
            p.print(") -> (" + ", ".join(p.type_str(r.type) for r in self.results) + ")")
        p.print(" ")
        p.print_region(self.regions[0])
        p.print_attr_dict(self.attributes, elide=("lowerBoundMap", "upperBoundMap", "step",
                                                  "operandSegmentSizes"))

    def verify_op(self) -> None:
        lb = _attr(self, "lowerBoundMap", AffineMapAttr, "AffineMap attribute")
        ub = _attr(self, "upperBoundMap", AffineMapAttr, "AffineMap attribute")
        step_attr = self.attributes.get("step")
        if step_attr is None:
            raise self.error("requires attribute 'step'")
        if not isinstance(step_attr, IntegerAttr) or not isinstance(step_attr.type, IndexType):
            raise self.error("attribute 'step' failed to satisfy constraint: index attribute")
        n_bounds = lb.num_inputs + ub.num_inputs
        if self.num_operands != n_bounds + len(self.results):
            raise self.error(f"operand count ({self.num_operands}) does not match the bound maps' "
                             f"inputs and loop-carried values ({n_bounds + len(self.results)})")
        _check_index_operands(self, 0, n_bounds)
        if self.step <= 0:
            raise self.error("expected step to be representable as a positive signed integer")
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects a body region with one block")
        body = self.body
        if not body.args or not isinstance(body.args[0].type, IndexType):
            raise self.error("expected body to have a single index argument for the induction "
                             "variable")
        if lb.num_inputs:
            verify_dim_and_symbol_identifiers(self, self.lower_operands, lb.num_dims)
        if ub.num_inputs:
            verify_dim_and_symbol_identifiers(self, self.upper_operands, ub.num_dims)
        if lb.num_results < 1:
            raise self.error("expected lower bound map to have at least one result")
        if ub.num_results < 1:
            raise self.error("expected upper bound map to have at least one result")
        if len(body.args) - 1 != len(self.results):
            raise self.error("mismatch between the number of basic block args and results")
        for k, (init, arg, res) in enumerate(zip(self.inits, self.region_iter_args, self.results)):
            if not (init.type == arg.type == res.type):
                raise self.error(f"types of init #{k} ('{init.type}'), region iter_arg "
                                 f"('{arg.type}') and result ('{res.type}') must agree")


# ---------------------------------------------------------------------------------------------
# affine.if


@register_op
class AffineIfOp(Operation):
    """``affine.if #set(%d)[%s] [-> (T)] { ... } [else { ... }]``.

    The op always has two regions; the else region is empty (no block) when absent.
    """

    OP_NAME = "affine.if"

    @classmethod
    def build(cls, condition: IntegerSet, operands: Sequence[Value],
              result_types: Sequence[Type] = (), with_else: bool = False,
              loc=None) -> "AffineIfOp":
        """An ``affine.if`` with an empty then block (and else block when ``with_else``); the
        blocks get an empty ``affine.yield`` when the op has no results."""
        then_region = Region([Block()])
        else_region = Region([Block()]) if with_else else Region()
        op = cls(operands=list(operands), result_types=list(result_types),
                 attributes={"condition": IntegerSetAttr(condition)},
                 regions=[then_region, else_region], loc=loc)
        if not result_types:
            for r in op.regions:
                for b in r.blocks:
                    b.append(AffineYieldOp.build(loc=loc))
        return op

    @property
    def condition(self) -> IntegerSet:
        return self.attributes["condition"].value

    @property
    def cond_operands(self) -> tuple[Value, ...]:
        return self.operands

    @property
    def then_region(self) -> Region:
        return self.regions[0]

    @property
    def else_region(self) -> Region:
        return self.regions[1]

    @property
    def then_block(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def has_else(self) -> bool:
        """Whether the else region has a block (it may hold only the implicit yield)."""
        return not self.regions[1].empty

    @property
    def else_block(self) -> Optional[Block]:
        """The else block, ``None`` when the op has no else region."""
        return self.regions[1].blocks[0] if self.has_else else None

    def add_else_block(self) -> Block:
        """Create the else block (with an empty ``affine.yield`` if the op has no results)."""
        if self.has_else:
            return self.else_block
        block = self.regions[1].add_block(Block())
        if not self.results:
            block.append(AffineYieldOp.build(loc=self.loc))
        return block

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineIfOp":
        cond = p.parse_affine_map_or_set_ref(want="set")
        operands, num_dims = _parse_dim_and_symbol_list(p)
        if cond.num_dims != num_dims:
            raise _custom_error(cls.OP_NAME, "dim operand count and integer set dim count must "
                                "match", loc)
        if num_dims + cond.num_symbols != len(operands):
            raise _custom_error(cls.OP_NAME, "symbol operand count and integer set symbol count "
                                "must match", loc)
        result_types = _parse_optional_arrow_types(p)
        then_region = p.parse_region(allow_block_args=False)
        _ensure_terminator(then_region, loc)
        else_region = Region()
        if p.optional_keyword("else"):
            else_region = p.parse_region(allow_block_args=False)
            _ensure_terminator(else_region, loc)
        attrs = p.parse_optional_attr_dict()
        attrs["condition"] = IntegerSetAttr(cond)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=[then_region, else_region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions) -> "AffineIfOp":
        regions = list(regions)
        # the generic form writes an absent else as an empty region ``{ }``
        if len(regions) == 2 and len(regions[1].blocks) == 1 and not regions[1].blocks[0].ops \
                and not regions[1].blocks[0].args:
            regions[1] = Region()
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.if ")
        p.print(p.alias(self.condition))
        p.print_dim_and_symbol_list(self.operands, self.condition.num_dims)
        _print_arrow_types(p, self.result_types)
        p.print(" ")
        p.print_region(self.regions[0])
        if self.has_else:
            p.print(" else ")
            p.print_region(self.regions[1])
        p.print_attr_dict(self.attributes, elide=("condition",))

    def verify_op(self) -> None:
        cond = self.attributes.get("condition")
        if cond is None:
            raise self.error("requires attribute 'condition'")
        if not isinstance(cond, IntegerSetAttr):
            raise self.error("attribute 'condition' failed to satisfy constraint: IntegerSet "
                             "attribute")
        cond = cond.value
        if self.num_operands != cond.num_inputs:
            raise self.error("operand count and condition integer set dimension and symbol count "
                             "must match")
        verify_dim_and_symbol_identifiers(self, self.operands, cond.num_dims)
        if len(self.regions) != 2:
            raise self.error("expected 2 regions")
        if len(self.regions[0].blocks) != 1:
            raise self.error("region #0 ('thenRegion') failed to verify constraint: region with "
                             "1 blocks")
        if len(self.regions[1].blocks) > 1:
            raise self.error("region #1 ('elseRegion') failed to verify constraint: region with "
                             "at most 1 blocks")
        for k, r in enumerate(self.regions):
            if r.blocks and r.blocks[0].args:
                raise self.error(f"region #{k} should have no arguments")
        if self.results and not self.has_else:
            raise self.error(f"along control flow edge from parent to parent: region branch point "
                             f"has 0 operands, but region successor needs {len(self.results)} "
                             f"inputs")


# ---------------------------------------------------------------------------------------------
# affine.parallel

#: MLIR's ``arith::AtomicRMWKind``, in the order of its integer values (how ``reductions`` stores
#: them in the generic form).
ATOMIC_RMW_KINDS = ("addf", "addi", "andi", "assign", "maximumf", "maxnumf", "maxs", "maxu",
                    "minimumf", "minnumf", "mins", "minu", "mulf", "muli", "ori", "xori")
_FLOAT_REDUCTIONS = frozenset({"addf", "mulf", "maximumf", "minimumf"})
_INT_REDUCTIONS = frozenset({"addi", "muli", "ori", "andi"})


def reduction_matches(kind: str, t: Type) -> bool:
    """MLIR's ``isResultTypeMatchAtomicRMWKind``: may a result of type ``t`` be reduced with
    ``kind``?  ``maxs``/``mins``/``maxu``/``minu`` want signed/unsigned integer types (``si32``),
    which polyopt does not have; ``maxnumf``/``minnumf``/``xori`` are never accepted."""
    if kind == "assign":
        return True
    if kind in _FLOAT_REDUCTIONS:
        return isinstance(t, FloatType)
    if kind in _INT_REDUCTIONS:
        return isinstance(t, IntegerType)
    return False


def _parse_parallel_bound(p, keyword: str) -> tuple[AffineMap, list[Value], list[int]]:
    """``(%a, max(%b, 2), %n + 1)`` (MLIR's ``parseAffineMapWithMinMax``): one map with every
    expression, the size of each group, and the operands (dimensions, then symbols) shared by
    all groups, each value once."""
    entries: list[tuple[AffineExpr, list[Value], list[Value]]] = []
    groups: list[int] = []

    def group():
        if p.optional_keyword(keyword):
            amap, operands = _parse_ssa_exprs(p, "(", ")")
            nd = amap.num_dims
            entries.extend((e, operands[:nd], operands[nd:]) for e in amap.results)
            groups.append(amap.num_results)
        else:
            ids = _SsaIds(p)
            entries.append((p.parse_affine_expr(ids.lookup), ids.dims, ids.syms))
            groups.append(1)

    p.parse_comma_separated("(", ")", group)
    dims: list[Value] = []
    syms: list[Value] = []

    def position(values: list[Value], v: Value) -> int:
        for k, w in enumerate(values):
            if w is v:
                return k
        values.append(v)
        return len(values) - 1

    exprs = [e.replace([dim(position(dims, v)) for v in ds], [symbol(position(syms, v))
                                                               for v in ss])
             for e, ds, ss in entries]
    return AffineMap.get(len(dims), len(syms), tuple(exprs)), dims + syms, groups


def _group_slices(groups: Sequence[int]) -> list[tuple[int, int]]:
    out, start = [], 0
    for size in groups:
        out.append((start, size))
        start += size
    return out


def _print_parallel_bound(p, amap: AffineMap, groups: Sequence[int], operands: Sequence[Value],
                          keyword: str) -> None:
    """MLIR's ``printMinMaxBound``: a lone expression as is, a group as ``max(...)``."""
    dim_names = [p.value_name(v) for v in operands[:amap.num_dims]]
    sym_names = [f"symbol({p.value_name(v)})" for v in operands[amap.num_dims:]]
    parts = []
    for start, size in _group_slices(groups):
        texts = [e.to_str(dim_names, sym_names) for e in amap.results[start:start + size]]
        parts.append(texts[0] if size == 1 else f"{keyword}({', '.join(texts)})")
    p.print(", ".join(parts))


class AffineParallelDim:
    """Dimension ``index`` of an ``affine.parallel``, seen as the loop it runs sequentially
    (what the polyhedral model reads of an ``affine.for``: ``induction_var``, the bound maps
    and operands, ``step``, ``name`` and ``loc``).  A view: create one per dimension and use
    that object throughout an analysis (it compares by identity)."""

    name = "affine.parallel"

    def __init__(self, op: "AffineParallelOp", index: int):
        self.op = op
        self.index = index

    @property
    def loc(self):
        return self.op.loc

    @property
    def induction_var(self) -> Value:
        return self.op.ivs[self.index]

    @property
    def lower_map(self) -> AffineMap:
        return self.op.lower_bound_map(self.index)

    @property
    def upper_map(self) -> AffineMap:
        return self.op.upper_bound_map(self.index)

    @property
    def lower_operands(self) -> tuple[Value, ...]:
        return self.op.lower_operands

    @property
    def upper_operands(self) -> tuple[Value, ...]:
        return self.op.upper_operands

    @property
    def step(self) -> int:
        return self.op.steps[self.index]

    def __repr__(self) -> str:
        return f"<affine.parallel dim {self.index} at {self.op.loc}>"


@register_op
class AffineParallelOp(Operation):
    """``affine.parallel (%i, %j) = (0, max(%a, 2)) to (min(%n, 64), 10) step (2, 3)
    reduce ("addf") -> (f32) { ... affine.yield %v : f32 }``.

    A multi-dimensional loop whose iterations may run in any order (MLIR's ``AffineParallelOp``).
    Dimension ``k`` runs from the max of its lower-bound group to the min of its upper-bound
    group.  All lower-bound expressions share one map (``lowerBoundsMap``, split into groups by
    ``lowerBoundsGroups``) over the first operands, the upper bounds likewise over the rest.
    Each result combines the values yielded by every iteration with its reduction
    (``reductions``: :data:`ATOMIC_RMW_KINDS` by number), starting from the reduction's identity.

    Stricter than mlir-opt-22 (which accepts these and crashes or loops forever later): the
    operands must match the bound maps' inputs, the body arguments must be ``index`` and the
    steps positive.
    """

    OP_NAME = "affine.parallel"

    @classmethod
    def build(cls, lower_maps: Sequence[AffineMap], lower_operands: Sequence[Value],
              upper_maps: Sequence[AffineMap], upper_operands: Sequence[Value],
              steps: Optional[Sequence[int]] = None, reductions: Sequence[str] = (),
              result_types: Sequence[Type] = (), loc=None) -> "AffineParallelOp":
        """One dimension per lower map (each map with one result per group member; all lower
        maps over ``lower_operands``, all upper maps over ``upper_operands``).  The body is
        empty (an ``affine.yield`` unless there are results: the caller then appends one)."""
        n = len(lower_maps)
        steps = [1] * n if steps is None else list(steps)
        if len(upper_maps) != n or len(steps) != n:
            raise ValueError("one lower map, upper map and step per dimension")
        if len(reductions) != len(result_types):
            raise ValueError("one reduction per result")
        for maps, operands in ((lower_maps, lower_operands), (upper_maps, upper_operands)):
            if any(m.num_inputs != len(operands) for m in maps):
                raise ValueError("bound maps must have as many inputs as their operands")

        def concat(maps, operands):
            nd = maps[0].num_dims if maps else 0
            ns = len(operands) - nd
            exprs = tuple(e for m in maps for e in m.results)
            return (AffineMapAttr(AffineMap.get(nd, ns, exprs)),
                    DenseElementsAttr((n,), IntegerType(32), tuple(m.num_results for m in maps)))

        lb_map, lb_groups = concat(lower_maps, lower_operands)
        ub_map, ub_groups = concat(upper_maps, upper_operands)
        attrs = {"lowerBoundsMap": lb_map, "lowerBoundsGroups": lb_groups,
                 "upperBoundsMap": ub_map, "upperBoundsGroups": ub_groups,
                 "steps": ArrayAttr(tuple(IntegerAttr(int(s), i64) for s in steps)),
                 "reductions": ArrayAttr(tuple(IntegerAttr(ATOMIC_RMW_KINDS.index(r), i64)
                                               for r in reductions))}
        op = cls(operands=list(lower_operands) + list(upper_operands),
                 result_types=list(result_types), attributes=attrs,
                 regions=[Region([Block([index] * n)])], loc=loc)
        if not result_types:
            op.body.append(AffineYieldOp.build(loc=loc))
        return op

    # -- accessors -----------------------------------------------------------------------------
    @property
    def lower_map(self) -> AffineMap:
        return self.attributes["lowerBoundsMap"].value

    @property
    def upper_map(self) -> AffineMap:
        return self.attributes["upperBoundsMap"].value

    @property
    def lower_groups(self) -> tuple[int, ...]:
        return tuple(self.attributes["lowerBoundsGroups"].values)

    @property
    def upper_groups(self) -> tuple[int, ...]:
        return tuple(self.attributes["upperBoundsGroups"].values)

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(a.value for a in self.attributes["steps"].elements)

    @property
    def reductions(self) -> tuple[str, ...]:
        """The reduction of each result, by name (``"addf"``...)."""
        return tuple(ATOMIC_RMW_KINDS[a.value] for a in self.attributes["reductions"].elements)

    @property
    def num_dims(self) -> int:
        return len(self.steps)

    @property
    def lower_operands(self) -> tuple[Value, ...]:
        return self.operands[:self.lower_map.num_inputs]

    @property
    def upper_operands(self) -> tuple[Value, ...]:
        return self.operands[self.lower_map.num_inputs:]

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def ivs(self) -> list[Value]:
        return list(self.body.args)

    @property
    def yield_op(self) -> AffineYieldOp:
        return self.body.ops[-1]

    def _group_map(self, amap: AffineMap, groups: Sequence[int], k: int) -> AffineMap:
        start, size = _group_slices(groups)[k]
        return AffineMap.get(amap.num_dims, amap.num_symbols, amap.results[start:start + size])

    def lower_bound_map(self, k: int) -> AffineMap:
        """The lower bounds of dimension ``k`` (their max), over all of ``lower_operands``."""
        return self._group_map(self.lower_map, self.lower_groups, k)

    def upper_bound_map(self, k: int) -> AffineMap:
        """The upper bounds of dimension ``k`` (their min), over all of ``upper_operands``."""
        return self._group_map(self.upper_map, self.upper_groups, k)

    def dims(self) -> list[AffineParallelDim]:
        """A fresh :class:`AffineParallelDim` per dimension, outermost first."""
        return [AffineParallelDim(self, k) for k in range(self.num_dims)]

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineParallelOp":
        iv_names = p.parse_comma_separated("(", ")", lambda: _parse_use(p))
        p.expect("=")
        lb_map, lb_ops, lb_groups = _parse_parallel_bound(p, "max")
        p.expect_keyword("to")
        ub_map, ub_ops, ub_groups = _parse_parallel_bound(p, "min")
        steps = [1] * len(iv_names)
        if p.optional_keyword("step"):
            amap, _ = _parse_ssa_exprs(p, "(", ")")
            if not all(isinstance(e, AffineConstantExpr) for e in amap.results):
                raise _custom_error(cls.OP_NAME, "steps must be constant integers", loc)
            steps = [e.value for e in amap.results]
        reductions: list[int] = []
        if p.optional_keyword("reduce"):
            def reduction():
                p.skip_ws()
                at = p.pos
                kind = p.parse_string()
                if kind not in ATOMIC_RMW_KINDS:
                    raise _custom_error(cls.OP_NAME, f'invalid reduction value: "{kind}"',
                                        p.loc(at))
                reductions.append(ATOMIC_RMW_KINDS.index(kind))
            p.parse_comma_separated("(", ")", reduction, allow_empty=False)
        result_types = _parse_optional_arrow_types(p)
        body = Block([index] * len(iv_names))
        region = p.parse_region(entry_args=[(n, a) for (n, _), a in zip(iv_names, body.args)]) \
            if iv_names else p.parse_region()
        _ensure_terminator(region, loc)
        attrs = p.parse_optional_attr_dict()
        attrs.update({
            "lowerBoundsMap": AffineMapAttr(lb_map),
            "lowerBoundsGroups": DenseElementsAttr((len(lb_groups),), IntegerType(32),
                                                   tuple(lb_groups)),
            "upperBoundsMap": AffineMapAttr(ub_map),
            "upperBoundsGroups": DenseElementsAttr((len(ub_groups),), IntegerType(32),
                                                   tuple(ub_groups)),
            "steps": ArrayAttr(tuple(IntegerAttr(s, i64) for s in steps)),
            "reductions": ArrayAttr(tuple(IntegerAttr(r, i64) for r in reductions))})
        return cls(operands=lb_ops + ub_ops, result_types=result_types, attributes=attrs,
                   regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.parallel (" + ", ".join(p.value_name(a) for a in self.body.args)
                + ") = (")
        _print_parallel_bound(p, self.lower_map, self.lower_groups, self.lower_operands, "max")
        p.print(") to (")
        _print_parallel_bound(p, self.upper_map, self.upper_groups, self.upper_operands, "min")
        p.print(")")
        if any(s != 1 for s in self.steps):
            p.print(" step (" + ", ".join(str(s) for s in self.steps) + ")")
        if self.results:
            p.print(" reduce (" + ", ".join(f'"{r}"' for r in self.reductions) + ") -> ("
                    + ", ".join(p.type_str(r.type) for r in self.results) + ")")
        p.print(" ")
        p.print_region(self.regions[0])
        p.print_attr_dict(self.attributes, elide=("reductions", "lowerBoundsMap",
                                                  "lowerBoundsGroups", "upperBoundsMap",
                                                  "upperBoundsGroups", "steps"))

    # -- verification --------------------------------------------------------------------------
    def _verify_attributes(self) -> None:
        """The ODS constraints of the op's attributes."""
        red = self.attributes.get("reductions")
        if red is None:
            raise self.error("requires attribute 'reductions'")
        if not isinstance(red, ArrayAttr) or not all(
                isinstance(a, IntegerAttr) and a.type == i64 and 0 <= a.value < len(
                    ATOMIC_RMW_KINDS) for a in red.elements):
            raise self.error("attribute 'reductions' failed to satisfy constraint: Reduction ops")
        for which in ("lower", "upper"):
            _attr(self, f"{which}BoundsMap", AffineMapAttr, "AffineMap attribute")
            name = f"{which}BoundsGroups"
            groups = self.attributes.get(name)
            if groups is None:
                raise self.error(f"requires attribute '{name}'")
            if not isinstance(groups, DenseElementsAttr) or groups.element_type != IntegerType(32):
                raise self.error(f"attribute '{name}' failed to satisfy constraint: 32-bit "
                                 f"signless integer elements attribute")
        steps = self.attributes.get("steps")
        if steps is None:
            raise self.error("requires attribute 'steps'")
        if not isinstance(steps, ArrayAttr) or not all(
                isinstance(a, IntegerAttr) and a.type == i64 for a in steps.elements):
            raise self.error("attribute 'steps' failed to satisfy constraint: 64-bit integer "
                             "array attribute")

    def verify_op(self) -> None:
        self._verify_attributes()
        _check_index_operands(self, 0, self.num_operands)
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("region #0 ('region') failed to verify constraint: region with 1 "
                             "blocks")
        body = self.body
        # the body's terminator is a region rule (SingleBlockImplicitTerminator), checked by
        # the verifier after the ops in the body
        n = self.num_dims
        lgroups, ugroups = self.lower_groups, self.upper_groups
        if len(lgroups) != n or len(ugroups) != n or len(body.args) != n:
            raise self.error(f"the number of region arguments ({len(body.args)}) and the number "
                             f"of map groups for lower ({len(lgroups)}) and upper bound "
                             f"({len(ugroups)}), and the number of steps ({n}) must all match")
        for which, groups, amap in (("lower", lgroups, self.lower_map),
                                    ("upper", ugroups, self.upper_map)):
            if any(g <= 0 for g in groups):
                raise self.error(f"expected {which} bound map to have at least one result")
            if sum(groups) != amap.num_results:
                raise self.error(f"expected {which} bounds map to have {sum(groups)} results")
        if len(self.reductions) != len(self.results):
            raise self.error("a reduction must be specified for each output")
        for kind, r in zip(self.reductions, self.results):
            if not reduction_matches(kind, r.type):
                raise self.error("result type cannot match reduction attribute")
        # stricter than mlir-opt-22 (see the class docstring)
        n_inputs = self.lower_map.num_inputs + self.upper_map.num_inputs
        if self.num_operands != n_inputs:
            raise self.error(f"operand count ({self.num_operands}) does not match the inputs of "
                             f"the bound maps ({n_inputs})")
        for k, a in enumerate(body.args):
            if not isinstance(a.type, IndexType):
                raise self.error(f"region argument #{k} must be of 'index' type, got '{a.type}'")
        for k, s in enumerate(self.steps):
            if s <= 0:
                raise self.error(f"step #{k} must be positive, got {s}")
        verify_dim_and_symbol_identifiers(self, self.lower_operands, self.lower_map.num_dims)
        verify_dim_and_symbol_identifiers(self, self.upper_operands, self.upper_map.num_dims)


# ---------------------------------------------------------------------------------------------
# memory accesses


class _AffineMemOp(Operation):
    """Shared pieces of the affine loads and stores: ``memref``, ``map``, ``map_operands``."""

    MEMREF_INDEX = 0  # position of the memref operand
    IS_STORE = False
    IS_VECTOR = False
    HAS_VALUE = True  # False for a prefetch: neither a result nor a stored value

    @property
    def memref(self) -> Value:
        return self.operands[self.MEMREF_INDEX]

    @property
    def memref_type(self) -> MemRefType:
        return self.memref.type

    @property
    def map(self) -> AffineMap:
        return self.attributes["map"].value

    @property
    def map_operands(self) -> tuple[Value, ...]:
        return self.operands[self.MEMREF_INDEX + 1:]

    indices = map_operands

    def set_map(self, amap: AffineMap, operands: Sequence[Value]) -> None:
        """Replace the access map and its operands."""
        if len(operands) != amap.num_inputs:
            raise ValueError("operand count must match the map's inputs")
        self.set_operands(list(self.operands[:self.MEMREF_INDEX + 1]) + list(operands))
        self.attributes["map"] = AffineMapAttr(amap)

    @staticmethod
    def _access_map(memref: Value, map_operands: Sequence[Value], amap: Optional[AffineMap]):
        if amap is None:
            rank = memref.type.rank
            if len(map_operands) != rank:
                raise ValueError(f"{len(map_operands)} indices for a rank-{rank} memref")
            amap = AffineMap.identity(rank)
        return AffineMapAttr(amap)

    def _print_access(self, p) -> None:
        p.print_operand(self.memref)
        p.print_affine_map_of_ssa_ids(self.map, self.map_operands)
        p.print_attr_dict(self.attributes, elide=("map",))
        p.print(" : " + p.type_str(self.memref.type))

    def _verify_access(self) -> None:
        """ODS constraints, then MLIR's ``verifyMemoryOpIndexing``."""
        amap = _attr(self, "map", AffineMapAttr, "AffineMap attribute")
        if self.num_operands <= self.MEMREF_INDEX:
            raise self.error(f"expected at least {self.MEMREF_INDEX + 1} operands")
        if (self.IS_STORE or not self.HAS_VALUE) and self.results:
            raise self.error("requires zero results")
        if not self.IS_STORE and self.HAS_VALUE and len(self.results) != 1:
            raise self.error("requires one result")
        mt = self.memref.type
        if not isinstance(mt, MemRefType):
            raise self.error(f"operand #{self.MEMREF_INDEX} must be memref of any type values, "
                             f"but got '{mt}'")
        _check_index_operands(self, self.MEMREF_INDEX + 1, len(self.map_operands))
        if self.IS_STORE and not self.IS_VECTOR and self.operands[0].type != mt.element_type:
            raise self.error("value to store must have the same type as memref element type")
        if not self.IS_STORE and self.HAS_VALUE and not self.IS_VECTOR \
                and self.results[0].type != mt.element_type:
            raise self.error("result type must match element type of memref")
        if amap.num_results != mt.rank:
            raise self.error("affine map num results must equal memref rank")
        if amap.num_inputs != len(self.map_operands):
            raise self.error("expects as many subscripts as affine map inputs")
        verify_dim_and_symbol_identifiers(self, self.map_operands, amap.num_dims)


@register_op
class AffineLoadOp(_AffineMemOp):
    """``%v = affine.load %A[%i + 1, symbol(%n)] : memref<...>``."""

    OP_NAME = "affine.load"

    @classmethod
    def build(cls, memref: Value, map_operands: Sequence[Value] = (),
              map: Optional[AffineMap] = None, loc=None) -> "AffineLoadOp":
        """``map`` defaults to the identity (``map_operands`` are then the indices)."""
        attr = cls._access_map(memref, map_operands, map)
        return cls(operands=[memref, *map_operands], result_types=[memref.type.element_type],
                   attributes={"map": attr}, loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineLoadOp":
        mname, moff = _parse_use(p)
        amap, operands = _parse_subscripts(p)
        attrs = p.parse_optional_attr_dict()
        mt = _parse_typed_type(p, cls.OP_NAME, MemRefType, "builtin.memref", ":")
        memref = _resolve(p, mname, moff, mt)
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=[memref, *operands], result_types=[mt.element_type],
                   attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.load ")
        self._print_access(p)

    def verify_op(self) -> None:
        self._verify_access()


@register_op
class AffineStoreOp(_AffineMemOp):
    """``affine.store %v, %A[%i, %j] : memref<...>``."""

    OP_NAME = "affine.store"
    MEMREF_INDEX = 1
    IS_STORE = True

    @classmethod
    def build(cls, value: Value, memref: Value, map_operands: Sequence[Value] = (),
              map: Optional[AffineMap] = None, loc=None) -> "AffineStoreOp":
        attr = cls._access_map(memref, map_operands, map)
        return cls(operands=[value, memref, *map_operands], attributes={"map": attr}, loc=loc)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineStoreOp":
        vname, voff = _parse_use(p)
        p.expect(",")
        mname, moff = _parse_use(p)
        amap, operands = _parse_subscripts(p)
        attrs = p.parse_optional_attr_dict()
        mt = _parse_typed_type(p, cls.OP_NAME, MemRefType, "builtin.memref", ":")
        value = _resolve(p, vname, voff, mt.element_type)
        memref = _resolve(p, mname, moff, mt)
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=[value, memref, *operands], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.store ")
        p.print_operand(self.value)
        p.print(", ")
        self._print_access(p)

    def verify_op(self) -> None:
        self._verify_access()


@register_op
class AffineVectorLoadOp(_AffineMemOp):
    """``%v = affine.vector_load %A[%i, %j * 4] : memref<...xf64>, vector<4xf64>``."""

    OP_NAME = "affine.vector_load"
    IS_VECTOR = True

    @classmethod
    def build(cls, vector_type: VectorType, memref: Value, map_operands: Sequence[Value] = (),
              map: Optional[AffineMap] = None, loc=None) -> "AffineVectorLoadOp":
        attr = cls._access_map(memref, map_operands, map)
        return cls(operands=[memref, *map_operands], result_types=[vector_type],
                   attributes={"map": attr}, loc=loc)

    @property
    def vector_type(self) -> VectorType:
        return self.results[0].type

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineVectorLoadOp":
        mname, moff = _parse_use(p)
        amap, operands = _parse_subscripts(p)
        attrs = p.parse_optional_attr_dict()
        mt = _parse_typed_type(p, cls.OP_NAME, MemRefType, "builtin.memref", ":")
        vt = _parse_typed_type(p, cls.OP_NAME, VectorType, "builtin.vector", ",")
        memref = _resolve(p, mname, moff, mt)
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=[memref, *operands], result_types=[vt], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.vector_load ")
        self._print_access(p)
        p.print(", " + p.type_str(self.vector_type))

    def verify_op(self) -> None:
        vt = self.results[0].type if len(self.results) == 1 else None
        if not isinstance(vt, VectorType):
            raise self.error(f"result #0 must be vector of any type values, but got "
                             f"'{vt}'")
        self._verify_access()
        if self.memref.type.element_type != vt.element_type:
            raise self.error("requires memref and vector types of the same elemental type")


@register_op
class AffineVectorStoreOp(_AffineMemOp):
    """``affine.vector_store %v, %A[%i, %j * 4] : memref<...xf64>, vector<4xf64>``."""

    OP_NAME = "affine.vector_store"
    MEMREF_INDEX = 1
    IS_STORE = True
    IS_VECTOR = True

    @classmethod
    def build(cls, value: Value, memref: Value, map_operands: Sequence[Value] = (),
              map: Optional[AffineMap] = None, loc=None) -> "AffineVectorStoreOp":
        attr = cls._access_map(memref, map_operands, map)
        return cls(operands=[value, memref, *map_operands], attributes={"map": attr}, loc=loc)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def vector_type(self) -> VectorType:
        return self.operands[0].type

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineVectorStoreOp":
        vname, voff = _parse_use(p)
        p.expect(",")
        mname, moff = _parse_use(p)
        amap, operands = _parse_subscripts(p)
        attrs = p.parse_optional_attr_dict()
        mt = _parse_typed_type(p, cls.OP_NAME, MemRefType, "builtin.memref", ":")
        vt = _parse_typed_type(p, cls.OP_NAME, VectorType, "builtin.vector", ",")
        value = _resolve(p, vname, voff, vt)
        memref = _resolve(p, mname, moff, mt)
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=[value, memref, *operands], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.vector_store ")
        p.print_operand(self.value)
        p.print(", ")
        self._print_access(p)
        p.print(", " + p.type_str(self.vector_type))

    def verify_op(self) -> None:
        vt = self.operands[0].type if self.operands else None
        if not isinstance(vt, VectorType):
            raise self.error(f"operand #0 must be vector of any type values, but got '{vt}'")
        self._verify_access()
        if self.memref.type.element_type != vt.element_type:
            raise self.error("requires memref and vector types of the same elemental type")


@register_op
class AffinePrefetchOp(_AffineMemOp):
    """``affine.prefetch %A[%i, %j + 8], read, locality<3>, data : memref<...>``: a hint that the
    line holding the element will be read (or written) soon.  Prefetches never fault, so their
    subscripts may leave the memref (the bounds check ignores them)."""

    OP_NAME = "affine.prefetch"
    HAS_VALUE = False

    @classmethod
    def build(cls, memref: Value, map_operands: Sequence[Value] = (),
              map: Optional[AffineMap] = None, *, is_write: bool = False, locality: int = 3,
              is_data_cache: bool = True, loc=None) -> "AffinePrefetchOp":
        attrs = {"map": cls._access_map(memref, map_operands, map),
                 "isWrite": IntegerAttr(int(is_write), IntegerType(1)),
                 "localityHint": IntegerAttr(locality, IntegerType(32)),
                 "isDataCache": IntegerAttr(int(is_data_cache), IntegerType(1))}
        return cls(operands=[memref, *map_operands], attributes=attrs, loc=loc)

    @property
    def is_write(self) -> bool:
        return bool(self.attributes["isWrite"].value)

    @property
    def locality(self) -> int:
        return self.attributes["localityHint"].value

    @property
    def is_data_cache(self) -> bool:
        return bool(self.attributes["isDataCache"].value)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffinePrefetchOp":
        mname, moff = _parse_use(p)
        amap, operands = _parse_subscripts(p)
        p.expect(",")
        if p.optional_keyword("write"):
            is_write = True
        elif p.optional_keyword("read"):
            is_write = False
        else:
            raise _custom_error(cls.OP_NAME, "rw specifier has to be 'read' or 'write'", loc)
        p.expect(",")
        p.expect_keyword("locality")
        p.expect("<")
        locality = p.parse_integer("locality hint")
        p.expect(">")
        p.expect(",")
        if p.optional_keyword("data"):
            is_data = True
        elif p.optional_keyword("instr"):
            is_data = False
        else:
            raise _custom_error(cls.OP_NAME, "cache type has to be 'data' or 'instr'", loc)
        attrs = p.parse_optional_attr_dict()
        mt = _parse_typed_type(p, cls.OP_NAME, MemRefType, "builtin.memref", ":")
        memref = _resolve(p, mname, moff, mt)
        attrs.update({"map": AffineMapAttr(amap),
                      "isWrite": IntegerAttr(int(is_write), IntegerType(1)),
                      "localityHint": IntegerAttr(locality, IntegerType(32)),
                      "isDataCache": IntegerAttr(int(is_data), IntegerType(1))})
        return cls(operands=[memref, *operands], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.prefetch ")
        p.print_operand(self.memref)
        p.print_affine_map_of_ssa_ids(self.map, self.map_operands)
        p.print(", " + ("write" if self.is_write else "read"))
        p.print(f", locality<{self.locality}>, " + ("data" if self.is_data_cache else "instr"))
        p.print_attr_dict(self.attributes,
                          elide=("map", "isWrite", "localityHint", "isDataCache"))
        p.print(" : " + p.type_str(self.memref.type))

    def verify_op(self) -> None:
        for name in ("isWrite", "localityHint", "isDataCache"):
            _attr(self, name, IntegerAttr, "integer attribute")
        if not 0 <= self.locality <= 3:
            raise self.error("attribute 'localityHint' failed to satisfy constraint: 32-bit "
                             "signless integer attribute whose minimum value is 0 whose "
                             "maximum value is 3")
        self._verify_access()


# ---------------------------------------------------------------------------------------------
# affine.apply / affine.min / affine.max


class _MapOfOperandsOp(Operation):
    """``affine.apply #map(%d)[%s]``-shaped ops: one ``index`` result from a map."""

    @classmethod
    def build(cls, map: AffineMap, operands: Sequence[Value], loc=None):
        if len(operands) != map.num_inputs:
            raise ValueError(f"{cls.OP_NAME}: {len(operands)} operands for a map with "
                             f"{map.num_inputs} inputs")
        return cls(operands=list(operands), result_types=[index],
                   attributes={"map": AffineMapAttr(map)}, loc=loc)

    @property
    def map(self) -> AffineMap:
        return self.attributes["map"].value

    @property
    def map_operands(self) -> tuple[Value, ...]:
        return self.operands

    def set_map(self, amap: AffineMap, operands: Sequence[Value]) -> None:
        if len(operands) != amap.num_inputs:
            raise ValueError("operand count must match the map's inputs")
        self.set_operands(list(operands))
        self.attributes["map"] = AffineMapAttr(amap)

    def print_custom(self, p) -> None:
        p.print(f"{self.name} {p.alias(self.map)}")
        p.print_dim_and_symbol_list(self.operands, self.map.num_dims)
        p.print_attr_dict(self.attributes, elide=("map",))

    def _verify_common(self) -> AffineMap:
        amap = _attr(self, "map", AffineMapAttr, "AffineMap attribute")
        _check_index_operands(self, 0, self.num_operands)
        if len(self.results) != 1:
            raise self.error("requires one result")
        if not isinstance(self.results[0].type, IndexType):
            raise self.error(f"result #0 must be index, but got '{self.results[0].type}'")
        if self.num_operands != amap.num_inputs:
            raise self.error("operand count and affine map dimension and symbol count must match")
        return amap


@register_op
class AffineApplyOp(_MapOfOperandsOp):
    """``%r = affine.apply #map(%i)[%n]`` (single-result map)."""

    OP_NAME = "affine.apply"

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineApplyOp":
        amap = p.parse_affine_map_or_set_ref(want="map")
        operands, num_dims = _parse_dim_and_symbol_list(p)
        attrs = p.parse_optional_attr_dict()
        if amap.num_dims != num_dims or num_dims + amap.num_symbols != len(operands):
            raise _custom_error(cls.OP_NAME, "dimension or symbol index mismatch", loc)
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=operands, result_types=[index] * amap.num_results, attributes=attrs,
                   loc=loc)

    def verify_op(self) -> None:
        amap = self._verify_common()
        if amap.num_results != 1:
            raise self.error("mapping must produce one value")
        # valid dims may not be used as symbols (operands that are neither are allowed: the
        # result is then simply not a valid affine value itself)
        region = get_affine_scope(self)
        for v in self.operands[amap.num_dims:]:
            if is_valid_dim(v, region) and not is_valid_symbol(v, region):
                raise VerifyError("dimensional operand cannot be used as a symbol", self.loc)


class _MinMaxOp(_MapOfOperandsOp):
    @classmethod
    def parse_custom(cls, p, loc, name):
        amap = p.parse_affine_map_or_set_ref(want="map")
        operands, _ = _parse_dim_and_symbol_list(p)
        attrs = p.parse_optional_attr_dict()
        attrs["map"] = AffineMapAttr(amap)
        return cls(operands=operands, result_types=[index], attributes=attrs, loc=loc)

    def verify_op(self) -> None:
        amap = self._verify_common()
        if amap.num_results == 0:
            raise self.error("affine map expect at least one result")


@register_op
class AffineMinOp(_MinMaxOp):
    """``%r = affine.min #map(%i)[%n]``: the smallest of the map's results."""

    OP_NAME = "affine.min"


@register_op
class AffineMaxOp(_MinMaxOp):
    """``%r = affine.max #map(%i)[%n]``: the largest of the map's results."""

    OP_NAME = "affine.max"


# ---------------------------------------------------------------------------------------------
# affine.delinearize_index / affine.linearize_index

#: ``ShapedType::kDynamic``: a basis entry given by an operand in ``static_basis``.
DYNAMIC = -(1 << 63)


def _parse_dynamic_index_list(p, op_name: str) -> tuple[list[int], list[Value]]:
    """``(%n, 4, 3)`` (MLIR's ``parseDynamicIndexList``): the static basis with
    :data:`DYNAMIC` for each operand, and those operands (``index``)."""
    static: list[int] = []
    dynamic: list[Value] = []
    if not p.optional("("):
        raise p.error("expected '(' in dynamic index list", _after_previous_token(p))
    if p.optional(")"):
        return static, dynamic
    while True:
        p.skip_ws()
        if p.peek("%"):
            dynamic.append(p.parse_operand(index))
            static.append(DYNAMIC)
        else:
            value = p.parse_integer("integer or SSA value in dynamic index list", op_name)
            static.append(value)
        if p.optional(")"):
            return static, dynamic
        if not p.optional(","):
            raise p.error("expected ')' in dynamic index list", _after_previous_token(p))


def _expect_keyword(p, op_name: str, keyword: str) -> None:
    p.skip_ws()
    at = p.pos
    if not p.optional_keyword(keyword):
        raise _custom_error(op_name, f"expected '{keyword}'", p.loc(at))


def _after_previous_token(p) -> int:
    """Where MLIR reports a wrong token: just after the previous one (``emitWrongTokenError``)."""
    p.skip_ws()
    at = p.pos
    while at > 0 and p.text[at - 1].isspace():
        at -= 1
    return at


def _check_parsed_basis(op_name: str, static: Sequence[int], dynamic: Sequence[Value],
                        loc) -> None:
    """A literal ``-9223372036854775808`` is the dynamic marker, with no operand for it."""
    if sum(1 for s in static if s == DYNAMIC) != len(dynamic):
        raise VerifyError(f"'{op_name}' op {_BASIS_MISMATCH}", loc)


def _print_dynamic_index_list(p, static: Sequence[int], dynamic: Sequence[Value]) -> None:
    it = iter(dynamic)
    p.print("(" + ", ".join(p.value_name(next(it)) if s == DYNAMIC else str(s)
                            for s in static) + ")")


def _static_basis(op: Operation) -> tuple[int, ...]:
    """The ``static_basis`` attribute, checked (ODS: an i64 dense array)."""
    a = op.attributes.get("static_basis")
    if a is None:
        raise op.error("requires attribute 'static_basis'")
    if not isinstance(a, DenseArrayAttr) or a.element_type != i64:
        raise op.error("attribute 'static_basis' failed to satisfy constraint: i64 dense array "
                       "attribute")
    return tuple(a.values)


_BASIS_MISMATCH = ("mismatch between dynamic and static basis (kDynamic marker but no "
                   "corresponding dynamic basis entry) -- this can only happen due to an "
                   "incorrect fold/rewrite")


def _check_dynamic_basis(op: Operation, static: Sequence[int], dynamic: Sequence[Value]) -> None:
    if sum(1 for s in static if s == DYNAMIC) != len(dynamic):
        raise op.error(_BASIS_MISMATCH)


class _BasisOp(Operation):
    """What the two index ops share: a basis of static sizes and ``index`` operands."""

    DYNAMIC_FIRST = 0   # position of the first dynamic basis operand

    @property
    def static_basis(self) -> tuple[int, ...]:
        return tuple(self.attributes["static_basis"].values)

    @property
    def dynamic_basis(self) -> tuple[Value, ...]:
        n = sum(1 for s in self.static_basis if s == DYNAMIC)
        return self.operands[len(self.operands) - n:] if n else ()

    def basis(self) -> list:
        """The basis, outermost first: an ``int`` for a static entry, the ``Value`` otherwise."""
        it = iter(self.dynamic_basis)
        return [next(it) if s == DYNAMIC else s for s in self.static_basis]


@register_op
class AffineDelinearizeIndexOp(_BasisOp):
    """``%q:3 = affine.delinearize_index %x into (%n, 4, 3) : index, index, index``.

    The coordinates of the linear index ``%x`` in a row-major space of the given basis: with
    as many results as basis entries, the first entry is an outer bound that does not take
    part in the computation (``%q#0 = %x floordiv 12``); with one more result, the first result
    is unbounded (``into (4, 3) : index, index, index``: ``%x floordiv 12``, then
    ``(%x mod 12) floordiv 3``, ``%x mod 3``).  Basis entries must be positive.
    """

    OP_NAME = "affine.delinearize_index"

    @classmethod
    def build(cls, linear_index: Value, basis: Sequence, num_results: Optional[int] = None,
              loc=None) -> "AffineDelinearizeIndexOp":
        """``basis``: ints and ``index`` values; ``num_results`` defaults to ``len(basis)``."""
        static = [DYNAMIC if isinstance(b, Value) else int(b) for b in basis]
        dynamic = [b for b in basis if isinstance(b, Value)]
        n = len(basis) if num_results is None else num_results
        return cls(operands=[linear_index, *dynamic], result_types=[index] * n,
                   attributes={"static_basis": DenseArrayAttr(i64, tuple(static))}, loc=loc)

    @property
    def linear_index(self) -> Value:
        return self.operands[0]

    @property
    def has_outer_bound(self) -> bool:
        """Does the first basis entry bound the first result (as many results as entries)?"""
        return len(self.results) == len(self.static_basis)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineDelinearizeIndexOp":
        x = p.parse_operand(index)
        _expect_keyword(p, cls.OP_NAME, "into")
        static, dynamic = _parse_dynamic_index_list(p, cls.OP_NAME)
        _check_parsed_basis(cls.OP_NAME, static, dynamic, loc)
        attrs = {"static_basis": DenseArrayAttr(i64, tuple(static))}
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        types = p.parse_type_list()
        return cls(operands=[x, *dynamic], result_types=types, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("affine.delinearize_index ")
        p.print_operand(self.linear_index)
        p.print(" into ")
        _print_dynamic_index_list(p, self.static_basis, self.dynamic_basis)
        p.print_attr_dict(self.attributes, elide=("static_basis",))
        p.print(" : ")
        p.print_types(r.type for r in self.results)

    def verify_op(self) -> None:
        static = _static_basis(self)
        if not self.operands:
            raise self.error("expected 1 or more operands, but found 0")
        if not isinstance(self.operands[0].type, IndexType):
            raise self.error(f"operand #0 must be index, but got '{self.operands[0].type}'")
        _check_index_operands(self, 1, self.num_operands - 1)
        for k, r in enumerate(self.results):
            if not isinstance(r.type, IndexType):
                raise self.error(f"result #{k} must be variadic of index, but got '{r.type}'")
        if len(self.results) not in (len(static), len(static) + 1):
            raise self.error("should return an index for each basis element and up to one "
                             "extra index")
        _check_dynamic_basis(self, static, self.operands[1:])
        if any(s != DYNAMIC and s <= 0 for s in static):
            raise self.error("no basis element may be statically non-positive")


@register_op
class AffineLinearizeIndexOp(_BasisOp):
    """``%l = affine.linearize_index [%i, %j, %k] by (%n, 4, 3) : index``: the linear index of
    coordinates in a row-major space, ``%i * 12 + %j * 3 + %k`` (the inverse of
    ``affine.delinearize_index``).  The basis has an entry per index, or one fewer (the outer
    bound, which does not take part in the computation, left out).  ``disjoint`` asserts that
    each index is within its bound (a hint; it changes nothing here).

    Operands: the indices, then the dynamic basis entries; ``operandSegmentSizes`` is not kept
    (it follows from ``static_basis``) and is recomputed for the generic form.
    """

    OP_NAME = "affine.linearize_index"

    @classmethod
    def build(cls, indices: Sequence[Value], basis: Sequence, disjoint: bool = False,
              loc=None) -> "AffineLinearizeIndexOp":
        static = [DYNAMIC if isinstance(b, Value) else int(b) for b in basis]
        dynamic = [b for b in basis if isinstance(b, Value)]
        attrs = {"static_basis": DenseArrayAttr(i64, tuple(static))}
        if disjoint:
            attrs["disjoint"] = UnitAttr()
        return cls(operands=[*indices, *dynamic], result_types=[index], attributes=attrs,
                   loc=loc)

    @property
    def disjoint(self) -> bool:
        return "disjoint" in self.attributes

    @property
    def multi_index(self) -> tuple[Value, ...]:
        return self.operands[:len(self.operands) - len(self.dynamic_basis)]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "AffineLinearizeIndexOp":
        disjoint = p.optional_keyword("disjoint")
        indices = p.parse_comma_separated("[", "]", lambda: p.parse_operand(index))
        _expect_keyword(p, cls.OP_NAME, "by")
        static, dynamic = _parse_dynamic_index_list(p, cls.OP_NAME)
        _check_parsed_basis(cls.OP_NAME, static, dynamic, loc)
        attrs = {"static_basis": DenseArrayAttr(i64, tuple(static))}
        if disjoint:
            attrs["disjoint"] = UnitAttr()
        attrs.update(p.parse_optional_attr_dict())
        p.expect(":")
        p.skip_ws()
        at = p.pos
        t = p.parse_type()
        if not isinstance(t, IndexType):
            raise _custom_error(cls.OP_NAME, f"invalid kind of type specified: expected "
                                f"builtin.index, but found '{t}'", p.loc(at))
        return cls(operands=[*indices, *dynamic], result_types=[index], attributes=attrs,
                   loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        attrs = dict(attrs)
        seg = attrs.pop("operandSegmentSizes", None)
        sizes = tuple(seg.values) if isinstance(seg, DenseArrayAttr) else ()
        if any(s < 0 for s in sizes):
            raise ParseError(f"'{cls.OP_NAME}' op 'operandSegmentSizes' attribute cannot have "
                             f"negative elements", loc)
        if len(sizes) != 2 or sum(sizes) != len(operands):
            total = sum(sizes) if len(sizes) == 2 else 0
            raise ParseError(f"'{cls.OP_NAME}' op operand count ({len(operands)}) does not match "
                             f"with the total size ({total}) specified in attribute "
                             f"'operandSegmentSizes'", loc)
        basis = attrs.get("static_basis")
        if isinstance(basis, DenseArrayAttr) and \
                sum(1 for s in basis.values if s == DYNAMIC) != sizes[1]:
            raise ParseError(f"'{cls.OP_NAME}' op {_BASIS_MISMATCH}", loc)
        # the property is a unit: ``disjoint`` or ``disjoint = true``; false is its absence
        flag = attrs.pop("disjoint", None)
        if isinstance(flag, UnitAttr) or isinstance(flag, IntegerAttr) and flag.type == i1 \
                and flag.value:
            attrs["disjoint"] = UnitAttr()
        elif flag is not None and not (isinstance(flag, IntegerAttr) and flag.type == i1):
            raise ParseError(f"invalid properties for op {cls.OP_NAME}: 'disjoint' must be a "
                             f"unit or boolean attribute, got {flag}", loc)
        return cls(operands=operands, result_types=result_types, attributes=attrs,
                   regions=regions, loc=loc)

    def generic_properties(self) -> dict:
        """What MLIR's generic form writes in ``<{...}>``: the properties (``disjoint`` must be
        there: in the attribute dictionary mlir-opt would keep it as a discardable attribute)."""
        props = {"operandSegmentSizes": DenseArrayAttr(
                     IntegerType(32), (len(self.multi_index), len(self.dynamic_basis))),
                 "static_basis": self.attributes["static_basis"]}
        if self.disjoint:
            props["disjoint"] = UnitAttr()
        return props

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k not in ("static_basis", "disjoint")}

    def print_custom(self, p) -> None:
        p.print("affine.linearize_index ")
        if self.disjoint:
            p.print("disjoint ")
        p.print("[")
        p.print_operands(self.multi_index)
        p.print("] by ")
        _print_dynamic_index_list(p, self.static_basis, self.dynamic_basis)
        p.print_attr_dict(self.attributes, elide=("static_basis", "disjoint"))
        p.print(" : index")

    def verify_op(self) -> None:
        static = _static_basis(self)
        _check_index_operands(self, 0, self.num_operands)
        if len(self.results) != 1 or not isinstance(self.results[0].type, IndexType):
            got = self.results[0].type if len(self.results) == 1 else "no result"
            raise self.error(f"result #0 must be index, but got '{got}'")
        n_indices = len(self.multi_index)
        if n_indices not in (len(static), len(static) + 1):
            raise self.error("should be passed a basis element for each index except possibly "
                             "the first")
