"""Dependences (ISL dataflow on the original schedule) and the legality of new schedules:
stencils over a time loop (jacobi-2d, seidel-2d in place), matmul, 2mm.  Every refusal names the
dependence kind, the memref and a concrete pair of instances, and the tests re-verify that pair:
it is a dependence of that kind, the original schedule runs the source first, the new one not."""

from __future__ import annotations

import textwrap

import islpy as isl
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.schedules.dependences import (Dependences, carried_at, check_legality,
                                           compute_dependences, evaluate_schedule,
                                           find_violation, is_parallel, normalize_schedule)
from polyopt.schedules.model import extract


def model_of(text: str, filename: str = "t.mlir"):
    module = polyopt.parse(textwrap.dedent(text), filename)
    func = [op for op in module.regions[0].blocks[0].ops if op.name == "func.func"][-1]
    return extract(func)


def refusal(model, schedule: str, deps=None) -> ScheduleError:
    with pytest.raises(ScheduleError) as err:
        check_legality(model, isl.UnionMap(schedule), deps)
    return err.value


def assert_real_violation(model, deps: Dependences, schedule: str, v) -> None:
    """The reported pair is a dependence of the reported kind on the reported memref, both
    instances exist, the original schedule runs the source strictly first and the new one
    does not."""
    fix = " and ".join(f"{p} = {x}" for p, x in zip(v.params, v.param_values))
    space = f"[{', '.join(v.params)}] -> "
    src = f"{v.source}[{', '.join(map(str, v.src_point))}]"
    snk = f"{v.sink}[{', '.join(map(str, v.sink_point))}]"
    pair = isl.UnionMap(f"{space}{{ {src} -> {snk}{' : ' + fix if fix else ''} }}")
    kind_index = ("RAW", "WAR", "WAW").index(v.kind)
    assert not deps.by_memref[v.memref][kind_index].intersect(pair).is_empty()
    for name, point in ((v.source, v.src_point), (v.sink, v.sink_point)):
        inst = isl.UnionSet(f"{space}{{ {name}[{', '.join(map(str, point))}]"
                            f"{' : ' + fix if fix else ''} }}")
        assert not model.domains().intersect(inst).is_empty()
    old = model.schedule()
    assert evaluate_schedule(old, v.source, v.src_point, v.param_values) < \
        evaluate_schedule(old, v.sink, v.sink_point, v.param_values)
    new = normalize_schedule(model, isl.UnionMap(schedule))
    assert evaluate_schedule(new, v.sink, v.sink_point, v.param_values) <= \
        evaluate_schedule(new, v.source, v.src_point, v.param_values)


# ---------------------------------------------------------------------------------------------
# matmul: the k loop carries the reduction on C

MATMUL = """
func.func @matmul(%A: memref<16x8xf64>, %B: memref<8x12xf64>, %C: memref<16x12xf64>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 12 {
      affine.for %k = 0 to 8 {
        %a = affine.load %A[%i, %k] : memref<16x8xf64>
        %b = affine.load %B[%k, %j] : memref<8x12xf64>
        %c = affine.load %C[%i, %j] : memref<16x12xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<16x12xf64>
      }
    }
  }
  return
}
"""


def test_matmul_dependences():
    model = model_of(MATMUL)
    deps = compute_dependences(model)
    dom = "0 <= i < 16 and 0 <= j < 12"
    assert deps.raw.is_equal(isl.UnionMap(f"{{ S0[i, j, k] -> S0[i, j, k + 1] : {dom} and "
                                          f"0 <= k < 7 }}"))
    assert deps.waw.is_equal(deps.raw)          # value-based: the previous write only
    assert deps.war.is_equal(isl.UnionMap(f"{{ S0[i, j, k] -> S0[i, j, k2] : {dom} and "
                                          f"0 <= k < k2 < 8 }}"))  # memory-based: every later one
    # A and B are only read: no dependence on them
    assert all(d.is_empty() for d in deps.by_memref["M0"] + deps.by_memref["M1"])


@pytest.mark.parametrize("schedule", [
    "{ S0[i, j, k] -> [i, k, j] }",          # the (i, k, j) interchange
    "{ S0[i, j, k] -> [k, j, i] }",
    "{ S0[i, j, k] -> [-i, j, k] }",         # i and j are parallel: reversing them is fine
    "{ S0[i, j, k] -> [floor(k/4), floor(i/8), j, i, k] }",
])
def test_matmul_legal_schedules(schedule):
    model = model_of(MATMUL)
    check_legality(model, isl.UnionMap(schedule))
    assert find_violation(model, isl.UnionMap(schedule)) is None


