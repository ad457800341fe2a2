"""The cf dialect: ``cf.assert`` and the branches between the blocks of a function,
``cf.br``, ``cf.cond_br`` and ``cf.switch`` (what MLIR's ``--convert-scf-to-cf`` produces).
Their successors are in :attr:`Operation.successors`; the values each passes to its
successor's block arguments are a run of its operands (``successor_operands``).
:mod:`polyopt.affine.lift_cf_to_scf` turns the loops and conditionals of such functions back
into ``scf.for``/``scf.if`` for the loop optimizations; :mod:`polyopt.codegen.lower_cf`
lowers what is left to LLVM branches and phis.

``cf.assert %ok, "message"`` states that ``%ok`` holds when the op runs.  MLIR's lowering aborts
the process when it does not; polyopt's records the message and the Python call that ran the
code raises ``RuntimeError`` with it when it returns (see :mod:`polyopt.codegen.lower_cf`).
"""

from __future__ import annotations

import re
from typing import Sequence

from ..attributes import DenseArrayAttr, DenseElementsAttr, StringAttr
from ..diagnostics import ParseError, VerifyError
from ..ir import Block, Operation, Value, register_op
from ..types import IndexType, IntegerType, Type, i1, i32


_CASE_VALUE = re.compile(r"-?[0-9]+")


@register_op
class AssertOp(Operation):
    """``cf.assert %ok, "message"``."""

    OP_NAME = "cf.assert"

    @classmethod
    def build(cls, condition: Value, message: str, loc=None) -> "AssertOp":
        return cls(operands=[condition], attributes={"msg": StringAttr(message)}, loc=loc)

    @property
    def message(self) -> str:
        return self.attributes["msg"].value

    @classmethod
    def parse_custom(cls, p, loc, name):
        cond = p.parse_operand(i1)
        p.expect(",")
        msg = p.parse_string()
        attrs = p.parse_optional_attr_dict()
        attrs["msg"] = StringAttr(msg)
        return cls(operands=[cond], attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("cf.assert ")
        p.print_operand(self.operands[0])
        p.print(", " + str(self.attributes["msg"]))
        p.print_attr_dict(self.attributes, elide=("msg",))

    def generic_properties(self) -> dict:
        return {"msg": self.attributes["msg"]} if "msg" in self.attributes else {}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items() if k != "msg"}

    def verify_op(self) -> None:
        if len(self.operands) != 1 or self.results:
            raise self.error("expects one operand and no results")
        t = self.operands[0].type
        if t != IntegerType(1):
            raise self.error(f"operand #0 must be 1-bit signless integer, but got '{t}'")
        if not isinstance(self.attributes.get("msg"), StringAttr):
            raise self.error("requires attribute 'msg'")


class BranchOpBase(Operation):
    """What the branch ops share: the successor operand runs and their verification."""

    def successor_operands(self, i: int) -> tuple[Value, ...]:
        start, count = self._successor_run(i)
        return tuple(self.operands[start:start + count])

    def successor_operand_start(self, i: int) -> int:
        return self._successor_run(i)[0]

    def _successor_run(self, i: int) -> tuple[int, int]:
        raise NotImplementedError

    def _verify_successors(self, count: int) -> None:
        if len(self.successors) != count:
            raise self.error(f"requires {count} successor{'s' if count != 1 else ''} but "
                             f"found {len(self.successors)}")
        if self.results:
            raise self.error("requires zero results")
        region = self.parent.parent if self.parent is not None else None
        for i, dest in enumerate(self.successors):
            if region is None or dest.parent is not region:
                raise self.error(f"reference to block defined in another region")
            values = self.successor_operands(i)
            if len(values) != len(dest.args):   # MLIR says these without the op's name
                raise VerifyError(f"branch has {len(values)} operands for successor #{i}, but "
                                  f"target block has {len(dest.args)}", self.loc)
            for k, (v, a) in enumerate(zip(values, dest.args)):
                if v.type != a.type:
                    raise VerifyError(f"type mismatch for bb argument #{k} of successor #{i}",
                                      self.loc)


