"""Run one MLIR program with polyopt and with upstream MLIR 22 (mlir-opt-22 + mlir-runner-22)
and compare what ``@main`` prints: the harness of the arith/math execution tests.

:class:`Program` writes a ``@main`` whose inputs are opaque to both compilers (each constant
is combined with a zero computed from ``rtclock()``, so that neither MLIR nor LLVM folds the
ops under test) and which prints every result: integers as they are, floats as their bits
(``arith.bitcast`` to an integer of their width), so that outputs compare exactly.
"""

from __future__ import annotations

import contextlib
import io
import re

import polyopt
from upstream_mlir import lower_and_run

UPSTREAM_PASSES = ["--lower-affine", "--convert-vector-to-scf", "--convert-scf-to-cf",
                   "--convert-vector-to-llvm", "--finalize-memref-to-llvm",
                   "--convert-math-to-llvm", "--convert-arith-to-llvm", "--convert-ub-to-llvm",
                   "--convert-func-to-llvm", "--convert-cf-to-llvm",
                   "--reconcile-unrealized-casts"]

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i1", "i8", "i16", "i32", "i64", "index")
WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i1": 1, "i8": 8, "i16": 16, "i32": 32,
         "i64": 64, "index": 64}


def element(t: str) -> str:
    """``vector<4xf32>`` -> ``f32``."""
    m = re.fullmatch(r"vector<((?:[0-9]+x)+)(.+)>", t)
    return m.group(2) if m else t


def shape(t: str) -> str:
    """``vector<2x4xf32>`` -> ``2x4``."""
    m = re.fullmatch(r"vector<((?:[0-9]+x)+)(.+)>", t)
    return m.group(1)[:-1] if m else ""


def with_element(t: str, e: str) -> str:
    return f"vector<{shape(t)}x{e}>" if t.startswith("vector<") else e


class Program:
    """A ``@main`` built op by op; every name it returns is an SSA value of the program."""

    def __init__(self):
        self.lines = ["  %t = func.call @rtclock() : () -> f64",
                      "  %zero_f64c = arith.constant 0.0 : f64",
                      "  %zero_f64 = arith.mulf %t, %zero_f64c : f64"]
        self.count = 0
        self.zeros: dict[str, str] = {"f64": "%zero_f64"}
        self.labels: list[str] = []
        self.printed: list[str] = []      # the type of each printed value

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def line(self, text: str) -> None:
        self.lines.append("  " + text)

    def zero(self, t: str) -> str:
        """An opaque zero of type ``t`` (scalar or vector)."""
        if t in self.zeros:
            return self.zeros[t]
        e = element(t)
        if t != e:
            z = self.fresh()
            self.line(f"{z} = vector.broadcast {self.zero(e)} : {e} to {t}")
        elif e == "index":
            z = self.fresh()
            self.line(f"{z} = arith.index_cast {self.zero('i64')} : i64 to index")
        elif e in FLOATS:
            z = self.fresh()
            self.line(f"{z} = arith.truncf %zero_f64 : f64 to {e}")
        else:
            z = self.fresh()
            self.line(f"{z} = arith.fptosi %zero_f64 : f64 to {e}")
        self.zeros[t] = z
        return z

    def value(self, t: str, literal) -> str:
        """An opaque value of type ``t``: ``literal`` is an attribute body (``1.5``, ``-3``,
        ``0x7FC00000``, ``dense<[1, 2]>``, or a list for a vector)."""
        if isinstance(literal, (list, tuple)):
            literal = "dense<[" + ", ".join(str(x) for x in literal) + "]>"
        c = self.fresh()
        e = element(t)
        if e == "i1" and t == e:
            self.line(f"{c} = arith.constant {literal}" if literal in ("true", "false")
                      else f"{c} = arith.constant {int(literal) & 1} : i1")
        else:
            self.line(f"{c} = arith.constant {literal} : {t}")
        v = self.fresh()
        if e in FLOATS:
            self.line(f"{v} = arith.subf {c}, {self.zero(t)} : {t}")
        else:
            self.line(f"{v} = arith.addi {c}, {self.zero(t)} : {t}")
        return v

    def op(self, text: str, results: int = 1) -> str:
        """``text`` is an op without its result names; returns the first result (``%vN``; the
        others are ``%vN#1`` ...)."""
        r = self.fresh()
        self.line(f"{r}{f':{results}' if results > 1 else ''} = {text}")
        return r

    def print(self, v: str, t: str, label: str = "") -> None:
        """Print ``v`` exactly (floats as bits)."""
        e = element(t)
        self.printed.append(t)
        if e in FLOATS:
            bits = self.fresh()
            self.line(f"{bits} = arith.bitcast {v} : {t} to {with_element(t, f'i{WIDTH[e]}')}")
            v, t = bits, with_element(t, f"i{WIDTH[e]}")
        self.line(f"vector.print {v} : {t}")
        self.labels.append(label)

    def text(self) -> str:
        return ("func.func private @rtclock() -> f64\nfunc.func @main() {\n" +
                "\n".join(self.lines) + "\n  return\n}\n")


def run_polyopt(text: str) -> str:
    """What ``polyopt.compile(text)['main']()`` prints."""
    out = io.StringIO()
    compiled = polyopt.compile(text)
    with contextlib.redirect_stdout(out):
        compiled["main"]()
    return out.getvalue()


def run_upstream(text: str, passes=()) -> str:
    return lower_and_run(text, [*passes, *UPSTREAM_PASSES])


def assert_same_output(program: Program, passes=()) -> list[str]:
    """Run ``program`` both ways; on a difference, name the printed values that differ.
    Returns polyopt's output lines."""
    text = program.text()
    ours = run_polyopt(text).splitlines()
    theirs = run_upstream(text, passes).splitlines()
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    bad = [f"{label}: polyopt {a!r}, mlir-runner-22 {b!r}"
           for label, t, a, b in zip(program.labels, program.printed, ours, theirs)
           if a != b and not _same_nans(t, a, b)]
    assert not bad, "\n".join(bad[:20])
    return ours


def _same_nans(t: str, a: str, b: str) -> bool:
    """Printed float bits that differ only where both are NaNs: LLVM leaves the sign and payload
    of a NaN computed by arithmetic unspecified (x86 makes a negative one, the constant folder
    a positive one)."""
    e = element(t)
    if e not in FLOATS:
        return False
    fmt = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}[e]
    exp_mask = ((1 << fmt[0]) - 1) << fmt[1]

    def nan(x: int) -> bool:
        return x & exp_mask == exp_mask and x & ((1 << fmt[1]) - 1) != 0

    xs = [int(v) for v in a.replace("(", "").replace(")", "").split(",")]
    ys = [int(v) for v in b.replace("(", "").replace(")", "").split(",")]
    return len(xs) == len(ys) and all(x == y or nan(x) and nan(y) for x, y in zip(xs, ys))
