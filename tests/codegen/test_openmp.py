"""Parallel loops on LLVM's OpenMP runtime (polyopt/codegen/openmp.py): ``affine.parallel`` and
``scf.parallel`` with ``threads > 1`` split their outermost dimension statically over a libomp
team.  Checked: which thread ran which iteration (``omp_get_thread_num`` called from the
kernel), results against numpy and against ``mlir-runner-22`` (MLIR's sequential lowering of
the same program) at 1, 2 and 3 threads (3 oversubscribes this 2-core machine), per-thread
buffers, the IR's shape, and the error when the runtime is missing."""

from __future__ import annotations

import re

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError
from polyopt.cli import main
from polyopt.codegen import openmp
from polyopt.codegen.openmp import load_openmp_runtime, resolve_threads
from polyopt.codegen.to_llvm import lower_module
from run_helpers import polyopt_run
from upstream_mlir import lower_and_run

UPSTREAM_PASSES = ["--lower-affine", "--convert-scf-to-cf", "--finalize-memref-to-llvm",
                   "--convert-math-to-llvm", "--convert-arith-to-llvm",
                   "--convert-func-to-llvm", "--convert-cf-to-llvm",
                   "--reconcile-unrealized-casts"]

THREADS = [1, 2, 3]


@pytest.fixture(autouse=True)
def every_region_forks(monkeypatch):
    """These kernels are tiny: let every region fork the team (a region below
    MIN_PARALLEL_WORK runs on the calling thread; test_small_regions_run_alone checks it)."""
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)

# each iteration of the outer dimension records the OpenMP thread that ran it (libomp's
# omp_get_thread_num, bound by name: torch, when a test loaded it, brings GCC's libgomp, whose
# omp_get_thread_num knows nothing of libomp's teams)
WHO_RAN = """\
func.func private @libomp_thread_num() -> i32
func.func @affine(%W: memref<23xi32>, %n: index) {
  affine.parallel (%i, %j) = (2, 0) to (min(%n, 23), 3) step (3, 1) {
    %t = func.call @libomp_thread_num() : () -> i32
    affine.store %t, %W[%i] : memref<23xi32>
  }
  return
}
func.func @scf(%W: memref<23xi32>, %lb: index, %ub: index, %st: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%i, %j) = (%lb, %c0) to (%ub, %c2) step (%st, %c2) {
    %t = func.call @libomp_thread_num() : () -> i32
    memref.store %t, %W[%i] : memref<23xi32>
  }
  return
}
"""


def _bind_thread_num() -> None:
    import ctypes

    import llvmlite.binding as llvm
    lib = ctypes.CDLL(load_openmp_runtime())
    llvm.add_symbol("libomp_thread_num",
                    ctypes.cast(lib.omp_get_thread_num, ctypes.c_void_p).value)


def _static_owner(iters: list, threads: int) -> dict:
    """libomp's schedule(static) (balanced): consecutive blocks, the first trips % threads
    threads one iteration more than the others."""
    small, extra = divmod(len(iters), threads)
    owner, k = {}, 0
    for t in range(threads):
        for _ in range(small + (t < extra)):
            owner[iters[k]] = t
            k += 1
    return owner


@pytest.mark.parametrize("threads", THREADS)
def test_each_thread_runs_its_static_chunk(threads):
    _bind_thread_num()  # the kernel calls libomp's omp_get_thread_num itself
    c = polyopt.compile(WHO_RAN, threads=threads)
    for n in (0, 2, 3, 9, 23, 40):
        W = np.full(23, -1, np.int32)
        c["affine"](W, n)
        owner = _static_owner(list(range(2, min(n, 23), 3)), threads)
        assert {i: int(W[i]) for i in range(23) if W[i] >= 0} == owner, n
    for lb, ub, st in ((0, 23, 1), (3, 22, 4), (5, 5, 1), (1, 20, 7)):
        W = np.full(23, -1, np.int32)
        c["scf"](W, lb, ub, st)
        owner = _static_owner(list(range(lb, ub, st)), threads)
        assert {i: int(W[i]) for i in range(23) if W[i] >= 0} == owner, (lb, ub, st)
    if threads > 1:  # every thread of the team worked on the full range
        W = np.full(23, -1, np.int32)
        c["scf"](W, 0, 23, 1)
        assert sorted(set(W.tolist())) == list(range(threads))


