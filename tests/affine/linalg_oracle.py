"""mlir-opt-22 as the oracle of the linalg tests (tests/affine/test_linalg_*.py): upstream_mlir's
helpers with the longer time limit these tests give mlir-opt, polyopt's error for a snippet, and
op snippets wrapped into a function."""

from __future__ import annotations

import functools
import textwrap

import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError

import upstream_mlir

# what mlir-opt-22 prints for a program it must accept, and its first ``LINE:COL: error: ...``
# for one it must refuse, given 120 s as these tests always did
mlir_opt = functools.partial(upstream_mlir.mlir_opt, timeout=120)
mlir_opt_error = functools.partial(upstream_mlir.mlir_opt_error, timeout=120)


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
