"""Source locations and the error hierarchy every user-facing failure goes through.

Errors a user can cause are reported as ``FILE:LINE:COL: error: message`` followed by the
source line and a caret (as mlir-opt does).  The CLI catches :class:`PolyoptError` once and
prints :meth:`PolyoptError.render`; the Python API lets the exception propagate.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    """The text a location points into (kept so that errors can quote the line)."""

    name: str
    text: str

    @functools.cached_property
    def line_starts(self) -> list[int]:
        """The offset of the first character of each line."""
        return [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line_text(self, line: int) -> str:
        starts = self.line_starts
        if not 0 < line <= len(starts):
            return ""
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[starts[line - 1]:end].rstrip("\r")


@dataclass(frozen=True)
class Location:
    """A 1-based line/column position in a source file (MLIR's FileLineColLoc)."""

    file: SourceFile
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file.name}:{self.line}:{self.col}"

    @staticmethod
    def at_offset(file: SourceFile, offset: int) -> "Location":
        line = bisect.bisect_right(file.line_starts, offset)
        return Location(file, line, offset - file.line_starts[line - 1] + 1)


class PolyoptError(Exception):
    """An error the user caused; carries the location it points at (if known)."""

    kind = "error"

    def __init__(self, message: str, loc: Location | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def render(self, default_file: str = "<input>") -> str:
        """``FILE:LINE:COL: error: message``, the source line and a caret under the column."""
        if self.loc is None:
            return f"{default_file}:1:1: error: {self.message}"
        head = f"{self.loc}: error: {self.message}"
        src = self.loc.file.line_text(self.loc.line)
        caret = " " * (self.loc.col - 1) + "^"
        return f"{head}\n{src}\n{caret}"

    def __str__(self) -> str:
        return f"{self.loc}: error: {self.message}" if self.loc else self.message


class ParseError(PolyoptError):
    """Malformed MLIR text."""


class VerifyError(PolyoptError):
    """Well-formed text that breaks an op's or the IR's rules (types, dominance, affine rules)."""


class ScheduleError(PolyoptError):
    """An illegal or malformed schedule or transformation request."""


class CodegenError(PolyoptError):
    """A construct that cannot be lowered to LLVM (unsupported or invalid for code generation)."""


def decode_source(data: bytes, name: str) -> str:
    """The text of an MLIR file (UTF-8); bytes that are not UTF-8 are a :class:`ParseError` at
    the first of them (the line is quoted with the undecodable bytes replaced)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        text = data.decode("utf-8", errors="replace")
        good = data[:e.start].decode("utf-8")
        loc = Location.at_offset(SourceFile(name, text), len(good))
        raise ParseError(f"invalid UTF-8 byte 0x{data[e.start]:02X} in the input (MLIR text is "
                         "UTF-8)", loc) from None