# a triangular nest: iteration i runs i inner iterations
TRIANGLE = """\
func.func private @libomp_thread_num() -> i32
func.func @tri(%W: memref<23xi32>, %S: memref<23x23xf64>) {
  %c = arith.constant 1.0 : f64
  affine.parallel (%i) = (0) to (23) {
    %t = func.call @libomp_thread_num() : () -> i32
    affine.store %t, %W[%i] : memref<23xi32>
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.store %c, %S[%i, %j] : memref<23x23xf64>
    }
  }
  return
}
"""


@pytest.mark.parametrize("threads", THREADS)
def test_a_triangular_nest_deals_its_iterations_round_robin(threads):
    """schedule(static, 1): iteration i on thread i mod threads (the blocks of
    schedule(static) would leave the last thread three times the first one's work)."""
    _bind_thread_num()
    c = polyopt.compile(TRIANGLE, threads=threads)
    W = np.full(23, -1, np.int32)
    S = np.zeros((23, 23))
    c["tri"](W, S)
    assert W.tolist() == [i % threads for i in range(23)]
    assert np.array_equal(S, np.tril(np.ones((23, 23)), -1))


ALONE = [pytest.param(openmp.MAX_INLINE_OPS, id="inline-copy"),
         pytest.param(0, id="serialized-outlined")]


@pytest.mark.parametrize("inline_ops", ALONE)
def test_a_serialized_triangular_region_runs_every_iteration(monkeypatch, inline_ops):
    """Below MIN_PARALLEL_WORK the region runs alone: its inline copy, or the outlined
    function serialized (the runtime then gives the one thread all the iterations as one
    chunk)."""
    _bind_thread_num()
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 10_000_000)
    monkeypatch.setattr(openmp, "MAX_INLINE_OPS", inline_ops)
    c = polyopt.compile(TRIANGLE, threads=2)
    W = np.full(23, -1, np.int32)
    S = np.zeros((23, 23))
    c["tri"](W, S)
    assert W.tolist() == [0] * 23
    assert np.array_equal(S, np.tril(np.ones((23, 23)), -1))


def test_which_nests_count_as_uneven():
    """Only loops whose trip count changes over the parallel range count: a triangle does,
    tiles clamped at the edge and zero padding of the last block do not."""
    from polyopt.codegen.lower_affine import work_varies_with

    def first_parallel(text):
        return next(op for op in polyopt.parse(text).walk() if op.name == "affine.parallel")
    assert work_varies_with(first_parallel(TRIANGLE))
    assert not work_varies_with(first_parallel(WHO_RAN))
    edges = """
func.func @f(%A: memref<131xf64>) {
  %c = arith.constant 0.0 : f64
  affine.parallel (%b) = (0) to (3) {
    affine.for %i = affine_map<(d0) -> (d0 * 50)>(%b) to min affine_map<(d0) -> (131, d0 * 50 + 50)>(%b) {
      affine.store %c, %A[%i] : memref<131xf64>
    }
    affine.for %i = affine_map<(d0) -> (d0 * -50 + 131)>(%b) to 50 {
      affine.store %c, %A[%i] : memref<131xf64>
    }
  }
  return
}
"""
    assert not work_varies_with(first_parallel(edges))


SCF_REDUCE = """\
func.func @stats(%A: memref<29x31xf64>, %B: memref<29x31xf64>, %lb: index, %ub: index) -> (f64, f64, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c31 = arith.constant 31 : index
  %init = arith.constant -3.0 : f64
  %neg = arith.constant 0xFFF0000000000000 : f64
  %i0 = arith.constant 5 : i64
  %r:3 = scf.parallel (%i, %j) = (%lb, %c1) to (%ub, %c31) step (%c2, %c1) init (%init, %neg, %i0) -> (f64, f64, i64) {
    %a = memref.load %A[%i, %j] : memref<29x31xf64>
    %sq = arith.mulf %a, %a : f64
    memref.store %sq, %B[%i, %j] : memref<29x31xf64>
    %ii = arith.index_cast %i : index to i64
    scf.reduce(%a, %a, %ii : f64, f64, i64) {
    ^bb0(%x: f64, %y: f64):
      %s = arith.addf %x, %y : f64
      scf.reduce.return %s : f64
    }, {
    ^bb0(%x: f64, %y: f64):
      %m = arith.maximumf %x, %y : f64
      scf.reduce.return %m : f64
    }, {
    ^bb0(%x: i64, %y: i64):
      %s = arith.addi %x, %y : i64
      scf.reduce.return %s : i64
    }
  }
  return %r#0, %r#1, %r#2 : f64, f64, i64
}
"""


