"""The vector ops of ``--affine-super-vectorize``'s output and their neighbours
(``vector.transfer_read``/``transfer_write``, ``extract``/``insert``, ``shuffle``,
``shape_cast``, the strided slices, ``create_mask``/``constant_mask``) and ``ub.poison``:
printed as ``mlir-opt-22`` prints them, in custom and generic form, and refused with its
messages, located, by ``polyopt opt`` (exit 1, no traceback)."""

import subprocess
import sys

import pytest

import polyopt
from polyopt.affine.diagnostics import ParseError, VerifyError
from polyopt.affine.printer import print_module
from upstream_mlir import mlir_opt, mlir_opt_error

OPS = """func.func @f(%A: memref<13x21xf32>, %i: index, %j: index, %v: vector<8xf32>, %m: vector<8xi1>, %w: vector<2x4xf32>, %m2: vector<8x4xi1>) -> vector<8xf32> {
  %p = ub.poison : f32
  %pv = ub.poison : vector<4xf32>
  %c0 = arith.constant 0.0 : f32
  %0 = vector.transfer_read %A[%i, %j], %p : memref<13x21xf32>, vector<8xf32>
  %1 = vector.transfer_read %A[%i, %j], %c0 {in_bounds = [true]} : memref<13x21xf32>, vector<8xf32>
  %2 = vector.transfer_read %A[%i, %j], %c0, %m : memref<13x21xf32>, vector<8xf32>
  %3 = vector.transfer_read %A[%i, %j], %c0 {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<13x21xf32>, vector<8xf32>
  %4 = vector.transfer_read %A[%i, %j], %c0 {permutation_map = affine_map<(d0, d1) -> (0, d1)>} : memref<13x21xf32>, vector<4x8xf32>
  %5 = vector.transfer_read %A[%i, %j], %c0, %m2 {permutation_map = affine_map<(d0, d1) -> (d1, d0)>, in_bounds = [false, true]} : memref<13x21xf32>, vector<4x8xf32>
  %6 = vector.transfer_read %A[%i, %j], %c0 : memref<13x21xf32>, vector<2x8xf32>
  vector.transfer_write %v, %A[%i, %j] : vector<8xf32>, memref<13x21xf32>
  vector.transfer_write %v, %A[%i, %j], %m {in_bounds = [true]} : vector<8xf32>, memref<13x21xf32>
  vector.transfer_write %v, %A[%i, %j] {permutation_map = affine_map<(d0, d1) -> (d0)>} : vector<8xf32>, memref<13x21xf32>
  %e0 = vector.extract %v[0] : f32 from vector<8xf32>
  %e1 = vector.extract %v[%i] : f32 from vector<8xf32>
  %e2 = vector.extract %w[1] : vector<4xf32> from vector<2x4xf32>
  %e3 = vector.extract %w[1, %j] : f32 from vector<2x4xf32>
  %e4 = vector.extract %v[-1] : f32 from vector<8xf32>
  %i0 = vector.insert %e0, %v[3] : f32 into vector<8xf32>
  %i1 = vector.insert %e0, %v[%i] : f32 into vector<8xf32>
  %i2 = vector.insert %e2, %w[0] : vector<4xf32> into vector<2x4xf32>
  %s0 = vector.shape_cast %w : vector<2x4xf32> to vector<8xf32>
  %s1 = vector.shuffle %e2, %e2 [0, 4, 1, 5, 2, 6, 3, -1] : vector<4xf32>, vector<4xf32>
  %s2 = vector.shuffle %w, %w [0, 3, 1] : vector<2x4xf32>, vector<2x4xf32>
  %x0 = vector.extract_strided_slice %v {offsets = [2], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>
  %x1 = vector.insert_strided_slice %x0, %v {offsets = [2], strides = [1]} : vector<4xf32> into vector<8xf32>
  %x2 = vector.extract_strided_slice %w {offsets = [1], sizes = [1], strides = [1]} : vector<2x4xf32> to vector<1x4xf32>
  %cm = vector.create_mask %i : vector<8xi1>
  %cm2 = vector.constant_mask [3] : vector<8xi1>
  %cm3 = vector.create_mask %i, %j : vector<2x4xi1>
  %cm4 = vector.constant_mask [1, 3] : vector<2x4xi1>
  return %s0 : vector<8xf32>
}
"""


def test_custom_form_prints_as_mlir_opt():
    assert str(polyopt.parse(OPS)) == mlir_opt(OPS)


def test_generic_form_of_the_new_ops_is_mlir_opts():
    ours = print_module(polyopt.parse(OPS), generic=True).splitlines()
    theirs = mlir_opt(OPS, "--mlir-print-op-generic").splitlines()
    new_ops = ("vector.", "ub.")
    pick = [ln.strip() for ln in ours if any(f'"{n}' in ln for n in new_ops)]
    want = [ln.strip() for ln in theirs if any(f'"{n}' in ln for n in new_ops)]
    assert len(pick) == 30
    assert pick == want
    # and the generic form reads back to the same custom form
    assert str(polyopt.parse(mlir_opt(OPS, "--mlir-print-op-generic"))) == mlir_opt(OPS)


def test_vectorizer_output_round_trips():
    src = """func.func @f(%A: memref<13x21xf32>, %B: memref<13xf32>) {
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 21 {
      %a = affine.load %A[%i, %j] : memref<13x21xf32>
      %b = affine.load %B[%i] : memref<13xf32>
      %c = arith.mulf %a, %b : f32
      affine.store %c, %A[%i, %j] : memref<13x21xf32>
    }
  }
  return
}
"""
    vec = mlir_opt(src, "--affine-super-vectorize=virtual-vector-size=8")
    assert "permutation_map = #map" in vec and "ub.poison" in vec
    assert str(polyopt.parse(vec)) == vec