def test_matmul_reversing_k_is_illegal():
    # C[i][j] is accumulated along k: reversal only re-associates the sum, but the RAW/WAW
    # dependences on C say k must run forward; refusing it is conservative and correct here
    model = model_of(MATMUL, "mm.mlir")
    deps = compute_dependences(model)
    sched = "{ S0[i, j, k] -> [i, j, -k] }"
    err = refusal(model, sched, deps)
    assert str(err) == ("mm.mlir:6:14: error: schedule violates a RAW dependence on %arg2 from "
                        "S0[0, 0, 0] to S0[0, 0, 1]: the new schedule runs S0[0, 0, 1] first")
    assert err.loc == model.statement("S0").loc
    assert_real_violation(model, deps, sched, err.violation)


def test_matmul_dropping_k_runs_dependent_instances_at_once():
    model = model_of(MATMUL, "mm.mlir")
    err = refusal(model, "{ S0[i, j, k] -> [i, j] }")
    assert err.message == ("schedule violates a RAW dependence on %arg2 from S0[0, 0, 0] to "
                           "S0[0, 0, 1]: the new schedule runs S0[0, 0, 1] at the same time as "
                           "S0[0, 0, 0]")


def test_matmul_parallel_loops():
    model = model_of(MATMUL)
    deps = compute_dependences(model)
    i, j, k = model.statement("S0").loops
    assert [is_parallel(model, deps, l) for l in (i, j, k)] == [True, True, False]
    # on the original 2d+1 schedule, loop depth d is time dimension 2d + 1
    assert carried_at(model, deps, 1).is_empty() and carried_at(model, deps, 3).is_empty()
    assert carried_at(model, deps, 5).is_equal(deps.all())
    # after the (k, i, j) interchange the outer dimension carries everything
    kij = isl.UnionMap("{ S0[i, j, k] -> [k, i, j] }")
    assert not is_parallel(model, deps, 0, kij)
    assert is_parallel(model, deps, 1, kij) and is_parallel(model, deps, 2, kij)


# ---------------------------------------------------------------------------------------------
# jacobi-2d: two statements per time step, ping-pong between A and B

JACOBI = """
func.func @jacobi(%A: memref<12x12xf64>, %B: memref<12x12xf64>, %T: index) {
  %c = arith.constant 0.2 : f64
  affine.for %t = 0 to %T {
    affine.for %i = 1 to 11 {
      affine.for %j = 1 to 11 {
        %a0 = affine.load %A[%i, %j] : memref<12x12xf64>
        %a1 = affine.load %A[%i, %j - 1] : memref<12x12xf64>
        %a2 = affine.load %A[%i, %j + 1] : memref<12x12xf64>
        %a3 = affine.load %A[%i + 1, %j] : memref<12x12xf64>
        %a4 = affine.load %A[%i - 1, %j] : memref<12x12xf64>
        %s1 = arith.addf %a0, %a1 : f64
        %s2 = arith.addf %s1, %a2 : f64
        %s3 = arith.addf %s2, %a3 : f64
        %s4 = arith.addf %s3, %a4 : f64
        %r = arith.mulf %c, %s4 : f64
        affine.store %r, %B[%i, %j] : memref<12x12xf64>
      }
    }
    affine.for %i = 1 to 11 {
      affine.for %j = 1 to 11 {
        %b0 = affine.load %B[%i, %j] : memref<12x12xf64>
        %b1 = affine.load %B[%i, %j - 1] : memref<12x12xf64>
        %b2 = affine.load %B[%i, %j + 1] : memref<12x12xf64>
        %b3 = affine.load %B[%i + 1, %j] : memref<12x12xf64>
        %b4 = affine.load %B[%i - 1, %j] : memref<12x12xf64>
        %s1 = arith.addf %b0, %b1 : f64
        %s2 = arith.addf %s1, %b2 : f64
        %s3 = arith.addf %s2, %b3 : f64
        %s4 = arith.addf %s3, %b4 : f64
        %r = arith.mulf %c, %s4 : f64
        affine.store %r, %A[%i, %j] : memref<12x12xf64>
      }
    }
  }
  return
}
"""

STENCIL = ("(i2 = i and (j2 - j = 1 or j - j2 = 1 or j2 = j)) or "
           "(j2 = j and (i2 - i = 1 or i - i2 = 1))")


