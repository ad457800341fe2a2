"""--hopt-parallel (polyopt/schedules/parallelize.py): the outermost dependence-free loop of
each nest becomes ``affine.parallel`` (printed as mlir-opt-22 prints it, accepted by it), runs
on the thread team with the sequential program's results, and a ``{polyopt.parallel}``
request on a loop that carries a dependence is a located error naming the pair."""

import numpy as np
import pytest

from polyopt.codegen import openmp


@pytest.fixture(autouse=True)
def every_region_forks(monkeypatch):
    """Small test sizes: let every parallel region fork the team (below MIN_PARALLEL_WORK a
    region runs on the calling thread)."""
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.cli import main
from polyopt.codegen.target import compiling_for
from polyopt.passes import run_pipeline
from cache_targets import with_caches
from upstream_mlir import mlir_opt

JACOBI = """\
func.func @jacobi(%A: memref<30x41xf64>, %B: memref<30x41xf64>, %T: index) {
  %cst = arith.constant 0.25 : f64
  affine.for %t = 0 to %T {
    affine.for %i = 1 to 29 {
      affine.for %j = 1 to 40 {
        %a = affine.load %A[%i - 1, %j] : memref<30x41xf64>
        %b = affine.load %A[%i + 1, %j] : memref<30x41xf64>
        %c = affine.load %A[%i, %j - 1] : memref<30x41xf64>
        %d = affine.load %A[%i, %j + 1] : memref<30x41xf64>
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.addf %s2, %d : f64
        %r = arith.mulf %s3, %cst : f64
        affine.store %r, %B[%i, %j] : memref<30x41xf64>
      }
    }
    affine.for %i = 1 to 29 {
      affine.for %j = 1 to 40 {
        %v = affine.load %B[%i, %j] : memref<30x41xf64>
        affine.store %v, %A[%i, %j] : memref<30x41xf64>
      }
    }
  }
  return
}
"""

# the time loop carries the dependences; each sweep's row loop is parallel
JACOBI_PARALLEL = """\
module {
  func.func @jacobi(%arg0: memref<30x41xf64>, %arg1: memref<30x41xf64>, %arg2: index) {
    %cst = arith.constant 2.500000e-01 : f64
    affine.for %arg3 = 0 to %arg2 {
      affine.parallel (%arg4) = (1) to (29) {
        affine.for %arg5 = 1 to 40 {
          %0 = affine.load %arg0[%arg4 - 1, %arg5] : memref<30x41xf64>
          %1 = affine.load %arg0[%arg4 + 1, %arg5] : memref<30x41xf64>
          %2 = affine.load %arg0[%arg4, %arg5 - 1] : memref<30x41xf64>
          %3 = affine.load %arg0[%arg4, %arg5 + 1] : memref<30x41xf64>
          %4 = arith.addf %0, %1 : f64
          %5 = arith.addf %4, %2 : f64
          %6 = arith.addf %5, %3 : f64
          %7 = arith.mulf %6, %cst : f64
          affine.store %7, %arg1[%arg4, %arg5] : memref<30x41xf64>
        }
      }
      affine.parallel (%arg4) = (1) to (29) {
        affine.for %arg5 = 1 to 40 {
          %0 = affine.load %arg1[%arg4, %arg5] : memref<30x41xf64>
          affine.store %0, %arg0[%arg4, %arg5] : memref<30x41xf64>
        }
      }
    }
    return
  }
}
"""


def _opt(text: str, *flags: str) -> str:
    module = polyopt.parse(text, "in.mlir")
    run_pipeline(module, "hopt-parallel")
    return str(module)


def test_outermost_parallel_loop_golden_and_upstream_prints_it_the_same():
    out = _opt(JACOBI)
    assert out == JACOBI_PARALLEL
    assert mlir_opt(out) == out


@pytest.mark.parametrize("threads", [2, 3])
def test_parallel_stencil_runs_as_the_sequential_one(threads):
    seq = polyopt.compile(JACOBI, threads=1)["jacobi"]
    par = polyopt.compile(JACOBI, parallel=True, threads=threads)
    assert "affine.parallel" in str(par.module)
    rng = np.random.default_rng(1)
    A0, B0 = rng.uniform(-1, 1, (30, 41)), rng.uniform(-1, 1, (30, 41))
    A1, B1, A2, B2 = A0.copy(), B0.copy(), A0.copy(), B0.copy()
    seq(A1, B1, 7)
    par["jacobi"](A2, B2, 7)
    assert np.array_equal(A1, A2) and np.array_equal(B1, B2)


@pytest.mark.parametrize("threads", [2, 3])
def test_scheduled_nests_run_in_parallel(threads):
    # --hopt's scheduler tiles and marks the nest; its outermost parallel loop runs on the team
    c = polyopt.compile(JACOBI, hopt=True, parallel=True, threads=threads)
    assert "affine.parallel" in str(c.module)
    rng = np.random.default_rng(2)
    A, B = rng.uniform(-1, 1, (30, 41)), rng.uniform(-1, 1, (30, 41))
    A1, B1 = A.copy(), B.copy()
    polyopt.compile(JACOBI, threads=1)["jacobi"](A1, B1, 5)
    c["jacobi"](A, B, 5)
    assert np.allclose(A, A1, rtol=1e-13, atol=0) and np.allclose(B, B1, rtol=1e-13, atol=0)


