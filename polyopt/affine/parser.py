"""MLIR text -> Module: upstream MLIR 22 syntax and the 2020 syntax of the paper's listings.

A recursive-descent parser over the raw text (MLIR's grammar is context sensitive in places:
``2048x2048xf64`` dimension lists, affine expressions over SSA names).  Ops in custom form are
parsed by their op class (``parse_custom``); every op can also be written in generic form
(``"affine.for"() ({...}) {...} : () -> ()``).  The 2020 names (``addf``, ``constant``,
``alloc``, ``func @f``, ...) are mapped to their modern ops on the way in.

Op classes use the small API below (``parse_operand``, ``parse_type``, ``parse_region``, ...),
the counterpart of MLIR's ``OpAsmParser``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from typing import Callable, Iterator, NamedTuple, Optional, Sequence

from . import float_format
from .affine_expr import AffineExpr, AffineMap, IntegerSet, constant, dim, symbol
from .attributes import (AffineMapAttr, ArrayAttr, Attribute, DenseArrayAttr, DenseElementsAttr,
                         DictAttr, FloatAttr, IntegerAttr, IntegerSetAttr, LocationAttr, OpaqueAttr,
                         StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, encode_string,
                         wrap_signed)
from .diagnostics import Location, ParseError, SourceFile
from .forward_ref import ForwardRef
from .ir import OP_REGISTRY, Block, Operation, Region, Value
from .types import (AMXTileType, FloatType, FunctionType, IndexType, IntegerType, MemRefType,
                    NoneType, StridedLayout, TensorType, TransformHandleType, Type,
                    UnrankedMemRefType, VectorType, bf16, f16, f32, i1, i8, i32, i64)

_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_FILE_LINE_COL = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@functools.lru_cache(maxsize=None)
def _foreign_file(name: str) -> SourceFile:
    """A file named by a printed location: its text, when it can be read, for the messages
    that quote the line."""
    try:
        with open(name, encoding="utf-8") as f:
            return SourceFile(name, f.read())
    except (OSError, ValueError):
        return SourceFile(name, "")
_SUFFIX_ID = re.compile(r"[A-Za-z0-9_$.\-]+")
_INT = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")
_FLOAT = re.compile(r"[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+")
# whitespace as MLIR's lexer has it (ASCII only) and ``//`` comments
_WS = re.compile(r"(?:[ \t\n\r\f\v]+|//[^\n]*)*")
_DIGITS = re.compile(r"[0-9]+")
_LOC_OPEN = re.compile(r"loc\s*\(")
_STRING_RUN = re.compile(r'[^"\\\n\v\f]*')
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")
# ``#dialect.name`` (an alias name has no dot)
_DIALECT_ATTR = re.compile(r"#[A-Za-z_][A-Za-z0-9_$]*\.")
_RESULT_LIST = re.compile(r"(?:%[A-Za-z0-9_$.\-]+(?::\s*[0-9]+)?\s*,\s*)*"
                          r"%[A-Za-z0-9_$.\-]+(?::\s*[0-9]+)?\s*=(?!=)")

INT64_MAX = (1 << 63) - 1
#: The element types of ``!amx.tile`` (MLIR's ``AMX_TileElementType``).
_AMX_ELEMENT_TYPES = (f32, f16, bf16, i32, i8)
#: How deeply regions may nest, and lists, types, expressions and locations within one op:
#: deeper input is an error at the construct that goes past it, not a RecursionError here or in
#: the passes that walk the IR.  The two are counted apart so that the generic form of what
#: parses (same regions, an op's attributes at the same depth) parses too.
MAX_NESTING = 100
MAX_NESTING_IN_OP = 64
_TOO_DEEP = f"region nested too deeply (polyopt reads at most {MAX_NESTING} levels of regions)"
#: MLIR's limit on the width of an integer type (``IntegerType::kMaxWidth``).
MAX_INTEGER_WIDTH = (1 << 24) - 1
#: The largest vector type polyopt takes (LLVM's instruction selection aborts the process on
#: vectors of 65536 elements and takes seconds on a tenth of that).
MAX_VECTOR_ELEMENTS = 1 << 14
#: The most results a memref layout map may have (the physical rank): the injectivity check
#: (ISL) takes seconds at a few hundred and minutes at a few thousand.
MAX_LAYOUT_RESULTS = 64
#: Decimal literals longer than this are refused before conversion (Python's int() of a long
#: decimal string is quadratic; 4000 digits is past every type's range but i13000 and wider).
MAX_DECIMAL_DIGITS = 4000



class _Number(NamedTuple):
    """A numeric (or ``true``/``false``) literal as written: ``kind`` is "int", "hex", "float"
    or "bool"; ``text`` has no sign; ``offset`` is where it starts (its ``-`` if any)."""

    kind: str
    text: str
    negative: bool
    offset: int
    digits_offset: int


# The words a type starts with (after ``:`` following a literal).
_TYPE_WORD = re.compile(r"[su]?i[0-9]+|index|bf16|f[0-9]+|tf32|f[0-9]E[0-9]+M[0-9]+[A-Z]*|none"
                        r"|vector|memref|tensor|tuple|complex")

# A vector or memref type spelled without spaces, layout or memory space, of a scalar element
# type (``vector<8xf32>``, ``memref<16x?xbf16>``): it means the same wherever it is written,
# so each one read is kept (by its text) and taken as it is the next time.  A template's
# thousands of accesses spell a handful of types.
_SIMPLE_SHAPED_TYPE = re.compile(r"(?:vector|memref)<(?:[0-9]+x|\?x)*"
                                 r"(?:f16|bf16|f32|f64|index|i[0-9]+)>")
_SIMPLE_SHAPED_TYPES: dict[str, Type] = {}
_COMMON_SCALAR_TYPES: dict[str, Type] = {
    "index": IndexType(), "f16": FloatType(16), "bf16": FloatType(16, brain=True),
    "f32": FloatType(32), "f64": FloatType(64),
    **{f"i{w}": IntegerType(w) for w in (1, 8, 16, 32, 64)}}

# MLIR's builtin float types polyopt does not have.
_OTHER_FLOAT_TYPES = re.compile(r"f80|f128|tf32|f[4-8]E[0-9]+M[0-9]+[A-Z]*")

# Ops of the paper's 2020 "standard" dialect and their MLIR 22 names.
LEGACY_OP_NAMES = {
    "addf": "arith.addf", "subf": "arith.subf", "mulf": "arith.mulf", "divf": "arith.divf",
    "negf": "arith.negf", "addi": "arith.addi", "subi": "arith.subi", "muli": "arith.muli",
    "divi_signed": "arith.divsi", "remi_signed": "arith.remsi", "floordivi_signed": "arith.floordivsi",
    "ceildivi_signed": "arith.ceildivsi", "cmpi": "arith.cmpi", "cmpf": "arith.cmpf",
    "select": "arith.select", "index_cast": "arith.index_cast", "sitofp": "arith.sitofp",
    "fptosi": "arith.fptosi", "fpext": "arith.extf", "fptrunc": "arith.truncf",
    "constant": "arith.constant", "std.constant": "arith.constant",
    "alloc": "memref.alloc", "alloca": "memref.alloca", "dealloc": "memref.dealloc",
    "load": "memref.load", "store": "memref.store", "memref_cast": "memref.cast",
    "splat": "vector.broadcast", "vector.splat": "vector.broadcast",
    "call": "func.call", "return": "func.return", "func": "func.func",
    "std.call": "func.call", "std.return": "func.return", "module": "builtin.module",
    "fma": "math.fma",
}

# Ops whose custom form MLIR prints without the dialect prefix inside a func.
IMPLICIT_DIALECT_OPS = {"return": "func.return", "call": "func.call"}


class Parser:
    """Parses one MLIR source into a ``builtin.module`` op."""

    def __init__(self, text: str, filename: str = "<input>"):
        self.file = SourceFile(filename, text)
        self.text = text
        self.pos = 0
        # the names defined in the regions being parsed, innermost last: name -> the values
        # of its result group (``%r:2`` is ``r`` -> two results; a single value is a group
        # of one, which ``%r#0`` names too)
        self.scopes: list[dict[str, list[Value]]] = [{}]
        # the uses of names not defined yet (MLIR's forward reference placeholders), for the
        # whole text: MLIR's parser lets a definition in a later function resolve them too
        # (its verifier then says the value is defined outside the function)
        self.forward_refs: dict[tuple[str, int], ForwardRef] = {}
        # the block names of the regions being parsed, innermost last: name -> (block, offset
        # of its first reference, whether its header has been read)
        self.block_scopes: list[dict[str, list]] = []
        self.last_spelled: dict[str, int] = {}    # where each name was last written
        # per op being parsed, innermost last: where each name was first written in it (a
        # region argument is declared before its op's operands may spell the name again)
        self.first_spelled_in_op: list[dict[str, int]] = []
        self.map_aliases: dict[str, AffineMap | IntegerSet] = {}
        self.type_aliases: dict[str, Type] = {}
        self.attr_aliases: dict[str, Attribute] = {}
        # the ops currently being parsed, innermost last (custom parsers may look at parents)
        self.op_stack: list[str] = []
        # how and where each value was last used in the source (for messages)
        self.spelled: dict[Value, tuple[str, int]] = {}
        # ``loc(#name)`` uses, checked once the whole text (and its aliases) is read
        self.pending_locations: list[tuple[str, int]] = []
        self.depth = 0             # lists, types, expressions within the current op
        # regions around the current point, not counting the outermost module's (explicit or
        # implicit: the printer writes one explicit module around everything)
        self.region_depth = 0
        self.deepest: tuple[int, int] = (0, 0)     # (depth, offset) of the deepest region
        self.module_region_free = False   # the next region is a top-level module's

    # ---------------------------------------------------------------------------------------
    # low level
    def loc(self, offset: Optional[int] = None) -> Location:
        return Location.at_offset(self.file, self.pos if offset is None else offset)

    def error(self, message: str, offset: Optional[int] = None) -> ParseError:
        return ParseError(message, self.loc(offset))

    @contextlib.contextmanager
    def nested(self, what: str) -> Iterator[None]:
        """Count one level of nesting of ``what`` (a list, a type...) while it is parsed."""
        self.depth += 1
        try:
            if self.depth > MAX_NESTING_IN_OP:
                raise self.error(f"{what} nested too deeply (polyopt reads at most "
                                 f"{MAX_NESTING_IN_OP} levels of nesting in an op)")
            yield
        finally:
            self.depth -= 1

    def skip_ws(self) -> None:
        pos = self.pos
        if pos < len(self.text) and self.text[pos] > " " and self.text[pos] != "/":
            return
        self.pos = _WS.match(self.text, pos).end()

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        text, pos = self.text, self.pos
        if pos >= len(text) or text[pos] <= " " or text[pos] == "/":
            self.skip_ws()
            pos = self.pos
        return text.startswith(s, pos)

    def peek_char(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def optional(self, s: str) -> bool:
        """Consume punctuation ``s`` if it is next."""
        text, pos = self.text, self.pos
        if pos >= len(text) or text[pos] <= " " or text[pos] == "/":
            self.skip_ws()
            pos = self.pos
        if text.startswith(s, pos):
            self.pos = pos + len(s)
            return True
        return False

    def expect(self, s: str, what: str = "") -> None:
        if not self.optional(s):
            raise self.wrong_token(f"expected '{s}'" + (f" {what}" if what else ""))

    def wrong_token(self, message: str) -> ParseError:
        """``message``, found what comes next, where MLIR's ``emitWrongTokenError`` puts it:
        at the next token, unless that token starts its line; then at the end of the last
        code before it (blank lines and ``//`` comments skipped), so that a missing ``{`` or
        ``]`` is reported on the line that lacks it."""
        found = self._describe_next()
        text, pos = self.text, self.pos
        if pos >= len(text):        # at the end: one character back, as MLIR does at EOF
            pos = max(len(text) - 1, 0)
        end = pos
        while True:
            while end > 0 and text[end - 1] in " \t":
                end -= 1
            if end == 0:
                break
            if text[end - 1] not in "\n\r":
                pos = end
                break
            end -= 1
            line_start = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end), 0)
            comment = text.find("//", line_start, end)
            if comment != -1:
                end = comment
        return self.error(f"{message}, found {found}", pos)

    def custom_op_prefix(self) -> str:
        """``custom op 'NAME' ``: how mlir-opt starts the errors an op's custom parser reports
        (empty outside one)."""
        return f"custom op '{self.op_stack[-1]}' " if self.op_stack else ""

    def _describe_next(self) -> str:
        self.skip_ws()
        if self.pos >= len(self.text):
            return "end of input"
        m = re.compile(r"[A-Za-z_%@#^!][A-Za-z0-9_$.]*|.", re.S).match(self.text, self.pos)
        token = m.group(0)
        if not token.isprintable():        # a control or other invisible character
            return f"unexpected character {ascii(token)}"
        return f"'{token}'"

    def peek_keyword(self, kw: str) -> bool:
        self.skip_ws()
        m = _BARE_ID.match(self.text, self.pos)
        return m is not None and m.group(0) == kw

    def optional_keyword(self, kw: str) -> bool:
        if self.peek_keyword(kw):
            self.pos += len(kw)
            return True
        return False

    def expect_keyword(self, kw: str) -> None:
        if not self.optional_keyword(kw):
            raise self.error(f"expected '{kw}', found {self._describe_next()}")

    def parse_bare_id(self, what: str = "identifier") -> str:
        self.skip_ws()
        m = _BARE_ID.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what}, found {self._describe_next()}")
        self.pos = m.end()
        return m.group(0)

    def optional_bare_id(self) -> Optional[str]:
        self.skip_ws()
        m = _BARE_ID.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def parse_integer(self, what: str = "integer", op_name: Optional[str] = None) -> int:
        """A signed 64-bit integer literal; ``op_name``: the custom op whose parser reads it
        (mlir-opt names it in the out-of-range message)."""
        self.skip_ws()
        start = self.pos
        neg = self.optional("-")
        self.skip_ws()
        m = _INT.match(self.text, self.pos)
        if not m or _FLOAT.match(self.text, self.pos) and _FLOAT.match(self.text, self.pos).end() > m.end():
            self.pos = start
            raise self.error(f"expected {what}, found {self._describe_next()}")
        v = self._int_value(m.group(0), self.pos)
        if v > INT64_MAX + (1 if neg else 0):
            prefix = f"custom op '{op_name}' " if op_name else ""
            raise self.error(f"{prefix}integer value too large")
        self.pos = m.end()
        return -v if neg else v

    def _int_value(self, digits: str, offset: int) -> int:
        """The value of a decimal (leading zeros allowed, as in MLIR) or ``0x`` literal,
        refusing a decimal one so long that converting it would take quadratic time (no type
        holds it anyway)."""
        if digits.startswith("0x"):
            return int(digits, 16)
        if len(digits) > MAX_DECIMAL_DIGITS:
            raise self.error(f"integer literal with {len(digits)} digits is too large (polyopt "
                             f"reads at most {MAX_DECIMAL_DIGITS})", offset)
        return int(digits, 10)

    def optional_integer(self, op_name: Optional[str] = None) -> Optional[int]:
        """An integer literal if one is next (an out-of-range one is an error)."""
        self.skip_ws()
        if re.match(r"-?\s*[0-9]", self.text[self.pos:self.pos + 40]):
            save = self.pos
            try:
                return self.parse_integer(op_name=op_name)
            except ParseError as exc:
                if exc.message.endswith("integer value too large"):
                    raise
                self.pos = save
        return None

    def parse_string(self) -> str:
        """A string literal with MLIR's escapes (``\\"``, ``\\\\``, ``\\n``, ``\\t``, ``\\XX``
        bytes); bytes that are not UTF-8 are kept as surrogates (see ``escape_string``)."""
        self.skip_ws()
        if not self.text.startswith('"', self.pos):
            raise self.error(f"expected string literal, found {self._describe_next()}")
        i = self.pos + 1
        out = bytearray()
        while True:
            m = _STRING_RUN.match(self.text, i)
            out += encode_string(m.group(0))
            i = m.end()
            c = self.text[i:i + 1]
            if c == '"':
                break
            if c in ("", "\n", "\v", "\f"):
                raise self.error("expected '\"' in string literal", i)
            nxt = self.text[i + 1:i + 2]
            if nxt in ('"', "\\"):
                out += nxt.encode()
            elif nxt in ("n", "t"):
                out += b"\n" if nxt == "n" else b"\t"
            elif _HEX2.match(self.text, i + 1):
                out.append(int(self.text[i + 1:i + 3], 16))
                i += 1
            else:
                raise self.error("unknown escape in string literal", i)
            i += 2
        self.pos = i + 1
        return out.decode("utf-8", "surrogateescape")

    def parse_comma_separated(self, open_: str, close: str, element: Callable[[], object],
                              allow_empty: bool = True) -> list:
        with self.nested("list"):
            return self._parse_comma_separated(open_, close, element, allow_empty)

    def _parse_comma_separated(self, open_, close, element, allow_empty) -> list:
        self.expect(open_)
        items = []
        if self.optional(close):
            if not allow_empty:
                raise self.error("expected at least one element")
            return items
        while True:
            items.append(element())
            if self.optional(close):
                return items
            self.expect(",", f"or '{close}' in list")

    # ---------------------------------------------------------------------------------------
    # SSA values
    def _lookup(self, name: str, offset: int) -> Value:
        """The value ``%name`` (``%r#1``: result 1 of group ``r``) names here; a name not
        defined yet is a forward reference, resolved when its definition is read (MLIR's
        ``resolveSSAUse``).  Whether the definition dominates the use is the verifier's
        question, as in MLIR."""
        base, _, number = name.partition("#")
        index = int(number) if number else 0
        for scope in reversed(self.scopes):
            group = scope.get(base)
            if group is not None:
                if index >= len(group):
                    raise self.error("reference to invalid result number", offset)
                return group[index]
        ref = self.forward_refs.get((base, index))
        if ref is None:
            ref = self.forward_refs[(base, index)] = ForwardRef(name, offset)
        return ref

    def parse_ssa_name(self) -> tuple[str, int]:
        """``%name`` (or ``%name#3``) -> (name, result number); no lookup."""
        self.skip_ws()
        if not self.text.startswith("%", self.pos):
            raise self.wrong_token("expected SSA operand")
        m = _SUFFIX_ID.match(self.text, self.pos + 1)
        if not m:
            raise self.error("expected SSA value name after '%'")
        name = m.group(0)
        self.last_spelled[name] = self.pos
        if self.first_spelled_in_op:
            self.first_spelled_in_op[-1].setdefault(name, self.pos)
        self.pos = m.end()
        index = 0
        if self.text.startswith("#", self.pos) and re.match(r"#[0-9]", self.text[self.pos:self.pos + 2]):
            m2 = re.compile(r"#([0-9]+)").match(self.text, self.pos)
            index = int(m2.group(1))
            self.pos = m2.end()
            name = f"{name}#{index}"
        # MLIR's parseArgument takes a location after a region argument's name
        # (``affine.for %i loc("a.mlir":3:7) = 0 to 4``); polyopt takes one after any name
        # (the custom parsers of ops read their region arguments' names here) and drops it
        self.optional_location()
        return name, index

    def _parse_use(self) -> tuple[str, int]:
        """``%x`` or ``%r#1`` -> (name, offset of the ``%``), not resolved yet."""
        self.skip_ws()
        start = self.pos
        name, _ = self.parse_ssa_name()
        return name, start

    def parse_operand(self, expected_type: Optional[Type] = None) -> Value:
        """A use of an SSA value (``%x``, ``%r#1``), resolved to its definition."""
        self.skip_ws()
        start = self.pos
        name, _ = self.parse_ssa_name()
        value = self._lookup(name, start)
        self.spelled[value] = (name, start)
        if expected_type is not None:
            self.check_type(value, expected_type, start)
        return value

    def peek_operand(self) -> bool:
        """A use of an SSA value is next: ``%x``, not the result names of the next op
        (``%x = ...``, ``%a, %b = ...``, ``%r:2 = ...``).  mlir-opt-22 prints a
        ``vector.print punctuation <newline>`` as ``vector.print`` and then cannot read it
        back when the next op has results; polyopt can."""
        return self.peek("%") and not _RESULT_LIST.match(self.text, self.pos)

    def check_type(self, value: Value, expected: Type, offset: Optional[int] = None) -> None:
        """MLIR's check that the type written at a use agrees with the value's type; the error
        points at the use of the value (as MLIR's does), else at ``offset``."""
        if value.type != expected:
            name, at = self.spelled.get(value, (None, offset))
            what = f"'%{name.partition('#')[0]}' " if name else ""   # MLIR: no '#N'
            raise self.error(f"use of value {what}expects different type than prior uses: "
                             f"'{expected}' vs '{value.type}'", at)

    def parse_operand_list(self, delimiter: str = "none") -> list[Value]:
        """Operands separated by commas, optionally in ``()`` or ``[]``."""
        if delimiter == "paren":
            return self.parse_comma_separated("(", ")", self.parse_operand)
        if delimiter == "square":
            return self.parse_comma_separated("[", "]", self.parse_operand)
        if delimiter == "optional_paren":
            return self.parse_comma_separated("(", ")", self.parse_operand) if self.peek("(") else []
        ops = []
        if not self.peek("%"):
            return ops
        ops.append(self.parse_operand())
        while self.peek(",") and re.match(r",\s*%", self.text[self.pos:self.pos + 40]):
            self.expect(",")
            ops.append(self.parse_operand())
        return ops

    def check_argument_name(self, name: str, offset: Optional[int]) -> None:
        """A region or block argument is named without a result number (``%i``, not
        ``%i#0``), as MLIR's ``parseArgument`` says."""
        if "#" in name:
            base = name[:name.index("#")]
            start = offset if offset is not None else self.last_spelled.get(base)
            raise self.error("result number not allowed in argument list",
                             None if start is None else start + 1 + len(base))

    def define(self, name: str, value: Value, offset: Optional[int] = None) -> None:
        """Bind ``%name`` to ``value`` in the innermost region."""
        self.define_group(name, [value], offset)

    def define_group(self, name: str, values: Sequence[Value],
                     offset: Optional[int] = None) -> None:
        """Bind ``%name`` (``%name:N``) to ``values``, and resolve the forward references
        to them (MLIR's ``defineSSAValue``)."""
        # as in MLIR, a name of an enclosing region (even outside a func.func) is not reused
        if any(name in scope for scope in self.scopes):
            raise self.error(f"redefinition of SSA value '%{name}'", offset)
        self.scopes[-1][name] = list(values)
        for index, value in enumerate(values):
            ref = self.forward_refs.pop((name, index), None)
            if ref is None:
                continue
            if ref.type != value.type:
                raise self.error(f"definition of SSA value '%{name}#{index}' has type "
                                 f"'{value.type}'", offset)
            if ref in self.spelled:
                self.spelled[value] = self.spelled.pop(ref)
            ref.replace_all_uses_with(value)

    def _check_forward_refs(self) -> None:
        """The names used and never defined: MLIR's message at the first such use, once the
        whole text is read."""
        if self.forward_refs:
            ref = min(self.forward_refs.values(), key=lambda r: r.offset)
            raise self.error(f"use of undeclared SSA value name '%{ref.name}'", ref.offset)

    # ---------------------------------------------------------------------------------------
    # types
    def parse_type(self, allow_tensor: bool = False) -> Type:
        """A type; tensor types only where ``allow_tensor`` (the types of attributes): polyopt's
        values are scalars, vectors and memrefs."""
        self.skip_ws()
        start = self.pos
        with self.nested("type"):
            t = self._parse_type(allow_tensor)
        if isinstance(t, TensorType) and not allow_tensor:
            raise self.error(f"tensor values are not supported by polyopt (memref-based IR: "
                             f"bufferize first, e.g. mlir-opt-22 --one-shot-bufferize); got "
                             f"'{t}'", start)
        return t

    def _parse_type(self, allow_tensor: bool) -> Type:
        self.skip_ws()
        start = self.pos
        if self.optional("("):
            self.pos = start
            return self.parse_function_type()
        if self.text.startswith("!", self.pos):
            m = _SUFFIX_ID.match(self.text, self.pos + 1)
            name = m.group(0) if m else ""
            if name in self.type_aliases:
                self.pos = m.end()
                return self.type_aliases[name]
            if name == "amx.tile" and self.text.startswith("<", m.end()):
                self.pos = m.end()
                return self._parse_amx_tile_type(start)
            if name == "transform.any_op":
                self.pos = m.end()
                return TransformHandleType()
            if name == "transform.op" and self.text.startswith("<", m.end()):
                self.pos = m.end() + 1
                op_name = self.parse_string()
                self.expect(">", "in transform handle type")
                return TransformHandleType(op_name)
            if "." in name:
                raise self.error(f"dialect type '!{name}' is not supported by polyopt")
            raise self.error(f"undefined symbol alias id '{name}'" if m else "expected type")
        simple = _SIMPLE_SHAPED_TYPE.match(self.text, start)
        if simple is not None:
            t = _SIMPLE_SHAPED_TYPES.get(simple.group(0))
            if t is not None:
                self.pos = simple.end()
                return t
        word = self.optional_bare_id()
        if word is None:
            raise self.wrong_token("expected non-function type")
        t = _COMMON_SCALAR_TYPES.get(word)
        if t is not None:
            return t
        if word in ("vector", "memref"):
            t = self._parse_vector_type(start) if word == "vector" else \
                self._parse_memref_type(start)
            if simple is not None and self.pos == simple.end():
                if len(_SIMPLE_SHAPED_TYPES) >= 4096:
                    _SIMPLE_SHAPED_TYPES.clear()
                _SIMPLE_SHAPED_TYPES[simple.group(0)] = t
            return t
        m = re.fullmatch(r"([su]?)i([0-9]+)", word)
        if m:
            digits = m.group(2).lstrip("0") or "0"
            if len(digits) > 10 or int(digits) > 0xFFFFFFFF:
                raise self.error("invalid integer width", start)
            if int(digits) > MAX_INTEGER_WIDTH:
                raise self.error(f"integer bitwidth is limited to {MAX_INTEGER_WIDTH} bits", start)
            if m.group(1):
                raise self.error(f"type '{word}' is not supported by polyopt (signless integers "
                                 "only: i1, i8, ..., with arith's signed/unsigned ops)", start)
        t = self._scalar_type(word)
        if t is not None:
            return t
        if word == "none":
            return NoneType()
        if word == "tensor":
            return self._parse_tensor_type(start)
        if word in ("tuple", "complex"):
            raise self.error(f"type '{word}' is not supported by polyopt (memref-based IR only)", start)
        if _OTHER_FLOAT_TYPES.fullmatch(word):
            raise self.error(f"type '{word}' is not supported by polyopt (float types: f16, bf16, "
                             "f32, f64)", start)
        raise self.error(f"unknown type '{word}'", start)

    def _parse_amx_tile_type(self, start: int) -> AMXTileType:
        """``!amx.tile<16x32xbf16>`` (after ``!amx.tile``): a static 2-D shape and an element
        type AMX has; the op verifiers check the rows and row bytes against the hardware."""
        self.expect("<")
        dims: list[int] = []
        while True:
            self.skip_ws()
            if self.text.startswith("?", self.pos):
                raise self.error("expected static shape")
            m = _DIGITS.match(self.text, self.pos)
            if not m:
                break
            dims.append(self._int_value(m.group(0), self.pos))
            self.pos = m.end()
            self.skip_ws()
            if not self.text.startswith("x", self.pos):
                raise self.error("expected 'x' in dimension list")
            self.pos += 1
        elem = self.parse_type()
        self.expect(">", "in tile type")
        if elem not in _AMX_ELEMENT_TYPES:
            raise self.error("failed to verify 'elementType': 32-bit float or 16-bit float or "
                             "bfloat16 type or 32-bit signless integer or 8-bit signless integer",
                             start)
        if len(dims) != 2:
            raise self.error(f"'!amx.tile' types of rank {len(dims)} are not supported by "
                             "polyopt (a tile is rows x columns)", start)
        return AMXTileType(dims[0], dims[1], elem)

    def _parse_tensor_type(self, start: int) -> TensorType:
        self.expect("<")
        if self.optional("*"):
            self.skip_ws()
            if not self.text.startswith("x", self.pos):
                raise self.error("expected 'x' in unranked tensor type")
            self.pos += 1
            elem = self.parse_type()
            self.expect(">", "in tensor type")
            return TensorType(None, elem)
        dims, elem = self._parse_dims_and_element(start, allow_dynamic=True)
        if self.peek(","):
            raise self.error("tensor encodings are not supported by polyopt")
        self.expect(">", "in tensor type")
        return TensorType(tuple(dims), elem)

    @staticmethod
    def _scalar_type(word: str) -> Optional[Type]:
        if word == "index":
            return IndexType()
        m = re.fullmatch(r"i([0-9]+)", word)
        if m:
            return IntegerType(int(m.group(1)))
        if word in ("f16", "f32", "f64"):
            return FloatType(int(word[1:]))
        if word == "bf16":
            return FloatType(16, brain=True)
        return None

    def _parse_dims_and_element(self, start: int, allow_dynamic: bool) -> tuple[list, Type]:
        """``2048x?x4xf64`` -> ([2048, None, 4], f64); the element type may be a vector.
        Without ``allow_dynamic`` (a vector), a scalable ``[4]`` is read as ``[4]``."""
        dims: list = []
        while True:
            self.skip_ws()   # MLIR's lexer: ``memref< 4 x ? x f32 >`` is ``memref<4x?xf32>``
            if not allow_dynamic and self.text.startswith("[", self.pos):
                # a scalable dimension of a vector (``vector<[4]xf32>``): read, then refused
                self.pos += 1
                self.skip_ws()
                m = _DIGITS.match(self.text, self.pos)
                if not m:
                    raise self.error("expected integer value")
                self.pos = m.end()
                self.skip_ws()
                if not self.optional("]"):
                    raise self.error("missing ']' closing scalable dimension")
                dims.append([self._int_value(m.group(0), m.start())])
            elif self.text.startswith("?", self.pos):
                if not allow_dynamic:
                    raise self.error("vector types must have static shape (scalable vectors are not supported)")
                self.pos += 1
                dims.append(None)
            else:
                m = _DIGITS.match(self.text, self.pos)
                if not m:
                    break
                size = self._int_value(m.group(0), self.pos)
                if size > INT64_MAX:
                    raise self.error("invalid dimension")
                dims.append(size)
                self.pos = m.end()
            self.skip_ws()
            if not self.text.startswith("x", self.pos):
                raise self.error("expected 'x' in dimension list")
            self.pos += 1
        elem = self.parse_type()
        return dims, elem

    def _parse_vector_type(self, start: int) -> VectorType:
        self.expect("<")
        dims, elem = self._parse_dims_and_element(start, allow_dynamic=False)
        if any(isinstance(d, list) for d in dims):
            raise self.error("scalable vector types are not supported by polyopt (fixed-size "
                             "vectors only)", start)
        if any(d <= 0 for d in dims):
            raise self.error("vector types must have positive constant sizes but got "
                             + ", ".join(map(str, dims)), start)
        if math.prod(dims) > MAX_VECTOR_ELEMENTS:
            raise self.error(f"vector types of more than {MAX_VECTOR_ELEMENTS} elements are not "
                             "supported by polyopt (LLVM's code generator fails on them)", start)
        if not (elem.is_int_or_index or elem.is_float):
            # MLIR's words: the element type lacks VectorElementTypeInterface
            raise self.error("failed to verify 'elementType': VectorElementTypeInterface "
                             "instance", start)
        self.expect(">", "in vector type")
        return VectorType(tuple(dims), elem)

    def _parse_memref_type(self, start: int) -> Type:
        self.expect("<")
        if self.optional("*"):
            if not self.text.startswith("x", self.pos):
                raise self.error("expected 'x' in unranked memref type")
            self.pos += 1
            elem = self.parse_type()
            ms = None
            if self.optional(","):
                ms = self._parse_memory_space()
            self.expect(">", "in memref type")
            return UnrankedMemRefType(elem, ms)
        dims, elem = self._parse_dims_and_element(start, allow_dynamic=True)
        if isinstance(elem, (MemRefType, UnrankedMemRefType)):     # valid in MLIR
            raise self.error(f"memref element type '{elem}' is not supported by polyopt "
                             "(elements of integer, index, float or vector type only)", start)
        if not (elem.is_int_or_index or elem.is_float or isinstance(elem, VectorType)):
            raise self.error(f"invalid memref element type '{elem}'", start)
        layout = None
        ms = None
        while self.optional(","):
            self.skip_ws()
            lstart = self.pos
            if self.peek_keyword("strided"):
                layout = self._parse_strided_layout()
            elif self.peek_keyword("affine_map") or self.peek("(") or \
                    self.peek("#") and not _DIALECT_ATTR.match(self.text, self.pos):
                m = self.parse_affine_map_or_set_ref(want="map")
                layout = m
                if m.num_dims != len(dims):
                    raise self.error(f"memref layout mismatch between rank and affine map: "
                                     f"{len(dims)} != {m.num_dims}", lstart)
                if m.num_symbols:
                    raise self.error("memref layout maps with symbols are not supported", lstart)
                if len(m.results) > MAX_LAYOUT_RESULTS:
                    raise self.error(f"memref layout maps of more than {MAX_LAYOUT_RESULTS} "
                                     f"results are not supported by polyopt (got "
                                     f"{len(m.results)})", lstart)
            else:
                ms = self._parse_memory_space()
        self.expect(">", "in memref type")
        return MemRefType(tuple(dims), elem, layout, ms)

    def _parse_memory_space(self) -> int:
        """A memref's integer memory space (``memref<4xf32, 3>``); the other attributes
        MLIR takes there (``"local"``, ``{...}``, ``#gpu.address_space<...>``) are read and
        refused."""
        self.skip_ws()
        at = self.pos
        if self.peek('"') or self.peek("{") or self.peek("#"):
            self.parse_attribute()
            written = self.text[at:self.pos].strip()
            raise self.error(f"memory space '{written}' is not supported by polyopt (integer "
                             "memory spaces only)", at)
        number = self._lex_number()
        if number is None or number.kind == "float":
            self.pos = at
            raise self.error(f"expected memory space or layout, found {self._describe_next()}")
        value = self._int_value(number.text, number.offset)
        if value > INT64_MAX:
            raise self.error("integer constant out of range for attribute", number.digits_offset)
        return -value if number.negative else value

    def _parse_strided_layout(self) -> StridedLayout:
        self.expect_keyword("strided")
        self.expect("<")

        def one():
            if self.optional("?"):
                return None
            self.skip_ws()
            at = self.pos
            try:
                return self.parse_integer("stride")
            except ParseError:
                raise self.error("expected a 64-bit signed integer or '?'", at) from None
        strides = self.parse_comma_separated("[", "]", one)
        offset = 0
        if self.optional(","):
            self.expect_keyword("offset")
            self.expect(":")
            offset = one()
        self.expect(">")
        return StridedLayout(tuple(strides), offset)

    def parse_function_type(self) -> FunctionType:
        ins = self.parse_comma_separated("(", ")", self.parse_type)
        self.expect("->", "in function type")
        outs = self.parse_result_types()
        return FunctionType(tuple(ins), tuple(outs))

    def parse_result_types(self) -> list[Type]:
        """A single type or a parenthesized list (the right side of ``->``)."""
        self.skip_ws()
        if self.peek("("):
            save = self.pos
            items = self.parse_comma_separated("(", ")", self.parse_type)
            if self.peek("->"):  # it was a function type as the single result
                self.pos = save
                return [self.parse_function_type()]
            return items
        return [self.parse_type()]

    def parse_colon_type(self) -> Type:
        self.expect(":")
        return self.parse_type()

    def parse_type_list(self) -> list[Type]:
        types = [self.parse_type()]
        while self.optional(","):
            types.append(self.parse_type())
        return types

    # ---------------------------------------------------------------------------------------
    # affine maps and sets
    def parse_affine_map_or_set_ref(self, want: str = "map") -> AffineMap | IntegerSet:
        """``#map``, ``affine_map<...>``/``affine_set<...>``, or a bare 2020 map ``(d0) -> (d0)``."""
        self.skip_ws()
        start = self.pos
        if self.text.startswith("#", self.pos):
            m = _SUFFIX_ID.match(self.text, self.pos + 1)
            name = m.group(0) if m else ""
            if name not in self.map_aliases:
                raise self.error(f"undefined symbol alias id '{name}'", start)
            self.pos = m.end()
            value = self.map_aliases[name]
        elif self.optional_keyword("affine_map"):
            self.expect("<")
            value = self.parse_affine_map_body()
            self.expect(">")
        elif self.optional_keyword("affine_set"):
            self.expect("<")
            value = self.parse_integer_set_body()
            self.expect(">")
        elif self.peek("("):
            value = self.parse_map_or_set_body()
        else:
            raise self.error(f"expected affine {want}, found {self._describe_next()}")
        if want == "map" and not isinstance(value, AffineMap):
            raise self.error("expected an affine map, found an integer set", start)
        if want == "set" and not isinstance(value, IntegerSet):
            raise self.error("expected an integer set, found an affine map", start)
        return value

    def _parse_dim_symbol_decls(self) -> tuple[dict[str, AffineExpr], int, int]:
        names: dict[str, AffineExpr] = {}

        def dim_decl():
            self.skip_ws()
            start = self.pos
            n = self.parse_bare_id("dimension identifier")
            if n in names:
                raise self.error(f"redefinition of identifier '{n}'", start)
            names[n] = dim(len(names))
        self.parse_comma_separated("(", ")", dim_decl)
        ndims = len(names)
        if self.peek("["):
            def sym_decl():
                self.skip_ws()
                start = self.pos
                n = self.parse_bare_id("symbol identifier")
                if n in names:
                    raise self.error(f"redefinition of identifier '{n}'", start)
                names[n] = symbol(len(names) - ndims)
            self.parse_comma_separated("[", "]", sym_decl)
        return names, ndims, len(names) - ndims

    def parse_map_or_set_body(self) -> AffineMap | IntegerSet:
        names, nd, ns = self._parse_dim_symbol_decls()
        lookup = lambda n, off: names.get(n)  # noqa: E731
        if self.optional("->"):
            results = self._parse_affine_list(lambda: self.parse_affine_expr(lookup),
                                              "in affine map range")
            return AffineMap.get(nd, ns, tuple(results))
        if self.optional(":"):
            cons, eqs = self._parse_constraints(lookup)
            return IntegerSet(nd, ns, tuple(cons), tuple(eqs))
        raise self.error(f"expected '->' or ':' in affine map or set, found {self._describe_next()}")

    def parse_affine_map_body(self) -> AffineMap:
        start = self.pos
        v = self.parse_map_or_set_body()
        if not isinstance(v, AffineMap):
            raise self.error("expected affine map, found an integer set", start)
        return v

    def parse_integer_set_body(self) -> IntegerSet:
        start = self.pos
        v = self.parse_map_or_set_body()
        if not isinstance(v, IntegerSet):
            raise self.error("expected integer set, found an affine map", start)
        return v

    def _parse_constraints(self, lookup):
        cons, eqs = [], []

        def one():
            self.skip_ws()
            start = self.pos
            lhs = self.parse_affine_expr(lookup)
            if self.optional(">="):
                rhs = self.parse_affine_expr(lookup)
                cons.append(lhs - rhs)
                eqs.append(False)
            elif self.optional("<="):
                rhs = self.parse_affine_expr(lookup)
                cons.append(rhs - lhs)
                eqs.append(False)
            elif self.optional("=="):
                rhs = self.parse_affine_expr(lookup)
                cons.append(lhs - rhs)
                eqs.append(True)
            else:
                raise self.error("expected '== affine-expr' or '>= affine-expr' at end of "
                                 "affine constraint")
        self._parse_affine_list(one, "in integer set constraint list")
        return cons, eqs

    def _parse_affine_list(self, element: Callable[[], object], context: str) -> list:
        """``(e, e, ...)`` of an affine map's results or an integer set's constraints, with
        MLIR's messages for a missing parenthesis (``expected '(' in affine map range``)."""
        with self.nested("list"):
            self.expect("(", context)
            items = []
            if self.optional(")"):
                return items
            while True:
                items.append(element())
                if self.optional(")"):
                    return items
                if not self.optional(","):
                    raise self.wrong_token(f"expected ')' {context}")

    def parse_affine_expr(self, lookup: Callable[[str, int], Optional[AffineExpr]]) -> AffineExpr:
        """Affine expression with MLIR's precedence; ``lookup`` resolves identifiers/SSA names."""
        expr = self._affine_term(lookup)
        while True:
            if self.optional("+"):
                expr = expr + self._affine_term(lookup, after_operator=True)
            elif self.peek("-") and not self.peek("->"):
                self.pos += 1
                expr = expr - self._affine_term(lookup, after_operator=True)
            else:
                return expr

    def _affine_term(self, lookup, after_operator: bool = False) -> AffineExpr:
        expr = self._affine_unary(lookup, after_operator)
        while True:
            self.skip_ws()
            start = self.pos
            if self.optional("*"):
                rhs = self._affine_unary(lookup, True)
                if not (expr.is_symbolic_or_constant() or rhs.is_symbolic_or_constant()):
                    raise self.error("non-affine expression: at least one of the multiply "
                                     "operands has to be either a constant or symbolic",
                                     self._combined_at(start))
                expr = expr * rhs
            elif self.optional_keyword("floordiv") or self.optional_keyword("ceildiv") \
                    or self.optional_keyword("mod"):
                op = self.text[start:self.pos].strip()
                rhs = self._affine_unary(lookup, True)
                if not rhs.is_symbolic_or_constant():
                    raise self.error(f"non-affine expression: right operand of {op} has to be "
                                     "either a constant or symbolic", self._combined_at(start))
                if rhs == constant(0):
                    raise self.error("division by zero in affine expression",
                                     self._combined_at(start))
                if op == "floordiv":
                    expr = expr.floordiv(rhs)
                elif op == "ceildiv":
                    expr = expr.ceildiv(rhs)
                else:
                    expr = expr.mod(rhs)
            else:
                return expr

    def _combined_at(self, op_start: int) -> int:
        """Where MLIR reports a bad ``lhs op rhs`` of ``*``/``floordiv``/``ceildiv``/``mod``:
        at the next such operator when one follows (MLIR combines the pair on reading it),
        else at ``op``."""
        self.skip_ws()
        if self.peek("*") or any(self.peek_keyword(k) for k in ("floordiv", "ceildiv", "mod")):
            return self.pos
        return op_start

    def _affine_unary(self, lookup, after_operator: bool = False) -> AffineExpr:
        """An operand; ``after_operator``: it is the right operand of a binary operator (the
        messages for a missing one are MLIR's ``parseAffineOperandExpr``'s)."""
        before_ws = self.pos
        self.skip_ws()
        start = self.pos
        if self.peek("-") and not self.peek("->"):
            self.pos += 1
            self.skip_ws()
            m = _INT.match(self.text, self.pos)
            if m and self._int_value(m.group(0), self.pos) == INT64_MAX + 1:
                # -9223372036854775808: what the printer writes for the smallest int64 (MLIR's
                # own parser refuses its printer's text there)
                self.pos = m.end()
                return constant(-(INT64_MAX + 1))
            with self.nested("affine expression"):
                return -self._affine_unary(lookup, after_operator)
        if self.optional("("):
            if self.peek(")"):
                raise self.error("no expression inside parentheses")
            with self.nested("affine expression"):
                e = self.parse_affine_expr(lookup)
            self.expect(")", "in affine expression")
            return e
        if self.peek_char().isdigit():
            m = _INT.match(self.text, self.pos)
            if self._int_value(m.group(0), self.pos) > INT64_MAX:
                raise self.error("constant too large for index")
            return constant(self.parse_integer())
        if self.peek_keyword("symbol") and re.match(r"symbol\s*\(", self.text[self.pos:self.pos + 20]):
            self.expect_keyword("symbol")
            self.expect("(")
            name, _ = self.parse_ssa_name()
            self.expect(")")
            e = lookup("symbol:" + name, start)
            if e is None:
                raise self.error(f"use of undeclared SSA value name '%{name}'", start)
            return e
        if self.peek("%"):
            name, _ = self.parse_ssa_name()
            e = lookup("%" + name, start)
            if e is None:
                raise self.error(f"use of undeclared SSA value name '%{name}'", start)
            return e
        if self.peek("+") or self.peek("*"):
            side = "right" if after_operator else "left"
            raise self.error(f"missing {side} operand of binary operator")
        word = self.optional_bare_id()
        if word is None:
            if after_operator:
                raise self.error("missing right operand of binary operator")
            raise self.error(f"expected affine expression, found {self._describe_next()}", start)
        e = lookup(word, start)
        if e is None:
            # MLIR reads floordiv/ceildiv/mod as operators, and reports their use as an
            # operand where the operand was due: just after the previous token
            at = before_ws if word in ("floordiv", "ceildiv", "mod") else start
            raise self.error(f"use of undeclared identifier '{word}' in affine expression", at)
        return e

    def parse_affine_map_of_ssa_ids(self, delimiter: str = "square") -> tuple[AffineMap, list[Value]]:
        """``[%i + 1, %j * 2, symbol(%n)]`` -> (map over dims/symbols, operands dims-then-symbols).

        MLIR's ``parseAffineMapOfSSAIds``: every SSA name used becomes a dimension in order of
        first appearance, except those wrapped in ``symbol(...)`` which become symbols.
        """
        dims_vals: list[Value] = []
        syms_vals: list[Value] = []
        dim_names: dict[str, int] = {}
        sym_names: dict[str, int] = {}

        def lookup(name: str, offset: int) -> Optional[AffineExpr]:
            if name.startswith("symbol:"):
                key = name[len("symbol:"):]
                if key not in sym_names:
                    sym_names[key] = len(syms_vals)
                    syms_vals.append(self._lookup(key, offset))
                return symbol(sym_names[key])
            if name.startswith("%"):
                key = name[1:]
                if key not in dim_names:
                    dim_names[key] = len(dims_vals)
                    dims_vals.append(self._lookup(key, offset))
                return dim(dim_names[key])
            return None
        open_, close = ("[", "]") if delimiter == "square" else ("(", ")")
        results = self.parse_comma_separated(open_, close, lambda: self.parse_affine_expr(lookup))
        for v in dims_vals + syms_vals:
            if v.type != IndexType():
                raise self.error(f"affine subscripts must be of 'index' type, got '{v.type}'")
        amap = AffineMap.get(len(dims_vals), len(syms_vals), tuple(results))
        return amap, dims_vals + syms_vals

    def parse_dim_and_symbol_list(self, amap: AffineMap) -> list[Value]:
        """``(%d0, %d1)[%s0]`` after a map; counts checked against the map."""
        start = self.pos
        dims = self.parse_operand_list("paren") if self.peek("(") else []
        syms = self.parse_operand_list("square") if self.peek("[") else []
        if len(dims) != amap.num_dims:
            raise self.error(f"dim operand count and affine map dim count must match "
                             f"(expected {amap.num_dims}, got {len(dims)})", start)
        if len(syms) != amap.num_symbols:
            raise self.error(f"symbol operand count and affine map symbol count must match "
                             f"(expected {amap.num_symbols}, got {len(syms)})", start)
        for v in dims + syms:
            if v.type != IndexType():
                raise self.error(f"operands of affine maps must be of 'index' type, got '{v.type}'", start)
        return dims + syms

    # ---------------------------------------------------------------------------------------
    # attributes
    def parse_attribute(self, type_hint: Optional[Type] = None) -> Attribute:
        self.skip_ws()
        start = self.pos
        c = self.peek_char()
        if c == '"':
            return StringAttr(self.parse_string())
        if c == "[":
            return ArrayAttr(tuple(self.parse_comma_separated("[", "]", self.parse_attribute)))
        if c == "{":
            return DictAttr(tuple(self.parse_attr_dict_body().items()))
        if c == "@":
            return SymbolRefAttr(self._parse_symbol_name())
        if self.peek_keyword("loc") and _LOC_OPEN.match(self.text, self.pos):
            self.expect_keyword("loc")
            self.expect("(")
            attr = self._location_instance()
            self.expect(")", "in location")
            return attr
        if c == "#":
            m = _SUFFIX_ID.match(self.text, self.pos + 1)
            name = m.group(0) if m else ""
            if name in self.map_aliases:
                v = self.parse_affine_map_or_set_ref(want="any")
                return AffineMapAttr(v) if isinstance(v, AffineMap) else IntegerSetAttr(v)
            if name in self.attr_aliases:
                self.pos = m.end()
                return self.attr_aliases[name]
            if "." not in name:      # not a dialect attribute (#arith.fastmath<fast>)
                raise self.error(f"undefined symbol alias id '{name}'", start)
            return OpaqueAttr(self._skip_balanced_attr())
        if c == "(":
            try:  # a function type (``function_type = (index) -> ()`` in generic func.func)
                return TypeAttr(self.parse_function_type())
            except ParseError:
                self.pos = start
            v = self.parse_map_or_set_body()  # 2020 bare map
            return AffineMapAttr(v) if isinstance(v, AffineMap) else IntegerSetAttr(v)
        if c == "-" or c.isdigit():
            return self._parse_number_attr(type_hint, start)
        word_m = _BARE_ID.match(self.text, self.pos)
        word = word_m.group(0) if word_m else ""
        if word in ("true", "false"):
            self.pos = word_m.end()
            return IntegerAttr(1 if word == "true" else 0, i1)
        if word == "unit":
            self.pos = word_m.end()
            return UnitAttr()
        if word in ("affine_map", "affine_set"):
            v = self.parse_affine_map_or_set_ref(want="any")
            return AffineMapAttr(v) if isinstance(v, AffineMap) else IntegerSetAttr(v)
        if word == "array":
            self.pos = word_m.end()
            self.expect("<")
            self.skip_ws()
            tstart = self.pos
            et = self.parse_type()
            if not isinstance(et, (IntegerType, FloatType)):
                raise self.error("expected integer or float type, got: " + str(et), tstart)
            vals = []
            if self.optional(":"):
                vals.append(self._dense_array_value(et))
                while self.optional(","):
                    vals.append(self._dense_array_value(et))
            self.expect(">")
            return DenseArrayAttr(et, tuple(vals))
        if word == "dense":
            return self.parse_dense_elements_attr()
        try:
            return TypeAttr(self.parse_type(allow_tensor=True))
        except ParseError:
            self.pos = start
            raise self.wrong_token("expected attribute value")

    def _dense_array_value(self, et: Type):
        """One element of ``array<i32: 1, 2>`` / ``array<f32: 1.5>`` / ``array<i1: true>``."""
        self.skip_ws()
        at = self.pos
        if isinstance(et, IntegerType) and et.width == 1 and \
                (self.optional_keyword("true") or self.optional_keyword("false")):
            return 1 if self.text[at:self.pos] == "true" else 0
        number = self._lex_number()
        if number is None:
            raise self.error(f"expected integer or float literal, found {self._describe_next()}")
        if isinstance(et, FloatType):
            if number.kind == "int":   # array<f32: 1> is accepted (as MLIR does)
                number = number._replace(kind="float")
            return self._float_of(number, et)
        if number.kind == "float":
            raise self.error("expected integer literal", number.offset)
        return self._integer_of(number, et, "")

    def _lex_number(self) -> Optional[_Number]:
        """An optionally negative float, decimal or hex integer literal (not converted yet),
        with the position after it; ``None`` when none follows (a ``-`` is consumed)."""
        self.skip_ws()
        at = self.pos
        neg = self.optional("-")
        self.skip_ws()
        fm = _FLOAT.match(self.text, self.pos)
        im = _INT.match(self.text, self.pos)
        digits_at = self.pos
        if fm and (not im or fm.end() > im.end()):
            self.pos = fm.end()
            return _Number("float", fm.group(0), neg, at, digits_at)
        if im:
            self.pos = im.end()
            kind = "hex" if im.group(0).startswith("0x") else "int"
            return _Number(kind, im.group(0), neg, at, digits_at)
        return None

    def _integer_of(self, number: _Number, t: Type, what: str) -> int:
        """The value of an integer literal in ``t`` (iN or index) as MLIR stores it (signed:
        ``255 : i8`` is -1, ``-1 : i1`` is 1), or MLIR's out-of-range error."""
        value = self._int_value(number.text, number.offset)
        if number.negative:
            value = -value
        if isinstance(t, IndexType):
            lo, hi = -(1 << 63), INT64_MAX
        elif t.width == 0:
            lo, hi = 0, 0
        elif t.width == 1:
            lo, hi = -1, 1
        else:
            lo, hi = -(1 << (t.width - 1)), (1 << t.width) - 1
        if not lo <= value <= hi:
            raise self.error(f"integer constant out of range{' for ' if what else ''}{what}",
                             number.digits_offset)
        return wrap_signed(value, t)

    def _float_of(self, number: _Number, t: FloatType) -> float:
        """The value of a float literal (or of a hex bit pattern) in ``t``."""
        fmt = float_format.format_of(t)
        if number.kind == "float":
            return float_format.parse_decimal(("-" if number.negative else "") + number.text, fmt)
        if number.kind == "int":
            raise self.error("unexpected decimal integer literal for a floating point value",
                             number.offset)
        if number.negative:
            raise self.error("hexadecimal float literal should not have a leading minus",
                             number.digits_offset)
        bits = int(number.text, 16)
        if bits >> fmt.width:
            raise self.error("hexadecimal float constant out of range for type", number.offset)
        return float_format.from_bits(bits, fmt)

    def _parse_number_attr(self, type_hint: Optional[Type], start: int) -> Attribute:
        number = self._lex_number()
        if number is None:
            raise self.wrong_token("expected attribute value")
        save = self.pos
        t = self._optional_colon_type()
        type_at = _WS.match(self.text, self.text.index(":", save) + 1).end() \
            if t is not None else start
        t = t or type_hint
        if number.kind == "float":
            t = t if t is not None else FloatType(64)
            if not isinstance(t, FloatType):
                raise self.error("floating point value not valid for specified type", type_at)
        t = t if t is not None else i64
        if isinstance(t, FloatType):
            return FloatAttr(self._float_of(number, t), t)
        if not isinstance(t, (IntegerType, IndexType)):
            raise self.error(f"integer literal not valid for type '{t}'", start)
        return IntegerAttr(self._integer_of(number, t, "attribute"), t)

    def parse_dense_elements_attr(self) -> DenseElementsAttr:
        """``dense<literal> : type`` of a statically shaped tensor or vector type: a splat
        (``dense<1.0>``), nested lists (``dense<[[1, 2], [3, 4]]>``), ``true``/``false``, hex
        bit patterns of floats (``dense<0x7FC00000>``) or the raw little-endian bytes of every
        element (``dense<"0x0000803F">``), with MLIR's messages."""
        self.skip_ws()
        start = self.pos
        self.expect_keyword("dense")
        self.expect("<")
        self.skip_ws()
        hex_data = None
        literal = None
        if self.peek('"'):
            hex_at = self.pos
            hex_data = self.parse_string()
            if not re.fullmatch(r"0x([0-9a-fA-F]{2})*", hex_data):
                raise self.error("expected string containing hex digits starting with `0x`",
                                 hex_at)
        elif not self.peek(">"):
            literal = self._dense_literal()
        self.expect(">")
        self.expect(":", "after dense elements literal")
        self.skip_ws()
        tstart = self.pos
        t = self.parse_type(allow_tensor=True)
        if not isinstance(t, (TensorType, VectorType)):
            raise self.error("elements literal must be a shaped type", start)
        if not t.has_static_shape if isinstance(t, TensorType) else False:
            raise self.error("elements literal type must have static shape", start)
        et = t.element_type
        if not isinstance(et, (IntegerType, IndexType, FloatType)):
            raise self.error(f"polyopt reads dense elements of integer, index and float types, "
                             f"not '{et}'", tstart)
        dims = list(t.shape)
        kind = "vector" if isinstance(t, VectorType) else "tensor"
        if hex_data is not None:
            data = self._dense_hex_values(bytes.fromhex(hex_data[2:]), t, start)
            return DenseElementsAttr(tuple(dims), et, data, kind)
        count = math.prod(dims)
        if literal is None:
            if count:
                raise self.error(f"parsed zero elements, but type ('{t}') expected at least 1",
                                 start)
            return DenseElementsAttr(tuple(dims), et, (), kind)
        shape, leaves = literal
        if shape and shape != dims:
            raise self.error(f"inferred shape of elements literal ([{', '.join(map(str, shape))}])"
                             f" does not match type ([{', '.join(map(str, dims))}])", start)
        if not shape and count == 0:
            raise self.error(f"inferred shape of elements literal ([]) does not match type "
                             f"([{', '.join(map(str, dims))}])", start)
        return DenseElementsAttr(tuple(dims), et, tuple(self._dense_value(v, et) for v in leaves),
                                 kind)

    def _dense_literal(self) -> tuple[list[int], list]:
        """The literal of ``dense<...>``: (its shape, its leaves in row-major order)."""
        self.skip_ws()
        if self.peek("["):
            shapes: list = []
            leaves: list = []

            def element():
                shape, inner = self._dense_literal()
                shapes.append(shape)
                leaves.extend(inner)
            self.parse_comma_separated("[", "]", element)
            if any(sh != shapes[0] for sh in shapes[1:]):
                raise self.error("tensor literal is invalid; ranks are not consistent between "
                                 "elements", self.pos - 1)
            return [len(shapes)] + (shapes[0] if shapes else []), leaves
        at = self.pos
        if self.optional_keyword("true") or self.optional_keyword("false"):
            return [], [_Number("bool", self.text[at:self.pos], False, at, at)]
        if self.peek("("):
            raise self.error("complex elements are not supported by polyopt")
        number = self._lex_number()
        if number is None:
            self.pos = at
            raise self.error("expected element literal of primitive type")
        return [], [number]

    def _dense_value(self, number: _Number, et: Type):
        if number.kind == "bool":
            if isinstance(et, FloatType):
                raise self.error("expected floating point literal", number.offset)
            if not (isinstance(et, IntegerType) and et.width == 1):
                raise self.error("expected i1 type for 'true' or 'false' values", number.offset)
            return 1 if number.text == "true" else 0
        if isinstance(et, FloatType):
            return self._float_of(number, et)
        if number.kind == "float":
            raise self.error("expected integer elements, but parsed floating-point",
                             number.offset)
        return self._integer_of(number, et, "type")

    def _dense_hex_values(self, raw: bytes, t, start: int) -> tuple:
        """The elements of ``dense<"0x...">``: little-endian, ``i1`` one bit each (LSB first);
        a single element's worth of bytes is a splat."""
        et = t.element_type
        count = math.prod(t.shape)
        if isinstance(et, IntegerType) and et.width == 1:
            if len(raw) == 1 and raw[0] in (0, 0xFF):
                return (1 if raw[0] else 0,)
            if len(raw) == (count + 7) // 8:
                return tuple((raw[k // 8] >> (k % 8)) & 1 for k in range(count))
            raise self.error(f"elements hex data size is invalid for provided type: '{t}'", start)
        width = 64 if isinstance(et, IndexType) else et.width
        size = (width + 7) // 8
        if size and len(raw) == size:
            words = [raw]
        elif size and len(raw) == size * count:
            words = [raw[k * size:(k + 1) * size] for k in range(count)]
        else:
            raise self.error(f"elements hex data size is invalid for provided type: '{t}'", start)
        mask = (1 << width) - 1
        if isinstance(et, FloatType):
            fmt = float_format.format_of(et)
            return tuple(float_format.from_bits(int.from_bytes(w, "little") & mask, fmt)
                         for w in words)
        return tuple(wrap_signed(int.from_bytes(w, "little") & mask, et) for w in words)

    def _optional_colon_type(self) -> Optional[Type]:
        """``: type`` after a literal, when what follows the colon is a type; a type that
        starts like one and is wrong (``: i99999999999``) is an error."""
        save = self.pos
        if self.optional(":") and not self.peek(":"):
            self.skip_ws()
            m = _BARE_ID.match(self.text, self.pos)
            if self.text.startswith("!", self.pos) or m and _TYPE_WORD.fullmatch(m.group(0)):
                return self.parse_type()
        self.pos = save
        return None

    def _skip_balanced_attr(self, with_type: bool = False) -> str:
        """Keep an attribute we do not model (``#arith.fastmath<fast>``) as text."""
        self.skip_ws()
        start = self.pos
        m = re.compile(r"#?[A-Za-z0-9_$.]+").match(self.text, self.pos)
        if not m:
            raise self.wrong_token("expected attribute value")
        self.pos = m.end()
        if self.text.startswith("<", self.pos):
            depth = 0
            while self.pos < len(self.text):
                ch = self.text[self.pos]
                if ch == "<":
                    depth += 1
                elif ch == ">" and self.text[self.pos - 1] != "-":
                    depth -= 1
                    if depth == 0:
                        self.pos += 1
                        break
                self.pos += 1
            else:
                raise self.error("unbalanced '<' in attribute", start)
        if with_type:
            t = self._optional_colon_type()
            if t is not None:
                return self.text[start:self.pos]
        return self.text[start:self.pos]

    def parse_attr_dict_body(self) -> dict[str, Attribute]:
        attrs: dict[str, Attribute] = {}

        def entry():
            self.skip_ws()
            start = self.pos
            if self.peek('"'):
                name = self.parse_string()
            else:
                name = self.parse_bare_id("attribute name")
            if name in attrs:
                raise self.error(f"duplicate key '{name}' in dictionary attribute", start)
            if self.optional("="):
                attrs[name] = self.parse_attribute()
            else:
                attrs[name] = UnitAttr()
        self._parse_comma_separated("{", "}", entry, True)    # a dictionary does not nest
        return attrs

    def parse_optional_attr_dict(self) -> dict[str, Attribute]:
        if self.peek("{"):
            return self.parse_attr_dict_body()
        return {}

    def parse_optional_attr_dict_with_keyword(self) -> dict[str, Attribute]:
        if self.optional_keyword("attributes"):
            return self.parse_attr_dict_body()
        return {}

    def parse_symbol_name(self) -> str:
        """``@name`` or ``@"name"`` for an op's custom parser (MLIR's
        ``OpAsmParser::parseSymbolName``, whose errors name the op)."""
        return self._parse_symbol_name(self.custom_op_prefix())

    def _parse_symbol_name(self, prefix: str = "") -> str:
        self.skip_ws()
        if not self.optional("@"):
            raise self.error(f"{prefix}expected valid '@'-identifier for symbol name, found "
                             f"{self._describe_next()}")
        if self.text.startswith('"', self.pos):
            return self.parse_string()
        m = _BARE_ID.match(self.text, self.pos)
        if not m:
            raise self.error("@ identifier expected to start with letter or '_'")
        self.pos = m.end()
        return m.group(0)

    # ---------------------------------------------------------------------------------------
    # regions
    def parse_region(self, entry_args: Sequence[tuple[str, Value]] = (),
                     entry_arg_types: Sequence[Type] = (),
                     allow_block_args: bool = True, allow_empty: bool = False) -> Region:
        """``{ ops }``; ``entry_args`` are (name, BlockArgument) pairs the op declared already.

        When ``entry_args`` is empty and the region starts with ``^bb0(%a: t, ...):`` those are
        parsed as the entry block's arguments.  With ``allow_empty``, ``{}`` is a region with no
        block (MLIR's generic form of a function declaration).

        The values of enclosing regions are visible even in the region of an op isolated from
        above (func.func, builtin.module), as in MLIR's parser: such a use is the verifier's
        "using value defined outside the region", and an inner ``%x`` redefines an outer one.
        """
        counted = not (self.module_region_free and self.op_stack[-1:] == ["builtin.module"])
        self.module_region_free = False
        if counted and self.region_depth >= MAX_NESTING:
            raise self.error(_TOO_DEEP)
        saved_depth = self.depth
        self.region_depth += counted
        self.deepest = max(self.deepest, (self.region_depth, self.pos))
        self.depth = 0          # the ops of the region start their own count
        try:
            return self._parse_region_body(entry_args, entry_arg_types, allow_block_args,
                                           allow_empty)
        finally:
            self.region_depth -= counted
            self.depth = saved_depth

    def _parse_region_body(self, entry_args, entry_arg_types, allow_block_args,
                           allow_empty) -> Region:
        self.expect("{", "to begin a region")
        if allow_empty and not entry_args and self.optional("}"):
            return Region()
        saved_scopes = self.scopes
        self.scopes = self.scopes + [{}]
        self.block_scopes.append({})
        region = Region()
        block = None
        try:
            if entry_args:
                block = entry_args[0][1].block
                declared = self.first_spelled_in_op[-1] if self.first_spelled_in_op else {}
                for name, arg in entry_args:
                    at = declared.get(name, self.last_spelled.get(name))
                    self.check_argument_name(name, at)
                    # a name used before (a forward reference) is in use too, as in MLIR
                    if any(name in scope for scope in self.scopes) or \
                            (name, 0) in self.forward_refs:
                        raise self.error(f"region entry argument '%{name}' is already in use",
                                         at)
                    self.define(name, arg, at)
            self.skip_ws()
            if self.peek("^"):
                if entry_args or not allow_block_args:
                    if entry_args:
                        raise self.error("invalid block name in region with named arguments")
                block = self._parse_block_header()
            if block is None:
                block = Block(entry_arg_types)
            region.add_block(block)
            while not self.peek("}"):
                if self.at_end():
                    raise self.error("expected '}' to end a region")
                if self.peek("^"):
                    b = self._parse_block_header()
                    region.add_block(b)
                    block = b
                    continue
                block.append(self.parse_operation())
            for name, (_, first_use, defined) in self.block_scopes[-1].items():
                if not defined:
                    raise self.error("reference to an undefined block", first_use)
            self.expect("}")
        finally:
            self.scopes = saved_scopes
            self.block_scopes.pop()
        return region

    def _block_named(self, name: str, offset: int) -> list:
        """The entry of the innermost region's block table for ``^name`` (a block created
        at its first reference, forward or not)."""
        table = self.block_scopes[-1] if self.block_scopes else None
        if table is None:
            raise self.error("block reference outside of a region", offset)
        entry = table.get(name)
        if entry is None:
            entry = table[name] = [Block(), offset, False]
        return entry

    def _parse_block_header(self) -> Block:
        self.skip_ws()
        start = self.pos
        self.expect("^")
        name = self.parse_bare_id("block name")
        entry = self._block_named(name, start)
        if entry[2]:
            raise self.error(f"redefinition of block '^{name}'", start)
        entry[2] = True
        block = entry[0]
        if self.peek("("):
            def arg():
                self.skip_ws()
                start = self.pos
                name, _ = self.parse_ssa_name()
                self.check_argument_name(name, start)
                self.expect(":")
                t = self.parse_type()
                self.optional_location()
                a = block.add_arg(t)
                self.define(name, a, start)
            self.parse_comma_separated("(", ")", arg)
        self.expect(":", "after block header")
        return block

    def parse_successor(self) -> Block:
        """``^name``: a block of the region being parsed (MLIR's ``parseSuccessor``)."""
        self.skip_ws()
        start = self.pos
        if not self.peek("^"):
            raise self.wrong_token("expected block name")
        self.expect("^")
        name = self.parse_bare_id("block name")
        return self._block_named(name, start)[0]

    def parse_successor_and_use_list(self) -> tuple[Block, list[Value]]:
        """``^name`` or ``^name(%a, %b : t1, t2)`` (MLIR's ``parseSuccessorAndUseList``)."""
        block = self.parse_successor()
        values: list[Value] = []
        if self.peek("("):
            self.expect("(")
            self.skip_ws()
            names = []
            while True:
                self.skip_ws()
                start = self.pos
                name, _ = self.parse_ssa_name()
                names.append((name, start))
                if not self.optional(","):
                    break
            self.expect(":")
            types = [self.parse_type()]
            while self.optional(","):
                types.append(self.parse_type())
            self.expect(")")
            if len(types) != len(names):
                raise self.error(f"expected {len(names)} types to match operand list")
            for (name, start), t in zip(names, types):
                v = self._lookup(name, start)
                self.spelled[v] = (name, start)
                self.check_type(v, t, start)
                values.append(v)
        return block, values

    # ---------------------------------------------------------------------------------------
    # operations
    def parse_operation(self) -> Operation:
        self.skip_ws()
        start = self.pos
        result_names: list[tuple[str, int, int]] = []  # (name, count, offset)
        if self.peek("%"):
            while True:
                self.skip_ws()
                rstart = self.pos
                name, _ = self.parse_ssa_name()
                if "#" in name:
                    raise self.error("expected '=' after SSA name",
                                     rstart + 1 + name.index("#"))
                count = 1
                if self.optional(":"):
                    self.skip_ws()
                    m = _DIGITS.match(self.text, self.pos)
                    digits = m.group(0).lstrip("0") if m else ""
                    if not digits or len(digits) > 9:
                        raise self.error("expected named operation to have at least 1 result")
                    count = int(digits)
                    self.pos = m.end()
                result_names.append((name, count, rstart))
                if not self.optional(","):
                    break
            self.expect("=", "after SSA result names")
        self.skip_ws()
        op_start = self.pos
        loc = self.loc(op_start)
        self.first_spelled_in_op.append({})
        try:
            if self.peek('"'):
                op = self.parse_generic_op(loc)
            else:
                op = self.parse_custom_op(loc)
        finally:
            self.first_spelled_in_op.pop()
        self.last_location = None
        if self.optional_location() and self.last_location is not None:
            op.loc = self._op_location(self.last_location) or op.loc
        expected = sum(c for _, c, _ in result_names)
        # results need not be bound to names (MLIR: ``affine.load %M[%i] : ...`` on its own)
        if result_names and expected != len(op.results):
            raise self.error(f"operation defines {len(op.results)} results but was provided "
                             f"{expected} to bind", start)
        k = 0
        for name, count, off in result_names:
            self.define_group(name, op.results[k:k + count], off)
            k += count
        return op

    # ---------------------------------------------------------------------------------------
    # locations: parsed (with MLIR's grammar and messages) and dropped; polyopt's ops point at
    # where they are in the text being parsed, which is where its errors are reported
    def optional_location(self) -> bool:
        """A trailing ``loc(...)`` (after an op, an argument or a block argument), if next."""
        save = self.pos
        self.skip_ws()
        if not (self.peek_keyword("loc") and _LOC_OPEN.match(self.text, self.pos)):
            self.pos = save
            return False
        self.expect_keyword("loc")
        self.expect("(")
        self.skip_ws()
        if self.text.startswith("#", self.pos):
            # ``loc(#loc3)``: MLIR prints the alias definitions after the module
            start = self.pos
            m = _SUFFIX_ID.match(self.text, self.pos + 1)
            if not m:
                raise self.error("expected location instance")
            self.pos = m.end()
            self.pending_locations.append((m.group(0), start))
        else:
            self.last_location = self._location_instance()
        self.expect(")", "in location")
        return True

    def _op_location(self, attr: LocationAttr) -> Optional[Location]:
        """A ``loc("file":line:col)`` after an op (what ``--mlir-print-debuginfo`` printed):
        the op keeps it, so that the passes' messages and printed locations point at the
        original source; other location kinds keep the op's position in this text."""
        m = _FILE_LINE_COL.fullmatch(attr.text)
        if m is None:
            return None
        raw = re.sub(r"\\([0-9A-Fa-f]{2}|.)", lambda e: chr(int(e.group(1), 16))
                     if len(e.group(1)) == 2 else e.group(1), m.group(1))
        name = raw.encode("latin-1", "replace").decode("utf-8", "replace")
        file = self.file if name == self.file.name else _foreign_file(name)
        return Location(file, int(m.group(2)), int(m.group(3)))

    def _location_instance(self) -> LocationAttr:
        """MLIR's ``location-inst``: ``"file":line[:col [to [line]:col]]``, ``"name"``,
        ``"name"(loc)``, ``callsite(loc at loc)``, ``fused[<meta>][locs]``, ``unknown``, or a
        ``#alias`` of a location."""
        self.skip_ws()
        start = self.pos
        with self.nested("location"):
            if self.text.startswith("#", self.pos):
                attr = self.parse_attribute()
                if not isinstance(attr, LocationAttr):
                    raise self.error(f"expected location attribute, but got {attr}", start)
                return attr
            if self.text.startswith('"', self.pos):
                self.parse_string()
                if self.optional(":"):
                    self._location_number("line", "FileLineColRange")
                    if self.optional(":"):
                        self._location_number("column", "FileLineColRange")
                        if self.optional_keyword("to"):
                            self.skip_ws()
                            if _DIGITS.match(self.text, self.pos):
                                self._location_number("line", "FileLineColRange")
                                if not self.optional(":"):
                                    raise self.error("expected either integer or `:` post `to` "
                                                     "in FileLineColRange")
                            elif not self.optional(":"):
                                raise self.error("expected either integer or `:` post `to` in "
                                                 "FileLineColRange")
                            self._location_number("column", "FileLineColRange")
                elif self.optional("("):
                    self._location_instance()
                    self.expect(")", "after child location of NameLoc")
            elif self.optional_keyword("callsite"):
                self.expect("(", "in callsite location")
                self._location_instance()
                if not self.optional_keyword("at"):
                    raise self.error("expected 'at' in callsite location")
                self._location_instance()
                self.expect(")", "in callsite location")
            elif self.optional_keyword("fused"):
                if self.optional("<"):
                    self.parse_attribute()
                    self.expect(">", "after fused location metadata")
                if not self.peek("["):
                    raise self.error("expected '[' in fused location")
                self.parse_comma_separated("[", "]", self._location_instance)
            elif not self.optional_keyword("unknown"):
                raise self.error("expected location instance")
        return LocationAttr(self.text[start:self.pos].strip())

    def _location_number(self, what: str, kind: str) -> int:
        self.skip_ws()
        m = _DIGITS.match(self.text, self.pos)
        digits = m.group(0).lstrip("0") or "0" if m else ""
        if not m or len(digits) > 10 or int(digits) > 0xFFFFFFFF:
            raise self.error(f"expected integer {what} number in {kind}")
        self.pos = m.end()
        return int(m.group(0))

    def _check_pending_locations(self) -> None:
        """``loc(#name)`` may come before ``#name = loc(...)``; at the end each must exist."""
        for name, offset in self.pending_locations:
            attr = self.attr_aliases.get(name)
            if attr is None:
                raise self.error("operation location alias was never defined", offset)
            if not isinstance(attr, LocationAttr):
                raise self.error(f"expected location, but found '{attr}'", offset)
        self.pending_locations.clear()

    def parse_generic_op(self, loc: Location) -> Operation:
        name = self.parse_string()
        self.op_stack.append(name)
        try:
            return self._parse_generic_op(loc, name)
        finally:
            self.op_stack.pop()

    def _parse_generic_op(self, loc: Location, name: str) -> Operation:
        # the operands are resolved once the regions are read, as MLIR's generic parser does:
        # a name defined only inside the op's regions is not visible at its operands
        uses = self.parse_comma_separated("(", ")", self._parse_use)
        successors = self.parse_comma_separated("[", "]", self.parse_successor) \
            if self.peek("[") else []
        properties: dict[str, Attribute] = {}
        if self.peek("<{"):
            self.expect("<")
            properties = self.parse_attr_dict_body()
            self.expect(">")
        regions: list[Region] = []
        if self.peek("("):
            save = self.pos
            self.expect("(")
            if self.peek("{"):
                regions.append(self.parse_region(allow_empty=True))
                while self.optional(","):
                    regions.append(self.parse_region(allow_empty=True))
                self.expect(")")
            else:
                self.pos = save
        # one dictionary holds both; an inherent attribute (a property) is what the op means,
        # so a discardable one of the same name gives way, as MLIR reads them
        attrs = {**self.parse_optional_attr_dict(), **properties}
        self.expect(":", "in generic op")
        self.skip_ws()
        tstart = self.pos
        ftype = self.parse_type()
        if not isinstance(ftype, FunctionType):
            raise self.error("expected function type in generic op", tstart)
        if len(ftype.inputs) != len(uses):
            raise self.error(f"expected {len(uses)} operand types but had {len(ftype.inputs)}",
                             tstart)
        operands = []
        for (use_name, offset), t in zip(uses, ftype.inputs):
            v = self._lookup(use_name, offset)
            self.spelled[v] = (use_name, offset)
            self.check_type(v, t, tstart)
            operands.append(v)
        klass = OP_REGISTRY.get(name)
        if klass is not None and hasattr(klass, "from_generic"):
            if successors:
                raise self.error(f"'{name}' takes no successors", tstart)
            return klass.from_generic(self, loc, operands, list(ftype.results), attrs, regions)
        op = Operation.create(name, operands, ftype.results, attrs, regions, loc,
                              successors=successors)
        if klass is None and properties:   # printed back as they were written
            op.generic_property_names = tuple(properties)
        return op

    def parse_custom_op(self, loc: Location) -> Operation:
        self.skip_ws()
        start = self.pos
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*").match(self.text, self.pos)
        if not m:
            raise self.wrong_token("expected operation name")
        name = m.group(0)
        self.pos = m.end()
        canonical = LEGACY_OP_NAMES.get(name, name)
        klass = OP_REGISTRY.get(canonical)
        if klass is None or not hasattr(klass, "parse_custom"):
            if "." not in name:
                raise self.error(f"custom op '{name}' is unknown (did you mean a dialect-prefixed name?)", start)
            raise self.error(f"custom op '{name}' is unknown", start)
        self.op_stack.append(canonical)
        try:
            op = klass.parse_custom(self, loc, name)
        finally:
            self.op_stack.pop()
        op.loc = loc
        return op

    # ---------------------------------------------------------------------------------------
    # top level
    def parse_module(self) -> Operation:
        from .dialects.builtin import ModuleOp
        self.skip_ws()
        top_ops: list[Operation] = []
        deepest_module = (0, 0)
        while not self.at_end():
            if self.peek("#") or self.peek("!"):
                self._parse_alias_definition()
                continue
            self.module_region_free = True
            self.deepest = (0, 0)
            top_ops.append(self.parse_operation())
            if isinstance(top_ops[-1], ModuleOp):
                deepest_module = max(deepest_module, self.deepest)
        if len(top_ops) > 1 and deepest_module[0] >= MAX_NESTING:
            # these modules are nested in the implicit one: their regions count one more
            raise self.error(_TOO_DEEP, deepest_module[1])
        self._check_forward_refs()
        self._check_pending_locations()
        if len(top_ops) == 1 and isinstance(top_ops[0], ModuleOp):
            return top_ops[0]
        # several top-level ops (modules among them) are wrapped in an implicit module
        module = ModuleOp.build(loc=Location(self.file, 1, 1))
        for op in top_ops:
            module.body.append(op)
        return module

    def _parse_alias_definition(self) -> None:
        self.skip_ws()
        start = self.pos
        sigil = self.text[self.pos]
        m = _SUFFIX_ID.match(self.text, self.pos + 1)
        if not m:
            raise self.error("expected alias name")
        name = m.group(0)
        self.pos = m.end()
        self.expect("=", "in type alias definition" if sigil == "!" else
                    "in attribute alias definition")
        if sigil == "!":
            if name in self.type_aliases:
                raise self.error(f"redefinition of type alias id '{name}'", start)
            self.type_aliases[name] = self.parse_type()
            return
        if name in self.map_aliases or name in self.attr_aliases:
            raise self.error(f"redefinition of attribute alias id '{name}'", start)
        self.skip_ws()
        if self.peek("(") or self.peek_keyword("affine_map") or self.peek_keyword("affine_set"):
            self.map_aliases[name] = self.parse_affine_map_or_set_ref(want="any")
            return
        attr = self.parse_attribute()
        if isinstance(attr, (AffineMapAttr, IntegerSetAttr)):   # ``#map1 = #map``
            self.map_aliases[name] = attr.value
        else:
            self.attr_aliases[name] = attr


def parse(text: str, filename: str = "<input>", verify: bool = True) -> Operation:
    """Parse MLIR text into a ``builtin.module`` and (by default) verify it."""
    from . import dialects  # noqa: F401  (registers the ops)
    parser = Parser(text, filename)
    try:
        module = parser.parse_module()
    except RecursionError:   # the MAX_NESTING limits should come first; this is the safety net
        raise parser.error("input nested too deeply for polyopt's parser") from None
    if verify:
        from .verifier import verify as verify_module
        verify_module(module)
    return module
