"""mlir-opt's ``--verify-diagnostics``: the diagnostics a run emits checked against the
``// expected-error {{...}}`` comments of its input, as MLIR's own tests of invalid IR are
written (MLIR's ``SourceMgrDiagnosticVerifierHandler``).

A comment ``// expected-KIND[@WHERE] {{TEXT}}`` (KIND: error, warning, remark, note) expects
a diagnostic of that kind whose message contains TEXT, on the comment's own line, or on the
line WHERE says: ``@+N`` / ``@-N`` lines below / above it, ``@above`` / ``@below`` the
nearest line before / after it that is not such a comment.  Each emitted diagnostic must
match an expectation and each expectation a diagnostic: what is left over on either side is
reported as mlir-opt reports it (``unexpected error: ...``, ``expected error "..." was not
produced``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .diagnostics import Location, ParseError, SourceFile

__all__ = ["Diagnostic", "Expectation", "expectations_in", "unmatched"]

_COMMENT = re.compile(r"expected-(?P<kind>error|warning|remark|note)(?P<re>-re)?"
                      r"(?:\s*@(?P<where>[^\s{]+))?\s*\{\{(?P<text>.*)\}\}")
_KINDS = ("error", "warning", "remark", "note")


@dataclass(frozen=True)
class Diagnostic:
    """What a run emitted: its kind, where it points (None: no location) and its message."""

    kind: str
    loc: Location | None
    message: str


@dataclass
class Expectation:
    """One ``expected-KIND`` comment: the line it expects a diagnostic on and the text the
    message must contain."""

    kind: str
    line: int
    text: str
    comment: Location


def _is_only_expectation(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("//") and _COMMENT.search(stripped) is not None


def expectations_in(source: SourceFile) -> list[Expectation]:
    """The ``expected-*`` comments of ``source``; a malformed one (an unknown ``@`` target,
    a regular-expression form) is a :class:`ParseError` at the comment."""
    lines = source.text.split("\n")
    found = []
    for number, line in enumerate(lines, start=1):
        if "//" not in line or "expected-" not in line:
            continue
        m = _COMMENT.search(line[line.index("//"):])
        if m is None:
            continue
        loc = Location(source, number, line.index("//") + m.start() + 1)
        if m.group("re"):
            raise ParseError(f"expected-{m.group('kind')}-re: regular expressions in expected "
                             f"diagnostics are not supported; give the text to find", loc)
        where = m.group("where")
        if where is None:
            target = number
        elif re.fullmatch(r"[+-]\d+", where):
            target = number + int(where)
        elif where in ("above", "below"):
            step = -1 if where == "above" else 1
            target = number + step
            while 0 < target <= len(lines) and _is_only_expectation(lines[target - 1]):
                target += step
        else:
            raise ParseError(f"expected-{m.group('kind')}@{where}: expected '@+N', '@-N', "
                             f"'@above' or '@below'", loc)
        if not 0 < target <= len(lines):
            raise ParseError(f"expected-{m.group('kind')}@{where}: line {target} is outside "
                             f"the file", loc)
        found.append(Expectation(m.group("kind"), target, m.group("text").strip(), loc))
    return found


def unmatched(emitted: list[Diagnostic], expected: list[Expectation]) -> list[tuple]:
    """What is left after pairing ``emitted`` with ``expected``: ``(location, message)`` of
    each error mlir-opt's verifier would print, unexpected diagnostics first."""
    pending = list(expected)
    problems = []
    for d in emitted:
        match = next((e for e in pending if e.kind == d.kind and d.loc is not None
                      and e.line == d.loc.line and e.text in d.message), None)
        if match is None:
            problems.append((d.loc, f"unexpected {d.kind}: {d.message}"))
        else:
            pending.remove(match)
    problems += [(e.comment, f"expected {e.kind} \"{e.text}\" was not produced")
                 for e in pending]
    return problems
