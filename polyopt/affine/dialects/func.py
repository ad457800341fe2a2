"""The func dialect: ``func.func``, ``func.return``, ``func.call``.

The paper's 2020 spellings (``func @f``, ``return``, ``call``) parse to the same ops; a 2020
body-less ``func @f(...)`` declaration becomes ``func.func private`` (MLIR 22 requires
declarations to be private).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import ArrayAttr, DictAttr, StringAttr, SymbolRefAttr, TypeAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Block, Operation, Region, Value, register_op
from ..types import FunctionType, Type

#: The attribute of a ``func.func private`` declaration that stands for a library micro-kernel
#: call (set by :mod:`polyopt.schedules.microkernel_call`; the LLVM lowering defines the
#: declaration as a wrapper of the kernel it names, :mod:`polyopt.codegen.microkernels`).
BLIS_KERNEL_ATTR = "polyopt.blis_kernel"


@register_op
class FuncOp(Operation):
    OP_NAME = "func.func"

    @classmethod
    def build(cls, name: str, function_type: FunctionType, private: bool = False,
              declaration: bool = False, loc=None) -> "FuncOp":
        attrs = {"sym_name": StringAttr(name), "function_type": TypeAttr(function_type)}
        if private:
            attrs["sym_visibility"] = StringAttr("private")
        regions = [Region()] if declaration else [Region([Block(function_type.inputs)])]
        return cls(attributes=attrs, regions=regions, loc=loc)

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"].value

    @property
    def function_type(self) -> FunctionType:
        return self.attributes["function_type"].value

    @property
    def is_declaration(self) -> bool:
        return self.regions[0].empty

    @property
    def is_private(self) -> bool:
        vis = self.attributes.get("sym_visibility")
        return vis is not None and vis.value == "private"

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def arg_attrs(self, i: int) -> dict:
        """The attributes of argument ``i`` (``%a: memref<?xf32> {llvm.noalias}``)."""
        return _entry_attrs(self.attributes.get("arg_attrs"), i)

    def res_attrs(self, i: int) -> dict:
        """The attributes of result ``i`` (``-> (f32 {llvm.noundef})``)."""
        return _entry_attrs(self.attributes.get("res_attrs"), i)

    @classmethod
    def parse_custom(cls, p, loc, name) -> "FuncOp":
        legacy = name == "func"
        visibility = None
        for keyword in ("private", "public", "nested"):
            if p.optional_keyword(keyword):
                visibility = keyword
                break
        sym = p.parse_symbol_name()
        # arguments: either all named (%a: t {attrs}) or all types (declaration)
        p.skip_ws()
        args: list[tuple[str, Type, int]] = []
        types: list[Type] = []
        arg_attrs: list[dict] = []
        named = None

        def arg():
            nonlocal named
            p.skip_ws()
            start = p.pos
            if p.peek("%"):
                if named is False:
                    raise p.error("expected type instead of SSA identifier")
                named = True
                an, _ = p.parse_ssa_name()
                p.check_argument_name(an, None)
                p.expect(":", "after argument name")
                t = p.parse_type()
                args.append((an, t, start))
                types.append(t)
            else:
                if named is True:
                    raise p.error("expected SSA identifier")
                named = False
                types.append(p.parse_type())
            arg_attrs.append(p.parse_optional_attr_dict())
            p.optional_location()
        p.parse_comma_separated("(", ")", arg)
        results: list[Type] = []
        res_attrs: list[dict] = []
        if p.optional("->"):
            p.skip_ws()
            if p.peek("("):
                def res():
                    t = p.parse_type()
                    res_attrs.append(p.parse_optional_attr_dict())
                    return t
                results = p.parse_comma_separated("(", ")", res)
            else:
                results = [p.parse_type()]
        p.skip_ws()
        attrs_at = p.pos
        attrs = p.parse_optional_attr_dict_with_keyword()
        for inferred in ("sym_name", "function_type", "sym_visibility", "arg_attrs",
                         "res_attrs"):
            if inferred in attrs:
                raise p.error(f"custom op 'func.func' '{inferred}' is an inferred attribute and "
                              "should not be specified in the explicit attribute dictionary",
                              attrs_at)
        ftype = FunctionType(tuple(types), tuple(results))
        attrs["sym_name"] = StringAttr(sym)
        attrs["function_type"] = TypeAttr(ftype)
        if any(arg_attrs):
            attrs["arg_attrs"] = _arg_attrs_attr(arg_attrs)
        if any(res_attrs):
            attrs["res_attrs"] = _arg_attrs_attr(res_attrs)
        if p.peek("{") and named is False:
            # ``func.func @f(f32) { ^bb0(%a: f32): ... }``: the entry block names them
            body_at = p.pos
            region = p.parse_region()
            entry = [a.type for a in region.blocks[0].args] if region.blocks else []
            if len(entry) != len(types):
                raise p.error(f"entry block must have {len(types)} arguments to match function "
                              f"signature", body_at)
            for k, (e, t) in enumerate(zip(entry, types)):
                if e != t:
                    raise p.error(f"type of entry block argument #{k}('{e}') must match the "
                                  f"type of the corresponding argument in function "
                                  f"signature('{t}')", body_at)
        elif p.peek("{"):
            p.skip_ws()
            body_at = p.pos
            block = Block(types)
            region = p.parse_region(entry_args=[(n, a) for (n, _, _), a in zip(args, block.args)],
                                    allow_empty=not types)
            if not region.blocks:       # `{}` without arguments: upstream's region has no block
                raise ParseError("custom op 'func.func' expected non-empty function body",
                                 p.loc(body_at))
        else:
            region = Region()
            if legacy:
                visibility = "private"
        if visibility is not None:
            attrs["sym_visibility"] = StringAttr(visibility)
        return cls(attributes=attrs, regions=[region], loc=loc)

    def print_custom(self, p) -> None:
        p.print("func.func ")
        vis = self.attributes.get("sym_visibility")
        if isinstance(vis, StringAttr):
            p.print(f"{vis.value} ")
        p.print(f"{SymbolRefAttr(self.sym_name)}(")
        ft = self.function_type
        parts = []
        for i, t in enumerate(ft.inputs):
            extra = _attr_dict_suffix(p, self.arg_attrs(i))
            if self.is_declaration:
                parts.append(p.type_str(t) + extra)
            else:
                parts.append(f"{p.value_name(self.body.args[i])}: {p.type_str(t)}{extra}")
        p.print(", ".join(parts) + ")")
        results = [p.type_str(t) + _attr_dict_suffix(p, self.res_attrs(i))
                   for i, t in enumerate(ft.results)]
        if len(results) == 1 and not isinstance(ft.results[0], FunctionType) \
                and not self.res_attrs(0):
            p.print(" -> " + results[0])
        elif results:
            p.print(" -> (" + ", ".join(results) + ")")
        p.print_attr_dict(self.attributes, elide=("sym_name", "function_type", "sym_visibility",
                                                  "arg_attrs", "res_attrs"), with_keyword=True)
        if not self.is_declaration:
            p.print(" ")
            p.print_region(self.regions[0])

    def verify_op(self) -> None:
        # what the generic form may get wrong, with MLIR's messages
        _require(self, results=0, operands=0, regions=1)
        _require_attr(self, "function_type", lambda a: isinstance(a, TypeAttr) and
                      isinstance(a.value, FunctionType), "type attribute of function type")
        _require_attr(self, "sym_name", lambda a: isinstance(a, StringAttr), "string attribute")
        _require_attr(self, "sym_visibility", lambda a: isinstance(a, StringAttr),
                      "string attribute", optional=True)
        ft = self.function_type
        parent = self.parent_op
        if parent is not None and parent.name != "builtin.module":
            raise self.error("symbol's parent must have the SymbolTable trait")
        for key, what, count in (("arg_attrs", "arguments", len(ft.inputs)),
                                 ("res_attrs", "results", len(ft.results))):
            arr = self.attributes.get(key)
            if arr is None:
                continue
            if not isinstance(arr, ArrayAttr) or \
                    not all(isinstance(d, DictAttr) for d in arr.elements):
                raise self.error(f"expects '{key}' to be an array of dictionaries")
            if len(arr.elements) != count:
                raise self.error(f"expects {what} attribute array to have the same number of "
                                 f"elements as the number of function {what}, got "
                                 f"{len(arr.elements)}, but expected {count}")
            if any("." not in k for d in arr.elements for k, _ in d.entries):
                raise self.error(f"{what} may only have dialect attributes")
        if self.is_declaration:
            vis = self.attributes.get("sym_visibility")
            if vis is None or getattr(vis, "value", None) == "public":
                raise self.error("symbol declaration cannot have public visibility")
            return
        block = self.body
        if [a.type for a in block.args] != list(ft.inputs):
            raise self.error("type of entry block arguments must match the function signature")
        # the body's terminator is checked by the verifier when it leaves the block, after
        # the ops in it, as mlir-opt-22 does ("block with no terminator, has ...")


def _require(op: Operation, results: int, operands: Optional[int] = None,
             regions: int = 0) -> None:
    """The counts an op's definition fixes (checked for the generic form)."""
    if len(op.regions) != regions:
        raise op.error("requires one region" if regions == 1 else f"requires {regions} regions")
    if len(op.results) != results:
        raise op.error("requires zero results" if results == 0 else
                       f"requires {results} results")
    if operands is not None and len(op.operands) != operands:
        raise op.error("requires zero operands" if operands == 0 else
                       f"requires {operands} operands")


