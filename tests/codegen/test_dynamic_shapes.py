"""Memrefs with '?' (issue 13): MLIR's descriptor semantics in the lowering (sizes, strides and
offset at run time) and the numpy calling convention (any array whose static dims match;
strided views where the layout allows them, without a copy)."""

import subprocess
import sys

import numpy as np
import pytest

import polyopt
from polyopt.cli import main
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run

UPSTREAM_LOWERING = ["--lower-affine", "--convert-scf-to-cf", "--finalize-memref-to-llvm",
                     "--convert-arith-to-llvm", "--convert-vector-to-llvm",
                     "--convert-func-to-llvm", "--convert-cf-to-llvm",
                     "--reconcile-unrealized-casts"]

MATMUL = """
func.func @matmul(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %M = memref.dim %A, %c0 : memref<?x?xf64>
  %K = memref.dim %A, %c1 : memref<?x?xf64>
  %N = memref.dim %B, %c1 : memref<?x?xf64>
  affine.for %i = 0 to %M {
    affine.for %j = 0 to %N {
      affine.for %k = 0 to %K {
        %a = affine.load %A[%i, %k] : memref<?x?xf64>
        %b = affine.load %B[%k, %j] : memref<?x?xf64>
        %c = affine.load %C[%i, %j] : memref<?x?xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<?x?xf64>
      }
    }
  }
  return
}
"""


@pytest.fixture(scope="module")
def matmul():
    return polyopt.compile(MATMUL)["matmul"]


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (17, 31, 5), (300, 200, 64), (3, 0, 4)])
def test_one_compilation_runs_every_size(matmul, m, n, k):
    rng = np.random.default_rng(m * 1000 + n)
    A, B, C = rng.random((m, k)), rng.random((k, n)), rng.random((m, n))
    expected = C + A @ B
    matmul(A, B, C)
    np.testing.assert_allclose(C, expected, rtol=1e-12)


def test_identity_layout_refuses_a_view_naming_the_argument(matmul):
    A = np.zeros((8, 8))[:, ::2]
    with pytest.raises(ValueError, match=r"argument 'arg0' \(memref<\?x\?xf64>\): array is not "
                                         r"C-contiguous.*strided<\[\?, \?\], offset: \?>"):
        matmul(A, np.zeros((4, 3)), np.zeros((8, 3)))
    with pytest.raises(ValueError, match=r"argument 'arg1'.*expected shape \(\?, \?\), got \(4,\)"):
        matmul(np.zeros((2, 4)), np.zeros(4), np.zeros((2, 3)))


STRIDED = """
func.func @scale(%A: memref<?x?xf64, strided<[?, ?], offset: ?>>, %s: f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %M = memref.dim %A, %c0 : memref<?x?xf64, strided<[?, ?], offset: ?>>
  %N = memref.dim %A, %c1 : memref<?x?xf64, strided<[?, ?], offset: ?>>
  affine.for %i = 0 to %M {
    affine.for %j = 0 to %N {
      %a = affine.load %A[%i, %j] : memref<?x?xf64, strided<[?, ?], offset: ?>>
      %p = arith.mulf %a, %s : f64
      affine.store %p, %A[%i, %j] : memref<?x?xf64, strided<[?, ?], offset: ?>>
    }
  }
  return
}
func.func @total(%A: memref<?x4xf32, strided<[?, 1], offset: 2>>) -> f32 {
  %c0 = arith.constant 0 : index
  %M = memref.dim %A, %c0 : memref<?x4xf32, strided<[?, 1], offset: 2>>
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to %M iter_args(%acc = %z) -> f32 {
    %r2 = affine.for %j = 0 to 4 iter_args(%acc2 = %acc) -> f32 {
      %a = affine.load %A[%i, %j] : memref<?x4xf32, strided<[?, 1], offset: 2>>
      %t = arith.addf %acc2, %a : f32
      affine.yield %t : f32
    }
    affine.yield %r2 : f32
  }
  return %r : f32
}
"""


def test_strided_views_are_taken_without_a_copy():
    compiled = polyopt.compile(STRIDED)
    big = np.arange(60.0).reshape(6, 10)
    expected = big.copy()
    expected[1:5:2, 8:1:-3] *= 3
    compiled["scale"](big[1:5:2, 8:1:-3], 3.0)  # writes through the view: no copy was made
    np.testing.assert_array_equal(big, expected)

    X = np.arange(50, dtype=np.float32).reshape(5, 10)
    r = compiled["total"](X[:, 2:6])
    assert r == X[:, 2:6].sum() and type(r) is np.float32
    with pytest.raises(ValueError, match=r"argument 'arg0' \(memref<\?x4xf32, strided<\[\?, 1\], "
                                         r"offset: 2>>\): the layout fixes the stride of "
                                         r"dimension 1 to 1 elements, the array's is 2"):
        compiled["total"](X[:, 2:10:2])


