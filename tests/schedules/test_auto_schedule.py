"""The automatic scheduler (``--hopt``'s ISL scheduling of every affine nest): PolyBench-like
kernels and random nests compute what the original order computes, the printed result is valid
upstream MLIR, parallel marks are true, and every fallback leaves the nest as written with a
remark saying why."""

import subprocess

import numpy as np
import pytest

import polyopt
from polyopt.cli import main
from polyopt.pipeline import machine_model
from polyopt.schedules import auto_schedule as auto
from polyopt.schedules.auto_schedule import (KEEP_SCHEDULE, PARALLEL, AutoScheduleOptions,
                                             schedule_remaining_nests)
from polyopt.schedules.isl_scheduler import SchedulerOptions
from polyopt.schedules.vector_legality import is_loop_parallel

from polybench_small import KERNELS  # noqa: E402  (tests/schedules is on sys.path)
from upstream_mlir import tool  # noqa: E402

MACHINE = machine_model()

# sizes that are multiples of nothing the tile model picks, and tiny ones (one partial tile)
SIZES = {
    "jacobi_1d": [dict(n=37, tsteps=5), dict(n=5, tsteps=2)],
    "jacobi_2d": [dict(n=23, tsteps=5), dict(n=4, tsteps=1)],
    "seidel_2d": [dict(n=29, tsteps=5), dict(n=5, tsteps=3)],
    "heat_3d": [dict(n=11, tsteps=3)],
    "fdtd_2d": [dict(nx=19, ny=23, tmax=5), dict(nx=3, ny=2, tmax=2)],
    "lu": [dict(n=37), dict(n=3)],
    "trmm": [dict(m_=29, n=71), dict(m_=2, n=3)],
    "syrk": [dict(n=41, m_=37), dict(n=3, m_=1)],
    "syr2k": [dict(n=41, m_=37)],
    "atax": [dict(m_=71, n=67), dict(m_=1, n=2)],
    "bicg": [dict(m_=67, n=71)],
    "mvt": [dict(n=73), dict(n=1)],
    "gemver": [dict(n=69)],
    "gesummv": [dict(n=69)],
    "covariance": [dict(m_=37, n=41)],
    "correlation": [dict(m_=37, n=41)],
}


def _run(module_or_text, fn, inputs):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    polyopt.compile(module_or_text)[fn](*args)
    return [a for a in args if isinstance(a, np.ndarray)]


def _schedule(text, options=AutoScheduleOptions()):
    module = polyopt.parse(text, "kernel.mlir")
    messages = []
    results = schedule_remaining_nests(module, MACHINE, lambda loc, m: messages.append(m),
                                       options)
    return module, results, messages