def test_jacobi_dependences():
    model = model_of(JACOBI)
    deps = compute_dependences(model)
    inner = "1 <= i <= 10 and 1 <= j <= 10 and 1 <= i2 <= 10 and 1 <= j2 <= 10"
    # S0 writes B, S1 reads the 5-point neighbourhood in the same time step
    assert deps.by_memref["M1"][0].is_equal(isl.UnionMap(
        f"[p0] -> {{ S0[t, i, j] -> S1[t, i2, j2] : 0 <= t < p0 and {inner} and ({STENCIL}) }}"))
    # S1 writes A, S0 of the next time step reads it
    assert deps.by_memref["M0"][0].is_equal(isl.UnionMap(
        f"[p0] -> {{ S1[t, i, j] -> S0[t + 1, i2, j2] : 0 <= t < p0 - 1 and {inner} and "
        f"({STENCIL}) }}"))
    assert deps.waw.is_equal(isl.UnionMap(
        "[p0] -> { S0[t, i, j] -> S0[t + 1, i, j] : 0 <= t < p0 - 1 and 1 <= i <= 10 and "
        "1 <= j <= 10; S1[t, i, j] -> S1[t + 1, i, j] : 0 <= t < p0 - 1 and 1 <= i <= 10 and "
        "1 <= j <= 10 }"))
    s0, s1 = model.statements
    assert [is_parallel(model, deps, l) for l in s0.loops] == [False, True, True]
    assert [is_parallel(model, deps, l) for l in s1.loops] == [False, True, True]


@pytest.mark.parametrize("schedule", [
    # time skewing: S1 runs one step behind S0 in the skewed space
    "[p0] -> { S0[t, i, j] -> [t, 2t + i, 2t + j, 0];"
    " S1[t, i, j] -> [t, 2t + i + 1, 2t + j + 1, 1] }",
    # and it can be tiled rectangularly in the skewed space
    "[p0] -> { S0[t, i, j] -> [floor(t/2), floor((2t + i)/4), floor((2t + j)/4), t, 2t + i,"
    " 2t + j, 0];"
    " S1[t, i, j] -> [floor(t/2), floor((2t + i + 1)/4), floor((2t + j + 1)/4), t, 2t + i + 1,"
    " 2t + j + 1, 1] }",
])
def test_jacobi_skewed_schedules_are_legal(schedule):
    model = model_of(JACOBI)
    check_legality(model, isl.UnionMap(schedule))


def test_jacobi_rectangular_time_tiling_is_illegal():
    model = model_of(JACOBI, "jacobi.mlir")
    deps = compute_dependences(model)
    sched = ("[p0] -> { S0[t, i, j] -> [floor(t/2), floor(i/4), floor(j/4), t, 0, i, j];"
             " S1[t, i, j] -> [floor(t/2), floor(i/4), floor(j/4), t, 1, i, j] }")
    err = refusal(model, sched, deps)
    assert str(err) == ("jacobi.mlir:7:15: error: schedule violates a RAW dependence on %arg0 "
                        "from S1[0, 1, 4] to S0[1, 1, 3]: the new schedule runs S0[1, 1, 3] "
                        "first (with %arg2 = 2)")
    assert_real_violation(model, deps, sched, err.violation)


def test_jacobi_swapping_the_statements_is_illegal():
    model = model_of(JACOBI, "jacobi.mlir")
    deps = compute_dependences(model)
    sched = "[p0] -> { S0[t, i, j] -> [t, 1, i, j]; S1[t, i, j] -> [t, 0, i, j] }"
    err = refusal(model, sched, deps)
    # the sink is S1: the error points at its first op (line 22)
    assert str(err) == ("jacobi.mlir:22:15: error: schedule violates a RAW dependence on %arg1 "
                        "from S0[0, 1, 1] to S1[0, 1, 1]: the new schedule runs S1[0, 1, 1] "
                        "first (with %arg2 = 1)")
    assert_real_violation(model, deps, sched, err.violation)


# ---------------------------------------------------------------------------------------------
# seidel-2d: in place, every point depends on its updated west/north neighbours