def _print_successor(p, dest: Block, values: Sequence[Value]) -> None:
    p.print(p.block_name(dest))
    if values:
        p.print("(")
        p.print_operands(values)
        p.print(" : " + ", ".join(p.type_str(v.type) for v in values) + ")")


def _segment_sizes(attrs: dict, count: int, op_name: str, loc) -> tuple[int, ...]:
    seg = attrs.get("operandSegmentSizes")
    if not isinstance(seg, DenseArrayAttr) or len(seg.values) != count:
        raise ParseError(f"'{op_name}' op requires attribute 'operandSegmentSizes' with "
                         f"{count} elements", loc)
    return tuple(seg.values)


@register_op
class BranchOp(BranchOpBase):
    """``cf.br ^bb1(%a, %b : index, f64)``: jump to the block, passing its arguments."""

    OP_NAME = "cf.br"

    @classmethod
    def build(cls, dest: Block, values: Sequence[Value] = (), loc=None) -> "BranchOp":
        return cls(operands=list(values), successors=[dest], loc=loc)

    @property
    def dest(self) -> Block:
        return self.successors[0]

    def _successor_run(self, i: int) -> tuple[int, int]:
        return 0, self.num_operands

    @classmethod
    def parse_custom(cls, p, loc, name):
        dest, values = p.parse_successor_and_use_list()
        attrs = p.parse_optional_attr_dict()
        return cls(operands=values, attributes=attrs, successors=[dest], loc=loc)

    def print_custom(self, p) -> None:
        p.print("cf.br ")
        _print_successor(p, self.dest, self.operands)
        p.print_attr_dict(self.attributes)

    def verify_op(self) -> None:
        self._verify_successors(1)


