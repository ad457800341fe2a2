"""``affine.parallel`` in the polyhedral model: each dimension is a loop (domains, accesses,
schedules and dependences equal those of the ``affine.for`` nest it runs as), the bounds check
sees its iterations, ``--schedule`` reschedules it (into ``affine.for``s) and the result runs
as before; reductions are refused with a message naming the op."""

from __future__ import annotations

import textwrap

import islpy as isl
import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError, VerifyError
from polyopt.cli import main
from polyopt.schedules.apply import apply_schedule
from polyopt.schedules.bounds_check import check_bounds, find_out_of_bounds
from polyopt.schedules.dependences import compute_dependences
from polyopt.schedules.model import access_relation, extract
from upstream_mlir import mlir_opt


def parse(text: str, filename: str = "p.mlir"):
    return polyopt.parse(textwrap.dedent(text), filename)


def func_of(module):
    return module.regions[0].blocks[0].ops[0]


# one statement over a 2-D parallel with max/min bounds and steps, reading a shifted element;
# FOR is the same nest written with affine.for
PARALLEL = """\
func.func @f(%A: memref<20x30xf64>, %B: memref<20x30xf64>, %n: index) {
  affine.parallel (%i, %j) = (0, max(1, %n floordiv 4)) to (min(%n, 19), 29) step (2, 3) {
    %a = affine.load %A[%i + 1, %j] : memref<20x30xf64>
    %c = arith.constant 2.0 : f64
    %m = arith.mulf %a, %c : f64
    affine.store %m, %B[%i, %j + 1] : memref<20x30xf64>
  }
  return
}
"""

FOR = """\
func.func @f(%A: memref<20x30xf64>, %B: memref<20x30xf64>, %n: index) {
  affine.for %i = 0 to min affine_map<()[s0] -> (s0, 19)>()[%n] step 2 {
    affine.for %j = max affine_map<()[s0] -> (1, s0 floordiv 4)>()[%n] to 29 step 3 {
      %a = affine.load %A[%i + 1, %j] : memref<20x30xf64>
      %c = arith.constant 2.0 : f64
      %m = arith.mulf %a, %c : f64
      affine.store %m, %B[%i, %j + 1] : memref<20x30xf64>
    }
  }
  return
}
"""


def test_model_is_that_of_the_for_nest():
    par = extract(func_of(parse(PARALLEL)))
    ref = extract(func_of(parse(FOR)))
    (s,), (r,) = par.statements, ref.statements
    assert s.domain.is_equal(r.domain)
    assert s.schedule.is_equal(r.schedule)
    assert s.reads.is_equal(r.reads) and s.writes.is_equal(r.writes)
    assert [l.name for l in s.loops] == ["affine.parallel"] * 2
    assert s.ivs == [l.induction_var for l in s.loops]


def test_dependences_are_those_of_the_for_nest():
    src = """\
    func.func @f(%A: memref<40xf64>) {
      affine.parallel (%i, %j) = (0, 0) to (10, 3) {
        %a = affine.load %A[%i + %j] : memref<40xf64>
        affine.store %a, %A[%i + %j + 1] : memref<40xf64>
      }
      return
    }"""
    ref = src.replace("affine.parallel (%i, %j) = (0, 0) to (10, 3) {",
                      "affine.for %i = 0 to 10 {\n affine.for %j = 0 to 3 {") \
        .replace("    }\n      return", "    }}\n      return")
    dp = compute_dependences(extract(func_of(parse(src))))
    dr = compute_dependences(extract(func_of(parse(ref))))
    assert not dp.raw.is_empty() and dp.raw.is_equal(dr.raw) and dp.war.is_equal(dr.war)


def test_nested_parallel_and_for_positions():
    src = """\
    func.func @f(%A: memref<8x8x8xf64>) {
      affine.parallel (%i) = (0) to (8) {
        %c = arith.constant 1.0 : f64
        affine.store %c, %A[%i, 0, 0] : memref<8x8x8xf64>
        affine.for %j = 0 to 8 {
          affine.parallel (%k, %l) = (0, 0) to (%j, 8) {
            affine.store %c, %A[%i, %j, %k] : memref<8x8x8xf64>
          }
        }
      }
      return
    }"""
    model = extract(func_of(parse(src)))
    s0, s1 = model.statements
    assert s0.position == (0, 0) and s1.position == (0, 1, 0, 0, 0)
    assert len(s1.loops) == 4 and s1.loops[1].name == "affine.for"
    assert str(s1.domain) == ("{ S1[i0, i1, i2, i3] : 0 <= i0 <= 7 and 0 <= i1 <= 7 and "
                              "0 <= i2 < i1 and 0 <= i3 <= 7 }")


