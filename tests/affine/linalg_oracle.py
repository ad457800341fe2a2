"""mlir-opt-22 as the oracle of the linalg tests (tests/affine/test_linalg_*.py): run it, and
wrap op snippets into a function."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "schedules"))
from upstream_mlir import lower_and_run, tool  # noqa: E402,F401  (tests/schedules' helper)


def mlir_opt(text: str, *flags: str) -> str:
    """What mlir-opt-22 prints for ``text`` (it must accept it)."""
    r = subprocess.run([tool("mlir-opt-22"), *flags, "-"], input=text, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"mlir-opt-22 rejected:\n{text}\n{r.stderr}"
    return r.stdout.rstrip("\n") + "\n"  # mlir-opt ends its output with an empty line


def mlir_opt_error(text: str) -> str:
    """The first ``LINE:COL: error: message`` mlir-opt-22 reports for ``text``."""
    r = subprocess.run([tool("mlir-opt-22"), "-"], input=text, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0, f"mlir-opt-22 accepted:\n{text}"
    line = next(ln for ln in r.stderr.splitlines() if ": error: " in ln)
    return line.split("<stdin>:", 1)[1]


def polyopt_error(text: str) -> str:
    """The first line of polyopt's ``FILE:LINE:COL: error: message`` for ``text``."""
    with pytest.raises(PolyoptError) as info:
        polyopt.parse(text, "t.mlir")
    return info.value.render().splitlines()[0].split("t.mlir:", 1)[1]


def func(body: str, args: str) -> str:
    """``func.func @f(args) { body; return }``."""
    return f"func.func @f({args}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


def printed(text: str) -> str:
    return str(polyopt.parse(text, "t.mlir"))