SEIDEL = """
func.func @seidel(%A: memref<20x20xf64>, %T: index) {
  %cst = arith.constant 0.2 : f64
  affine.for %t = 0 to %T {
    affine.for %i = 1 to 19 {
      affine.for %j = 1 to 19 {
        %a = affine.load %A[%i - 1, %j] : memref<20x20xf64>
        %b = affine.load %A[%i, %j - 1] : memref<20x20xf64>
        %c = affine.load %A[%i, %j] : memref<20x20xf64>
        %d = affine.load %A[%i, %j + 1] : memref<20x20xf64>
        %e = affine.load %A[%i + 1, %j] : memref<20x20xf64>
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.addf %s2, %d : f64
        %s4 = arith.addf %s3, %e : f64
        %r = arith.mulf %s4, %cst : f64
        affine.store %r, %A[%i, %j] : memref<20x20xf64>
      }
    }
  }
  return
}
"""


def test_seidel_dependences():
    model = model_of(SEIDEL)
    deps = compute_dependences(model)
    # the value read at A[i][j-1] in step t was written by S0[t, i, j - 1] (same step) ...
    same_step = isl.UnionMap("[p0] -> { S0[t, i, j] -> S0[t, i, j + 1] : 0 <= t < p0 and "
                             "1 <= i <= 18 and 1 <= j <= 17 }")
    assert same_step.is_subset(deps.raw)
    # ... and the one read at A[i][j+1] by S0[t - 1, i, j + 1] (previous step)
    assert isl.UnionMap("[p0] -> { S0[t, i, j] -> S0[t + 1, i, j - 1] : 0 <= t < p0 - 1 and "
                        "1 <= i <= 18 and 2 <= j <= 18 }").is_subset(deps.raw)
    (s,) = model.statements
    assert not any(is_parallel(model, deps, l) for l in s.loops)


@pytest.mark.parametrize("schedule", [
    "[p0] -> { S0[t, i, j] -> [t, i, j] }",
    # the classic skewing (t, t + i, 2t + i + j) makes the band fully permutable ...
    "[p0] -> { S0[t, i, j] -> [t, t + i, 2t + i + j] }",
    # ... so that it can be tiled
    "[p0] -> { S0[t, i, j] -> [floor(t/4), floor((t + i)/4), floor((2t + i + j)/4), t, t + i, "
    "2t + i + j] }",
])
def test_seidel_legal_schedules(schedule):
    check_legality(model_of(SEIDEL), isl.UnionMap(schedule))


def test_seidel_rectangular_tiling_is_refused():
    model = model_of(SEIDEL, "seidel.mlir")
    deps = compute_dependences(model)
    sched = "[p0] -> { S0[t, i, j] -> [floor(t/4), floor(i/4), floor(j/4), t, i, j] }"
    err = refusal(model, sched, deps)
    assert str(err) == ("seidel.mlir:7:14: error: schedule violates a RAW dependence on %arg0 "
                        "from S0[0, 1, 4] to S0[1, 1, 3]: the new schedule runs S0[1, 1, 3] "
                        "first (with %arg1 = 2)")
    v = err.violation
    assert (v.kind, v.memref, v.source, v.src_point, v.sink, v.sink_point) == \
        ("RAW", "M0", "S0", (0, 1, 4), "S0", (1, 1, 3))
    assert (v.params, v.param_values, v.involved) == (("p0",), (2,), ("p0",))
    assert_real_violation(model, deps, sched, v)
    # the times themselves: tile (0, 0, 1) runs after tile (0, 0, 0)
    new = normalize_schedule(model, isl.UnionMap(sched))
    assert evaluate_schedule(new, "S0", (0, 1, 4), (2,)) == (0, 0, 1, 0, 1, 4)
    assert evaluate_schedule(new, "S0", (1, 1, 3), (2,)) == (0, 0, 0, 1, 1, 3)


def test_seidel_interchanging_time_inside_is_refused():
    model = model_of(SEIDEL, "seidel.mlir")
    deps = compute_dependences(model)
    sched = "[p0] -> { S0[t, i, j] -> [i, j, t] }"
    err = refusal(model, sched, deps)
    assert err.violation.kind in ("RAW", "WAR", "WAW")
    assert_real_violation(model, deps, sched, err.violation)


# ---------------------------------------------------------------------------------------------
# 2mm: the second nest reads what the first one wrote

