"""MLIR's ``transform`` dialect, the ops polyopt's scripts use (upstream syntax), and the
``transform.polyopt.*`` extension for the steps upstream has no op for.

A script is a module holding ``@__transform_main``; its ops work on *handles*, values of type
``!transform.any_op`` (or ``!transform.op<"affine.for">``) that stand for lists of payload ops::

    module attributes {transform.with_named_sequence} {
      transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
        %mm = transform.structured.match ops{["hop.matmul"]} in %root
          : (!transform.any_op) -> !transform.any_op
        transform.polyopt.blis_tile %mm {M_C = 64, K_C = 256, M_R = 8, N_R = 24} : !transform.any_op
        transform.polyopt.pack %mm : !transform.any_op
        %nest = transform.polyopt.expand %mm : (!transform.any_op) -> !transform.any_op
        transform.yield
      }
    }

Upstream ops (syntax as ``mlir-opt-22`` prints them): ``transform.named_sequence``,
``transform.yield``, ``transform.structured.match`` (``ops{[...]}``, ``attributes{...}``),
``transform.split_handle``, ``transform.apply_registered_pass "NAME" [with options = {...}]
to %h``, ``transform.structured.tile_using_for %h tile_sizes [...]``, ``transform.loop.unroll``
and ``transform.loop.unroll_and_jam`` (``{factor = N}``).
The extension's ops share one form, ``[%r =] transform.polyopt.STEP %h [{attrs}] : TYPE`` (``TYPE``
is the handle's type, or ``(T) -> T`` with a result); :data:`POLYOPT_STEPS` lists them.

This module only parses, prints and verifies the ops; :mod:`polyopt.transform.interpreter`
applies them to payload IR.
"""

from __future__ import annotations

from ..attributes import ArrayAttr, DenseArrayAttr, DictAttr, StringAttr, TypeAttr
from ..ir import OP_REGISTRY, Block, Operation, register_op
from ..types import FunctionType, TransformHandleType, i64

#: ``transform.polyopt.STEP``: what each step does (the interpreter's documentation) and
#: whether it returns a new handle (``expand`` and ``parallelize`` replace their payload)
POLYOPT_STEPS = {
    "blis_tile": "the BLIS tiling of a product: M_C, K_C, N_C, M_R, N_R, K_U, register_form, "
                 "l2_block attributes (absent: the model's), or a schedule = affine_map",
    "pack": "pack A and B into the BLIS buffers (the register form decides their layouts)",
    "unroll_and_jam": "unroll-and-jam the register tile (K_U along k)",
    "scalar_replace": "a product: keep C's register tile in registers across k; a loop nest: "
                      "MLIR's -affine-scalrep",
    "vectorize": "a product: vectorize the register tile; an affine.for: vectorize it by "
                 "width = N lanes (default: the target's), checked with ISL",
    "micro_kernel": "call a BLIS micro-kernel per register tile (kernel = \"name\": optional)",
    "parallelize": "a product: its BLIS nest on threads = N; an affine.for: affine.parallel, "
                   "checked with ISL",
    "schedule": "a top-level affine.for nest or a function: apply schedule = affine_map (one "
                "statement) or {S0 = affine_map<...>, ...} to its statements, checked with ISL",
    "expand": "build the product's loop nest with the steps given so far; returns the nest",
}


def _handle_types(op: Operation, types) -> None:
    for t in types:
        if not isinstance(t, TransformHandleType):
            raise op.error(f"expects transform handles (!transform.any_op or "
                           f"!transform.op<\"...\">), got '{t}'")


def _parse_signature(p, op_name: str, n_operands: int):
    """``: T`` (operands only) or ``: (T, ...) -> T`` / ``-> (T, ...)``: the operand and
    result types."""
    p.expect(":")
    t = p.parse_type()
    if isinstance(t, FunctionType):
        if len(t.inputs) != n_operands:
            raise p.error(f"'{op_name}' expects {n_operands} operand type(s), got "
                          f"{len(t.inputs)}")
        return list(t.inputs), list(t.results)
    return [t] * n_operands, []


def _print_signature(p, op: Operation) -> None:
    ins = [p.type_str(v.type) for v in op.operands]
    outs = [p.type_str(r.type) for r in op.results]
    if not outs:
        p.print(" : " + ", ".join(ins))
        return
    res = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    p.print(f" : ({', '.join(ins)}) -> {res}")


def _check_operand_types(p, operands, types) -> None:
    for v, t in zip(operands, types):
        p.check_type(v, t)


class _OnHandleOp(Operation):
    """``[%r =] NAME %h [{attrs}] : T`` or ``: (T) -> (T, ...)``: the form of the ops that take
    one handle."""

    @classmethod
    def parse_custom(cls, p, loc, name):
        target = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        ins, outs = _parse_signature(p, name, 1)
        _check_operand_types(p, [target], ins)
        return cls(operands=[target], result_types=outs, attributes=attrs, loc=loc, name=name)

    def print_custom(self, p) -> None:
        p.print(self.name + " ")
        p.print_operands(self.operands)
        p.print_attr_dict(self.attributes)
        _print_signature(p, self)

    def verify_op(self) -> None:
        _handle_types(self, [v.type for v in self.operands] + [r.type for r in self.results])