@pytest.mark.parametrize("threads", THREADS)
def test_scf_parallel_reductions_against_numpy(threads):
    _check_stats(polyopt.compile(SCF_REDUCE, threads=threads)["stats"])


@pytest.mark.parametrize("inline_ops", ALONE)
def test_reductions_of_a_region_run_alone(monkeypatch, inline_ops):
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 10_000_000)
    monkeypatch.setattr(openmp, "MAX_INLINE_OPS", inline_ops)
    _check_stats(polyopt.compile(SCF_REDUCE, threads=2)["stats"])


def test_a_small_region_gets_an_inline_copy_for_running_alone(monkeypatch):
    """The copy run below MIN_PARALLEL_WORK is the plain loop, in the function itself: no
    call of the outlined function, no runtime call (a stencil's sweep forked a thousand
    times paid for them on every call)."""
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 10_000_000)
    text = lower_module(polyopt.parse(SCF_REDUCE), threads=2).llvm_ir
    body = text[text.index('define void @"stats"'):]
    body = body[:body.index("\n}\n")]
    assert "__kmpc_fork_call" in body
    assert "__kmpc_serialized_parallel" not in body
    assert len(re.findall(r"memref.store|store double", body)) >= 1
    monkeypatch.setattr(openmp, "MAX_INLINE_OPS", 0)
    text = lower_module(polyopt.parse(SCF_REDUCE), threads=2).llvm_ir
    assert "__kmpc_serialized_parallel" in text


def _check_stats(f) -> None:
    rng = np.random.default_rng(7)
    # integers in f64: the sums are exact in any order
    A = rng.integers(-50, 50, (29, 31)).astype(np.float64)
    for lb, ub in ((0, 29), (3, 20), (7, 8), (9, 9), (12, 4)):
        B = np.zeros_like(A)
        s, m, k = f(A, B, lb, ub)
        rows = list(range(lb, ub, 2))
        want = np.zeros_like(A)
        want[rows, 1:] = A[rows, 1:] ** 2
        assert np.array_equal(B, want)
        assert s == -3.0 + A[rows, 1:].sum()
        assert m == (A[rows, 1:].max() if rows else -np.inf)
        assert k == 5 + 30 * sum(rows)


def _main(kernel: str, call: str) -> str:
    return kernel + f"""
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()
func.func @main() {{
  %A = memref.alloc() : memref<29x31xf64>
  %B = memref.alloc() : memref<29x31xf64>
  affine.for %i = 0 to 29 {{
    affine.for %j = 0 to 31 {{
      %q = affine.apply affine_map<(d0, d1) -> ((d0 * 7 + d1 * 3) mod 13)>(%i, %j)
      %qi = arith.index_cast %q : index to i64
      %qf = arith.sitofp %qi : i64 to f64
      affine.store %qf, %A[%i, %j] : memref<29x31xf64>
    }}
  }}
{call}
  return
}}
"""


def test_scf_parallel_prints_what_mlir_runner_prints(tmp_path, capfd):
    call = """\
  %c3 = arith.constant 3 : index
  %c28 = arith.constant 28 : index
  %s, %m, %k = func.call @stats(%A, %B, %c3, %c28) : (memref<29x31xf64>, memref<29x31xf64>, index, index) -> (f64, f64, i64)
  func.call @printF64(%s) : (f64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%m) : (f64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printI64(%k) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %b = memref.load %B[%c5, %c7] : memref<29x31xf64>
  func.call @printF64(%b) : (f64) -> ()
  func.call @printNewline() : () -> ()"""
    text = _main(SCF_REDUCE, call)
    upstream = lower_and_run(text, UPSTREAM_PASSES)
    assert len(upstream.splitlines()) == 4
    for threads in THREADS:
        assert polyopt_run(tmp_path, capfd, text, "--threads", str(threads)) == upstream


AFFINE_REDUCE = """\
func.func @k(%A: memref<29x31xf64>, %B: memref<29x31xf64>) -> (f64, f64) {
  %r:2 = affine.parallel (%i, %j) = (1, 0) to (28, 31) step (2, 1) reduce ("addf", "minimumf") -> (f64, f64) {
    %a = affine.load %A[%i, %j] : memref<29x31xf64>
    %t = memref.alloca() : memref<4xf64>
    affine.store %a, %t[%j mod 4] : memref<4xf64>
    %u = affine.load %t[%j mod 4] : memref<4xf64>
    %s = arith.addf %u, %u : f64
    affine.store %s, %B[%i, %j] : memref<29x31xf64>
    affine.yield %a, %a : f64, f64
  }
  return %r#0, %r#1 : f64, f64
}
"""