SEIDEL_MARKED = """\
func.func @seidel(%A: memref<20x20xf64>, %T: index) {
  %cst = arith.constant 0.2 : f64
  affine.for %t = 0 to %T {
    affine.for %i = 1 to 19 {
      affine.for %j = 1 to 19 {
        %a = affine.load %A[%i - 1, %j] : memref<20x20xf64>
        %b = affine.load %A[%i, %j - 1] : memref<20x20xf64>
        %c = affine.load %A[%i, %j] : memref<20x20xf64>
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %r = arith.mulf %s2, %cst : f64
        affine.store %r, %A[%i, %j] : memref<20x20xf64>
      }
    } {polyopt.parallel}
  }
  return
}
"""


def test_request_on_a_loop_carrying_a_dependence_is_refused(tmp_path, capsys):
    with pytest.raises(ScheduleError) as e:
        _opt(SEIDEL_MARKED)
    assert e.value.render().splitlines()[0] == (
        "in.mlir:4:5: error: loop marked polyopt.parallel carries a RAW dependence on %arg0 "
        "from S0[0, 1, 1] to S0[0, 2, 1]: parallel iterations would race")
    path = tmp_path / "seidel.mlir"
    path.write_text(SEIDEL_MARKED)
    assert main(["opt", str(path), "--hopt-parallel"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:4:5: error: loop marked polyopt.parallel carries a RAW")
    assert "Traceback" not in err
    # the time loop of seidel carries one too; the same request on the j loop as well
    assert main(["opt", str(path), "--hopt", "--hopt-parallel"]) == 1


def test_a_legal_request_is_honoured_and_nothing_else_changes():
    marked = JACOBI.replace("      }\n    }\n    affine.for", "      }\n    } {polyopt.parallel}"
                            "\n    affine.for", 1)
    assert "{polyopt.parallel}" in marked
    out = _opt(marked)
    assert out == JACOBI_PARALLEL   # the mark is consumed


def test_reductions_in_iter_args_and_opaque_nests():
    src = """\
func.func @f(%A: memref<50xf64>, %B: memref<50xf64>) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = affine.for %i = 0 to 50 iter_args(%a = %z) -> (f64) {
    %v = affine.load %A[%i] : memref<50xf64>
    %w = arith.addf %a, %v : f64
    affine.yield %w : f64
  }
  affine.for %i = 0 to 50 {
    %v = affine.load %A[%i] : memref<50xf64>
    %w = arith.mulf %v, %s : f64
    affine.store %w, %B[%i] : memref<50xf64>
  }
  return %s : f64
}
"""
    out = _opt(src)
    assert out.count("affine.parallel") == 1 and "iter_args" in out
    # a nest the model cannot represent (a scalar flowing between statements) is left alone,
    # and a request inside it cannot be checked
    opaque = """\
func.func @g(%A: memref<50xf64>, %B: memref<50xf64>) {
  affine.for %i = 0 to 50 {
    %v = affine.load %A[%i] : memref<50xf64>
    affine.for %j = 0 to 3 {
      affine.store %v, %B[%i] : memref<50xf64>
    }
  } {polyopt.parallel}
  return
}
"""
    with pytest.raises(ScheduleError, match="loop marked polyopt.parallel cannot be checked"):
        _opt(opaque)
    assert "affine.parallel" not in _opt(opaque.replace(" {polyopt.parallel}", ""))


TRMM = """\
func.func @trmm(%alpha: f64, %A: memref<300x300xf64>, %B: memref<300x350xf64>) {
  affine.for %i = 0 to 300 {
    affine.for %j = 0 to 350 {
      affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to 300 {
        %aki = affine.load %A[%k, %i] : memref<300x300xf64>
        %bkj = affine.load %B[%k, %j] : memref<300x350xf64>
        %bij = affine.load %B[%i, %j] : memref<300x350xf64>
        %0 = arith.mulf %aki, %bkj : f64
        %1 = arith.addf %bij, %0 : f64
        affine.store %1, %B[%i, %j] : memref<300x350xf64>
      }
      %b = affine.load %B[%i, %j] : memref<300x350xf64>
      %0 = arith.mulf %alpha, %b : f64
      affine.store %0, %B[%i, %j] : memref<300x350xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("threads", [2, 3])
def test_parallel_tile_loop_of_a_triangular_nest_is_moved_outermost(threads):
    # trmm: only j is parallel (row i reads the rows below it); its tile loop goes in front of
    # the i and k tile loops, so the threads share whole column strips in one fork.  Tiled
    # where what each i reads (B's rows below it, up to 300 x 350 f64: 840 KB) does not fit
    # in half of L2: a 1 MiB L2 as on Zen 4 and 5 (Emerald Rapids' 2 MiB holds it: no tiles)
    with compiling_for(with_caches()):
        c = polyopt.compile(TRMM, hopt=True, parallel=True, threads=threads)
        one = polyopt.compile(TRMM, hopt=True, threads=1)
    body = c.module.body.ops[0].regions[0].blocks[0].ops
    assert body[0].name == "affine.parallel", str(c.module)
    assert any(op.name == "affine.for" for op in body[0].walk())
    assert mlir_opt(str(c.module))
    rng = np.random.default_rng(3)
    A, B0 = rng.uniform(-1, 1, (300, 300)), rng.uniform(-1, 1, (300, 350))
    B1, B2 = B0.copy(), B0.copy()
    one["trmm"](1.5, A, B1)
    c["trmm"](1.5, A, B2)
    expected = 1.5 * (B0 + np.tril(A, -1).T @ B0)
    assert np.allclose(B1, expected, rtol=1e-12, atol=1e-12)
    assert np.array_equal(B1, B2)   # each element summed in the same order on any team
