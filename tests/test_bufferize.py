"""--one-shot-bufferize: linalg on tensors, bufferized by upstream's mlir-opt-22, then through
polyopt's pipeline; run against numpy, errors at the input's own locations."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import PolyoptError

MATMUL_RELU = """func.func @mm(%A: tensor<67x45xf32>, %B: tensor<45x33xf32>) -> tensor<67x33xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<67x33xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<67x33xf32>) -> tensor<67x33xf32>
  %2 = linalg.matmul ins(%A, %B : tensor<67x45xf32>, tensor<45x33xf32>) outs(%1 : tensor<67x33xf32>) -> tensor<67x33xf32>
  %3 = tensor.empty() : tensor<67x33xf32>
  %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<67x33xf32>) outs(%3 : tensor<67x33xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.maximumf %in, %cst : f32
    linalg.yield %z : f32
  } -> tensor<67x33xf32>
  return %4 : tensor<67x33xf32>
}
"""

FULL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


@pytest.mark.parametrize("switches", [{}, FULL], ids=["plain", "full"])
def test_a_tensor_function_runs_with_its_result_as_the_last_argument(switches):
    f = polyopt.compile(MATMUL_RELU, bufferize=True, **switches)["mm"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((67, 45), dtype=np.float32)
    b = rng.standard_normal((45, 33), dtype=np.float32)
    out = np.full((67, 33), np.nan, np.float32)
    for _ in range(3):      # the temporary is freed and taken again each call
        f(a, b, out)
        np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_the_matmul_goes_through_the_blis_pipeline_and_remarks_point_into_the_file(tmp_path):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL_RELU)
    r = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(path), "--one-shot-bufferize",
                        "--hopt", "--hopt-copy", "--remarks"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{path}:5:8: remark: linalg.matmul: BLIS schedule" in r.stderr
    assert "tensor" not in r.stdout and "memref.dealloc" in r.stdout


def test_upstream_refusals_are_located_in_the_input(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("""func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = tensor.extract_slice %a[0] [5] [1] : tensor<4xf32> to tensor<5xf32>
  return %a : tensor<4xf32>
}
""")
    r = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(path), "--one-shot-bufferize"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{path}:2:8: error: --one-shot-bufferize: ")


def test_without_the_tool_the_error_names_the_package(monkeypatch):
    import polyopt.bufferize as bufferize
    monkeypatch.setattr(bufferize.shutil, "which", lambda name: None)
    with pytest.raises(PolyoptError, match="mlir-22-tools"):
        polyopt.compile(MATMUL_RELU, bufferize=True)


def test_without_the_flag_tensors_are_refused_with_a_located_error():
    with pytest.raises(PolyoptError) as e:
        polyopt.compile(MATMUL_RELU, filename="t.mlir")
    assert e.value.render("t.mlir").startswith("t.mlir:1:19: error: tensor values are not "
                                               "supported")
