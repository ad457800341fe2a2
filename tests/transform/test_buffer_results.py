"""Functions that return one of their memref arguments (what upstream's
``-one-shot-bufferize="bufferize-function-boundaries"`` leaves): ``polyopt.compile`` drops
those results (:mod:`polyopt.transform.buffer_results`) and the numpy callable returns the
array passed for the argument; ``-p drop-equivalent-buffer-results`` does what
``mlir-opt-22 --drop-equivalent-buffer-results`` does, on private functions."""

import numpy as np
import pytest

import polyopt
from polyopt.cli import main
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)

TENSOR_MATMUL = """
func.func @f(%A: tensor<{m}x{k}xf32>, %B: tensor<{k}x{n}xf32>, %C: tensor<{m}x{n}xf32>)
    -> tensor<{m}x{n}xf32> {{
  %r = linalg.matmul ins(%A, %B : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
                     outs(%C : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
"""

CALLS = """
func.func {vis}@inner(%a: memref<4xf32>, %b: memref<4xf32>) -> (memref<4xf32>, f32) {{
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  memref.store %x, %b[%c0] : memref<4xf32>
  return %b, %x : memref<4xf32>, f32
}}
func.func @outer(%a: memref<4xf32>, %b: memref<4xf32>) -> f32 {{
  %r, %x = func.call @inner(%a, %b) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, f32)
  %c1 = arith.constant 1 : index
  memref.store %x, %r[%c1] : memref<4xf32>
  return %x : f32
}}
"""


@pytest.mark.parametrize("lowering", ["--convert-linalg-to-affine-loops",
                                      "--convert-linalg-to-loops", None])
@pytest.mark.parametrize("m, n, k", [(7, 9, 5), (97, 101, 103)])
def test_upstream_bufferized_matmul_runs_and_returns_its_output(lowering, m, n, k):
    flags = ["--one-shot-bufferize=bufferize-function-boundaries"] + \
        ([lowering] if lowering else [])
    text = mlir_opt(TENSOR_MATMUL.format(m=m, n=n, k=k), *flags)
    assert "-> memref<" in text          # the output is returned: the case this is about
    fn = polyopt.compile(text, **ALL)["f"]
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    want = c + a.astype(np.float64) @ b.astype(np.float64)
    out = fn(a, b, c)
    assert out is c
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_results_beside_scalars_and_calls_use_their_operand():
    fns = polyopt.compile(CALLS.format(vis=""))
    a, b = np.arange(4, dtype=np.float32) + 5, np.zeros(4, np.float32)
    out, x = fns["inner"](a, b)
    assert out is b and x == 5 and b.tolist() == [5, 0, 0, 0]
    assert fns["outer"](a, b) == 5 and b.tolist() == [5, 5, 0, 0]


def test_a_result_that_is_not_one_argument_is_kept():
    text = """
func.func @pick(%a: memref<4xf32>, %b: memref<4xf32>, %c: i1) -> memref<4xf32> {
  %r = scf.if %c -> memref<4xf32> {
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %b : memref<4xf32>
  }
  return %r : memref<4xf32>
}
"""
    fn = polyopt.compile(text)["pick"]
    with pytest.raises(TypeError, match="result #0 is a memref, which cannot be returned"):
        fn(np.zeros(4, np.float32), np.zeros(4, np.float32), True)


@pytest.mark.parametrize("vis", ["private ", ""])
def test_the_pass_does_what_upstream_does(vis, tmp_path, capsys):
    path = tmp_path / "calls.mlir"
    path.write_text(CALLS.format(vis=vis))
    assert main(["opt", "-p", "drop-equivalent-buffer-results", str(path)]) == 0
    ours = capsys.readouterr().out
    upstream = mlir_opt(CALLS.format(vis=vis), "--drop-equivalent-buffer-results")
    assert ours.strip() == upstream.strip()
    assert ("-> (memref<4xf32>, f32)" in ours) == (vis == "")