@register_op
class CondBranchOp(BranchOpBase):
    """``cf.cond_br %c, ^then(%a : i32), ^else``: operands are the condition, then the values
    for the first successor, then those for the second (``operandSegmentSizes``)."""

    OP_NAME = "cf.cond_br"

    @classmethod
    def build(cls, condition: Value, true_dest: Block, true_values: Sequence[Value],
              false_dest: Block, false_values: Sequence[Value], loc=None) -> "CondBranchOp":
        sizes = DenseArrayAttr(i32, (1, len(true_values), len(false_values)))
        return cls(operands=[condition, *true_values, *false_values],
                   attributes={"operandSegmentSizes": sizes},
                   successors=[true_dest, false_dest], loc=loc)

    @property
    def condition(self) -> Value:
        return self.operands[0]

    def _sizes(self) -> tuple[int, ...]:
        seg = self.attributes.get("operandSegmentSizes")
        if isinstance(seg, DenseArrayAttr) and len(seg.values) == 3:
            return tuple(seg.values)
        return (1, self.num_operands - 1, 0)

    def _successor_run(self, i: int) -> tuple[int, int]:
        sizes = self._sizes()
        return (sizes[0], sizes[1]) if i == 0 else (sizes[0] + sizes[1], sizes[2])

    @classmethod
    def parse_custom(cls, p, loc, name):
        cond = p.parse_operand(i1)
        weights = None
        if p.optional_keyword("weights"):
            p.expect("(")

            def weight() -> int:
                # an i32 (DenseI32ArrayAttr): mlir-opt-22 refuses the rest at the literal
                p.skip_ws()
                at = p.pos
                w = p.parse_integer(op_name="cf.cond_br")
                if not -(1 << 31) <= w < (1 << 31):
                    raise p.error("custom op 'cf.cond_br' integer value too large", at)
                return w
            weights = p.parse_comma_separated("[", "]", weight)
            p.expect(")")
        p.expect(",")
        true_dest, true_values = p.parse_successor_and_use_list()
        p.expect(",")
        false_dest, false_values = p.parse_successor_and_use_list()
        attrs = p.parse_optional_attr_dict()
        op = cls.build(cond, true_dest, true_values, false_dest, false_values, loc)
        op.attributes.update(attrs)
        if weights is not None:
            op.attributes["branch_weights"] = DenseArrayAttr(i32, tuple(weights))
        return op

    def print_custom(self, p) -> None:
        p.print("cf.cond_br ")
        p.print_operand(self.condition)
        weights = self.attributes.get("branch_weights")
        if isinstance(weights, DenseArrayAttr):
            p.print(" weights([" + ", ".join(str(w) for w in weights.values) + "])")
        p.print(", ")
        _print_successor(p, self.successors[0], self.successor_operands(0))
        p.print(", ")
        _print_successor(p, self.successors[1], self.successor_operands(1))
        p.print_attr_dict(self.attributes, elide=("operandSegmentSizes", "branch_weights"))

    def generic_properties(self) -> dict:
        props = {"operandSegmentSizes": DenseArrayAttr(i32, self._sizes())}
        if "branch_weights" in self.attributes:
            props["branch_weights"] = self.attributes["branch_weights"]
        return props

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items()
                if k not in ("operandSegmentSizes", "branch_weights")}

    def verify_op(self) -> None:
        sizes = self._sizes()
        if "operandSegmentSizes" not in self.attributes or sizes[0] != 1 or \
                sum(sizes) != self.num_operands or min(sizes) < 0:
            raise self.error(f"operand count ({self.num_operands}) does not match with the "
                             f"total size ({sum(sizes)}) specified in attribute "
                             f"'operandSegmentSizes'")
        if self.condition.type != i1:
            raise self.error(f"operand #0 must be 1-bit signless integer, but got "
                             f"'{self.condition.type}'")
        weights = self.attributes.get("branch_weights")
        if weights is not None:
            if not isinstance(weights, DenseArrayAttr) or weights.element_type != i32:
                raise self.error("attribute 'branch_weights' failed to satisfy constraint: "
                                 "i32 dense array attribute")
            if len(weights.values) != 2:
                raise self.error(f"expects number of branch weights to match number of "
                                 f"successors: {len(weights.values)} vs 2")
            if not any(weights.values):
                raise self.error("branch weights cannot all be zero")
        self._verify_successors(2)