@pytest.mark.parametrize("name,sizes", [(k, s) for k, ss in SIZES.items() for s in ss])
def test_kernel_matches_the_original_order(name, sizes):
    text, fn, make = KERNELS[name](**sizes)
    module, results, messages = _schedule(text)
    assert results and all(r.status in ("scheduled", "kept") for r in results), messages
    inputs = make(np.random.default_rng(7))
    want = _run(text, fn, inputs)
    got = _run(module, fn, inputs)
    for w, g in zip(want, got):
        # the same operations in a legal order; LLVM may contract mul+add into an FMA in one
        # version and not the other, so the last bit may differ
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["trmm", "bicg", "lu", "mvt", "covariance", "gemver", "syrk"])
def test_upstream_mlir_accepts_the_scheduled_nests(name):
    text, _, _ = KERNELS[name]()
    module, results, _ = _schedule(text)
    assert any(r.status == "scheduled" for r in results)
    proc = subprocess.run([tool("mlir-opt-22"), "-"], input=str(module), capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    # polyopt prints what mlir-opt prints (the parallel marks are discardable attributes)
    assert proc.stdout.strip() == str(module).strip()


def test_parallel_marks_are_loops_that_carry_no_dependence():
    text, _, _ = KERNELS["gemver"](n=19)
    module, _, _ = _schedule(text)
    loops = [op for op in module.walk() if op.name == "affine.for"]
    marked = [op for op in loops if PARALLEL in op.attributes]
    assert marked and len(marked) < len(loops)
    for op in loops:
        assert (PARALLEL in op.attributes) <= is_loop_parallel(op)


def test_mvt_second_nest_runs_the_stride_one_loop_innermost():
    text, _, _ = KERNELS["mvt"](n=50)
    module, results, messages = _schedule(text)
    assert "moved innermost" in messages[0]
    # x2[i] += A[j][i] * y2[j]: the innermost loop indexes A's last dimension
    x2 = module.lookup_function("mvt").regions[0].blocks[0].args[1]
    loads = [op for op in module.walk() if op.name == "affine.load" and
             str(op.memref.type) == "memref<50x50xf64>" and
             any(o.name == "affine.store" and o.memref is x2 for o in op.parent.ops)]
    assert loads   # one per copy of j jammed around it, and the cleanup's
    for load in loads:
        inner = load.parent_op
        assert inner.name == "affine.for" and PARALLEL in inner.attributes
        uses = [{id(load.map_operands[d]) for d in r.used_dims()} for r in load.map.results]
        assert id(inner.induction_var) in uses[-1]
        assert all(id(inner.induction_var) not in u for u in uses[:-1])


def test_stencil_time_tiling_for_seidel_and_spatial_order_for_jacobi():
    # seidel: ISL's skewed band keeps a recurrence innermost (nothing to vectorize) and
    # the nest is latency-bound: the original stride-1 order is kept
    text = KERNELS["seidel_2d"]()[0]
    module, (result,), messages = _schedule(text)
    assert result.status == "kept" and "skewed" in messages[0]
    assert str(module) == str(polyopt.parse(text, "kernel.mlir"))
    # jacobi: a skew would make the vectorizable j loops sequential; with outer parallelism
    # and no tiles, ISL's schedule is the original order
    text = KERNELS["jacobi_2d"]()[0]
    module, (result,), messages = _schedule(text)
    assert result.status == "kept" and "unchanged" in messages[0]
    # in the original order, its innermost loops (parallel) marked for LLVM
    assert str(module).replace(" {polyopt.parallel_accesses}", "") == \
        str(polyopt.parse(text, "kernel.mlir"))
    assert str(module).count("{polyopt.parallel_accesses}") == 2


def test_scheduler_time_out_falls_back_with_a_remark():
    text, _, _ = KERNELS["heat_3d"]()
    module = polyopt.parse(text)
    before = str(module)
    options = AutoScheduleOptions(scheduler=SchedulerOptions(max_operations=1000,
                                                             time_limit=None))
    messages = []
    (result,) = schedule_remaining_nests(module, MACHINE, lambda loc, m: messages.append(m),
                                         options)
    assert result.status == "fallback" and "time-out" in messages[0]
    assert "original order" in messages[0] and str(module) == before


def test_wall_clock_limit_kills_the_scheduler(monkeypatch):
    text, _, _ = KERNELS["heat_3d"]()
    module = polyopt.parse(text)
    before = str(module)
    options = AutoScheduleOptions(scheduler=SchedulerOptions(max_operations=0,
                                                             time_limit=0.001))
    messages = []
    (result,) = schedule_remaining_nests(module, MACHINE, lambda loc, m: messages.append(m),
                                         options)
    assert result.status == "fallback" and "takes more than" in messages[0]
    assert str(module) == before


def test_no_process_to_spare_schedules_in_this_process(monkeypatch):
    """A fork refused (EAGAIN: compiles in parallel on a machine at its process limit) was a
    BlockingIOError traceback out of polyopt.compile; the scheduler runs here instead."""
    from polyopt.schedules import isl_scheduler

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(isl_scheduler.os, "fork", refused)
    text, fn, make = KERNELS["lu"](n=37)
    module, results, messages = _schedule(text)
    assert [r.status for r in results] == ["scheduled"], messages
    inputs = make(np.random.default_rng(7))
    for w, g in zip(_run(text, fn, inputs), _run(module, fn, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_code_blow_up_falls_back_with_a_remark():
    text, _, _ = KERNELS["lu"]()
    module, (result,), messages = _schedule(text, AutoScheduleOptions(max_loops=2))
    assert result.status == "fallback" and "blows up" in messages[0]
    assert str(module) == str(polyopt.parse(text, "kernel.mlir"))


def test_an_illegal_result_is_refused_with_the_violated_dependence(monkeypatch):
    import islpy as isl

    def reverse_time(tree, model, machine, options):   # runs every nest backwards
        rev = isl.UnionMap("{ [t, i, j] -> [-t, -i, -j] }")
        return isl.Schedule.from_domain(model.domains()).insert_partial_schedule(
            isl.MultiUnionPwAff.from_union_map(model.schedule().apply_range(
                isl.UnionMap("{ [c0, t, c1, i, c2, j, c3] -> [t, i, j] }")).apply_range(rev))
        ), []
    monkeypatch.setattr(auto, "transform_tree", reverse_time)
    text, _, _ = KERNELS["jacobi_2d"]()
    module, (result,), messages = _schedule(text)
    assert result.status == "fallback"
    assert "not legal: schedule violates a RAW dependence on %arg" in messages[0]
    assert str(module) == str(polyopt.parse(text, "kernel.mlir"))


def test_nests_marked_keep_schedule_and_hop_ops_are_left_alone():
    text, _, _ = KERNELS["mvt"](n=20)
    module = polyopt.parse(text)
    from polyopt.affine.attributes import UnitAttr
    first = next(op for op in module.walk() if op.name == "affine.for")
    first.attributes[KEEP_SCHEDULE] = UnitAttr()
    before = str(module)
    messages = []
    assert schedule_remaining_nests(module, MACHINE, lambda loc, m: messages.append(m)) == []
    assert str(module) == before and KEEP_SCHEDULE in messages[0]


def test_cli_remarks_and_the_switch(tmp_path, capsys):
    # (bicg: mvt's nests are matrix-vector products, raised to contractions)
    path = tmp_path / "bicg.mlir"
    path.write_text(KERNELS["bicg"]()[0])
    assert main(["opt", str(path), "--hopt", "--remarks"]) == 0
    out, err = capsys.readouterr()
    assert f"{path}:4:3: remark: auto-schedule: nest of S0, S1, S2: schedule" in err
    assert "band (" in err and PARALLEL in out
    assert main(["opt", str(path), "--hopt", "--no-hopt-schedule", "--remarks"]) == 0
    out2, err2 = capsys.readouterr()
    assert "auto-schedule" not in err2 and PARALLEL not in out2
    assert main(["opt", str(path)]) == 0
    assert capsys.readouterr().out == out2


def test_compile_switch_runs_the_same_program():
    text, fn, make = KERNELS["atax"](m_=31, n=29)
    inputs = make(np.random.default_rng(3))
    on = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    off = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    polyopt.compile(text, hopt=True)[fn](*on)
    polyopt.compile(text, hopt=True, auto_schedule=False)[fn](*off)
    for a, b in zip(on, off):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-13)


# found by the differential fuzzer (tests/fuzz, seed 7614): over strided loops ISL writes some
# subscripts with rational coefficients, which the stride score must take
FUZZ_7614 = """
func.func @f(%A0: memref<38x48x42xi64>, %A1: memref<25xi64>, %A2: memref<29x27x29xi64>) {
  affine.for %i0 = 3 to 11 step 3 {
    affine.for %i1 = 1 to 5 {
      affine.for %i2 = affine_map<(d0) -> (d0 - 1)>(%i1) to min affine_map<() -> (11, 7)>() step 3 {
        affine.if affine_set<(d0, d1) : (d1 * -1 - 2 >= 0, d0 * 2 == 0)>(%i0, %i1) {
          %v1 = affine.load %A0[(%i0 + 3) mod 3 + 6, %i1 + 5, 12] : memref<38x48x42xi64>
          %v2 = affine.apply affine_map<(d0, d1) -> (d0 + d1 * -1 + 12)>(%i1, %i2)
          affine.store %v1, %A2[%i0 * -1 - 1, %i0 * 3 + 9, %v2] : memref<29x27x29xi64>
          %v5 = affine.load %A0[%i1 + 7, %i1 + %i0 * -1 + 9, %i0 * -1 + %i2 + 10] : memref<38x48x42xi64>
          %v6 = affine.load %A2[%i1 * 3, %i2 * 3 + 9, %i2 * -1 + %i1 * 2 + 14] : memref<29x27x29xi64>
          %v4 = arith.addi %v5, %v6 : i64
          %v8 = affine.load %A2[(%i1 - 2) mod 4, %i1 * 3 + 9, %i2 + %i0 * -1 + 10] : memref<29x27x29xi64>
          %v9 = arith.constant -1 : i64
          %v7 = arith.addi %v8, %v9 : i64
          %v3 = arith.xori %v4, %v7 : i64
          affine.store %v3, %A0[%i1 * -1 + 6, (%i2 * 2 + %i0 - 1) ceildiv 2 + 6, %i0 + 9] : memref<38x48x42xi64>
        } else {
          %v12 = affine.load %A1[%i2 + 7] : memref<25xi64>
          %v13 = arith.constant -2 : i64
          %v11 = arith.ori %v12, %v13 : i64
          %v15 = affine.load %A0[%i2 * 3 + %i1 * 2 + 9, %i2 * 2 + 5, %i0 * 3 + 11] : memref<38x48x42xi64>
          %v16 = affine.load %A0[%i1 * 3 + 6, %i0 + 9, %i0 * 3 + 14] : memref<38x48x42xi64>
          %v14 = arith.minsi %v15, %v16 : i64
          %v10 = arith.maxsi %v11, %v14 : i64
          affine.store %v10, %A2[%i0 * 3 + 1, %i0 + %i1 * 3 + 5, 12] : memref<29x27x29xi64>
        }
        %v19 = affine.apply affine_map<(d0) -> (d0 + 11)>(%i0)
        %v18 = affine.load %A2[(%i0 * 3 + %i1 * 2 + 2) mod 4, (%i2 * -1 + %i0 - 1) mod 2 + 7, %v19] : memref<29x27x29xi64>
        %v21 = arith.index_cast %i1 : index to i64
        %v22 = affine.load %A0[(%i2 * -1 + %i1 * -1 - 2) ceildiv 2 + 6, %i2 * -1 + %i1 * 2 + 4, %i0 + 14] : memref<38x48x42xi64>
        %v23 = arith.cmpi slt, %v21, %v22 : i64
        %v20 = arith.select %v23, %v21, %v22 : i64
        %v17 = arith.muli %v18, %v20 : i64
        affine.store %v17, %A0[%i0 * 2 + %i1 + 7, %i0 + %i1 * -1 + 9, (%i0 + 2) mod 2 + 11] : memref<38x48x42xi64>
      }
      %v26 = affine.load %A2[%i0 * 3 - 1, %i1 * -1 + 9, %i0 + 9] : memref<29x27x29xi64>
      %v27 = affine.load %A2[%i0, 9, %i0 * 2 + 9] : memref<29x27x29xi64>
      %v25 = arith.minsi %v26, %v27 : i64
      %v29 = arith.index_cast %i1 : index to i64
      %v30 = affine.load %A1[%i0 + %i1 + 9] : memref<25xi64>
      %v31 = arith.cmpi slt, %v29, %v30 : i64
      %v28 = arith.select %v31, %v29, %v30 : i64
      %v24 = arith.xori %v25, %v28 : i64
      affine.store %v24, %A0[%i1 * -1 + 6, %i0 * 3 + %i1 * 3 + 6, %i0 * -1 + 9] : memref<38x48x42xi64>
    }
    %v33 = arith.constant -3 : i64
    %v35 = affine.load %A2[2, %i0 * -1 + 9, %i0 * -1 + 9] : memref<29x27x29xi64>
    %v36 = arith.constant 1 : i64
    %v37 = arith.cmpi slt, %v35, %v36 : i64
    %v34 = arith.select %v37, %v35, %v36 : i64
    %v32 = arith.maxsi %v33, %v34 : i64
    %v38 = affine.apply affine_map<(d0) -> (d0 * -1 + 9)>(%i0)
    affine.store %v32, %A1[%v38] : memref<25xi64>
  }
  return
}
"""


def test_subscripts_with_rational_coefficients_are_scored():
    module, results, messages = _schedule(FUZZ_7614)
    assert results and all(r.status in ("scheduled", "kept") for r in results), messages
    fn = module.regions[0].blocks[0].ops[0]
    name = fn.attributes["sym_name"].value
    rng = np.random.default_rng(2)
    shapes = [a.type.shape for a in fn.regions[0].blocks[0].args]
    inputs = [rng.integers(-9, 9, shape) for shape in shapes]
    for w, g in zip(_run(FUZZ_7614, name, inputs), _run(module, name, inputs)):
        np.testing.assert_array_equal(g, w)


# found by tests/schedules/test_auto_schedule_random.py (tiles 2 x 5): the tile index of the
# triangular nest's i0 is a degenerate loop whose value ISL writes as a select
# (``c2 = c1 <= 4 ? 0 : 1``), generated as an affine.if around the tile's loops
TRIANGLE_TILE_SELECT = """
func.func @f(%A: memref<10x10xi32>, %B: memref<10x10xi32>, %C: memref<10x10xi32>) {
  affine.for %i0_0 = 0 to 6 {
    affine.for %i0_1 = affine_map<(d0) -> (d0)>(%i0_0) to 6 {
      affine.for %i0_2 = 0 to 6 {
        %v0_0a = affine.load %B[%i0_0 + 0, %i0_0 + 0] : memref<10x10xi32>
        %v0_0b = affine.load %A[%i0_1 + 1, %i0_1 + 0] : memref<10x10xi32>
        %v0_0c = arith.addi %v0_0a, %v0_0b : i32
        affine.store %v0_0c, %A[%i0_0 + 2, %i0_1 + 1] : memref<10x10xi32>
      }
    }
  }
  affine.for %i1_0 = 0 to 6 {
    %v1_0a = affine.load %A[%i1_0 + 0, %i1_0 + 0] : memref<10x10xi32>
    %v1_0b = affine.load %A[%i1_0 + 0, %i1_0 + 0] : memref<10x10xi32>
    %v1_0c = arith.addi %v1_0a, %v1_0b : i32
    affine.store %v1_0c, %A[%i1_0 + 0, %i1_0 + 0] : memref<10x10xi32>
  }
  affine.for %i2_0 = 0 to 6 {
    %v2_0a = affine.load %A[%i2_0 + 0, %i2_0 + 0] : memref<10x10xi32>
    %v2_0b = affine.load %A[%i2_0 + 0, %i2_0 + 0] : memref<10x10xi32>
    %v2_0c = arith.addi %v2_0a, %v2_0b : i32
    affine.store %v2_0c, %A[%i2_0 + 0, %i2_0 + 0] : memref<10x10xi32>
  }
  return
}
"""


def test_a_select_in_the_ast_becomes_an_affine_if():
    module, results, messages = _schedule(TRIANGLE_TILE_SELECT,
                                          AutoScheduleOptions(tile_sizes=(2, 5)))
    assert results and all(r.status in ("scheduled", "kept") for r in results), messages
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-5, 6, (10, 10), dtype=np.int32) for _ in range(3)]
    for w, g in zip(_run(TRIANGLE_TILE_SELECT, "f", inputs), _run(module, "f", inputs)):
        np.testing.assert_array_equal(g, w)