def test_static_strided_layout_takes_a_matching_view():
    text = """
func.func @inc(%A: memref<3x4xf64, strided<[10, 1], offset: 0>>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<3x4xf64, strided<[10, 1], offset: 0>>
      %c = arith.constant 1.0 : f64
      %s = arith.addf %a, %c : f64
      affine.store %s, %A[%i, %j] : memref<3x4xf64, strided<[10, 1], offset: 0>>
    }
  }
  return
}"""
    inc = polyopt.compile(text)["inc"]
    big = np.zeros((3, 10))
    inc(big[:, 3:7])  # a view of the logical shape with the layout's strides
    assert big[:, 3:7].sum() == 12 and big.sum() == 12
    buf = np.zeros(24)
    inc(buf)  # the physical buffer, as before
    assert buf.sum() == 12 and buf[:4].sum() == 4 and buf[10:14].sum() == 4


PROGRAM = """
func.func @fill(%A: memref<?x?xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %M = memref.dim %A, %c0 : memref<?x?xf32>
  %N = memref.dim %A, %c1 : memref<?x?xf32>
  affine.for %i = 0 to %M {
    affine.for %j = 0 to %N {
      %ii = arith.index_cast %i : index to i32
      %jj = arith.index_cast %j : index to i32
      %x = arith.muli %ii, %jj : i32
      %f = arith.sitofp %x : i32 to f32
      %g = arith.addf %f, %v : f32
      affine.store %g, %A[%i, %j] : memref<?x?xf32>
    }
  }
  return
}
func.func @main() {
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %A = memref.alloc(%c3, %c5) : memref<?x?xf32>
  %h = arith.constant 0.5 : f32
  call @fill(%A, %h) : (memref<?x?xf32>, f32) -> ()
  %U = memref.cast %A : memref<?x?xf32> to memref<*xf32>
  call @printMemrefF32(%U) : (memref<*xf32>) -> ()
  %c1 = arith.constant 1 : index
  %d = memref.dim %A, %c1 : memref<?x?xf32>
  vector.print %d : index
  %i = arith.index_cast %c1 : index to i64
  %k = arith.index_cast %i : i64 to index
  %e = memref.dim %A, %k : memref<?x?xf32>
  vector.print %e : index
  %S = memref.cast %A : memref<?x?xf32> to memref<3x5xf32>
  %D = memref.cast %S : memref<3x5xf32> to memref<?x5xf32>
  %U2 = memref.cast %D : memref<?x5xf32> to memref<*xf32>
  call @printMemrefF32(%U2) : (memref<*xf32>) -> ()
  %B = memref.alloca(%c5) : memref<?xf32>
  affine.for %j = 0 to %c5 {
    %x = affine.load %A[2, %j] : memref<?x?xf32>
    affine.store %x, %B[%j] : memref<?xf32>
  }
  %U3 = memref.cast %B : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%U3) : (memref<*xf32>) -> ()
  memref.dealloc %A : memref<?x?xf32>
  return
}
func.func private @printMemrefF32(memref<*xf32>)
"""


def test_alloc_dim_cast_call_and_print_match_mlir_runner(tmp_path, capfd):
    expected = lower_and_run(PROGRAM, UPSTREAM_LOWERING)
    ours = polyopt_run(tmp_path, capfd, PROGRAM, name="dyn.mlir")
    assert mask_addresses(ours) == mask_addresses(expected)


def test_descriptors_flow_through_iter_args_selects_and_calls():
    text = """
func.func @pick(%c: i1, %A: memref<?xf64>, %B: memref<?xf64>) -> f64 {
  %M = arith.select %c, %A, %B : memref<?xf64>
  %c0 = arith.constant 0 : index
  %n = memref.dim %M, %c0 : memref<?xf64>
  %z = arith.constant 0.0 : f64
  %r = affine.for %i = 0 to %n iter_args(%acc = %z) -> f64 {
    %x = affine.load %M[%i] : memref<?xf64>
    %t = arith.addf %acc, %x : f64
    affine.yield %t : f64
  }
  return %r : f64
}
func.func @twice(%c: i1, %A: memref<?xf64>, %B: memref<?xf64>) -> f64 {
  %r = call @pick(%c, %A, %B) : (i1, memref<?xf64>, memref<?xf64>) -> f64
  %s = arith.addf %r, %r : f64
  return %s : f64
}"""
    f = polyopt.compile(text)["twice"]
    A, B = np.arange(5.0), np.arange(100.0, 103.0)
    assert f(True, A, B) == 20.0 and f(False, A, B) == 606.0


HOP_DYNAMIC = """
func.func @mm(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>) {
  hop.matmul %A, %B, %C {alpha = 2.5 : f64, beta = 0.5 : f64}
    : (memref<?x?xf64>, memref<?x?xf64>, memref<?x?xf64>)
  return
}
"""


@pytest.mark.parametrize("switches", [{}, dict(hopt=True, copy=True, unroll=True, scalrep=True,
                                                vect=True)], ids=["plain", "hopt"])
