"""The linalg ops whose payload is a written region: ``linalg.generic`` and its short forms
``linalg.map`` and ``linalg.reduce`` (see :mod:`polyopt.affine.dialects.linalg`)."""

from __future__ import annotations

from typing import Optional, Sequence

from ..affine_expr import AffineMap, dim
from ..attributes import (AffineMapAttr, ArrayAttr, Attribute, DenseArrayAttr, DictAttr, OpaqueAttr,
                          StringAttr)
from ..diagnostics import ParseError
from ..ir import Region, Value, register_op
from ..types import MemRefType, i32
from .linalg import (_ITERATOR_ATTR, ITERATOR_TYPES, TENSOR_MESSAGE, LinalgStructuredOp,
                     _check_maps_attr, _custom_error, _maps_attr, _merge_attrs,
                     _parse_i64_list_keyword, _parse_ins_outs, _parse_long_form_region,
                     _parse_payload_op_name, _print_i64_list_keyword, _print_ins_outs,
                     _print_long_form_region, _print_short_form, _rank, _reject_tensor_results,
                     _reject_tensors, _segment_sizes, _shape_str, _short_form_payload,
                     _short_form_region, maps_attr)

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
        if p.peek("#"):     # an alias of the dictionary (MLIR reads any attribute there)
            trait = p.parse_attribute()
            if not isinstance(trait, DictAttr):
                raise _custom_error(p, name, f"expected a dictionary of the op's attributes, got "
                                    f"{trait}", start)
            attrs = dict(trait.entries)
        elif not p.peek("{"):
            raise p.wrong_token("expected attribute value")
        else:
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
