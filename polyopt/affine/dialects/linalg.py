"""The linalg dialect on memrefs: the structured-op interface, ``linalg.yield`` and
``linalg.index``, and the syntax and payload helpers the ops share.

Every linalg op here is a *structured op* (MLIR's ``LinalgOp`` interface,
:class:`LinalgStructuredOp`): inputs and outputs (``ins(...)``/``outs(...)``, destination
style), one indexing map per operand over the op's loops, an iterator type per loop
(``parallel`` or ``reduction``; MLIR 22 has no ``window`` any more), and a payload computing
the new output elements from one element of each operand.  The ops live in three modules and
are re-exported here:

* :mod:`~polyopt.affine.dialects.linalg_generic`, payload written as a region::

    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
        ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>) {
    ^bb0(%in: f64, %out: f64):
      %0 = arith.addf %in, %out : f64
      linalg.yield %0 : f64
    }
    linalg.map { arith.addf } ins(%A, %B : memref<5x7xf64>, memref<5x7xf64>)
        outs(%C : memref<5x7xf64>)
    linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>)
        dimensions = [1]

* :mod:`~polyopt.affine.dialects.linalg_data`: ``linalg.transpose ... permutation = [1, 0]``,
  ``linalg.copy``, ``linalg.fill``;
* :mod:`~polyopt.affine.dialects.linalg_named`: ``linalg.matmul`` (with ``indexing_maps`` and
  ``cast``), ``linalg.batch_matmul``, ``linalg.matvec``, ``linalg.vecmat``, ``linalg.dot`` and
  the convolutions.

Syntax, verification messages and printing are mlir-opt-22's (checked against it by
``tests/affine/test_linalg_*.py``).  Named ops carry no region: their payload is implied
by the op (:meth:`LinalgStructuredOp.build_payload`); MLIR's generic form, which spells
it out, parses into the same op when the region is the op's own body.  ``linalg.generic``,
``linalg.map`` and ``linalg.reduce`` keep their region.  Tensors are not supported.  MLIR 22
has no ``linalg.matmul_transpose_a``/``_b`` any more: they are ``linalg.matmul`` with
``indexing_maps``.  The 2020 forms of the paper parse too:
``linalg.fill(%A, %cf1) : memref<..>, f64`` (output first) and
``linalg.matmul(%A, %B, %C) : memref<..>, memref<..>, memref<..>``.

:mod:`polyopt.affine.linalg_to_affine` lowers every structured op to affine loops.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from ..affine_expr import AffineDimExpr, AffineMap
from ..attributes import AffineMapAttr, ArrayAttr, DenseArrayAttr, IntegerAttr, OpaqueAttr
from ..diagnostics import ParseError
from ..ir import OP_REGISTRY, Block, Operation, Region, Value, register_op
from ..types import (FloatType, IndexType, IntegerType, MemRefType, Type, UnrankedMemRefType,
                     i64, index)

TENSOR_MESSAGE = "linalg ops on tensors are not supported; use memrefs"
_TENSOR_TYPE = re.compile(r"\btensor\s*<")
_DENSE_BEFORE = re.compile(r"\bdense\s*<[^<>]*>\s*:\s*$")

ITERATOR_TYPES = ("parallel", "reduction")
_ITERATOR_ATTR = re.compile(r"#linalg\.iterator_type<\s*(\w+)\s*>")
CAST_ATTRS = ("#linalg.type_fn<cast_signed>", "#linalg.type_fn<cast_unsigned>")


# ---------------------------------------------------------------------------------------------
# syntax helpers (MLIR's parseCommonStructuredOpParts / printCommonStructuredOpParts)


def _custom_error(p, name: str, message: str, offset: Optional[int] = None) -> ParseError:
    return p.error(f"custom op '{name}' {message}", offset)


def _parse_type_no_tensor(p) -> Type:
    p.skip_ws()
    if p.peek_keyword("tensor"):
        raise p.error(TENSOR_MESSAGE)
    return p.parse_type()


def _parse_operands_and_types(p) -> list[Value]:
    """``(%a, %b : t1, t2)`` after ``ins``/``outs``; types are checked against the operands."""
    p.expect("(")
    p.skip_ws()
    start = p.pos
    values = p.parse_operand_list()
    types: list[Type] = []
    if values:
        p.expect(":")
        types = [_parse_type_no_tensor(p)]
        while p.optional(","):
            types.append(_parse_type_no_tensor(p))
    p.expect(")")
    if len(types) != len(values):
        raise p.error(f"{len(values)} operands present, but expected {len(types)}", start)
    for v, t in zip(values, types):
        p.check_type(v, t, start)
    return values


def _reject_tensors(p) -> None:
    """Tensor-typed linalg ops get one clear message, before their operands are looked up
    (the tensor types of ``dense<...> : tensor<2xi64>`` attributes are fine)."""
    p.skip_ws()
    end = p.text.find("\n", p.pos)
    for m in _TENSOR_TYPE.finditer(p.text, p.pos, len(p.text) if end < 0 else end):
        if not _DENSE_BEFORE.search(p.text, p.pos, m.start()):
            raise p.error(TENSOR_MESSAGE, m.start())


def _merge_attrs(p, attrs: dict, more: dict, name: str, offset: int) -> None:
    for k, v in more.items():
        if k in attrs:
            raise _custom_error(p, name, f"attribute '{k}' occurs more than once in the "
                                "attribute list", offset)
        attrs[k] = v


def _parse_ins_outs(p, name: str, attrs: dict) -> tuple[list[Value], list[Value]]:
    """``[{attrs}] [ins(...)] [outs(...)]``; the attribute dictionary goes to ``attrs``."""
    p.skip_ws()
    _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
    ins: list[Value] = []
    outs: list[Value] = []
    if p.optional_keyword("ins"):
        ins = _parse_operands_and_types(p)
    if p.optional_keyword("outs"):
        outs = _parse_operands_and_types(p)
    return ins, outs


def _reject_tensor_results(p) -> None:
    if p.peek("->"):
        raise p.error(TENSOR_MESSAGE)


def _print_ins_outs(p, ins: Sequence[Value], outs: Sequence[Value]) -> None:
    if ins:
        p.print(" ins(")
        p.print_operands(ins)
        p.print(" : ")
        p.print_types(v.type for v in ins)
        p.print(")")
    if outs:
        p.print(" outs(")
        p.print_operands(outs)
        p.print(" : ")
        p.print_types(v.type for v in outs)
        p.print(")")


def _parse_legacy(p, count: int) -> list[Value]:
    """2020 ``(%a, %b) : t1, t2``."""
    _reject_tensors(p)
    p.skip_ws()
    start = p.pos
    values = p.parse_operand_list("paren")
    p.parse_optional_attr_dict()
    p.expect(":")
    types = [_parse_type_no_tensor(p)]
    while p.optional(","):
        types.append(_parse_type_no_tensor(p))
    if len(values) != count or len(types) != count:
        raise p.error(f"expected {count} operands and {count} types, got {len(values)} and "
                      f"{len(types)}", start)
    for v, t in zip(values, types):
        p.check_type(v, t, start)
    return values


def _parse_i64_list_keyword(p, name: str, keyword: str) -> DenseArrayAttr:
    """``keyword = [1, 0]`` (MLIR's parseDenseI64ArrayAttr)."""
    if not p.optional_keyword(keyword):
        raise _custom_error(p, name, f"expected '{keyword}'")
    p.expect("=")
    values = p.parse_comma_separated("[", "]", lambda: p.parse_integer())
    return DenseArrayAttr(i64, tuple(values))


def _print_i64_list_keyword(p, keyword: str, attr) -> None:
    """MLIR's printDenseI64ArrayAttr: `` keyword = [1, 0] `` (with the trailing space)."""
    values = attr.values if isinstance(attr, DenseArrayAttr) else ()
    p.print(f" {keyword} = [" + ", ".join(str(v) for v in values) + "] ")


def _parse_region_arguments(p) -> list[tuple[str, Value]]:
    """``(%a: f64, %b: f64)`` before a map/reduce region: named block arguments."""
    block = Block()
    named: list[tuple[str, Value]] = []

    def one():
        p.skip_ws()
        start = p.pos
        name, _ = p.parse_ssa_name()
        p.expect(":")
        t = p.parse_type()
        if any(n == name for n, _ in named):
            raise p.error(f"redefinition of SSA value '%{name}'", start)
        named.append((name, block.add_arg(t)))
    p.parse_comma_separated("(", ")", one)
    return named


def _parse_long_form_region(p) -> Region:
    args = _parse_region_arguments(p)
    if args:
        return p.parse_region(entry_args=args)
    return p.parse_region(allow_block_args=False)


def _print_long_form_region(p, region: Region) -> None:
    """``\\n  (%in: f64, %init: f64) { ... }`` one level deeper (MapOp/ReduceOp::print)."""
    block = region.blocks[0]
    p.indent += 1
    p.newline()
    p.print("(" + ", ".join(f"{p.value_name(a)}: {p.type_str(a.type)}" for a in block.args)
            + ") ")
    p.print_region(region)
    p.indent -= 1


def _parse_payload_op_name(p, name: str) -> Optional[tuple[str, dict, int]]:
    """``{ arith.addf [{attrs}] }`` of the short map/reduce form, when present."""
    if not p.peek("{"):
        return None
    p.expect("{")
    p.skip_ws()
    start = p.pos
    m = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z0-9_$.]+").match(p.text, p.pos)
    if not m:
        raise _custom_error(p, name, f"expected operation name, found {p._describe_next()}")
    p.pos = m.end()
    attrs = p.parse_optional_attr_dict()
    p.expect("}")
    return m.group(0), attrs, start


