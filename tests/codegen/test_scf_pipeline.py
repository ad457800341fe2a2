"""scf and the polyhedral passes: nests the model cannot represent are left alone with a remark
(not an error) under --schedule and --hopt, the other nests of the function are still
scheduled, and scf nests raised to affine go through --schedule and --hopt with results
checked against numpy."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import polyopt
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.raise_scf_to_affine import raise_scf_to_affine
from polyopt.cli import main
from polyopt.schedules.apply import apply_schedule
from polyopt.schedules.bounds_check import find_out_of_bounds
from polyopt.schedules.scops import function_scops
from upstream_mlir import mlir_opt


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


MATMUL_SCF = """\
func.func @matmul(%A: memref<23x19xf64>, %B: memref<19x37xf64>, %C: memref<23x37xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c19 = arith.constant 19 : index
  %c23 = arith.constant 23 : index
  %c37 = arith.constant 37 : index
  scf.for %i = %c0 to %c23 step %c1 {
    scf.for %j = %c0 to %c37 step %c1 {
      scf.for %k = %c0 to %c19 step %c1 {
        %a = memref.load %A[%i, %k] : memref<23x19xf64>
        %b = memref.load %B[%k, %j] : memref<19x37xf64>
        %c = memref.load %C[%i, %j] : memref<23x37xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        memref.store %s, %C[%i, %j] : memref<23x37xf64>
      }
    }
  }
  return
}
"""

TILES = "S0=(d0, d1, d2) -> (d2 floordiv 8, d0 floordiv 5, d1, d0, d2)"


def _check_matmul(fn):
    rng = np.random.default_rng(7)
    A, B, C = rng.standard_normal((23, 19)), rng.standard_normal((19, 37)), \
        rng.standard_normal((23, 37))
    expected = C + A @ B
    fn(A, B, C)
    assert np.allclose(C, expected)


def test_scf_nest_left_alone_under_schedule_with_a_remark(tmp_path):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL_SCF)
    code, out, err = run_cli("opt", str(path), "--remarks", "--schedule", TILES)
    assert code == 0
    assert out == print_module(parse(MATMUL_SCF))          # untouched
    assert err.splitlines() == [
        f"{path}:7:3: remark: nest left alone by the polyhedral passes, it runs as written: "
        f"'scf.for' op is structured control flow the model cannot represent "
        f"(--raise-scf-to-affine raises scf.for/scf.if with affine bounds and conditions) "
        f"(at 7:3)",
        f"{path}:1:1: remark: schedule for S0 not applied: no statement S0 outside the nests "
        f"left alone (statements: none)"]
    # without --remarks: no output on stderr, no error either
    assert run_cli("opt", str(path), "--schedule", TILES)[::2] == (0, "")


def test_scf_nest_left_alone_under_hopt_with_a_remark(tmp_path):
    text = """\
func.func @f(%A: memref<16xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %w = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %n : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    memref.store %z, %A[%y] : memref<16xf64>
    %y2 = arith.addi %y, %c1 : index
    scf.yield %y2 : index
  }
  return
}
"""
    path = tmp_path / "w.mlir"
    path.write_text(text)
    for flags in (["--hopt"], ["--hopt", "--hopt-copy", "--hopt-unroll", "--hopt-scalrep",
                               "--hopt-vect"]):
        code, out, err = run_cli("opt", str(path), "--remarks", *flags)
        assert code == 0, err
        assert "scf.while" in out and mlir_opt(out, "--allow-unregistered-dialect") == out
        assert err.splitlines() == [
            f"{path}:5:8: remark: nest left alone by the polyhedral passes, it runs as written: "
            f"'scf.while' op is structured control flow the model cannot represent "
            f"(--raise-scf-to-affine raises scf.for/scf.if with affine bounds and conditions) "
            f"(at 5:8)"]


def test_other_nests_of_the_function_are_still_scheduled():
    text = """\