def _require_attr(op: Operation, name: str, ok, what: str, optional: bool = False) -> None:
    attr = op.attributes.get(name)
    if attr is None:
        if not optional:
            raise op.error(f"requires attribute '{name}'")
    elif not ok(attr):
        raise op.error(f"attribute '{name}' failed to satisfy constraint: {what}")


def _entry_attrs(arr, i: int) -> dict:
    if isinstance(arr, ArrayAttr) and i < len(arr.elements) and \
            isinstance(arr.elements[i], DictAttr):
        return dict(arr.elements[i].entries)
    return {}


def _attr_dict_suffix(p, attrs: dict) -> str:
    return " " + DictAttr(tuple(sorted(attrs.items()))).to_str(p.alias) if attrs else ""


def _arg_attrs_attr(arg_attrs: Sequence[dict]):
    return ArrayAttr(tuple(DictAttr(tuple(d.items())) for d in arg_attrs))


@register_op
class ReturnOp(Operation):
    OP_NAME = "func.return"

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ReturnOp":
        operands = p.parse_operand_list()
        if operands:
            p.expect(":")
            types = p.parse_type_list()
            if len(types) != len(operands):
                raise p.error(f"{len(operands)} operands present, but expected {len(types)}")
            for v, t in zip(operands, types):
                p.check_type(v, t)
        return cls(operands=operands, loc=loc)

    def print_custom(self, p) -> None:
        p.print("return")
        if self.operands:
            p.print(" ")
            p.print_operands(self.operands)
            p.print(" : ")
            p.print_types(v.type for v in self.operands)

    def verify_op(self) -> None:
        _require(self, results=0)
        func = self.parent_op
        if not isinstance(func, FuncOp):
            raise self.error("expects parent op 'func.func'")
        # the Terminator trait, after HasParent and before ReturnOp::verify in MLIR
        if self.parent.ops[-1] is not self:
            raise self.error("must be the last operation in the parent block")
        results = func.function_type.results
        if len(results) != len(self.operands):
            raise self.error(f"has {len(self.operands)} operands, but enclosing function "
                             f"(@{func.sym_name}) returns {len(results)}")
        for i, (v, t) in enumerate(zip(self.operands, results)):
            if v.type != t:
                raise VerifyError(f"type of return operand {i} ('{v.type}') doesn't match "
                                  f"function result type ('{t}') in function @{func.sym_name}",
                                  self.loc)     # MLIR's emitError: no op-name prefix