def test_affine_parallel_prints_what_mlir_runner_prints(tmp_path, capfd):
    call = """\
  %s, %m = func.call @k(%A, %B) : (memref<29x31xf64>, memref<29x31xf64>) -> (f64, f64)
  func.call @printF64(%s) : (f64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%m) : (f64) -> ()
  func.call @printNewline() : () -> ()
  %c27 = arith.constant 27 : index
  %c30 = arith.constant 30 : index
  %b = memref.load %B[%c27, %c30] : memref<29x31xf64>
  func.call @printF64(%b) : (f64) -> ()
  func.call @printNewline() : () -> ()"""
    text = _main(AFFINE_REDUCE, call)
    upstream = lower_and_run(text, UPSTREAM_PASSES)
    assert len(upstream.splitlines()) == 3
    for threads in THREADS:
        assert polyopt_run(tmp_path, capfd, text, "--threads", str(threads)) == upstream


@pytest.mark.parametrize("threads", THREADS)
def test_per_thread_allocas_against_numpy(threads):
    # the alloca in the body is each thread's own (hoisted into the outlined function)
    f = polyopt.compile(AFFINE_REDUCE, threads=threads)["k"]
    A = np.random.default_rng(0).integers(-9, 9, (29, 31)).astype(np.float64)
    B = np.zeros_like(A)
    s, m = f(A, B)
    assert s == A[1:28:2].sum() and m == A[1:28:2].min()
    want = np.zeros_like(A)
    want[1:28:2] = 2 * A[1:28:2]
    assert np.array_equal(B, want)


NESTED = """\
func.func @k(%A: memref<17x19xf64>) {
  affine.parallel (%i) = (0) to (17) {
    affine.parallel (%j) = (0) to (19) {
      %v = affine.load %A[%i, %j] : memref<17x19xf64>
      %w = arith.addf %v, %v : f64
      affine.store %w, %A[%i, %j] : memref<17x19xf64>
    }
  }
  return
}
"""


def test_ir_one_region_for_the_outermost_parallel_only():
    sequential = lower_module(polyopt.parse(NESTED), threads=1).llvm_ir
    assert "__kmpc" not in sequential and "omp_outlined" not in sequential
    ir_text = lower_module(polyopt.parse(NESTED), threads=2).llvm_ir
    assert ir_text.count("call void (ptr, i32, ptr, ...) @\"__kmpc_fork_call\"") == 1
    assert re.search(r'__kmpc_push_num_threads"\(.*, i32 2\)', ir_text)
    assert len(re.findall(r'define internal void @"k\.omp_outlined\.\d+"', ir_text)) == 1
    A = np.arange(17 * 19, dtype=np.float64).reshape(17, 19)
    polyopt.compile(NESTED, threads=2)["k"](A)
    assert np.array_equal(A, 2 * np.arange(17 * 19, dtype=np.float64).reshape(17, 19))