def _short_form_region(p, name: str, payload: tuple[str, dict, int], operands: Sequence[Value],
                       init_first: bool, map_init: bool, loc) -> Region:
    """MLIR's addBodyWithPayloadOp: a block argument per operand, the payload op over them
    (init first for reduce; without the init for map), yielding its one result."""
    op_name, op_attrs, _ = payload
    block = Block([_element_type(v.type) for v in operands])
    args = list(block.args)
    if init_first:
        payload_operands = ([args[-1]] if map_init else []) + args[:-1]
    else:
        payload_operands = args if map_init else args[:-1]
    result_type = _element_type(operands[-1].type)
    klass = OP_REGISTRY.get(op_name)
    if klass is not None and hasattr(klass, "from_generic"):
        # the op's own normalization of its attributes (fastmath flags as attributes ...)
        body_op = klass.from_generic(p, loc, payload_operands, [result_type], dict(op_attrs), [])
    else:
        body_op = Operation.create(op_name, payload_operands, [result_type], dict(op_attrs),
                                   loc=loc)
    block.append(body_op)
    block.append(LinalgYieldOp.build(list(body_op.results), loc=loc))
    return Region([block])


def _short_form_payload(block: Block, init_first: bool, num_inputs: int) -> Optional[Operation]:
    """The op of a map/reduce body that prints as ``{ name }`` (MLIR's findPayloadOp): the
    body is that op and a yield of its one result, and its operands are the inputs' block
    arguments in order (map) or the init then the inputs (reduce)."""
    if len(block.ops) != 2:
        return None
    payload, yld = block.ops
    if len(payload.results) != 1 or payload.regions or yld.name != "linalg.yield" or \
            tuple(yld.operands) != (payload.results[0],):
        return None
    args = list(block.args)
    expected = args[-1:] + args[:-1] if init_first else args[:num_inputs]
    if not payload.operands or tuple(payload.operands) != tuple(expected):
        return None
    return payload