MM2 = """
func.func @mm2(%A: memref<8x6xf64>, %B: memref<6x7xf64>, %T: memref<8x7xf64>,
               %C: memref<7x5xf64>, %D: memref<8x5xf64>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 7 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<8x6xf64>
        %b = affine.load %B[%k, %j] : memref<6x7xf64>
        %t = affine.load %T[%i, %j] : memref<8x7xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %t, %p : f64
        affine.store %s, %T[%i, %j] : memref<8x7xf64>
      }
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 7 {
        %a = affine.load %T[%i, %k] : memref<8x7xf64>
        %b = affine.load %C[%k, %j] : memref<7x5xf64>
        %d = affine.load %D[%i, %j] : memref<8x5xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %d, %p : f64
        affine.store %s, %D[%i, %j] : memref<8x5xf64>
      }
    }
  }
  return
}
"""


def test_2mm():
    model = model_of(MM2, "2mm.mlir")
    deps = compute_dependences(model)
    # S1[i, j, k] reads T[i][k], whose final value S0[i, k, 5] wrote
    assert deps.by_memref["M2"][0].intersect_domain(isl.UnionSet("{ S0[i, j, k] }")) \
        .intersect_range(isl.UnionSet("{ S1[i, j, k] }")).is_equal(isl.UnionMap(
            "{ S0[i, k, 5] -> S1[i, j, k] : 0 <= i < 8 and 0 <= j < 5 and 0 <= k < 7 }"))
    # fusing the i loops is legal (row i of T is complete before row i of D needs it)
    check_legality(model, isl.UnionMap(
        "{ S0[i, j, k] -> [i, 0, j, k]; S1[i, j, k] -> [i, 1, j, k] }"), deps)
    sched = "{ S0[i, j, k] -> [1, i, j, k]; S1[i, j, k] -> [0, i, j, k] }"
    err = refusal(model, sched, deps)
    assert str(err) == ("2mm.mlir:19:14: error: schedule violates a RAW dependence on %arg2 from "
                        "S0[0, 0, 5] to S1[0, 0, 0]: the new schedule runs S1[0, 0, 0] first")
    assert_real_violation(model, deps, sched, err.violation)
    # fusing all three loops is not: S1[0, 0, 1] needs T[0][1] before S0 computed it
    sched = "{ S0[i, j, k] -> [i, j, k, 0]; S1[i, j, k] -> [i, j, k, 1] }"
    err = refusal(model, sched, deps)
    assert err.violation.kind == "RAW" and err.violation.memref == "M2"
    assert_real_violation(model, deps, sched, err.violation)


def test_schedule_must_cover_and_be_a_function():
    model = model_of(MM2, "2mm.mlir")
    err = refusal(model, "{ S0[i, j, k] -> [0, i, j, k] }")
    assert str(err).startswith("2mm.mlir:19:14: error: the schedule does not give a time to every "
                               "instance of S1")
    err = refusal(model, "{ S0[i, j, k] -> [0, i, j, k]; "
                         "S1[i, j, k] -> [1, i, j, t] : 0 <= t <= 1 }")
    assert err.message == ("the schedule gives some instances of S1 several times: it must be a "
                           "function")
    # statements of different depths/lengths are padded to one time space
    padded = normalize_schedule(model, isl.UnionMap(
        "{ S0[i, j, k] -> [0, i]; S1[i, j, k] -> [1, i, j, k] }"))
    assert evaluate_schedule(padded, "S0", (2, 3, 4)) == (0, 2, 0, 0)


def test_a_loop_that_never_runs_is_parallel():
    """Found by the differential fuzzer: a nest with an empty domain has a schedule without
    time dimensions, and asking whether its loop is parallel was an internal error."""
    model = model_of("""
    func.func @f(%A: memref<22xf64>) {
      affine.for %i = 5 to 3 {
        %v = affine.load %A[%i] : memref<22xf64>
        affine.store %v, %A[%i + 1] : memref<22xf64>
      }
      return
    }""")
    deps = compute_dependences(model)
    (loop,) = model.statement("S0").loops
    assert is_parallel(model, deps, loop)


def test_nothing_is_carried_in_a_nest_that_never_runs():
    """The same fuzz case through the auto-scheduler's innermost-loop check: carried_at of a
    model whose domains are all empty."""
    model = model_of("""
    func.func @f(%A: memref<22xf64>) {
      affine.for %i = 5 to 3 {
        affine.for %j = 0 to 4 {
          %v = affine.load %A[%i + %j] : memref<22xf64>
          affine.store %v, %A[%i + %j + 1] : memref<22xf64>
        }
      }
      return
    }""")
    deps = compute_dependences(model)
    assert carried_at(model, deps, 3).is_empty()
