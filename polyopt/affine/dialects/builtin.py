"""``builtin.module`` (printed as ``module { ... }``)."""

from __future__ import annotations

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

    def lookup_function(self, name: str):
        from .func import FuncOp
        for op in self.body.ops:
            if isinstance(op, FuncOp) and op.sym_name == name:
                return op
        return None

    @property
    def functions(self):
        from .func import FuncOp
        return [op for op in self.body.ops if isinstance(op, FuncOp)]

    @classmethod
    def parse_custom(cls, p, loc, name) -> "ModuleOp":
        sym = None
        if p.peek("@"):
            sym = p.parse_symbol_name()
        attrs = p.parse_optional_attr_dict_with_keyword()
        region = p.parse_region(isolated=True, allow_block_args=False)
        op = cls(regions=[region], attributes=attrs, loc=loc)
        if sym is not None:
            from ..attributes import StringAttr
            op.attributes["sym_name"] = StringAttr(sym)
        return op

    def print_custom(self, p) -> None:
        p.print("module")
        sym = self.attributes.get("sym_name")
        if sym is not None:
            p.print(f" @{sym.value}")
        p.print_attr_dict(self.attributes, elide=("sym_name",), with_keyword=True)
        p.print(" ")
        _print_module_body(p, self.regions[0])

    def __str__(self) -> str:
        from ..printer import print_module
        return print_module(self)

    def verify_op(self) -> None:
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects one region with one block")
        if self.body.args:
            raise self.error("module body must not have arguments")


def _print_module_body(p, region: Region) -> None:
    p.print("{")
    p.indent += 1
    for op in region.block.ops:
        p.newline()
        p.print_op(op)
    p.indent -= 1
    p.newline()
    p.print("}")
