"""Module -> MLIR text, in the canonical form ``mlir-opt-22`` prints.

SSA names follow mlir-opt: function arguments and region arguments are ``%argN`` (numbered
per function), results are ``%N`` unless the op suggests a name (``%c0``, ``%cst``, ``%alloc``),
with ``_K`` suffixes to keep names unique.  Affine maps and integer sets used as attributes or
memref layouts are printed as ``#map``/``#mapN``/``#set`` aliases at the top, numbered in order
of first use.  Ops without a custom form (``hop.*``, unknown dialects) print in generic form, so
``mlir-opt-22 --allow-unregistered-dialect`` accepts everything printed here.

Op classes use the API below (``print``, ``print_operand``, ``print_type``, ``print_region``...),
the counterpart of MLIR's ``OpAsmPrinter``.
"""

from __future__ import annotations

import io
from typing import Iterable, Optional, Sequence

from .affine_expr import AffineMap, IntegerSet
from .attributes import Attribute, escape_string, format_named_attr
from .ir import Block, Operation, Region, Value
from .op_properties import inherent_names, split_properties
from .types import FunctionType, Type


class Printer:
    def __init__(self, generic: bool = False, debuginfo: bool = False):
        self.out = io.StringIO()
        self.indent = 0
        self.generic = generic
        self.debuginfo = debuginfo
        self.names: dict[Value, str] = {}
        self.used_names: set[str] = set()
        self.next_value = 0
        self.next_arg = 0
        self.next_conflict = 0
        self.aliases: dict[object, str] = {}   # AffineMap/IntegerSet -> alias name
        self.alias_order: list[object] = []
        # the block numbers of the regions being printed (id of region -> id of block -> N),
        # and the numbers of each block's predecessors, one per edge: computed once per
        # region, as a function of thousands of blocks names thousands of successors
        self._block_numbers: dict[int, dict[int, int]] = {}
        self._predecessors: dict[int, dict[int, list[int]]] = {}

    # -- raw output -----------------------------------------------------------------------
    def print(self, *parts: str) -> None:
        for p in parts:
            self.out.write(p)

    def newline(self) -> None:
        self.out.write("\n" + "  " * self.indent)

    # -- names ----------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        name = base
        while name in self.used_names:
            name = f"{base}_{self.next_conflict}"
            self.next_conflict += 1
        self.used_names.add(name)
        return name

    def _reset_names(self) -> None:
        self.used_names = set()
        self.next_value = 0
        self.next_arg = 0
        self.next_conflict = 0

    def name_region_args(self, block: Block) -> None:
        for a in block.args:
            if a not in self.names:
                self.names[a] = self._unique(f"arg{self.next_arg}")
                self.next_arg += 1

    def _next_number(self) -> str:
        while str(self.next_value) in self.used_names:
            self.next_value += 1
        name = str(self.next_value)
        self.used_names.add(name)
        self.next_value += 1
        return name

    def name_results(self, op: Operation) -> None:
        if not op.results:
            return
        hint = op.result_name_hint() if not self.generic else None
        if isinstance(hint, list):  # one name per result (`%sum, %overflow = ...`), or per
            groups = []             # group of results: ("sizes", 2) is `%sizes:2`, `%sizes#1`
            results = iter(op.results)
            for h in hint:
                name, count = h if isinstance(h, tuple) else (h, 1)
                if count == 0:
                    continue
                name = self._unique(name)
                groups.append((name, count))
                for i in range(count):
                    self.names[next(results)] = name if count == 1 else f"{name}#{i}"
            if any(count > 1 for _, count in groups):
                self.result_groups = getattr(self, "result_groups", {})
                self.result_groups[op] = groups
            return
        name = self._unique(hint) if hint is not None else self._next_number()
        if len(op.results) == 1:
            self.names[op.results[0]] = name
        else:
            for i, r in enumerate(op.results):
                self.names[r] = f"{name}#{i}"
            self.group_names = getattr(self, "group_names", {})
            self.group_names[op] = name

    def _assign_names(self, op: Operation, path: Optional[set] = None,
                      full: Optional[Operation] = None) -> None:
        """Name the values in ``op``'s regions as MLIR's SSANameState does: the block arguments
        and results of a whole region first, then the regions nested in its ops, each starting
        from the counters and names its enclosing region reached (also inside a func.func:
        ``%0`` at module level makes the function's first value ``%1``); sibling regions do
        not see each other's names.

        With ``path`` (a set of op ids), only the regions of those ops are entered, down to
        ``full``, whose regions are named entirely (for :func:`value_namer`).
        """
        start = (self.next_value, self.next_arg, self.next_conflict, self.used_names)
        hints_of = getattr(op, "block_arg_name_hints", None) if not self.generic else None
        for region in op.regions:
            self.next_value, self.next_arg, self.next_conflict = start[:3]
            self.used_names = set(start[3])
            hints = hints_of(region) if hints_of is not None else None
            for bi, block in enumerate(region.blocks):
                if hints and bi == 0:   # OpAsmOpInterface's argument names
                    for a, hint in zip(block.args, hints):
                        self.names[a] = self._unique(hint)
                if bi == 0:
                    self.name_region_args(block)
                else:   # the arguments of other blocks are numbered as values (``^bb2(%3: i32)``)
                    for a in block.args:
                        self.names[a] = self._next_number()
                for inner in block.ops:
                    self.name_results(inner)
            level = (self.next_value, self.next_arg, self.next_conflict, self.used_names)
            for block in region.blocks:
                for inner in block.ops:
                    if not inner.regions or path is not None and id(inner) not in path:
                        continue
                    self.next_value, self.next_arg, self.next_conflict = level[:3]
                    self.used_names = set(level[3])
                    self._assign_names(inner, None if inner is full else path, full)
            self.next_value, self.next_arg, self.next_conflict, self.used_names = level

    def _assign_unique_names(self, op: Operation) -> None:
        """Name the values in ``op``'s regions as MLIR's SSANameState does for the generic form,
        which implies unique SSA ids: the counters run on across regions instead of restarting
        at each, and the regions are named from a stack (the last region pushed first), so
        the last function of a module gets ``%arg0``."""
        stack = list(op.regions)
        while stack:
            region = stack.pop()
            for bi, block in enumerate(region.blocks):
                if bi == 0:
                    self.name_region_args(block)
                else:
                    for a in block.args:
                        self.names[a] = self._next_number()
                for inner in block.ops:
                    self.name_results(inner)
            stack.extend(r for block in region.blocks for inner in block.ops
                         for r in inner.regions)

    def collect_generic_aliases(self, op: Operation) -> None:
        """Number the ``#map``/``#set`` aliases in the order MLIR's alias initializer meets them
        in the generic form: an op's regions (block argument types, then the ops), then its
        operand and result types, its attribute dictionary and last its properties."""
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    self.type_str(a.type)
                for inner in block.ops:
                    self.collect_generic_aliases(inner)
        for t in [v.type for v in op.operands] + [r.type for r in op.results]:
            self.type_str(t)
        properties, attributes = generic_attribute_split(op)
        if inherent_names(op.name) is None:
            properties = {}
        for a in [*attributes.values(), *properties.values()]:
            self.attr_str(a)

    def value_name(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            return "%<<UNKNOWN SSA VALUE>>"
        return "%" + name

    # -- aliases --------------------------------------------------------------------------
    def alias(self, value: AffineMap | IntegerSet) -> str:
        name = self.aliases.get(value)
        if name is None:
            base = "map" if isinstance(value, AffineMap) else "set"
            k = sum(1 for v in self.alias_order if isinstance(v, type(value)))
            name = "#" + base + (str(k) if k else "")
            self.aliases[value] = name
            self.alias_order.append(value)
        return name

    # -- pieces ops print -----------------------------------------------------------------
    def print_operand(self, v: Value) -> None:
        self.print(self.value_name(v))

    def print_operands(self, values: Iterable[Value]) -> None:
        self.print(", ".join(self.value_name(v) for v in values))

    def type_str(self, t: Type) -> str:
        return t.to_str(self.alias)

    def print_type(self, t: Type) -> None:
        self.print(self.type_str(t))

    def print_types(self, types: Iterable[Type]) -> None:
        self.print(", ".join(self.type_str(t) for t in types))

    def attr_str(self, a: Attribute) -> str:
        return a.to_str(self.alias)

    def print_attr(self, a: Attribute) -> None:
        self.print(self.attr_str(a))

    def print_attr_dict(self, attrs: dict[str, Attribute], elide: Sequence[str] = (),
                        with_keyword: bool = False) -> None:
        # MLIR keeps attribute dictionaries sorted by name
        items = sorted((k, v) for k, v in attrs.items() if k not in elide)
        if not items:
            return
        if with_keyword:
            self.print(" attributes")
        self.print(" {" + ", ".join(format_named_attr(k, v, self.alias) for k, v in items) + "}")

    def print_affine_map_of_ssa_ids(self, amap: AffineMap, operands: Sequence[Value]) -> None:
        """Subscripts as affine.load prints them: ``[%arg3 * 256 + %arg7, symbol(%n)]``."""
        dim_names = [self.value_name(v) for v in operands[:amap.num_dims]]
        sym_names = [f"symbol({self.value_name(v)})" for v in operands[amap.num_dims:]]
        self.print("[" + ", ".join(e.to_str(dim_names, sym_names) for e in amap.results) + "]")

    def print_dim_and_symbol_list(self, operands: Sequence[Value], num_dims: int) -> None:
        self.print("(" + ", ".join(self.value_name(v) for v in operands[:num_dims]) + ")")
        if len(operands) > num_dims:
            self.print("[" + ", ".join(self.value_name(v) for v in operands[num_dims:]) + "]")

    def print_region(self, region: Region, print_entry_args: bool = False,
                     print_empty_block: bool = False,
                     print_block_terminators: Optional[bool] = None) -> None:
        """``{ ops }``; ``print_block_terminators`` as MLIR's ``printRegion``: False omits each
        block's terminator, True prints it, None (the default) omits only an empty
        ``affine.yield``."""
        if not region.blocks:
            self.print("{")
            self.newline()
            self.print("}")
            return
        numbers = {id(b): i for i, b in enumerate(region.blocks)}
        preds: dict[int, list[int]] = {}
        for i, b in enumerate(region.blocks):
            for succ in b.successors:
                preds.setdefault(id(succ), []).append(i)
        self._block_numbers[id(region)] = numbers
        self._predecessors[id(region)] = preds
        try:
            self._print_blocks(region, print_entry_args, print_empty_block,
                               print_block_terminators)
        finally:
            del self._block_numbers[id(region)], self._predecessors[id(region)]

    def _print_blocks(self, region: Region, print_entry_args: bool, print_empty_block: bool,
                      print_block_terminators: Optional[bool]) -> None:
        self.print("{")
        self.indent += 1
        for bi, block in enumerate(region.blocks):
            # an empty entry block shows its header, else it would read back as no block
            if bi > 0 or print_entry_args and block.args or print_empty_block and not block.ops:
                self.indent -= 1
                self.newline()
                self.print(f"^bb{bi}")
                if block.args:
                    self.print("(" + ", ".join(f"{self.value_name(a)}: {self.type_str(a.type)}"
                                               for a in block.args) + ")")
                self.print(":")
                if bi > 0 or len(region.blocks) > 1:
                    self.print(self._predecessors_comment(block))
                self.indent += 1
            for op in block.ops:
                if not self.generic and self._elide_terminator(op, block,
                                                               print_block_terminators):
                    continue
                self.newline()
                self.print_op(op)
        self.indent -= 1
        self.newline()
        self.print("}")

    def block_name(self, block: Block) -> str:
        """``^bbN``: blocks are numbered in their region's order, as mlir-opt prints them."""
        numbers = self._block_numbers.get(id(block.parent))
        if numbers is not None and id(block) in numbers:
            return f"^bb{numbers[id(block)]}"
        blocks = block.parent.blocks if block.parent is not None else [block]
        return "^bb" + str(next(i for i, b in enumerate(blocks) if b is block))

    def _predecessors_comment(self, block: Block) -> str:
        """mlir-opt's ``// 2 preds: ^bb0, ^bb2`` after a block header (one per edge); called
        while ``block``'s region is printed."""
        numbers = sorted(self._predecessors[id(block.parent)].get(id(block), ()))
        preds = [f"^bb{i}" for i in numbers]
        if not preds:
            return "" if block.is_entry else "  // no predecessors"
        if len(preds) == 1:
            return f"  // pred: {preds[0]}"
        return f"  // {len(preds)} preds: " + ", ".join(preds)

    @staticmethod
    def _elide_terminator(op: Operation, block: Block,
                          print_terminators: Optional[bool] = None) -> bool:
        """Implicit terminators (``affine.yield`` with no operands, and ops whose class says
        ``IMPLICIT_TERMINATOR``) are not printed."""
        if print_terminators is not None:
            return not print_terminators and op is block.ops[-1]
        return op is block.ops[-1] and not op.operands and \
            (op.name == "affine.yield" or getattr(type(op), "IMPLICIT_TERMINATOR", False)) \
            and getattr(op, "elide_when_empty", True)

    # -- ops ------------------------------------------------------------------------------
    def print_op(self, op: Operation) -> None:
        if op.results:
            group = getattr(self, "group_names", {}).get(op)
            groups = getattr(self, "result_groups", {}).get(op)
            if group is not None:
                self.print(f"%{group}:{len(op.results)} = ")
            elif groups is not None:
                self.print(", ".join(f"%{n}:{c}" if c > 1 else f"%{n}" for n, c in groups) +
                           " = ")
            else:
                self.print(", ".join(self.value_name(r) for r in op.results) + " = ")
        custom = getattr(op, "print_custom", None)
        # linalg ops keep their custom form: their generic form needs the payload region
        if custom is not None and (not self.generic or op.dialect == "linalg"):
            custom(self)
        else:
            self.print_generic(op)
        if self.debuginfo:
            self.print(" " + location_text(op.loc, implicit_module=op.name == "builtin.module"
                                           and op.parent_op is None))

    def print_generic(self, op: Operation) -> None:
        self.print(f"{escape_string(op.name)}(")
        self.print_operands(op.operands)
        self.print(")")
        if op.successors:
            self.print("[" + ", ".join(self.block_name(b) for b in op.successors) + "]")
        properties, attributes = generic_attribute_split(op)
        if properties:
            # an unregistered op's properties are one opaque attribute to MLIR: no aliases
            alias = self.alias if inherent_names(op.name) is not None else None
            self.print(" <{" + ", ".join(format_named_attr(k, v, alias)
                                         for k, v in properties.items()) + "}>")
        if op.regions:
            self.print(" (")
            for i, r in enumerate(op.regions):
                if i:
                    self.print(", ")
                self.print_region(r, print_entry_args=True, print_empty_block=True)
            self.print(")")
        self.print_attr_dict(attributes)
        ftype = FunctionType(tuple(v.type for v in op.operands), tuple(r.type for r in op.results))
        self.print(" : " + self.type_str(ftype))


def generic_attribute_split(op: Operation) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """``(properties, attributes)``: what the generic form prints in ``<{...}>`` and in the
    dictionary after the regions, as MLIR's ``printGenericOp`` does.  An op class may give
    attributes it keeps elsewhere (``generic_attributes``: ``operandSegmentSizes``) and
    attributes that are properties whatever :mod:`.op_properties` says
    (``generic_properties``); an op of an unregistered dialect keeps the ``<{...}>`` it was
    read with."""
    attrs_of = getattr(op, "generic_attributes", None)
    props_of = getattr(op, "generic_properties", None)
    attrs = attrs_of() if attrs_of is not None else op.attributes
    explicit = props_of() if props_of is not None else {
        k: attrs[k] for k in getattr(op, "generic_property_names", ()) if k in attrs}
    return split_properties(op.name, attrs, explicit)


def location_text(loc, implicit_module: bool = False) -> str:
    """``loc("file.mlir":3:5)`` (MLIR's FileLineColLoc), or ``loc(unknown)``; a module the
    text did not write (ops at the top level) is at line 0, column 0, as MLIR puts it."""
    if loc is None:
        return "loc(unknown)"
    line, col = loc.line, loc.col
    if implicit_module and 0 < line <= len(loc.file.line_starts):
        offset = loc.file.line_starts[line - 1] + col - 1
        if not loc.file.text.startswith("module", offset):
            line, col = 0, 0
    return f"loc({escape_string(loc.file.name)}:{line}:{col})"


def print_module(module: Operation, generic: bool = False, debuginfo: bool = False) -> str:
    """The module as MLIR text with its ``#map``/``#set`` aliases, ending in a newline; with
    ``debuginfo`` (``--mlir-print-debuginfo``), every op followed by its location."""
    p = Printer(generic=generic, debuginfo=debuginfo)
    if generic:
        p._assign_unique_names(module)
        p.collect_generic_aliases(module)
    else:
        p._assign_names(module)
    p.print_op(module)
    body = p.out.getvalue()
    header = "".join(
        f"{p.aliases[v]} = {'affine_map' if isinstance(v, AffineMap) else 'affine_set'}<{v}>\n"
        for v in sorted(p.alias_order, key=lambda v: isinstance(v, IntegerSet)))  # maps first
    return header + body + "\n"


def print_op_standalone(op: Operation) -> str:
    """One op (for messages and debugging); values outside it print as ``%<<UNKNOWN>>``."""
    p = Printer()
    p._assign_names(op)
    p.print_op(op)
    return p.out.getvalue()


def value_namer(anchor) -> Printer:
    """A printer that has named every value of the function holding ``anchor`` (an op, or None)
    exactly as :func:`print_module` names them (function arguments ``%argN``, then per-region
    numbering): ``value_namer(op).value_name(v)`` for messages that quote IR.  Only the
    regions on the way from the module to that function are named besides it."""
    p = Printer()
    if anchor is None:
        return p
    scope = anchor           # the function holding anchor (or the outermost op)
    while scope.name != "func.func" and scope.parent_op is not None:
        scope = scope.parent_op
    chain = [scope]
    while chain[-1].parent_op is not None:
        chain.append(chain[-1].parent_op)
    root = chain[-1]
    for r in root.regions:
        for b in r.blocks:
            p.name_region_args(b)
    p._assign_names(root, None if root is scope else {id(op) for op in chain}, scope)
    return p