@register_op
class NamedSequenceOp(Operation):
    """``transform.named_sequence @__transform_main(%root: !transform.any_op
    {transform.readonly}) { ... }``: the script's entry (MLIR's ``NamedSequenceOp``)."""

    OP_NAME = "transform.named_sequence"

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"].value

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    @classmethod
    def parse_custom(cls, p, loc, name):
        sym = p.parse_symbol_name()
        args, arg_attrs = [], []

        def arg():
            p.skip_ws()
            start = p.pos
            an, _ = p.parse_ssa_name()
            p.expect(":", "after argument name")
            args.append((an, p.parse_type(), start))
            arg_attrs.append(p.parse_optional_attr_dict())
        p.parse_comma_separated("(", ")", arg)
        results = []
        if p.optional("->"):
            p.skip_ws()
            results = p.parse_comma_separated("(", ")", p.parse_type) if p.peek("(") \
                else [p.parse_type()]
        attrs = p.parse_optional_attr_dict_with_keyword()
        types = [t for _, t, _ in args]
        attrs["sym_name"] = StringAttr(sym)
        attrs["function_type"] = TypeAttr(FunctionType(tuple(types), tuple(results)))
        if any(arg_attrs):
            attrs["arg_attrs"] = ArrayAttr(tuple(DictAttr(tuple(a.items())) for a in arg_attrs))
        block = Block(types)
        region = p.parse_region(entry_args=[(n, a) for (n, _, _), a in zip(args, block.args)])
        if not region.blocks:
            region.add_block(block)
        return cls(attributes=attrs, regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print(f"transform.named_sequence @{self.sym_name}(")
        arg_attrs = self.attributes.get("arg_attrs")
        parts = []
        for i, a in enumerate(self.body.args):
            extra = ""
            if isinstance(arg_attrs, ArrayAttr) and arg_attrs.elements[i].entries:
                extra = " " + p.attr_str(arg_attrs.elements[i])
            parts.append(f"{p.value_name(a)}: {p.type_str(a.type)}{extra}")
        p.print(", ".join(parts) + ")")
        results = self.attributes["function_type"].value.results
        if results:
            p.print(" -> (" + ", ".join(p.type_str(t) for t in results) + ")")
        p.print_attr_dict(self.attributes, elide=("sym_name", "function_type", "arg_attrs"),
                          with_keyword=True)
        p.print(" ")
        p.print_region(self.regions[0])

    def verify_op(self) -> None:
        if len(self.regions) != 1 or not self.regions[0].blocks:
            raise self.error("expects a body")
        _handle_types(self, [a.type for a in self.body.args])


@register_op
class YieldOp(Operation):
    """``transform.yield``: the end of a sequence."""

    OP_NAME = "transform.yield"

    @classmethod
    def parse_custom(cls, p, loc, name):
        operands = p.parse_operand_list()
        if operands:
            p.expect(":")
            _check_operand_types(p, operands, p.parse_type_list())
        return cls(operands=operands, loc=loc)

    def print_custom(self, p) -> None:
        p.print("transform.yield")
        if self.operands:
            p.print(" ")
            p.print_operands(self.operands)
            p.print(" : " + ", ".join(p.type_str(v.type) for v in self.operands))


@register_op
class MatchOp(Operation):
    """``%h = transform.structured.match ops{["hop.matmul"]} attributes{tag} in %root :
    (!transform.any_op) -> !transform.any_op``: the ops nested in ``%root``'s payload (not the
    payload itself) with one of the names and all of the attributes, in pre-order."""

    OP_NAME = "transform.structured.match"

    @property
    def op_names(self) -> tuple[str, ...]:
        a = self.attributes.get("ops")
        return tuple(e.value for e in a.elements) if isinstance(a, ArrayAttr) else ()

    @property
    def op_attrs(self) -> dict:
        a = self.attributes.get("op_attrs")
        return dict(a.entries) if isinstance(a, DictAttr) else {}

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = {}
        if p.optional_keyword("ops"):
            p.expect("{")
            names = p.parse_comma_separated("[", "]", p.parse_string)
            p.expect("}")
            attrs["ops"] = ArrayAttr(tuple(StringAttr(n) for n in names))
        if p.optional_keyword("interface"):
            raise p.error("transform.structured.match: 'interface{...}' is not supported by "
                          "polyopt; match by ops{[...]} and attributes{...}")
        if p.optional_keyword("attributes"):
            attrs["op_attrs"] = DictAttr(tuple(p.parse_optional_attr_dict().items()))
        p.expect_keyword("in")
        target = p.parse_operand()
        ins, outs = _parse_signature(p, name, 1)
        _check_operand_types(p, [target], ins)
        return cls(operands=[target], result_types=outs or [ins[0]], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("transform.structured.match")
        if self.op_names:
            p.print(" ops{[" + ", ".join(f'"{n}"' for n in self.op_names) + "]}")
        if self.op_attrs:
            p.print(" attributes")
            p.print_attr_dict(self.op_attrs)
        p.print(" in ")
        p.print_operands(self.operands)
        _print_signature(p, self)

    def verify_op(self) -> None:
        _handle_types(self, [v.type for v in self.operands] + [r.type for r in self.results])
        if len(self.operands) != 1 or len(self.results) != 1:
            raise self.error("expects one target and one result")


@register_op
class SplitHandleOp(_OnHandleOp):
    """``%a, %b = transform.split_handle %h : (!transform.any_op) -> (!transform.any_op,
    !transform.any_op)``: one handle per payload op (their number must match)."""

    OP_NAME = "transform.split_handle"


@register_op
class ApplyRegisteredPassOp(Operation):
    """``%m2 = transform.apply_registered_pass "hopt-expand" with options = {"copy" = true}
    to %m : (!transform.any_op) -> !transform.any_op``: run a registered pass
    (:mod:`polyopt.passes`) on the payload; it consumes the handle and returns one to the same
    op."""

    OP_NAME = "transform.apply_registered_pass"

    @property
    def pass_name(self) -> str:
        return self.attributes["pass_name"].value

    @property
    def options(self) -> dict:
        a = self.attributes.get("options")
        return dict(a.entries) if isinstance(a, DictAttr) else {}

    @classmethod
    def parse_custom(cls, p, loc, name):
        attrs = {"pass_name": StringAttr(p.parse_string())}
        if p.optional_keyword("with"):
            p.expect_keyword("options")
            p.expect("=")
            attrs["options"] = DictAttr(tuple(p.parse_optional_attr_dict().items()))
        p.expect_keyword("to")
        target = p.parse_operand()
        ins, outs = _parse_signature(p, name, 1)
        _check_operand_types(p, [target], ins)
        return cls(operands=[target], result_types=outs or [ins[0]], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print(f'transform.apply_registered_pass "{self.pass_name}"')
        if self.options:
            p.print(" with options = {" + ", ".join(f'"{k}" = {p.attr_str(v)}'
                                                    for k, v in sorted(self.options.items()))
                    + "}")
        p.print(" to ")
        p.print_operands(self.operands)
        _print_signature(p, self)


class _FactorOp(_OnHandleOp):
    """``transform.loop.X %h {factor = N} : T``."""

    @property
    def factor(self) -> int:
        a = self.attributes.get("factor")
        return int(a.value) if a is not None else 0

    def verify_op(self) -> None:
        super().verify_op()
        if self.factor <= 0:
            raise self.error("requires attribute 'factor' (a positive integer)")


@register_op
class LoopUnrollOp(_FactorOp):
    OP_NAME = "transform.loop.unroll"


@register_op
class LoopUnrollAndJamOp(_FactorOp):
    OP_NAME = "transform.loop.unroll_and_jam"


@register_op
class TileUsingForOp(Operation):
    """``%tiled, %loops:2 = transform.structured.tile_using_for %op tile_sizes [32, 0, 16] :
    (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)``: tile
    the loops of a linalg op, or of a loop band, by these sizes (0: not tiled); one handle to
    the tiled op, then one per tile loop."""

    OP_NAME = "transform.structured.tile_using_for"

    @property
    def tile_sizes(self) -> tuple[int, ...]:
        a = self.attributes.get("static_sizes")
        return tuple(a.values) if a is not None else ()

    @classmethod
    def parse_custom(cls, p, loc, name):
        target = p.parse_operand()
        p.expect_keyword("tile_sizes")
        sizes = p.parse_comma_separated("[", "]", lambda: p.parse_integer("tile size"))
        attrs = p.parse_optional_attr_dict()
        attrs["static_sizes"] = DenseArrayAttr(i64, tuple(sizes))
        ins, outs = _parse_signature(p, name, 1)
        _check_operand_types(p, [target], ins)
        loops = sum(1 for s in sizes if s)
        if len(outs) != 1 + loops:
            raise p.error(f"expected {1 + loops} result type(s) (the tiled op and one per "
                          f"non-zero tile size), got {len(outs)}")
        return cls(operands=[target], result_types=outs, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("transform.structured.tile_using_for ")
        p.print_operands(self.operands)
        p.print(" tile_sizes [" + ", ".join(map(str, self.tile_sizes)) + "]")
        p.print_attr_dict(self.attributes, elide=("static_sizes",))
        _print_signature(p, self)

    def verify_op(self) -> None:
        _handle_types(self, [v.type for v in self.operands] + [r.type for r in self.results])
        if any(s < 0 for s in self.tile_sizes):
            raise self.error("expects non-negative tile sizes")


@register_op
class PolyoptStepOp(_OnHandleOp):
    """``[%r =] transform.polyopt.STEP %h [{attrs}] : T`` (see :data:`POLYOPT_STEPS`)."""

    OP_NAME = "transform.polyopt"

    @property
    def step(self) -> str:
        return self.name.split(".", 2)[2]


for _step in POLYOPT_STEPS:
    OP_REGISTRY[f"transform.polyopt.{_step}"] = PolyoptStepOp