def test_outer_parallel_takes_isl_outer_coincidence_where_its_own_starts_sequential():
    # gemver: ISL fuses x = x + z into the first iteration of w += A x, whose outer loop then
    # waits on it; with outer coincidence the statements stay apart and both loops are
    # parallel (for a team of threads: --hopt-parallel on more than one)
    text, fn, make = KERNELS["gemver"](n=69)
    _, own, _ = _schedule(text)
    module, results, messages = _schedule(text, AutoScheduleOptions(outer_parallel=True))
    assert [r.status for r in results] == ["scheduled"], messages
    assert results[0].parallel_loops > own[0].parallel_loops, (own, results)
    assert "ISL's schedule with outer coincidence" in results[0].why
    assert "ISL's schedule with outer coincidence" in messages[-1]
    inputs = make(np.random.default_rng(3))
    for w, g in zip(_run(text, fn, inputs), _run(module, fn, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def test_outer_parallel_keeps_schedules_that_already_start_parallel():
    text, _, _ = KERNELS["mvt"](n=73)
    _, own, _ = _schedule(text)
    _, results, _ = _schedule(text, AutoScheduleOptions(outer_parallel=True))
    assert [r.schedule for r in results] == [r.schedule for r in own]
    assert not results[0].why


@pytest.mark.parametrize("threads,outer", [(1, False), (2, True)])
def test_the_pipeline_asks_for_outer_parallel_schedules_on_a_team(threads, outer):
    from polyopt.passes import default_pipeline
    from polyopt.pipeline import PipelineOptions
    passes = default_pipeline(PipelineOptions(hopt=True, parallel=True, threads=threads))
    (opts,) = [o for p, o in passes if p.name == "hopt-schedule"]
    assert opts.outer_parallel is outer


def _elementwise(shape, body, args):
    loops = "".join(f"  affine.for %i{k} = 0 to {e} {{\n" for k, e in enumerate(shape))
    return (f"func.func @f({args}) {{\n{loops}"
            + "".join(f"    {line}\n" for line in body) + "  }\n" * len(shape) + "  return\n}\n")


def test_a_streaming_band_is_not_tiled_and_a_transpose_is():
    """Tiles cannot help a nest that walks each array once, in order (an elementwise nest
    over 6 MiB of activations with a per-channel bias); they still serve a transpose, whose
    cache lines are reused across the outer loop."""
    t = "memref<2x96x56x56xf64>"
    text = _elementwise((2, 96, 56, 56), [
        f"%x = affine.load %O[%i0, %i1, %i2, %i3] : {t}",
        "%y = affine.load %B[%i1] : memref<96xf64>",
        "%s = arith.addf %x, %y : f64",
        f"affine.store %s, %O[%i0, %i1, %i2, %i3] : {t}"], f"%O: {t}, %B: memref<96xf64>")
    _, results, messages = _schedule(text)
    assert not any(b.tile_sizes for r in results for b in r.bands), messages
    assert "no band to tile" in messages[0], messages
    text = _elementwise((64, 65536), [
        "%x = affine.load %A[%i1, %i0] : memref<65536x64xf64>",
        "affine.store %x, %T[%i0, %i1] : memref<64x65536xf64>"],
        "%A: memref<65536x64xf64>, %T: memref<64x65536xf64>")
    _, results, messages = _schedule(text)
    assert any(b.tile_sizes for r in results for b in r.bands), messages


# top-level statements of several ops (coefficients computed from a size, as PolyBench's adi
# does) between two nests: their ops are among the scop's top-level ops
COEFFICIENT_THEN_NEST = """\
func.func @f(%X: memref<13x17xf64>, %c: memref<f64>, %e: memref<f64>) {
  %n = arith.constant 13 : i32
  %one = arith.constant 1.0 : f64
  affine.for %i = 0 to 13 {
    affine.store %one, %X[%i, 0] : memref<13x17xf64>
  }
  %nf = arith.sitofp %n : i32 to f64
  %d = arith.divf %one, %nf : f64
  affine.store %d, %c[] : memref<f64>
  %nf2 = arith.sitofp %n : i32 to f64
  %d2 = arith.divf %nf2, %nf2 : f64
  affine.store %d2, %e[] : memref<f64>
  affine.for %j = 1 to 17 {
    affine.for %i = 0 to 13 {
      %x = affine.load %X[%i, %j - 1] : memref<13x17xf64>
      %k = affine.load %c[] : memref<f64>
      %y = arith.mulf %x, %k : f64
      %k2 = affine.load %e[] : memref<f64>
      %z = arith.addf %y, %k2 : f64
      affine.store %z, %X[%i, %j] : memref<13x17xf64>
    }
  }
  return
}
"""


def test_a_top_level_statement_of_several_ops_is_scheduled_with_the_nest():
    """The check that no value of the scop is used after it counted the uses by the scop's own
    ops: every such function kept its original order ("'arith.sitofp' op result is used after
    the scop")."""
    notes = []
    x = np.random.default_rng(4).random((13, 17))
    want = x.copy()
    polyopt.compile(COEFFICIENT_THEN_NEST)["f"](want, np.zeros(()), np.zeros(()))
    got = x.copy()
    polyopt.compile(COEFFICIENT_THEN_NEST, hopt=True, remark=lambda loc, m: notes.append(m))[
        "f"](got, np.zeros(()), np.zeros(()))
    assert np.array_equal(got, want)
    scheduled = [m for m in notes if m.startswith("auto-schedule")]
    assert scheduled and "used after the scop" not in scheduled[0], notes
    assert "schedule {" in scheduled[0]


# adi's forward sweep in miniature: along j a recurrence through a division (one chain of
# latencies), across i independent rows
ROW_RECURRENCES = """\
func.func @f(%P: memref<37x41xf64>, %U: memref<41x37xf64>) {
  %b = arith.constant 3.0 : f64
  affine.for %i = 0 to 37 {
    affine.for %j = 1 to 41 {
      %p = affine.load %P[%i, %j - 1] : memref<37x41xf64>
      %u = affine.load %U[%j, %i] : memref<41x37xf64>
      %d = arith.addf %p, %b : f64
      %q = arith.divf %u, %d : f64
      affine.store %q, %P[%i, %j] : memref<37x41xf64>
    }
  }
  return
}
"""


def test_a_recurrence_along_the_stride_one_loop_gets_the_parallel_loop_innermost():
    """Unroll-and-jam splits a sum into one element into independent chains, not a
    recurrence from element to element: the parallel member goes innermost even though it
    walks P across rows (adi MEDIUM: 25.5 -> 14.5 ms, Polly's order)."""
    notes = []
    rng = np.random.default_rng(6)
    p, u = rng.random((37, 41)), rng.random((41, 37))
    want = p.copy()
    polyopt.compile(ROW_RECURRENCES)["f"](want, u)
    got = p.copy()
    compiled = polyopt.compile(ROW_RECURRENCES, hopt=True, remark=lambda loc, m: notes.append(m))
    compiled["f"](got, u)
    assert np.array_equal(got, want)
    assert any("member 0 moved innermost" in m and "parallel member(s) 1" in m for m in notes), \
        notes


def test_a_nest_compiled_again_reads_its_schedule_back(monkeypatch):
    """ISL's scheduler runs once per nest and options in a process: a second compile of the
    same nest (other register-tile switches) reads the tree back, and a search that ran out
    of time is not run again either."""
    from polyopt.schedules import isl_scheduler
    calls = []
    real = isl_scheduler._compute

    def counted(sc, options):
        calls.append(options)
        return real(sc, options)
    monkeypatch.setattr(isl_scheduler, "_compute", counted)
    monkeypatch.setattr(isl_scheduler, "_SCHEDULES", isl_scheduler.OrderedDict())
    from polyopt.schedules.scops import function_scops
    module = polyopt.parse(KERNELS["lu"]()[0])
    (func,) = [f for f in module.functions if not f.is_declaration]
    (model,), _ = function_scops(func)
    deps = auto.compute_dependences(model)
    options = SchedulerOptions(time_limit=None)
    first = isl_scheduler.compute_isl_schedule(model, deps, options)
    again = isl_scheduler.compute_isl_schedule(model, deps, options)
    assert len(calls) == 1 and first.get_map().is_equal(again.get_map())

    def out_of_time(sc, options):
        calls.append(options)
        raise isl_scheduler.SchedulerTimeout("budget spent")
    monkeypatch.setattr(isl_scheduler, "_compute", out_of_time)
    tight = SchedulerOptions(time_limit=None, max_operations=7)
    for _ in range(2):
        with pytest.raises(isl_scheduler.SchedulerTimeout, match="budget spent"):
            isl_scheduler.compute_isl_schedule(model, deps, tight)
    assert len(calls) == 2