def test_hop_matmul_on_dynamic_operands_runs_every_size(switches):
    remarks = []
    mm = polyopt.compile(HOP_DYNAMIC, remark=lambda loc, msg: remarks.append(msg),
                         **switches)["mm"]
    if switches:
        assert any("'?' operands: one GEMM for every size" in r for r in remarks), remarks
    for m, n, k in [(1, 1, 1), (17, 31, 5), (97, 101, 103)]:
        rng = np.random.default_rng(m)
        A, B, C = rng.random((m, k)), rng.random((k, n)), rng.random((m, n))
        expected = 0.5 * C + 2.5 * A @ B
        mm(A, B, C)
        np.testing.assert_allclose(C, expected, rtol=1e-12)


def test_hop_matmul_with_disagreeing_sizes_raises_and_writes_nothing():
    mm = polyopt.compile(HOP_DYNAMIC, filename="mm.mlir")["mm"]
    C = np.ones((3, 6))
    with pytest.raises(RuntimeError, match=r"^mm.mlir:3:3: error: 'hop.matmul' operands have "
                                           r"sizes that do not agree at run time"):
        mm(np.zeros((3, 4)), np.zeros((5, 6)), C)
    assert (C == 1).all()


def test_cf_assert_failure_is_an_error_of_the_call_and_of_polyopt_run(tmp_path, capfd):
    text = """func.func @main() {
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  %ok = arith.cmpi slt, %c5, %c3 : index
  cf.assert %ok, "five is not below three"
  return
}
"""
    with pytest.raises(RuntimeError, match=r"^t.mlir:5:3: error: five is not below three$"):
        polyopt.compile(text, filename="t.mlir")["main"]()
    path = tmp_path / "t.mlir"
    path.write_text(text)
    assert main(["run", str(path)]) == 1
    assert capfd.readouterr().err == f"{path}:5:3: error: five is not below three\n"


GUARDED_STORE = """func.func @f(%A: memref<4xf32>, %i: index, %n: index) -> f32 {
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  affine.for %k = 0 to %n {
    %ok = arith.cmpi ult, %i, %c4 : index
    cf.assert %ok, "index out of bounds"
    memref.store %f, %A[%i] : memref<4xf32>
    vector.print %f : f32
  }
  return %f : f32
}
"""


def test_a_failed_cf_assert_runs_nothing_after_it():
    """It returns from the function at once: the store it guards ran on before, at 10^12
    elements past the buffer (a segfault; an error fuzzer's find), and the prints after it."""
    script = f"""
import numpy as np, polyopt
f = polyopt.compile({GUARDED_STORE!r}, filename="g.mlir")["f"]
a = np.zeros(4, np.float32)
assert f(a, 2, 1) == 1.0 and a[2] == 1
try:
    f(a, 10**12, 3)
except RuntimeError as e:
    print("raised:", e)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\nraised: g.mlir:6:5: error: index out of bounds\n"


def test_zero_d_i1_and_index_memrefs_from_numpy():
    text = """
func.func @f(%s: memref<f64>, %b: memref<4xi1>, %ix: memref<3xindex>) -> (f64, index) {
  %v = affine.load %s[] : memref<f64>
  %t = arith.constant 2.0 : f64
  %w = arith.mulf %v, %t : f64
  affine.store %w, %s[] : memref<f64>
  %x = affine.load %b[1] : memref<4xi1>
  %z = arith.constant true
  %q = arith.xori %x, %z : i1
  affine.store %q, %b[2] : memref<4xi1>
  %i = affine.load %ix[0] : memref<3xindex>
  %j = affine.load %ix[1] : memref<3xindex>
  %k = arith.addi %i, %j : index
  affine.store %k, %ix[2] : memref<3xindex>
  return %w, %k : f64, index
}"""
    f = polyopt.compile(text)["f"]
    s, b, ix = np.array(1.5), np.array([False, True, True, True]), np.array([5, 7, 0])
    assert f(s, b, ix) == (3.0, 12)
    assert s == 3.0 and list(b) == [False, True, False, True] and list(ix) == [5, 7, 12]


@pytest.mark.parametrize("hopt", [False, True])
def test_empty_arrays_pass_any_strides_for_a_strided_layout(hopt):
    """numpy gives an empty array strides of 0; the layout's unit stride was checked against
    them and the call refused (a fuzzer's find): nothing is read, so any stride fits."""
    t = "memref<?x?xf32, strided<[?, 1], offset: ?>>"
    f = polyopt.compile(f"""func.func @f(%A: {t}, %B: {t}, %C: {t}) {{
  hop.matmul %A, %B, %C : ({t}, {t}, {t})
  return
}}""", hopt=hopt, threads=1)["f"]
    for m, n, k in [(3, 4, 0), (0, 4, 5), (3, 0, 5)]:
        c = np.full((m, n), 2, np.float32)
        f(np.ones((m, k), np.float32), np.ones((k, n), np.float32), c)
        assert (c == 2).all()
    # a non-empty array still needs the unit stride
    with pytest.raises(ValueError, match="the layout fixes the stride of dimension 1 to 1"):
        f(np.ones((3, 8), np.float32)[:, ::2], np.ones((4, 4), np.float32),
          np.zeros((3, 4), np.float32))