def _print_short_form(p, payload: Operation) -> None:
    p.print(" { " + payload.name)
    fm = payload.attributes.get("fastmath")
    elide = ("fastmath",) if fm is not None and str(fm) == "#arith.fastmath<none>" else ()
    p.print_attr_dict(payload.attributes, elide=elide)
    p.print(" }")


# ---------------------------------------------------------------------------------------------
# types


def _element_type(t: Type) -> Type:
    """The element type of a memref operand, the type itself for a scalar operand."""
    return t.element_type if isinstance(t, MemRefType) else t


def _rank(t: Type) -> int:
    return t.rank if isinstance(t, MemRefType) else 0


def _shape_str(shape: Sequence[Optional[int]]) -> str:
    return ", ".join("?" if d is None else str(d) for d in shape)


def _is_int(t: Type) -> bool:
    return isinstance(t, IntegerType)


def cast_op_name(src: Type, dst: Type, unsigned: bool) -> Optional[str]:
    """The arith op MLIR's ``convertScalarToDtype`` uses to cast ``src`` to ``dst`` (``""``
    when they are equal, ``None`` when there is no such cast): ``extsi``/``extui``/``trunci``
    between integers, ``sitofp``/``uitofp`` and ``fptosi``/``fptoui`` between integers and
    floats, ``extf``/``truncf`` between floats, ``index_cast`` from ``index``."""
    if src == dst:
        return ""
    if _is_int(dst):
        if isinstance(src, FloatType):
            return "fptoui" if unsigned else "fptosi"
        if isinstance(src, IndexType):
            return "index_cast"
        if _is_int(src):
            if dst.width > src.width:
                return "extui" if unsigned else "extsi"
            return "trunci" if dst.width < src.width else ""
        return None
    if isinstance(dst, FloatType):
        if _is_int(src):
            return "uitofp" if unsigned else "sitofp"
        if isinstance(src, FloatType):
            if dst.width > src.width:
                return "extf"
            if dst.width < src.width:
                return "truncf"
        return None
    return None