def test_missing_runtime_is_a_located_error_naming_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POLYOPT_OPENMP_LIB", str(tmp_path / "libomp.so.5"))
    with pytest.raises(CodegenError, match="install Debian's libomp-22-dev") as e:
        polyopt.compile(NESTED, threads=2, filename="nested.mlir")
    assert e.value.render().startswith("nested.mlir:2:3: error: parallel loops need LLVM's "
                                       "OpenMP runtime")
    path = tmp_path / "nested.mlir"
    path.write_text(NESTED)
    assert main(["translate", str(path), "--threads", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: parallel loops need LLVM's OpenMP runtime")
    assert "Traceback" not in err
    # one thread needs no runtime
    polyopt.compile(NESTED, threads=1)


def test_thread_count_defaults(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")
    assert resolve_threads() == 3 and resolve_threads(5) == 5
    assert polyopt.compile(NESTED).threads == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    import os
    assert resolve_threads() == len(os.sched_getaffinity(0))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            polyopt.compile(NESTED, threads=bad)


SPIN = """\
func.func @work(%flags: memref<2xf64>, %A: memref<4099xf64>, %reps: index) -> f64 {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  affine.store %one, %flags[0] : memref<2xf64>
  %s = affine.for %r = 0 to %reps iter_args(%acc = %zero) -> (f64) {
    %t = affine.for %i = 0 to 4099 iter_args(%a = %acc) -> (f64) {
      %v = affine.load %A[%i] : memref<4099xf64>
      %w = arith.mulf %v, %a : f64
      %x = arith.addf %w, %v : f64
      affine.yield %x : f64
    }
    affine.yield %t : f64
  }
  affine.store %one, %flags[1] : memref<2xf64>
  return %s : f64
}
"""


def test_calls_release_the_gil():
    # while one Python thread is inside the kernel (between its two flag stores) the other
    # runs Python code: impossible if the call held the GIL (the timing is in the README)
    import threading
    work = polyopt.compile(SPIN, threads=1)["work"]
    flags = np.zeros(2)
    A = np.full(4099, 0.5)
    worker = threading.Thread(target=work, args=(flags, A, 20000))   # ~0.2 s
    seen_inside = 0
    worker.start()
    while worker.is_alive():
        if flags[0] == 1.0 and flags[1] == 0.0:
            seen_inside += 1
    worker.join()
    assert flags[1] == 1.0 and seen_inside > 0


@pytest.mark.parametrize("inline_ops", ALONE)
def test_small_regions_run_alone(monkeypatch, inline_ops):
    # below MIN_PARALLEL_WORK (ops x iterations) the calling thread runs the region alone
    # (WHO_RAN's body calls a function, CALL_COST ops, in a 2-d scf.parallel: 23 x 32 x ~1000)
    _bind_thread_num()
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 10_000_000)
    monkeypatch.setattr(openmp, "MAX_INLINE_OPS", inline_ops)
    c = polyopt.compile(WHO_RAN, threads=2)
    W = np.full(23, -1, np.int32)
    c["scf"](W, 0, 23, 1)
    assert set(W.tolist()) == {0}
    # a one-iteration region too, whatever its work
    monkeypatch.setattr(openmp, "MIN_PARALLEL_WORK", 0)
    c = polyopt.compile(WHO_RAN, threads=2)
    W = np.full(23, -1, np.int32)
    c["scf"](W, 4, 5, 1)
    assert W[4] == 0 and (np.delete(W, 4) == -1).all()
    c["scf"](W, 0, 23, 1)
    assert set(W.tolist()) == {0, 1}


def test_assertion_in_a_worker_thread_reaches_the_caller():
    from polyopt.codegen.jit import AssertionFailure
    src = """\
func.func @k(%A: memref<40xf64>) {
  affine.parallel (%i) = (0) to (40) {
    %v = affine.load %A[%i] : memref<40xf64>
    %z = arith.constant 0.0 : f64
    %ok = arith.cmpf oge, %v, %z : f64
    cf.assert %ok, "negative element"
  }
  return
}
"""
    k = polyopt.compile(src, threads=2, filename="k.mlir")["k"]
    A = np.ones(40)
    k(A)
    A[37] = -1.0     # in the second thread's block
    with pytest.raises(AssertionFailure, match="negative element"):
        k(A)
    A[37] = 1.0
    k(A)             # nothing left over from the failure


def test_the_work_estimate_bounds_a_tile_loop_by_its_tile_size():
    # a wavefront's tile loop, max(500 t, 1) to min(500 t + 500, 1999), runs at most 500
    # times; counted as UNKNOWN_TRIPS (32) its region looked too small to fork
    from polyopt.affine.dialects.affine import AffineForOp
    from polyopt.codegen.openmp import _extent_bound
    module = polyopt.parse("""
func.func @f(%A: memref<2000xf64>) {
  affine.for %t = 3 to 10 {
    affine.for %i = max affine_map<(d0) -> (d0 * 500, 1)>(%t) to min affine_map<(d0) -> (d0 * 500 + 500, 1999)>(%t) {
      %x = affine.load %A[%i] : memref<2000xf64>
      affine.store %x, %A[%i] : memref<2000xf64>
    }
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%t) {
      %x = affine.load %A[%j] : memref<2000xf64>
      affine.store %x, %A[%j] : memref<2000xf64>
    }
  }
  return
}""")
    t, i, j = [op for op in module.walk() if isinstance(op, AffineForOp)]
    assert (_extent_bound(t), _extent_bound(i), _extent_bound(j)) == (7, 500, None)
    # each loop: itself, then its body (a load, a store, the yield) times its trips
    assert openmp.iteration_cost(t.body) == (1 + 500 * 3) + (1 + openmp.UNKNOWN_TRIPS * 3) + 1
