"""linalg's data-movement ops, named ops without a written region: ``linalg.transpose``,
``linalg.broadcast``, ``linalg.copy`` and ``linalg.fill`` (see
:mod:`polyopt.affine.dialects.linalg`)."""

from __future__ import annotations

from typing import Sequence

from ..affine_expr import AffineMap, dim
from ..attributes import DenseArrayAttr
from ..diagnostics import ParseError
from ..ir import Value, register_op
from ..types import MemRefType, VectorType, i64
from .linalg import (CAST_ATTRS, _check_cast_attr, _custom_error, _element_type, _merge_attrs,
                     _NamedOp, _parse_i64_list_keyword, _parse_ins_outs, _parse_legacy,
                     _print_i64_list_keyword, _print_ins_outs, _rank, _reject_tensor_results,
                     _reject_tensors, _verify_cast_attr, _yield_type_error, build_cast,
                     cast_op_name)


class _OneInputOp(_NamedOp):
    """``linalg.<op> ins(%x : T) outs(%y : U) KEYWORD = [..]``: transpose and broadcast, one
    input, one init and a list of dimensions after them (printed with MLIR's trailing
    space)."""

    KEYWORD = ""

    @property
    def input(self) -> Value:
        return self.operands[0]

    @property
    def init(self) -> Value:
        return self.operands[1]

    def build_payload(self, b, args, loc):
        return [args[0]]

    @classmethod
    def parse_custom(cls, p, loc, name):
        _reject_tensors(p)
        attrs: dict = {}
        ins, outs = _parse_ins_outs(p, name, attrs)
        attrs[cls.KEYWORD] = _parse_i64_list_keyword(p, name, cls.KEYWORD)
        p.skip_ws()
        _merge_attrs(p, attrs, p.parse_optional_attr_dict(), name, p.pos)
        _reject_tensor_results(p)
        if len(ins) != 1 or len(outs) != 1:
            raise _custom_error(p, name, f"expects 1 input and 1 init, got {len(ins)} and "
                                f"{len(outs)}")
        return cls(operands=ins + outs, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(self.OP_NAME)
        _print_ins_outs(p, self.inputs, self.outputs)
        _print_i64_list_keyword(p, self.KEYWORD, self.attributes.get(self.KEYWORD))
        p.print_attr_dict(self.attributes, elide=(self.KEYWORD,))


@register_op
class TransposeOp(_OneInputOp):
    """``linalg.transpose ins(%A : memref<5x7xf64>) outs(%T : memref<7x5xf64>)
    permutation = [1, 0]``: ``init[i0, .., in] = input[...]`` with init dimension k being
    input dimension ``permutation[k]``."""

    OP_NAME = "linalg.transpose"
    KEYWORD = "permutation"

    @classmethod
    def build(cls, input: Value, init: Value, permutation: Sequence[int],
              loc=None) -> "TransposeOp":
        return cls(operands=[input, init],
                   attributes={"permutation": DenseArrayAttr(i64, tuple(permutation))}, loc=loc)

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


@register_op
class BroadcastOp(_OneInputOp):
    """``linalg.broadcast ins(%x : memref<8x32xf32>) outs(%y : memref<8x16x32xf32>)
    dimensions = [1]``: ``init[i0, .., in] = input[...]`` over the init dimensions not in
    ``dimensions`` (the ones the broadcast adds), in order."""

    OP_NAME = "linalg.broadcast"
    KEYWORD = "dimensions"

    @classmethod
    def build(cls, input: Value, init: Value, dimensions: Sequence[int],
              loc=None) -> "BroadcastOp":
        return cls(operands=[input, init],
                   attributes={"dimensions": DenseArrayAttr(i64, tuple(dimensions))}, loc=loc)

    @property
    def dimensions(self) -> tuple[int, ...]:
        a = self.attributes.get("dimensions")
        return tuple(int(v) for v in a.values) if isinstance(a, DenseArrayAttr) else ()

    def _kept(self) -> list[int]:
        """The init dimensions the input's map to, in order."""
        return [d for d in range(_rank(self.init.type)) if d not in self.dimensions]

    @property
    def indexing_maps(self) -> tuple[AffineMap, ...]:
        rank = _rank(self.init.type)
        return (AffineMap.get(rank, 0, tuple(dim(d) for d in self._kept())),
                AffineMap.identity(rank))

    @property
    def iterator_types(self) -> tuple[str, ...]:
        return ("parallel",) * _rank(self.init.type)

    def verify_op(self) -> None:
        """MLIR's BroadcastOp::verify, in its order and words (a dynamic size prints as MLIR's
        kDynamic)."""
        self._verify_no_region()
        if len(self.operands) != 2:
            raise self.error("expects 1 input and 1 init")
        if not isinstance(self.attributes.get("dimensions"), DenseArrayAttr):
            raise self.error("requires attribute 'dimensions'")
        self._verify_operand_kinds()
        ti, to = self.input.type, self.init.type
        dims = self.dimensions
        if ti.rank + len(dims) != to.rank:
            raise self.error(f"input rank plus added dimensions does not match init rank. "
                             f"input rank: {ti.rank}, dimensions size: {len(dims)}, init rank: "
                             f"{to.rank}")
        for k, d in enumerate(dims):
            if not 0 <= d < to.rank:
                raise self.error(f"dimension {k} is out of range. expected range: [0, "
                                 f"{to.rank - 1}], got: {d}")
        if len(set(dims)) != len(dims):      # MLIR reads past the input's shape here
            raise self.error(f"dimensions {list(dims)} name an init dimension twice")

        def size(n):
            return -(1 << 63) if n is None else n
        for k, d in enumerate(self._kept()):
            if ti.shape[k] != to.shape[d]:
                raise self.error(f"input dim {k} should match init dim {d}. input: "
                                 f"{size(ti.shape[k])}, init: {size(to.shape[d])}")
        if ti.element_type != to.element_type:
            raise _yield_type_error(self, to.element_type, ti.element_type)
        self.verify_structured()


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
