"""``builtin.module`` (printed as ``module { ... }``, ``module @name attributes {...} {...}``).

A module is a symbol table: the functions (and modules) directly in it have distinct names, and
``func.call`` resolves its callee in the nearest enclosing module.  Modules nest; a file with
several top-level ops is wrapped in an implicit module, as mlir-opt does.
"""

from __future__ import annotations

from ..attributes import StringAttr, SymbolRefAttr
from ..diagnostics import VerifyError
from ..ir import Block, Operation, Region, register_op


@register_op
class ModuleOp(Operation):
    OP_NAME = "builtin.module"

    @classmethod
    def build(cls, loc=None) -> "ModuleOp":
        op = cls(regions=[Region([Block()])], loc=loc)
        return op

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def sym_name(self):
        """``@name`` of ``module @name {...}``, or None."""
        attr = self.attributes.get("sym_name")
        return attr.value if isinstance(attr, StringAttr) else None

    def lookup_function(self, name: str):
        """The ``func.func @name`` of this module's symbol table (not of nested modules)."""
        from .func import FuncOp
        for op in self.body.ops:
            if isinstance(op, FuncOp) and op.sym_name == name:
                return op
        return None

    @property
    def functions(self):
        """The functions directly in this module."""
        from .func import FuncOp
        return [op for op in self.body.ops if isinstance(op, FuncOp)]

    @property
    def nested_modules(self) -> list["ModuleOp"]:
        """The modules directly in this module."""
        return [op for op in self.body.ops if isinstance(op, ModuleOp)]

    def all_functions(self):
        """The functions of this module and of the modules nested in it, outermost first."""
        funcs = list(self.functions)
        for m in self.nested_modules:
            funcs += m.all_functions()
        return funcs

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ModuleOp":
        sym = None
        if p.peek("@"):
            sym = p.parse_symbol_name()
        attrs = p.parse_optional_attr_dict_with_keyword()
        region = p.parse_region(allow_block_args=False)
        op = cls(regions=[region], attributes=attrs, loc=loc)
        if sym is not None:
            op.attributes["sym_name"] = StringAttr(sym)
        return op

    def print_custom(self, p) -> None:
        p.print("module")
        sym = self.attributes.get("sym_name")
        if sym is not None:
            p.print(f" {SymbolRefAttr(sym.value)}")
        p.print_attr_dict(self.attributes, elide=("sym_name",), with_keyword=True)
        p.print(" ")
        _print_module_body(p, self.regions[0])

    def __str__(self) -> str:
        from ..printer import print_module
        return print_module(self)

    def verify_op(self) -> None:
        if len(self.regions) != 1:
            raise self.error("requires one region")
        if self.results:
            raise self.error("requires zero results")
        if self.operands:
            raise self.error("requires zero operands")
        sym = self.attributes.get("sym_name")
        if sym is not None and not isinstance(sym, StringAttr):
            raise self.error("attribute 'sym_name' failed to satisfy constraint: string attribute")
        if len(self.regions[0].blocks) != 1:
            raise self.error("region #0 ('bodyRegion') failed to verify constraint: region with "
                             "1 blocks")
        if self.body.args:
            raise self.error("region should have no arguments")

    def verify_regions(self) -> None:
        """MLIR's ``SymbolTable`` trait, a region rule (checked once the ops inside are): the
        symbols directly in the module have distinct names, then each symbol user nested in
        it (not in a nested module, which checks its own) refers to a valid symbol."""
        seen: dict[str, Operation] = {}
        for op in self.body.ops:
            name = op.attributes.get("sym_name")
            if not isinstance(name, StringAttr):
                continue
            if name.value in seen:
                raise VerifyError(f"redefinition of symbol named '{name.value}'", op.loc)
            seen[name.value] = op
        # MLIR's walkSymbolTable: all ops of a region, then the region pushed last (a call
        # after a loop is checked before the calls in the loop)
        worklist = list(self.regions)
        while worklist:
            region = worklist.pop()
            for op in (op for block in region.blocks for op in block.ops):
                check = getattr(op, "verify_symbol_uses", None)
                if check is not None:
                    check()
                if op.name != "builtin.module":
                    worklist.extend(op.regions)


def _print_module_body(p, region: Region) -> None:
    p.print("{")
    p.indent += 1
    for op in region.block.ops:
        p.newline()
        p.print_op(op)
    p.indent -= 1
    p.newline()
    p.print("}")