@register_op
class CallOp(Operation):
    OP_NAME = "func.call"

    @classmethod
    def build(cls, callee: str, operands: Sequence[Value], result_types: Sequence[Type], loc=None):
        return cls(operands=operands, result_types=result_types,
                   attributes={"callee": SymbolRefAttr(callee)}, loc=loc)

    @property
    def callee(self) -> str:
        return self.attributes["callee"].name

    @classmethod
    def parse_custom(cls, p, loc, name) -> "CallOp":
        callee = p.parse_symbol_name()
        operands = p.parse_operand_list("paren")
        attrs = p.parse_optional_attr_dict()
        p.expect(":")
        p.skip_ws()
        start = p.pos
        ft = p.parse_type()
        if not isinstance(ft, FunctionType):
            raise p.error("expected function type", start)
        if len(ft.inputs) != len(operands):
            raise p.error(f"expected {len(ft.inputs)} operands for call, got {len(operands)}", start)
        for v, t in zip(operands, ft.inputs):
            p.check_type(v, t, start)
        attrs["callee"] = SymbolRefAttr(callee)
        return cls(operands=operands, result_types=ft.results, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        # as mlir-opt: the 'func.' prefix is elided only directly in a func.func body (its
        # default dialect), not inside the regions of other ops such as affine.for
        owner = self.parent_op
        prefix = "" if owner is not None and owner.name == "func.func" else "func."
        p.print(f"{prefix}call {self.attributes['callee']}(")
        p.print_operands(self.operands)
        p.print(")")
        p.print_attr_dict(self.attributes, elide=("callee",))
        ft = FunctionType(tuple(v.type for v in self.operands), self.result_types)
        p.print(" : " + p.type_str(ft))

    def verify_op(self) -> None:
        _require_attr(self, "callee", lambda a: isinstance(a, SymbolRefAttr),
                      "flat symbol reference attribute")

    def verify_symbol_uses(self) -> None:
        """MLIR's ``SymbolUserOpInterface``: run by the enclosing module once everything in it
        is verified (so an error inside a function comes before a bad callee)."""
        module = self.parent_op
        while module is not None and module.name != "builtin.module":
            module = module.parent_op
        if module is None:
            return
        callee = module.lookup_function(self.callee)
        if callee is None:
            raise self.error(f"'{self.callee}' does not reference a valid function")
        ft = callee.function_type
        if len(ft.inputs) != len(self.operands):
            raise self.error("incorrect number of operands for callee")
        for i, (v, t) in enumerate(zip(self.operands, ft.inputs)):
            if v.type != t:
                raise self.error(f"operand type mismatch: expected operand type '{t}', but "
                                 f"provided '{v.type}' for operand number {i}")
        if len(ft.results) != len(self.result_types):
            raise self.error("incorrect number of results for callee")
        for i, (t, want) in enumerate(zip(self.result_types, ft.results)):
            if t != want:     # mlir-opt's notes list both type lists
                raise self.error(f"result type mismatch at index {i}")