def _case(body, args="%A: memref<13x21xf32>, %i: index, %v: vector<8xf32>, %w: vector<2x4xf32>, "
                     "%m: vector<4xi1>, %s: f32"):
    return f"func.func @f({args}) {{\n  %c0 = arith.constant 0.0 : f32\n  {body}\n  return\n}}\n"


BAD = [
    "%0 = vector.transfer_read %A[%i], %c0 : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0, d1) -> (d0, d1)>} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0) -> (d0)>} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0, d1) -> (d0 + d1)>} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0, d1) -> (d0, d0)>} : memref<13x21xf32>, vector<4x8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0, d1) -> (1)>} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {permutation_map = affine_map<(d0, d1)[s0] -> (d0)>} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {in_bounds = [true, false]} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 {in_bounds = [1]} : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0, %m : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %i : memref<13x21xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 : memref<13x21xf32>, f32",
    "%0 = vector.transfer_read %A[%i, %i], %c0 : vector<8xf32>, vector<8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 : memref<13x21xf32>, vector<2x3x8xf32>",
    "%0 = vector.transfer_read %A[%i, %i], %c0 : memref<13x21xf32>, vector<3xi8>",
    "vector.transfer_write %v, %A[%i] : vector<8xf32>, memref<13x21xf32>",
    "vector.transfer_write %v, %A[%i, %i] {permutation_map = affine_map<(d0, d1) -> (0)>} : vector<8xf32>, memref<13x21xf32>",
    "vector.transfer_write %v, %A[%i, %i], %m : vector<8xf32>, memref<13x21xf32>",
    "%0 = vector.extract %v[8] : f32 from vector<8xf32>",
    "%0 = vector.extract %v[-2] : f32 from vector<8xf32>",
    "%0 = vector.extract %v[0, 1] : f32 from vector<8xf32>",
    "%0 = vector.extract %w[0] : f32 from vector<2x4xf32>",
    "%0 = vector.extract %v[0] : f64 from vector<8xf32>",
    "%0 = vector.extract %v[%s] : f32 from vector<8xf32>",
    "%0 = vector.insert %s, %v[8] : f32 into vector<8xf32>",
    "%0 = vector.insert %s, %w[1] : f32 into vector<2x4xf32>",
    "%0 = vector.insert %v, %w[0, 1] : vector<8xf32> into vector<2x4xf32>",
    "%0 = vector.insert %s, %w[0, 1, 2] : f32 into vector<2x4xf32>",
    "%0 = vector.shape_cast %w : vector<2x4xf32> to vector<7xf32>",
    "%0 = vector.shape_cast %w : vector<2x4xf32> to vector<8xf64>",
    "%0 = vector.shuffle %v, %v [0, 16] : vector<8xf32>, vector<8xf32>",
    "%0 = vector.shuffle %v, %v [] : vector<8xf32>, vector<8xf32>",
    "%0 = vector.shuffle %v, %w [0, 1] : vector<8xf32>, vector<2x4xf32>",
    "%0 = vector.extract_strided_slice %v {offsets = [6], sizes = [4], strides = [1]} : vector<8xf32> to vector<4xf32>",
    "%0 = vector.extract_strided_slice %v {offsets = [0], sizes = [4], strides = [2]} : vector<8xf32> to vector<4xf32>",
    "%0 = vector.extract_strided_slice %v {offsets = [0], sizes = [4], strides = [1]} : vector<8xf32> to vector<3xf32>",
    "%0 = vector.extract_strided_slice %w {offsets = [0, 9], sizes = [1, 2], strides = [1, 1]} : vector<2x4xf32> to vector<1x2xf32>",
    "%0 = vector.extract_strided_slice %w {offsets = [0, 1, 1], sizes = [1], strides = [1]} : vector<2x4xf32> to vector<1x4xf32>",
    "%0 = vector.insert_strided_slice %w, %v {offsets = [0], strides = [1, 1]} : vector<2x4xf32> into vector<8xf32>",
    "%0 = vector.insert_strided_slice %v, %v {offsets = [6], strides = [1]} : vector<8xf32> into vector<8xf32>",
    "%0 = vector.insert_strided_slice %v, %w {offsets = [0], strides = [1]} : vector<8xf32> into vector<2x4xf32>",
    "%0 = vector.constant_mask [9] : vector<8xi1>",
    "%0 = vector.constant_mask [1, 3] : vector<8xi1>",
    "%0 = vector.constant_mask [0, 3] : vector<2x4xi1>",
    "%0 = vector.create_mask %i : vector<8xf32>",
    "%0 = vector.create_mask %i : vector<2x8xi1>",
]


@pytest.mark.parametrize("body", BAD)
def test_refused_with_mlir_opts_message(body):
    text = _case(body)
    want = mlir_opt_error(text, filename="bad.mlir")
    with pytest.raises((ParseError, VerifyError)) as e:
        polyopt.parse(text, "bad.mlir")
    assert str(e.value).splitlines()[0] == want


def test_cli_reports_a_located_error_without_traceback(tmp_path):
    f = tmp_path / "bad.mlir"
    f.write_text(_case("vector.transfer_write %v, %A[%i, %i] {permutation_map = "
                       "affine_map<(d0, d1) -> (0)>} : vector<8xf32>, memref<13x21xf32>"))
    r = subprocess.run([sys.executable, "-m", "polyopt", "opt", str(f)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{f}:3:3: error: 'vector.transfer_write' op should not have broadcast dimensions" \
        in r.stderr
