"""``ub.poison`` of a ranked memref type lowers (a null pointer, with a descriptor of zero
offset, sizes and strides): a program that carries it through a branch, a loop or a call but
never reads it on the path it takes runs, as the same program lowered by upstream MLIR."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run

TYPES = ["memref<?xf32>", "memref<?xf32, strided<[?], offset: ?>>", "memref<4xf32>",
         "memref<?x4xf32>"]


def _program(t: str) -> str:
    """``@f(A, p, n)``: ``A[1]`` (``A[1, 1]`` in 2-D) read through a memref that ``scf.if``
    takes from ``A`` when ``p`` and is poison otherwise, and that an ``scf.for`` of ``n``
    iterations passes on to a callee, which reads it only when ``p``."""
    subs = "%c1, %c1" if "x4" in t else "%c1"
    return f"""\
func.func @read(%M: {t}, %p: i1) -> f32 {{
  %c1 = arith.constant 1 : index
  %r = scf.if %p -> (f32) {{
    %v = memref.load %M[{subs}] : {t}
    scf.yield %v : f32
  }} else {{
    %z = arith.constant -1.0 : f32
    scf.yield %z : f32
  }}
  return %r : f32
}}
func.func @f(%A: {t}, %p: i1, %n: index) -> f32 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bad = ub.poison : {t}
  %m, %i = scf.if %p -> ({t}, index) {{
    scf.yield %A, %c1 : {t}, index
  }} else {{
    scf.yield %bad, %c0 : {t}, index
  }}
  %l = scf.for %k = %c0 to %n step %c1 iter_args(%x = %m) -> ({t}) {{
    scf.yield %x : {t}
  }}
  %r = call @read(%l, %p) : ({t}, i1) -> f32
  return %r : f32
}}
"""


@pytest.mark.parametrize("t", TYPES)
def test_a_poison_memref_on_a_path_not_taken_runs(t):
    f = polyopt.compile(_program(t))["f"]
    A = np.arange(16, dtype=np.float32).reshape(4, 4) if "x4" in t \
        else np.arange(0, 8, 2, dtype=np.float32)
    want = A[1, 1] if A.ndim == 2 else A[1]
    for n in (0, 3):
        assert f(A, True, n) == want
        assert f(A, False, n) == -1.0


def test_it_runs_as_mlir_runner_runs_it(tmp_path, capfd):
    t = "memref<?xf32, strided<[?], offset: ?>>"
    main = f"""\
func.func @main() {{
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %true = arith.constant true
  %false = arith.constant false
  %two = arith.constant 2.5 : f32
  %a = memref.alloc() : memref<4xf32>
  memref.store %two, %a[%c1] : memref<4xf32>
  %A = memref.cast %a : memref<4xf32> to {t}
  %r0 = call @f(%A, %true, %c2) : ({t}, i1, index) -> f32
  vector.print %r0 : f32
  %r1 = call @f(%A, %false, %c2) : ({t}, i1, index) -> f32
  vector.print %r1 : f32
  memref.dealloc %a : memref<4xf32>
  return
}}
"""
    text = _program(t) + main
    passes = ["--convert-scf-to-cf", "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
              "--convert-vector-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
              "--convert-ub-to-llvm", "--reconcile-unrealized-casts"]
    ours = polyopt_run(tmp_path, capfd, text)
    assert ours == lower_and_run(text, passes) == "2.5\n-1\n"


def test_an_unranked_poison_is_refused_by_name():
    text = """func.func @f() {
  %u = ub.poison : memref<*xf32>
  return
}"""
    with pytest.raises(CodegenError, match=r"'ub.poison': a poison value of type "
                                           r"'memref<\*xf32>' is not supported"):
        polyopt.compile(text)