# ---------------------------------------------------------------------------------------------
# linalg.yield and linalg.index


@register_op
class LinalgYieldOp(Operation):
    """``linalg.yield %a, %b : f64, f64``: the new output elements of a payload."""

    OP_NAME = "linalg.yield"

    @classmethod
    def build(cls, values: Sequence[Value] = (), loc=None) -> "LinalgYieldOp":
        return cls(operands=list(values), loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        values = p.parse_operand_list()
        attrs = p.parse_optional_attr_dict()
        if values:
            p.expect(":")
            p.skip_ws()
            tstart = p.pos
            types = p.parse_type_list()
            if len(types) != len(values):
                raise p.error(f"{len(values)} operands present, but expected {len(types)}",
                              tstart)
            for v, t in zip(values, types):
                p.check_type(v, t, start)
        return cls(operands=values, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.yield")
        if self.operands:
            p.print(" ")
            p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        if self.operands:
            p.print(" : ")
            p.print_types(v.type for v in self.operands)

    def verify_op(self) -> None:
        parent = self.parent_op
        block = self.parent
        if parent is None or not parent.regions or parent.regions[0].empty:
            raise self.error("expected single non-empty parent region")
        if block.ops[-1] is not self:
            raise self.error("must be the last operation in the parent block")
        if not isinstance(parent, LinalgStructuredOp):
            raise self.error("expected parent op with LinalgOp interface")
        outputs = parent.outputs
        if len(self.operands) != len(outputs):
            raise self.error(f"expected number of yield values ({len(self.operands)}) to match "
                             f"the number of inits / outs operands of the enclosing LinalgOp "
                             f"({len(outputs)})")
        for k, (v, out) in enumerate(zip(self.operands, outputs)):
            et = _element_type(out.type)
            if v.type != et:
                raise self.error(f"type of yield operand {k + 1} ('{v.type}') doesn't match the "
                                 f"element type of the enclosing linalg.generic op ('{et}')")


@register_op
class LinalgIndexOp(Operation):
    """``%i = linalg.index 1 : index``: the iteration's index along loop ``dim`` of the
    enclosing structured op."""

    OP_NAME = "linalg.index"

    @classmethod
    def build(cls, dim_: int, loc=None) -> "LinalgIndexOp":
        return cls(result_types=[index], attributes={"dim": IntegerAttr(dim_, i64)}, loc=loc)

    @property
    def dim(self) -> int:
        return self.attributes["dim"].value

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        d = p.parse_integer("dimension")
        if d < 0:
            raise p.error("'linalg.index' dimension must be non-negative", start)
        attrs = p.parse_optional_attr_dict()
        t = p.parse_colon_type()
        attrs["dim"] = IntegerAttr(d, i64)
        return cls(result_types=[t], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"linalg.index {self.dim}")
        p.print_attr_dict(self.attributes, elide=("dim",))
        p.print(" : " + p.type_str(self.results[0].type))

    def verify_op(self) -> None:
        a = self.attributes.get("dim")
        if not isinstance(a, IntegerAttr) or a.value < 0:
            raise self.error("attribute 'dim' failed to satisfy constraint: 64-bit signless "
                             "integer attribute whose minimum value is 0")
        if len(self.results) != 1 or not isinstance(self.results[0].type, IndexType):
            raise self.error("result #0 must be index")
        parent = self.parent_op
        if not isinstance(parent, LinalgStructuredOp):
            raise self.error("expected parent op with LinalgOp interface")
        loops = parent.num_loops
        if loops <= self.dim:
            raise self.error(f"expected dim ({self.dim}) to be lower than the number of loops "
                             f"({loops}) of the enclosing LinalgOp")


# ---------------------------------------------------------------------------------------------
# the structured-op interface


def concat_maps(maps: Sequence[AffineMap]) -> AffineMap:
    """MLIR's ``concatAffineMaps``: every result of ``maps`` over the most dims any has."""
    n = max((m.num_dims for m in maps), default=0)
    syms = max((m.num_symbols for m in maps), default=0)
    return AffineMap.get(n, syms, tuple(e for m in maps for e in m.results))


def loop_sources(maps: Sequence[AffineMap]) -> Optional[list[tuple[int, int]]]:
    """For each loop, the (operand, dimension) that gives its size: the first result of the
    concatenated maps that is exactly that loop's dim (MLIR's ``getShapesToLoopsMap``);
    ``None`` when a loop has none (the maps are not invertible)."""
    n = max((m.num_dims for m in maps), default=0)
    found: dict[int, tuple[int, int]] = {}
    for k, m in enumerate(maps):
        for j, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr) and e.position not in found:
                found[e.position] = (k, j)
    if len(found) != n:
        return None
    return [found[d] for d in range(n)]


class LinalgStructuredOp(Operation):
    """A linalg op in destination style: ``inputs`` then ``outputs`` (memrefs; inputs may
    also be scalars), one indexing map per operand over ``num_loops`` loops, an iterator type
    per loop, and a payload.  Subclasses give ``num_inputs``, ``indexing_maps``,
    ``iterator_types`` and either a region (``payload_block``) or :meth:`build_payload`."""

    #: whether the payload is the op's region (generic, map, reduce) or implied by the op
    HAS_REGION = False

    # -- operands ------------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        raise NotImplementedError

    @property
    def inputs(self) -> tuple[Value, ...]:
        return self.operands[:self.num_inputs]

    @property
    def outputs(self) -> tuple[Value, ...]:
        return self.operands[self.num_inputs:]

    # -- the iteration space -------------------------------------------------------------------
    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        raise NotImplementedError

    @property
    def iterator_types(self) -> tuple[str, ...]:
        raise NotImplementedError

    @property
    def num_loops(self) -> int:
        return len(self.iterator_types)

    def static_loop_ranges(self) -> Optional[list[Optional[int]]]:
        """Each loop's trip count from the operand shapes (``None`` for a ``?`` size); ``None``
        when the maps are not invertible."""
        maps = self.indexing_maps
        sources = loop_sources(maps)
        if sources is None:
            return None
        return [self.operands[k].type.shape[j] for k, j in sources]

    # -- the payload ---------------------------------------------------------------------------
    @property
    def payload_block(self) -> Optional[Block]:
        """The payload region's block (generic, map, reduce), ``None`` for named ops."""
        if self.HAS_REGION and self.regions and self.regions[0].blocks:
            return self.regions[0].blocks[0]
        return None

    def build_payload(self, b, args: Sequence[Value], loc) -> list[Value]:
        """Named ops: create the payload's ops with builder ``b`` over ``args`` (one scalar per
        operand: the input elements then the output elements) and return the values to
        store in the outputs (MLIR's region builder of the op)."""
        raise NotImplementedError

    def block_arg_name_hints(self, region: Region) -> Optional[list[str]]:
        """The names mlir-opt gives the payload's block arguments (``in``, ``out``/``init``)."""
        block = region.blocks[0] if region.blocks else None
        if block is None:
            return None
        n = self.num_inputs
        return ["in" if k < n else self.OUTPUT_ARG_NAME for k in range(len(block.args))]

    OUTPUT_ARG_NAME = "out"

    # -- verification --------------------------------------------------------------------------
    def _verify_operand_kinds(self) -> None:
        for k, v in enumerate(self.operands):
            t = v.type
            if isinstance(t, UnrankedMemRefType):
                raise self.error(f"operand #{k} must be a ranked memref, got '{t}'")
            if k >= self.num_inputs and not isinstance(t, MemRefType):
                raise self.error(f"operand #{k} must be variadic of shaped of any type values, "
                                 f"but got '{t}'")
        if self.results:
            raise self.error(TENSOR_MESSAGE)

    def verify_structured(self) -> None:
        """MLIR's ``verifyStructuredOpInterface`` (with IndexingMapOpInterface::verifyImpl),
        with its messages."""
        maps = self.indexing_maps
        operands = self.operands
        if len(maps) != len(operands):
            raise self.error(f"expected the number of indexing_map ({len(maps)}) to be equal "
                             f"to the number of input/output operands ({len(operands)})")
        sources = loop_sources(maps)
        if sources is None:
            raise self.error(f"invalid indexing maps are non-invertible: ({concat_maps(maps)})")
        for k, (v, m) in enumerate(zip(operands, maps)):
            if m.num_symbols:
                raise self.error(f"unexpected symbols in indexing_map #{k}")
            rank = _rank(v.type)
            if m.num_results != rank:
                raise self.error(f"expected operand #{k} rank ({rank}) to match the result "
                                 f"rank of indexing_map ({m.num_results})")
        ranges = [operands[k].type.shape[j] for k, j in sources]
        if all(r is not None for r in ranges):
            end = [r - 1 for r in ranges]
            for k, (v, m) in enumerate(zip(operands, maps)):
                shape = v.type.shape if isinstance(v.type, MemRefType) else ()
                lo = m.evaluate([0] * m.num_dims)
                hi = m.evaluate(end[:m.num_dims])
                for d, size in enumerate(shape):
                    if size is None or size == 0:
                        continue
                    inferred = max(lo[d], hi[d]) + 1
                    if min(lo[d], hi[d]) < 0:
                        raise self.error(f"unexpected result less than 0 at expression #{d} "
                                         f"in {m}")
                    if isinstance(m.results[d], AffineDimExpr):
                        if inferred != size:
                            raise self.error(f"inferred input/output operand #{k} has shape's "
                                             f"dimension #{d} to be {inferred}, but found "
                                             f"{size}")
                    elif inferred > size:
                        raise self.error(f"inferred input/output operand #{k} has shape's "
                                         f"dimension #{d} to be greater than or equal to "
                                         f"{inferred}, but found {size}")
        loops = self.num_loops
        for k, m in enumerate(maps):
            if m.num_dims != loops:
                raise self.error(f"expected indexing_map #{k} to have {loops} dim(s) to match "
                                 f"the number of loops")
        if self.HAS_REGION:
            self._verify_region_arguments()
        else:
            self._verify_payload_types()

    def _verify_region_arguments(self) -> None:
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects to have 1 region with 1 block")
        block = self.regions[0].blocks[0]
        if len(block.args) != len(self.operands):
            raise self.error("expected as many non-induction variable region arguments as the "
                             "number of input/output operands")
        for k, (v, a) in enumerate(zip(self.operands, block.args)):
            et = _element_type(v.type)
            if a.type != et:
                raise self.error(f"expected type of bb argument #{k} ('{a.type}') to match "
                                 f"element or self type of the corresponding operand ('{et}')")

    def _verify_payload_types(self) -> None:
        """Named ops: the payload can be built for these element types (else MLIR's message
        from its region builder)."""

    def _verify_no_region(self) -> None:
        if self.regions:
            raise self.error("has no regions (its payload is implied by the op)")


def _maps_attr(op: Operation) -> tuple[AffineMap, ...]:
    a = op.attributes.get("indexing_maps")
    if not isinstance(a, ArrayAttr):
        return ()
    return tuple(e.value for e in a.elements if isinstance(e, AffineMapAttr))


def _check_maps_attr(op: Operation) -> tuple[AffineMap, ...]:
    a = op.attributes.get("indexing_maps")
    if a is None:
        raise op.error("requires attribute 'indexing_maps'")
    if not isinstance(a, ArrayAttr) or not all(isinstance(e, AffineMapAttr) for e in a.elements):
        raise op.error("attribute 'indexing_maps' failed to satisfy constraint: AffineMap "
                       "array attribute")
    return tuple(e.value for e in a.elements)


def maps_attr(maps: Sequence[AffineMap]) -> ArrayAttr:
    return ArrayAttr(tuple(AffineMapAttr(m) for m in maps))


def _verify_cast_attr(op: Operation) -> None:
    a = op.attributes.get("cast")
    if a is not None and str(a) not in CAST_ATTRS:
        raise op.error("attribute 'cast' failed to satisfy constraint: allowed 32-bit signless "
                       "integer cases: 0, 1")


def _check_cast_attr(p, name: str, attrs: dict) -> None:
    a = attrs.get("cast")
    if isinstance(a, OpaqueAttr) and a.text.startswith("#linalg.type_fn") and \
            a.text not in CAST_ATTRS:
        raise _custom_error(p, name, "expected ::mlir::linalg::TypeFn to be one of: "
                            "cast_signed, cast_unsigned")


def _segment_sizes(attrs: dict, loc, name: str) -> Optional[tuple[int, ...]]:
    seg = attrs.get("operandSegmentSizes")
    if seg is None:
        return None
    if not isinstance(seg, DenseArrayAttr) or len(seg.values) != 2:
        raise ParseError(f"'{name}' op attribute 'operandSegmentSizes' must be an array of two "
                         f"i32, got {seg}", loc)
    return tuple(int(v) for v in seg.values)


def _strip(attrs: dict, *names: str) -> dict:
    return {k: v for k, v in attrs.items() if k not in names}


# ---------------------------------------------------------------------------------------------
# named ops: the payload is implied by the op


class _NamedOp(LinalgStructuredOp):
    """A structured op whose payload is implied (no region in polyopt; MLIR's generic form
    spells it out, and parses here when it is exactly the op's body)."""

    NUM_INPUTS = 1

    @property
    def num_inputs(self) -> int:
        return self.NUM_INPUTS

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        attrs = dict(attrs)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is not None and seg != (cls.NUM_INPUTS, 1):
            raise ParseError(f"'{cls.OP_NAME}' expects {cls.NUM_INPUTS} input(s) and 1 output, "
                             f"got operandSegmentSizes {attrs['operandSegmentSizes']}", loc)
        op = cls(operands=operands, attributes=_strip(attrs, "operandSegmentSizes"), loc=loc)
        op._check_generic_region(regions, loc)
        return op

    def _check_generic_region(self, regions, loc) -> None:
        """A generic-form region must be the op's own payload: polyopt rebuilds the payload
        from the op, so a different body would be silently replaced."""
        if not regions or not regions[0].blocks:
            return
        block = regions[0].blocks[0]
        try:
            self.verify_op()
        except Exception:
            return   # the verifier reports what is wrong with the op itself
        types = [_element_type(v.type) for v in self.operands]
        canonical = Block(types)
        from ..builder import Builder
        try:
            yielded = self.build_payload(Builder.at_end(canonical), list(canonical.args), loc)
        except Exception:
            return
        canonical.append(LinalgYieldOp.build(yielded, loc=loc))
        if not same_body(block, canonical):
            raise ParseError(f"'{self.name}' op region is not the op's payload; write a "
                             f"different body as linalg.generic", loc)


def same_body(a: Block, b: Block) -> bool:
    """Do two payload blocks compute the same thing (same ops, operands, result types and
    attributes, ignoring the default ``fastmath``/``overflowFlags``)?"""
    if [x.type for x in a.args] != [x.type for x in b.args] or len(a.ops) != len(b.ops):
        return False
    pos_a = {v: ("arg", k) for k, v in enumerate(a.args)}
    pos_b = {v: ("arg", k) for k, v in enumerate(b.args)}
    defaults = ("#arith.fastmath<none>", "#arith.overflow<none>")
    for n, (x, y) in enumerate(zip(a.ops, b.ops)):
        if x.name != y.name or [r.type for r in x.results] != [r.type for r in y.results]:
            return False
        if [pos_a.get(v, v) for v in x.operands] != [pos_b.get(v, v) for v in y.operands]:
            return False
        ax = {k: str(v) for k, v in x.attributes.items() if str(v) not in defaults}
        ay = {k: str(v) for k, v in y.attributes.items() if str(v) not in defaults}
        if ax != ay or x.regions or y.regions:
            return False
        for k, (rx, ry) in enumerate(zip(x.results, y.results)):
            pos_a[rx] = pos_b[ry] = ("op", n, k)
    return True


def _yield_type_error(op: Operation, expected: Type, got: Type):
    """The message MLIR gives (from the implied ``linalg.yield``) when a named op's payload
    yields the wrong type."""
    from ..diagnostics import VerifyError
    return VerifyError(f"'linalg.yield' op type of yield operand 1 ('{got}') doesn't match the "
                       f"element type of the enclosing linalg.generic op ('{expected}')", op.loc)


# ---------------------------------------------------------------------------------------------
# payload building blocks shared with the named contractions


def build_cast(b, value: Value, to: Type, unsigned: bool, loc) -> Value:
    """``value`` cast to ``to`` as MLIR's ``convertScalarToDtype`` does (no op when the types
    are equal)."""
    from .arith import CASTS
    name = cast_op_name(value.type, to, unsigned)
    if name is None:
        raise ValueError(f"no cast from '{value.type}' to '{to}'")
    if not name:
        return value
    return b.create(CASTS[name], value, to, loc=loc).result


def binary_error(x: Type, y: Type) -> Optional[str]:
    """MLIR's region builder message when ``x`` and ``y`` cannot be added or multiplied."""
    if (isinstance(x, FloatType) and isinstance(y, FloatType)) or (_is_int(x) and _is_int(y)):
        return None
    return (f"Cannot build binary Linalg operation: expects allComplex, allFloatingPoint, or "
            f"allInteger, got '{x}' and '{y}'")


def build_mul(b, x: Value, y: Value, loc) -> Value:
    """``x * y`` (``arith.mulf``, ``arith.muli``, ``arith.andi`` on i1: MLIR's BinaryFn::mul)."""
    from .arith import FLOAT_BINARY, INT_BINARY
    t = x.type
    if isinstance(t, FloatType):
        return b.create(FLOAT_BINARY["mulf"], x, y, loc=loc).result
    name = "andi" if t.width == 1 else "muli"
    return b.create(INT_BINARY[name], x, y, loc=loc).result


def build_sub(b, x: Value, y: Value, loc) -> Value:
    """``x - y`` (``arith.subf``, ``arith.subi``: MLIR's BinaryFn::sub)."""
    from .arith import FLOAT_BINARY, INT_BINARY
    if isinstance(x.type, FloatType):
        return b.create(FLOAT_BINARY["subf"], x, y, loc=loc).result
    return b.create(INT_BINARY["subi"], x, y, loc=loc).result


def build_add(b, x: Value, y: Value, loc) -> Value:
    """``x + y`` (``arith.addf``, ``arith.addi``, ``arith.ori`` on i1: MLIR's BinaryFn::add)."""
    from .arith import FLOAT_BINARY, INT_BINARY
    t = x.type
    if isinstance(t, FloatType):
        return b.create(FLOAT_BINARY["addf"], x, y, loc=loc).result
    name = "ori" if t.width == 1 else "addi"
    return b.create(INT_BINARY[name], x, y, loc=loc).result


# the ops (registered on import)
from .linalg_generic import GenericOp, MapOp, ReduceOp  # noqa: E402,F401
from .linalg_data import BroadcastOp, CopyOp, FillOp, TransposeOp  # noqa: E402,F401
from .linalg_named import (LINALG_CONV_OPS, MATMUL_MAPS, BatchMatmulOp,  # noqa: E402,F401
                           BatchReduceMatmulOp, BatchVecmatOp, DotOp, Mmt4dOp,
                           QuantizedMatmulOp, ContractOp, BatchMmt4dOp, LinalgConv1DNwcWcfOp, LinalgConv2DNhwcHwcfOp,
                           LinalgDepthwiseConv2DNhwcHwcOp, LinalgMatmulOp, MatvecOp, VecmatOp,
                           conv_indexing_maps)
from .linalg_elementwise import LINALG_ELEMENTWISE_OPS, ElementwiseOp  # noqa: E402,F401
from .linalg_window import LINALG_WINDOW_OPS  # noqa: E402,F401

#: Every structured op class, by op name.
STRUCTURED_OPS = {c.OP_NAME: c for c in (
    GenericOp, MapOp, ReduceOp, TransposeOp, BroadcastOp, CopyOp, FillOp, LinalgMatmulOp,
    BatchMatmulOp, MatvecOp, VecmatOp, DotOp, BatchVecmatOp, BatchReduceMatmulOp, Mmt4dOp,
    QuantizedMatmulOp, ContractOp, BatchMmt4dOp,
    *LINALG_CONV_OPS.values(), *LINALG_ELEMENTWISE_OPS.values(),
    ElementwiseOp, *LINALG_WINDOW_OPS.values())}