def test_bounds_check_sees_the_parallel_iterations():
    module = parse(PARALLEL.replace("%A[%i + 1, %j]", "%A[%i + 2, %j]").replace(
        "min(%n, 19)", "min(%n, 20)"), "b.mlir")
    # i reaches 18 (step 2 below 20), so i + 2 = 20 is out of bounds, for n >= 19 (where
    # j starts at n floordiv 4 = 4)
    errors = [str(e) for e in find_out_of_bounds(module)]
    assert errors == [
        "b.mlir:3:10: error: 'affine.load' op out-of-bounds access to memref<20x30xf64> (%arg0) "
        "in dimension 0: index 20 at iteration (%arg3 = 18, %arg4 = 4) for some values of the "
        "symbols (%arg2 = 19)"]
    rel = access_relation(next(op for op in module.walk() if op.name == "affine.load"))
    assert len(rel.ivs) == 2 and rel.domain.dim(isl.dim_type.set) == 2
    check_bounds(parse(PARALLEL))          # the original nest is in bounds


def test_certain_out_of_bounds_is_refused_by_the_bound_check():
    src = """\
    func.func @f(%A: memref<10xf64>) {
      %c = arith.constant 0.0 : f64
      affine.parallel (%i) = (0) to (11) {
        affine.store %c, %A[%i] : memref<10xf64>
      }
      return
    }"""
    with pytest.raises(VerifyError, match=r"index 10 at iteration \(%arg1 = 10\)"):
        polyopt.compile(textwrap.dedent(src), memref_bound_check=True)


@pytest.mark.parametrize("schedule", ["(d0, d1) -> (d1, d0)",
                                      "(d0, d1) -> (d0 floordiv 4, d1 floordiv 6, d0, d1)"])
def test_schedule_reschedules_the_parallel_and_runs_the_same(schedule):
    module = parse(PARALLEL)
    apply_schedule(func_of(module), {"S0": schedule})
    text = str(module)
    assert "affine.parallel" not in text and "affine.for" in text
    mlir_opt(text)
    new, old = polyopt.compile(text)["f"], polyopt.compile(PARALLEL)["f"]
    A = np.random.default_rng(3).random((20, 30))
    for n in (0, 3, 7, 19, 25):
        B1, B2 = np.zeros((20, 30)), np.zeros((20, 30))
        new(A, B1, n)
        old(A, B2, n)
        want = np.zeros((20, 30))
        for i in range(0, min(n, 19), 2):
            for j in range(max(1, n // 4), 29, 3):
                want[i, j + 1] = 2 * A[i + 1, j]
        assert np.array_equal(B1, want) and np.array_equal(B2, want), n


def test_cli_schedule_on_a_parallel_nest(tmp_path, capsys):
    path = tmp_path / "p.mlir"
    path.write_text(PARALLEL)
    assert main(["opt", str(path), "--schedule", "S0=(d0, d1) -> (d1, d0)"]) == 0
    out = capsys.readouterr().out
    assert "affine.for %arg3 = " in out and "affine.parallel" not in out


def test_reductions_are_refused_with_the_op():
    src = """\
    func.func @f(%A: memref<10xf64>) -> f64 {
      %r = affine.parallel (%i) = (0) to (10) reduce ("addf") -> (f64) {
        %a = affine.load %A[%i] : memref<10xf64>
        affine.yield %a : f64
      }
      return %r : f64
    }"""
    with pytest.raises(ScheduleError) as err:
        extract(func_of(parse(src, "r.mlir")))
    assert str(err.value) == ("r.mlir:2:8: error: 'affine.parallel' op with reductions is not "
                              "supported by the polyhedral model yet")
    # the bounds check still models the access over the parallel's iterations
    check_bounds(parse(src))
    bad = parse(src.replace("%A[%i]", "%A[%i + 1]"), "r.mlir")
    assert "at iteration (%arg1 = 9)" in str(find_out_of_bounds(bad)[0])


def test_zero_dimensional_parallel_is_its_body():
    src = """\
    func.func @f(%A: memref<10xf64>) {
      affine.parallel () = () to () {
        affine.for %i = 0 to 9 {
          %a = affine.load %A[%i + 1] : memref<10xf64>
          affine.store %a, %A[%i] : memref<10xf64>
        }
      }
      return
    }"""
    (s,) = extract(func_of(parse(src))).statements
    assert str(s.domain) == "{ S0[i0] : 0 <= i0 <= 8 }" and s.position == (0, 0)