func.func @f(%A: memref<8x8xf64>, %B: memref<8xf64>, %n: index) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%i, %j] : memref<8x8xf64>
      affine.store %v, %A[%j, %i] : memref<8x8xf64>
    }
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %n : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %y2 = arith.addi %y, %c1 : index
    scf.yield %y2 : index
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%i, %j] : memref<8x8xf64>
      affine.store %v, %B[%j] : memref<8xf64>
    }
  }
  return
}
"""
    module = parse(text, "f.mlir")
    func = module.functions[0]
    remarks: list[str] = []
    models, opaque = function_scops(func)
    assert [[s.name for s in m.statements] for m in models] == [["S0"], ["S1"]]
    assert [op.name for op, _ in opaque] == ["scf.while"]
    before = print_module(module)
    new = apply_schedule(func, {"S1": "(d0, d1) -> (d1, d0)"},
                         remark=lambda loc, msg: remarks.append(f"{loc.line}: {msg}"))
    assert len(new) == 1 and remarks == [
        "10: nest left alone by the polyhedral passes, it runs as written: 'scf.while' op is "
        "structured control flow the model cannot represent (--raise-scf-to-affine raises "
        "scf.for/scf.if with affine bounds and conditions) (at 10:8)"]
    after = print_module(module)
    # the first nest and the while loop are as they were, the last nest is interchanged
    assert after.split("scf.while")[0] == before.split("scf.while")[0]
    tail = after.split("scf.while")[1]
    assert "affine.load %arg0[%arg4, %arg3]" in tail and "affine.store %1, %arg1[%arg3]" in tail
    # a statement that exists nowhere is still an error when no nest was left alone
    clean = parse(MATMUL_SCF, "m.mlir")
    raise_scf_to_affine(clean)
    with pytest.raises(polyopt.PolyoptError, match="unknown statement S4 \\(the scop has S0\\)"):
        apply_schedule(clean.functions[0], {"S4": "(d0, d1, d2) -> (d0, d1, d2)"})


def test_raised_matmul_goes_through_schedule_and_runs(tmp_path):
    module = parse(MATMUL_SCF, "mm.mlir")
    raise_scf_to_affine(module)
    apply_schedule(module.functions[0], {"S0": TILES.split("=", 1)[1]})
    tiled = print_module(module)
    assert "scf." not in tiled and "floordiv" not in tiled and "min #map" in tiled
    _check_matmul(polyopt.compile(module)["matmul"])
    # the command line does the same: --raise-scf-to-affine before --schedule
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL_SCF)
    code, out, err = run_cli("opt", str(path), "--raise-scf-to-affine", "--schedule", TILES)
    assert (code, err) == (0, "") and out == tiled
    assert mlir_opt(out, "--allow-unregistered-dialect") == out


@pytest.mark.parametrize("switches", [
    {"hopt": True}, {"hopt": True, "vect": True},
    {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}])
def test_raised_matmul_through_hopt(switches):
    _check_matmul(polyopt.compile(MATMUL_SCF, **switches)["matmul"])


HOP_IN_LOOP = """\
func.func @f(%A: memref<23x19xf64>, %B: memref<19x37xf64>, %C: memref<23x37xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %t = %c0 to %c2 step %c1 {
    hop.matmul %A, %B, %C {M_C = 8 : i32, K_C = 8 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 2 : i32} : (memref<23x19xf64>, memref<19x37xf64>, memref<23x37xf64>)
  }
  %w = scf.while (%x = %c0) : (index) -> index {
    %go = arith.cmpi slt, %x, %n : index
    scf.condition(%go) %x : index
  } do {
  ^bb0(%y: index):
    %v = memref.load %C[%y, %y] : memref<23x37xf64>
    %v2 = arith.addf %v, %v : f64
    memref.store %v2, %C[%y, %y] : memref<23x37xf64>
    %y2 = arith.addi %y, %c1 : index
    scf.yield %y2 : index
  }
  return
}
"""


@pytest.mark.parametrize("switches", [
    {}, {"hopt": True}, {"hopt": True, "copy": True},
    {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}])
def test_hop_matmul_in_an_scf_loop_next_to_a_while_loop(switches):
    remarks: list[str] = []
    fn = polyopt.compile(HOP_IN_LOOP, remark=lambda loc, msg: remarks.append(msg),
                         **switches)["f"]
    rng = np.random.default_rng(3)
    A, B, C = rng.standard_normal((23, 19)), rng.standard_normal((19, 37)), \
        rng.standard_normal((23, 37))
    expected = C + 2 * (A @ B)
    for k in range(5):
        expected[k, k] *= 2
    fn(A, B, C, 5)
    assert np.allclose(C, expected)
    if switches:
        assert sum("left alone" in r for r in remarks) == 1   # the while loop, not hop.matmul


def test_bounds_check_on_scf_and_raised_code():
    text = """\
func.func @f(%A: memref<16xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %j = arith.addi %i, %c1 : index
    %v = memref.load %A[%j] : memref<16xf64>
    memref.store %v, %A[%i] : memref<16xf64>
    %w = affine.load %A[0] : memref<16xf64>
  }
  return
}
"""
    module = parse(text, "b.mlir")
    assert find_out_of_bounds(module) == []     # memref.load is not checked, affine.load is fine
    raise_scf_to_affine(module)
    (err,) = find_out_of_bounds(module)
    assert str(err) == ("b.mlir:7:10: error: 'affine.load' op out-of-bounds access to "
                        "memref<16xf64> (%arg0) in dimension 0: index 16 at iteration "
                        "(%arg1 = 15)")