@register_op
class SwitchOp(BranchOpBase):
    """``cf.switch %flag : i32, [default: ^bb1(%a : i32), 42: ^bb2, ...]``: operands are the
    flag, the default successor's values, then each case's (``case_operand_segments``)."""

    OP_NAME = "cf.switch"

    @property
    def flag(self) -> Value:
        return self.operands[0]

    @property
    def case_values(self) -> tuple[int, ...]:
        cv = self.attributes.get("case_values")
        return tuple(cv.values) if isinstance(cv, DenseElementsAttr) else ()

    def _case_segments(self) -> tuple[int, ...]:
        seg = self.attributes.get("case_operand_segments")
        return tuple(seg.values) if isinstance(seg, DenseArrayAttr) else ()

    def _sizes(self) -> tuple[int, ...]:
        seg = self.attributes.get("operandSegmentSizes")
        return tuple(seg.values) if isinstance(seg, DenseArrayAttr) else ()

    def _successor_run(self, i: int) -> tuple[int, int]:
        sizes = self._sizes()
        if i == 0:
            return 1, sizes[1]
        cases = self._case_segments()
        return 1 + sizes[1] + sum(cases[:i - 1]), cases[i - 1]

    @classmethod
    def build(cls, flag: Value, default: tuple[Block, Sequence[Value]],
              cases: Sequence[tuple[int, Block, Sequence[Value]]], loc=None) -> "SwitchOp":
        attrs = {"operandSegmentSizes": DenseArrayAttr(
                     i32, (1, len(default[1]), sum(len(c[2]) for c in cases))),
                 "case_operand_segments": DenseArrayAttr(i32, tuple(len(c[2]) for c in cases))}
        if cases:
            attrs["case_values"] = DenseElementsAttr((len(cases),), flag.type,
                                                     tuple(c[0] for c in cases), kind="vector")
        operands = [flag, *default[1]] + [v for c in cases for v in c[2]]
        return cls(operands=operands, attributes=attrs,
                   successors=[default[0]] + [c[1] for c in cases], loc=loc)

    @classmethod
    def parse_custom(cls, p, loc, name):
        flag = p.parse_operand()
        p.expect(":")
        t = p.parse_type()
        p.check_type(flag, t)
        if not isinstance(t, IntegerType):
            raise p.error(f"'cf.switch' op operand #0 must be integer, but got '{t}'")
        p.expect(",")
        p.expect("[")
        p.expect_keyword("default")
        p.expect(":")
        default = p.parse_successor_and_use_list()
        cases = []
        while p.optional(","):
            p.skip_ws()
            at = p.pos
            m = _CASE_VALUE.match(p.text, p.pos)
            if not m:
                raise p.error("expected integer value", at)
            p.pos = m.end()
            text = m.group(0)
            value = p._int_value(text.lstrip("-"), at)
            value = -value if text.startswith("-") else value
            if not -(1 << (t.width - 1)) <= value < (1 << t.width):
                # mlir-opt-22 truncates it silently: the branch would go elsewhere
                raise p.error(f"case value is out of range for '{t}'", at)
            if t.width > 1 and value >= 1 << (t.width - 1):   # the signed view, as dense<>
                value -= 1 << t.width
            elif t.width == 1:
                value &= 1
            p.expect(":")
            dest, values = p.parse_successor_and_use_list()
            cases.append((value, dest, values))
        p.expect("]")
        attrs = p.parse_optional_attr_dict()
        op = cls.build(flag, default, cases, loc)
        op.attributes.update(attrs)
        return op

    def print_custom(self, p) -> None:
        p.print("cf.switch ")
        p.print_operand(self.flag)
        p.print(f" : {p.type_str(self.flag.type)}, [")
        p.indent += 1
        p.newline()
        p.print("default: ")
        _print_successor(p, self.successors[0], self.successor_operands(0))
        for i, value in enumerate(self.case_values, start=1):
            p.print(",")
            p.newline()
            p.print(f"{value & ((1 << self.flag.type.width) - 1)}: ")   # as mlir-opt-22
            _print_successor(p, self.successors[i], self.successor_operands(i))
        p.indent -= 1
        p.newline()
        p.print("]")
        p.print_attr_dict(self.attributes, elide=("operandSegmentSizes",
                                                  "case_operand_segments", "case_values"))

    def generic_properties(self) -> dict:
        return {k: v for k, v in self.attributes.items()
                if k in ("operandSegmentSizes", "case_operand_segments", "case_values")}

    def generic_attributes(self) -> dict:
        return {k: v for k, v in self.attributes.items()
                if k not in ("operandSegmentSizes", "case_operand_segments", "case_values")}

    def verify_op(self) -> None:
        sizes, cases = self._sizes(), self._case_segments()
        if len(sizes) != 3 or sizes[0] != 1 or sum(sizes) != self.num_operands or \
                sum(cases) != sizes[2]:
            raise self.error("operand segments do not match the operands")
        if not isinstance(self.flag.type, IntegerType):
            raise self.error(f"operand #0 must be integer, but got '{self.flag.type}'")
        values = self.case_values
        if len(values) != len(cases):
            raise self.error(f"number of case values ({len(values)}) should match number of "
                             f"case destinations ({len(cases)})")
        cv = self.attributes.get("case_values")
        if cv is not None and cv.element_type != self.flag.type:
            raise self.error(f"'case_values' should have element type {self.flag.type}")
        self._verify_successors(1 + len(cases))
