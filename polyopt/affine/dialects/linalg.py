"""The linalg dialect on memrefs: the structured ops, their syntax, rules and payloads.

Every op here is a *structured op* (MLIR's ``LinalgOp`` interface): inputs and outputs
(``ins(...)``/``outs(...)``, destination style), one indexing map per operand over the op's
loops, an iterator type per loop (``parallel`` or ``reduction``), and a payload computing
the new output elements from one element of each operand.  The ops with a written payload
region are here:

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
    linalg.transpose ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>) permutation = [1, 0]
    linalg.copy ins(%A : memref<5x7xf64>) outs(%B : memref<5x7xf64>)
    linalg.fill ins(%cst : f64) outs(%A : memref<5x7xf64>)

and the named contractions and convolutions (``linalg.matmul``, ``linalg.batch_matmul``,
``linalg.matvec``, ``linalg.vecmat``, ``linalg.dot``, ``linalg.conv_*``) in
:mod:`polyopt.affine.dialects.linalg_named`, re-exported here.

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

from ..affine_expr import AffineDimExpr, AffineMap, dim
from ..attributes import (AffineMapAttr, ArrayAttr, Attribute, DenseArrayAttr, IntegerAttr,
                          OpaqueAttr, StringAttr)
from ..diagnostics import ParseError
from ..ir import Block, Operation, Region, Value, register_op
from ..types import (FloatType, IndexType, IntegerType, MemRefType, Type, UnrankedMemRefType,
                     VectorType, i32, i64, index)

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
        if not block.ops or block.ops[-1].name != "linalg.yield":
            raise self.error("expects its region to end with 'linalg.yield'")

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
# linalg.generic


def _iterator_names(attr) -> Optional[tuple[str, ...]]:
    """``["parallel", ...]`` (custom form) or ``[#linalg.iterator_type<parallel>, ...]``."""
    if not isinstance(attr, ArrayAttr):
        return None
    out = []
    for e in attr.elements:
        if isinstance(e, StringAttr):
            out.append(e.value)
        elif isinstance(e, OpaqueAttr) and _ITERATOR_ATTR.fullmatch(e.text):
            out.append(_ITERATOR_ATTR.fullmatch(e.text).group(1))
        else:
            return None
    return tuple(out)


@register_op
class GenericOp(LinalgStructuredOp):
    """``linalg.generic {indexing_maps = [...], iterator_types = [...], doc = "..",
    library_call = ".."} ins(...) outs(...) [attrs = {...}] { ^bb0(...): ... linalg.yield }``:
    any loop nest whose body computes output elements from operand elements."""

    OP_NAME = "linalg.generic"
    HAS_REGION = True
    TRAIT_ATTRS = ("doc", "indexing_maps", "iterator_types", "library_call")

    @classmethod
    def build(cls, inputs: Sequence[Value], outputs: Sequence[Value],
              indexing_maps: Sequence[AffineMap], iterator_types: Sequence[str],
              body: Region, doc: Optional[str] = None, library_call: Optional[str] = None,
              loc=None) -> "GenericOp":
        """``body`` has one block with an argument per operand and ends in ``linalg.yield``."""
        attrs: dict[str, Attribute] = {
            "indexing_maps": maps_attr(indexing_maps),
            "iterator_types": ArrayAttr(tuple(StringAttr(t) for t in iterator_types)),
            "operandSegmentSizes": DenseArrayAttr(i32, (len(inputs), len(outputs)))}
        if doc is not None:
            attrs["doc"] = StringAttr(doc)
        if library_call is not None:
            attrs["library_call"] = StringAttr(library_call)
        return cls(operands=list(inputs) + list(outputs), attributes=attrs, regions=[body],
                   loc=loc)

    @property
    def num_inputs(self) -> int:
        seg = self.attributes.get("operandSegmentSizes")
        return int(seg.values[0]) if isinstance(seg, DenseArrayAttr) else 0

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        return _maps_attr(self)

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return _iterator_names(self.attributes.get("iterator_types")) or ()

    @property
    def doc(self) -> Optional[str]:
        a = self.attributes.get("doc")
        return a.value if isinstance(a, StringAttr) else None

    @property
    def library_call(self) -> Optional[str]:
        a = self.attributes.get("library_call")
        return a.value if isinstance(a, StringAttr) else None

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        if not p.peek("{"):
            raise p.error(f"expected attribute value, found {p._describe_next()}")
        attrs = p.parse_attr_dict_body()
        iters = attrs.get("iterator_types")
        if not isinstance(iters, ArrayAttr):
            raise _custom_error(p, name, 'expected "iterator_types" array attribute', start)
        names = []
        for e in iters.elements:
            if not isinstance(e, StringAttr):
                raise _custom_error(p, name, f"expected \"iterator_types\" to be an array of "
                                    f"strings, got {e}", start)
            if e.value not in ITERATOR_TYPES:
                p.skip_ws()
                raise _custom_error(p, name, f"unexpected iterator_type ({e.value})")
            names.append(e.value)
        maps = attrs.get("indexing_maps")
        if maps is not None and not (isinstance(maps, ArrayAttr) and all(
                isinstance(e, AffineMapAttr) for e in maps.elements)):
            raise _custom_error(p, name, "'linalg.generic' op attribute 'indexing_maps' failed to "
                                "satisfy constraint: AffineMap array attribute", start)
        ins, outs = _parse_ins_outs(p, name, attrs)
        attrs["operandSegmentSizes"] = DenseArrayAttr(i32, (len(ins), len(outs)))
        if p.optional_keyword("attrs"):
            p.expect("=")
            p.skip_ws()
            _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        region = p.parse_region()
        _reject_tensor_results(p)
        return cls(operands=ins + outs, attributes=attrs, regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        attrs = dict(attrs)
        seg = _segment_sizes(attrs, loc, cls.OP_NAME)
        if seg is None:
            raise ParseError("'linalg.generic' op requires attribute 'operandSegmentSizes'",
                             loc)
        if sum(seg) != len(operands):
            raise ParseError(f"'linalg.generic' op operand count ({len(operands)}) does not "
                             f"match with the total size ({sum(seg)}) specified in attribute "
                             f"'operandSegmentSizes'", loc)
        iters = _iterator_names(attrs.get("iterator_types"))
        if iters is not None:
            attrs["iterator_types"] = ArrayAttr(tuple(StringAttr(t) for t in iters))
        return cls(operands=operands, attributes=attrs, regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.generic ")
        traits = {k: v for k, v in self.attributes.items() if k in self.TRAIT_ATTRS}
        p.print("{" + ", ".join(f"{k} = {p.attr_str(v)}" for k, v in sorted(traits.items()))
                + "}")
        _print_ins_outs(p, self.inputs, self.outputs)
        extra = {k: v for k, v in self.attributes.items()
                 if k not in self.TRAIT_ATTRS and k != "operandSegmentSizes"}
        if extra:
            p.print(" attrs = ")
            p.print_attr_dict(extra)
        if self.regions and self.regions[0].blocks:
            p.print(" ")
            p.print_region(self.regions[0], print_entry_args=True)

    def verify_op(self) -> None:
        seg = self.attributes.get("operandSegmentSizes")
        if not isinstance(seg, DenseArrayAttr) or sum(seg.values) != len(self.operands):
            raise self.error("requires attribute 'operandSegmentSizes' matching its operands")
        _check_maps_attr(self)
        iters = self.attributes.get("iterator_types")
        names = _iterator_names(iters)
        if iters is None:
            raise self.error("requires attribute 'iterator_types'")
        if names is None or any(n not in ITERATOR_TYPES for n in names):
            raise self.error("attribute 'iterator_types' failed to satisfy constraint: Iterator "
                             "type should be an enum.")
        for k in ("doc", "library_call"):
            if k in self.attributes and not isinstance(self.attributes[k], StringAttr):
                raise self.error(f"attribute '{k}' failed to satisfy constraint: string "
                                 f"attribute")
        if len(self.regions) != 1 or len(self.regions[0].blocks) > 1:
            raise self.error("expects region #0 to have 0 or 1 blocks")
        self._verify_operand_kinds()
        self.verify_structured()


# ---------------------------------------------------------------------------------------------
# linalg.map and linalg.reduce


@register_op
class MapOp(LinalgStructuredOp):
    """``linalg.map { arith.addf } ins(%A, %B : ...) outs(%C : ...)`` or with a written body
    ``(%in: f64, %in_0: f64, %init: f64) { ... linalg.yield %r : f64 }``: C = f(A, B)
    elementwise.  The block has an argument per input and one for the init."""

    OP_NAME = "linalg.map"
    HAS_REGION = True
    OUTPUT_ARG_NAME = "init"

    @property
    def num_inputs(self) -> int:
        return max(0, len(self.operands) - 1)

    @property
    def init(self) -> Value:
        return self.operands[-1]

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = _rank(self.init.type) if self.operands else 0
        return (AffineMap.identity(rank),) * len(self.operands)

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * (_rank(self.init.type) if self.operands else 0)

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        payload = _parse_payload_op_name(p, name)
        attrs: dict = {}
        ins, outs = _parse_ins_outs(p, name, attrs)
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        operands = ins + outs
        if payload is not None:
            if not operands:
                region = Region()
            else:
                region = _short_form_region(p, name, payload, operands, init_first=False,
                                            map_init=False, loc=loc)
        else:
            region = _parse_long_form_region(p)
        return cls(operands=operands, attributes=attrs, regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        return cls(operands=operands, attributes=attrs, regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.map")
        block = self.payload_block
        payload = _short_form_payload(block, False, self.num_inputs) if block else None
        if payload is not None:
            _print_short_form(p, payload)
        _print_ins_outs(p, self.inputs, self.outputs)
        p.print_attr_dict(self.attributes)
        if payload is None and block is not None:
            _print_long_form_region(p, self.regions[0])

    def verify_op(self) -> None:
        if not self.operands:
            raise self.error("expects an init operand")
        self._verify_operand_kinds()
        for k, v in enumerate(self.inputs):
            if not isinstance(v.type, MemRefType):
                raise self.error(f"operand #{k} must be variadic of shaped of any type values, "
                                 f"but got '{v.type}'")
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects region #0 to have 1 block")
        block = self.regions[0].blocks[0]
        if len(self.inputs) + 1 != len(block.args):
            raise self.error(f"expects number of operands to match the arity of mapper, but "
                             f"got: {len(self.inputs) + 1} and {len(block.args)}")
        for a, v in zip(block.args, self.inputs):
            et = v.type.element_type
            if a.type != et:
                raise self.error(f"expected element type of input '{et}' to match bbArg type "
                                 f"'{a.type}'")
        out_shape = self.init.type.shape
        for v in self.inputs:
            if v.type.shape != out_shape:
                raise self.error(f"expected shape of input ({_shape_str(v.type.shape)}) to match "
                                 f"shape of output ({_shape_str(out_shape)})")
        self.verify_structured()


@register_op
class ReduceOp(LinalgStructuredOp):
    """``linalg.reduce { arith.addf } ins(%A : memref<5x7xf64>) outs(%y : memref<5xf64>)
    dimensions = [1]`` or with a written body ``(%in: f64, %init: f64) { ... }``: the inits
    accumulate the inputs along ``dimensions``.  The block has an argument per input, then
    one per init."""

    OP_NAME = "linalg.reduce"
    HAS_REGION = True
    OUTPUT_ARG_NAME = "init"

    @property
    def num_inputs(self) -> int:
        return len(self.operands) // 2

    @property
    def dimensions(self) -> tuple[int, ...]:
        a = self.attributes.get("dimensions")
        return tuple(int(v) for v in a.values) if isinstance(a, DenseArrayAttr) else ()

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        if not self.operands:
            return ()
        rank = _rank(self.inputs[0].type)
        red = set(self.dimensions)
        init_map = AffineMap.get(rank, 0, tuple(dim(d) for d in range(rank) if d not in red))
        n = self.num_inputs
        return (AffineMap.identity(rank),) * n + (init_map,) * n

    @property
    def iterator_types(self) -> tuple[str, ...]:
        if not self.operands:
            return ()
        red = set(self.dimensions)
        return tuple("reduction" if d in red else "parallel"
                     for d in range(_rank(self.inputs[0].type)))

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        payload = _parse_payload_op_name(p, name)
        attrs: dict = {}
        p.skip_ws()
        start = p.pos
        ins, outs = _parse_ins_outs(p, name, attrs)
        attrs["dimensions"] = _parse_i64_list_keyword(p, name, "dimensions")
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        if len(ins) != len(outs):
            raise _custom_error(p, name, f"expects as many inits as inputs, got {len(ins)} "
                                f"input(s) and {len(outs)} init(s)", start)
        operands = ins + outs
        if payload is not None:
            region = _short_form_region(p, name, payload, operands, init_first=True,
                                        map_init=True, loc=loc) if operands else Region()
        else:
            region = _parse_long_form_region(p)
        return cls(operands=operands, attributes=attrs, regions=[region], loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        if result_types:
            raise ParseError(TENSOR_MESSAGE, loc)
        if len(operands) % 2:
            raise ParseError(f"'linalg.reduce' op expects as many inits as inputs, got "
                             f"{len(operands)} operands", loc)
        return cls(operands=operands, attributes=attrs, regions=regions, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.reduce")
        block = self.payload_block
        payload = _short_form_payload(block, True, self.num_inputs) if block else None
        if payload is not None:
            _print_short_form(p, payload)
        _print_ins_outs(p, self.inputs, self.outputs)
        _print_i64_list_keyword(p, "dimensions", self.attributes.get("dimensions"))
        p.print_attr_dict(self.attributes, elide=("dimensions",))
        if payload is None and block is not None:
            _print_long_form_region(p, self.regions[0])

    def verify_op(self) -> None:
        dims_attr = self.attributes.get("dimensions")
        if not isinstance(dims_attr, DenseArrayAttr):
            raise self.error("requires attribute 'dimensions'")
        dims = self.dimensions
        if any(b <= a for a, b in zip(dims, dims[1:])):
            raise self.error("attribute 'dimensions' failed to satisfy constraint: i64 dense "
                             "array attribute should be in increasing order")
        if not self.operands or len(self.operands) % 2:
            raise self.error("expects as many inits as inputs, and at least one of each")
        self._verify_operand_kinds()
        for k, v in enumerate(self.inputs):
            if not isinstance(v.type, MemRefType):
                raise self.error(f"operand #{k} must be variadic of shaped of any type values, "
                                 f"but got '{v.type}'")
        ins, inits = self.inputs, self.outputs
        for i in range(1, len(ins)):
            if ins[i].type.shape != ins[0].type.shape:
                raise self.error(f"expects all inputs to have the same shapes. Shape at "
                                 f"input-index {i} is not equal to the shape at input-index 0.")
        for i in range(1, len(inits)):
            if inits[i].type.shape != inits[0].type.shape:
                raise self.error(f"expects all outputs to have the same shapes. Shape at "
                                 f"output-index {i} is not equal to the shape at output-index "
                                 f"0.")
        rank = ins[0].type.rank
        for d in dims:
            if not 0 <= d < rank:
                raise self.error(f"dimensions for reduction should be in the range [0, "
                                 f"{rank - 1}].")
        kept = [s for d, s in enumerate(ins[0].type.shape) if d not in set(dims)]
        init_shape = list(inits[0].type.shape)
        if len(kept) != len(init_shape):
            raise self.error(f"number of dimensions after reduction {len(kept)} doesn't match "
                             f"the init rank {len(init_shape)}")
        if kept != init_shape:
            raise self.error(f"init dimensions [{_shape_str(init_shape)}] doesn't match input "
                             f"dimensions after reduction [{_shape_str(kept)}]")
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects region #0 to have 1 block")
        block = self.regions[0].blocks[0]
        if len(block.args) != len(self.operands):
            raise self.error("mismatching number of operands and block arguments")
        for v, a in zip(ins, block.args):
            if v.type.element_type != a.type:
                raise self.error(f"input element type '{v.type.element_type}' does not match "
                                 f"corresponding block argument type '{a.type}'")
        for v, a in zip(inits, block.args[len(ins):]):
            if v.type.element_type != a.type:
                raise self.error(f"output element type '{v.type.element_type}' does not match "
                                 f"corresponding block argument type '{a.type}'")
        self.verify_structured()


# ---------------------------------------------------------------------------------------------
# linalg.transpose, linalg.copy, linalg.fill (named ops without a written region)


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


@register_op
class TransposeOp(_NamedOp):
    """``linalg.transpose ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>)
    permutation = [1, 0]``: ``init[i0, .., in] = input[...]`` with init dimension k being
    input dimension ``permutation[k]``."""

    OP_NAME = "linalg.transpose"

    @classmethod
    def build(cls, input: Value, init: Value, permutation: Sequence[int],
              loc=None) -> "TransposeOp":
        return cls(operands=[input, init],
                   attributes={"permutation": DenseArrayAttr(i64, tuple(permutation))}, loc=loc)

    @property
    def input(self) -> Value:
        return self.operands[0]

    @property
    def init(self) -> Value:
        return self.operands[1]

    @property
    def permutation(self) -> tuple[int, ...]:
        a = self.attributes.get("permutation")
        return tuple(int(v) for v in a.values) if isinstance(a, DenseArrayAttr) else ()

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        perm = self.permutation
        if sorted(perm) != list(range(len(perm))):   # the verifier reports it
            return (AffineMap.identity(len(perm)),) * 2
        inverse = [0] * len(perm)
        for k, p_ in enumerate(perm):
            inverse[p_] = k
        return (AffineMap.get(len(perm), 0, tuple(dim(k) for k in inverse)),
                AffineMap.identity(len(perm)))

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * len(self.permutation)

    def build_payload(self, b, args, loc):
        return [args[0]]

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        attrs: dict = {}
        ins, outs = _parse_ins_outs(p, name, attrs)
        attrs["permutation"] = _parse_i64_list_keyword(p, name, "permutation")
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        if len(ins) != 1 or len(outs) != 1:
            raise _custom_error(p, name, f"expects 1 input and 1 init, got {len(ins)} and "
                                f"{len(outs)}")
        return cls(operands=ins + outs, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.transpose")
        _print_ins_outs(p, self.inputs, self.outputs)
        _print_i64_list_keyword(p, "permutation", self.attributes.get("permutation"))
        p.print_attr_dict(self.attributes, elide=("permutation",))

    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != 2:
            raise self.error("expects 1 input and 1 init")
        if not isinstance(self.attributes.get("permutation"), DenseArrayAttr):
            raise self.error("requires attribute 'permutation'")
        self._verify_operand_kinds()
        if not isinstance(self.input.type, MemRefType):
            raise self.error(f"operand #0 must be memref of any type values, but got "
                             f"'{self.input.type}'")
        perm = self.permutation
        if sorted(perm) != list(range(len(perm))):
            raise self.error("permutation is not valid")
        ti, to = self.input.type, self.init.type
        if ti.rank != to.rank:
            raise self.error(f"input rank {ti.rank} does not match init rank {to.rank}")
        if len(perm) != ti.rank:
            raise self.error(f"size of permutation {len(perm)} does not match the argument rank "
                             f"{ti.rank}")
        for k in range(ti.rank):
            a, b_ = ti.shape[perm[k]], to.shape[k]
            if a != b_:
                raise self.error(f"dim(result, {k}) = {'?' if b_ is None else b_} doesn't match "
                                 f"dim(input, permutation[{k}]) = {'?' if a is None else a}")
        if ti.element_type != to.element_type:
            raise _yield_type_error(self, to.element_type, ti.element_type)
        self.verify_structured()


def _yield_type_error(op: Operation, expected: Type, got: Type):
    """The message MLIR gives (from the implied ``linalg.yield``) when a named op's payload
    yields the wrong type."""
    from ..diagnostics import VerifyError
    return VerifyError(f"'linalg.yield' op type of yield operand 1 ('{got}') doesn't match the "
                       f"element type of the enclosing linalg.generic op ('{expected}')", op.loc)


class _UnaryNamedOp(_NamedOp):
    """``linalg.copy``/``linalg.fill``: ``[{attrs}] ins(%x : T) outs(%y : U) [{attrs}]``."""

    @classmethod
    def parse_custom(cls, p, loc, name):
        return cls._parse_named(p, loc, name)

    @classmethod
    def _parse_named(cls, p, loc, name):
        _reject_tensors(p)
        p.skip_ws()
        start = p.pos
        attrs: dict = {}
        ins, outs = _parse_ins_outs(p, name, attrs)
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        _check_cast_attr(p, name, attrs)
        if "indexing_maps" in attrs:
            raise _custom_error(p, name, "does not take indexing_maps", start)
        want = cls.NUM_INPUTS + 1
        if len(ins) != cls.NUM_INPUTS or len(outs) != 1:
            raise _custom_error(p, name, f"[parseNamedStructuredOpRegion] ods-gen generated "
                                f"region expects {want} args, got {len(ins) + len(outs)}", start)
        return cls(operands=ins + outs, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(self.name)
        p.print_attr_dict(self.attributes)
        _print_ins_outs(p, self.inputs, self.outputs)

    @property
    def unsigned_cast(self) -> bool:
        return str(self.attributes.get("cast")) == CAST_ATTRS[1]


@register_op
class CopyOp(_UnaryNamedOp):
    """``linalg.copy ins(%A : memref<5x7xf64>) outs(%B : memref<5x7xf32>)``: B = A elementwise,
    cast to B's element type (``cast = #linalg.type_fn<cast_unsigned>`` for unsigned)."""

    OP_NAME = "linalg.copy"

    @classmethod
    def build(cls, input: Value, output: Value, loc=None) -> "CopyOp":
        return cls(operands=[input, output], loc=loc)

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = _rank(self.operands[1].type)   # rank-polymorphic: the output's rank
        return (AffineMap.identity(rank),) * 2

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * _rank(self.operands[1].type)

    def build_payload(self, b, args, loc):
        return [build_cast(b, args[0], _element_type(self.operands[1].type),
                           self.unsigned_cast, loc)]

    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != 2:
            raise self.error("expects 1 input and 1 output")
        _verify_cast_attr(self)
        self._verify_operand_kinds()
        src, dst = _element_type(self.operands[0].type), _element_type(self.operands[1].type)
        if cast_op_name(src, dst, self.unsigned_cast) is None:
            raise self.error(f"cannot cast '{src}' to '{dst}'")
        self.verify_structured()


@register_op
class FillOp(_UnaryNamedOp):
    """``linalg.fill ins(%cst : f64) outs(%A : memref<4x4xf64>)``: every element of A := cst."""

    OP_NAME = "linalg.fill"

    @classmethod
    def build(cls, value: Value, output: Value, loc=None) -> "FillOp":
        return cls(operands=[value, output], loc=loc)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def output(self) -> Value:
        return self.operands[1]

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = _rank(self.output.type)
        return (AffineMap.get(rank, 0, ()), AffineMap.identity(rank))

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * _rank(self.output.type)

    def build_payload(self, b, args, loc):
        return [args[0]]

    @classmethod
    def parse_custom(cls, p, loc, name):
        if p.peek("("):
            out, value = _parse_legacy(p, 2)   # 2020: output first, then the value
            return cls(operands=[value, out], loc=loc)
        op = cls._parse_named(p, loc, name)
        if isinstance(op.value.type, (MemRefType, VectorType)):
            raise ParseError("expected op with scalar input", loc)
        return op

    def verify_op(self) -> None:
        self._verify_no_region()
        if len(self.operands) != 2 or self.results:
            raise self.error("expects a value and an output memref, and no results")
        _verify_cast_attr(self)
        self._verify_operand_kinds()
        vt, ot = self.value.type, self.output.type
        if isinstance(vt, (MemRefType, VectorType)):
            raise self.error(f"fill value must be a scalar, got '{vt}'")
        if vt != ot.element_type:
            raise self.error(f"expected fill value type ('{vt}') to match output element type "
                             f"('{ot.element_type}')")
        self.verify_structured()


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


def build_add(b, x: Value, y: Value, loc) -> Value:
    """``x + y`` (``arith.addf``, ``arith.addi``, ``arith.ori`` on i1: MLIR's BinaryFn::add)."""
    from .arith import FLOAT_BINARY, INT_BINARY
    t = x.type
    if isinstance(t, FloatType):
        return b.create(FLOAT_BINARY["addf"], x, y, loc=loc).result
    name = "ori" if t.width == 1 else "addi"
    return b.create(INT_BINARY[name], x, y, loc=loc).result


# the named contractions and convolutions (registered on import)
from .linalg_named import (LINALG_CONV_OPS, MATMUL_MAPS, BatchMatmulOp,  # noqa: E402,F401
                           DotOp, LinalgConv1DNwcWcfOp, LinalgConv2DNhwcHwcfOp,
                           LinalgDepthwiseConv2DNhwcHwcOp, LinalgMatmulOp, MatvecOp, VecmatOp,
                           conv_indexing_maps)

#: Every structured op class, by op name.
STRUCTURED_OPS = {c.OP_NAME: c for c in (
    GenericOp, MapOp, ReduceOp, TransposeOp, CopyOp, FillOp, LinalgMatmulOp, BatchMatmulOp,
    MatvecOp, VecmatOp, DotOp, *LINALG_CONV_OPS.values())}
