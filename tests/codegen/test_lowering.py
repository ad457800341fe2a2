"""Execution tests of polyopt.codegen.to_llvm: MLIR text -> lower_module -> JIT -> numpy.

Every test parses a small program, lowers it, JIT-compiles it for the host and checks what it
computes (against numpy / Python semantics) or prints (exact text, as mlir-runner-22 prints).
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from polyopt.affine.affine_expr import parse_affine_map
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.parser import parse
from polyopt.codegen.jit import MemRefArg, ScalarArg
from polyopt.codegen.runtime import format_memref
from polyopt.codegen.to_llvm import FunctionSignature, LoweredModule, lower_module
from upstream_mlir import lower_and_run


def build(text: str, **options):
    """Lower and JIT ``text``; returns (LoweredModule, {name: callable}, engine)."""
    lowered = lower_module(parse(text, "test.mlir"), **options)
    engine = lowered.jit()
    return lowered, lowered.callables(engine), engine


def run(text: str, **options) -> dict:
    return build(text, **options)[1]


def calls(llvm_ir: str, name: str) -> bool:
    """Does ``llvm_ir`` call function ``name`` (llvmlite quotes names: ``@"free"``)?"""
    return re.search(rf'call \S+ @"?{re.escape(name)}"?\(', llvm_ir) is not None


RNG = np.random.default_rng(1234)


def rand(shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# matmul


def matmul_text(M: int, N: int, K: int, t: str) -> str:
    return f"""
func.func @matmul(%A: memref<{M}x{K}x{t}>, %B: memref<{K}x{N}x{t}>, %C: memref<{M}x{N}x{t}>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      affine.for %k = 0 to {K} {{
        %a = affine.load %A[%i, %k] : memref<{M}x{K}x{t}>
        %b = affine.load %B[%k, %j] : memref<{K}x{N}x{t}>
        %c = affine.load %C[%i, %j] : memref<{M}x{N}x{t}>
        %p = arith.mulf %a, %b : {t}
        %s = arith.addf %c, %p : {t}
        affine.store %s, %C[%i, %j] : memref<{M}x{N}x{t}>
      }}
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (17, 31, 5), (300, 200, 100)])
@pytest.mark.parametrize("t, dtype, tol", [("f32", np.float32, 1e-4), ("f64", np.float64, 1e-12)])
def test_matmul(M, N, K, t, dtype, tol):
    lowered, fns, _ = build(matmul_text(M, N, K, t))
    sig = lowered.signatures["matmul"]
    assert [a.shape for a in sig.args] == [(M, K), (K, N), (M, N)]
    A, B, C = rand((M, K), dtype), rand((K, N), dtype), rand((M, N), dtype)
    ref = C.astype(np.float64) + A.astype(np.float64) @ B.astype(np.float64)
    fns["matmul"](A, B, C)
    np.testing.assert_allclose(C, ref, rtol=tol, atol=tol * K)


def test_mulf_addf_loop_becomes_vfmadd():
    lowered, _, engine = build(matmul_text(64, 64, 64, "f64"))
    assert "fmul contract" in lowered.llvm_ir and "fadd contract" in lowered.llvm_ir
    assert '"target-cpu"=' in lowered.llvm_ir and '"target-features"=' in lowered.llvm_ir
    assert re.search(r"\bvfmadd\w*", engine.asm()), "mulf + addf were not fused into an FMA"


# ---------------------------------------------------------------------------------------------
# affine control flow


def test_if_else_with_results_and_symbols():
    fns = run("""
#set = affine_set<(d0)[s0] : (d0 - s0 >= 0, -d0 + 10 >= 0)>
#eq = affine_set<(d0) : (d0 mod 3 == 0)>
func.func @f(%A: memref<16xf64>, %n: index) {
  %one = arith.constant 1.0 : f64
  %two = arith.constant 2.0 : f64
  affine.for %i = 0 to 16 {
    %v = affine.if #set(%i)[%n] -> f64 {
      affine.yield %one : f64
    } else {
      affine.yield %two : f64
    }
    affine.store %v, %A[%i] : memref<16xf64>
    affine.if #eq(%i) {
      %x = affine.load %A[%i] : memref<16xf64>
      %y = arith.addf %x, %two : f64
      affine.store %y, %A[%i] : memref<16xf64>
    }
  }
  return
}
""")
    for n in (-3, 0, 4, 11, 20):
        A = np.zeros(16)
        fns["f"](A, n)
        ref = np.array([(1.0 if n <= i <= 10 else 2.0) + (2.0 if i % 3 == 0 else 0.0)
                        for i in range(16)])
        np.testing.assert_array_equal(A, ref)


def test_min_max_bounds_steps_and_symbols():
    # a tiled copy with partial tiles: lb = max(.., s0), ub = min(d0 + 4, N) and steps
    fns = run("""
#lb = affine_map<(d0)[s0] -> (d0, s0)>
#ub = affine_map<(d0)[s0] -> (d0 + 4, s0)>
#strided = affine_map<(d0) -> (d0 * 3 + 1)>
func.func @tiles(%A: memref<30xi64>, %lo: index, %hi: index) {
  affine.for %ii = 0 to 30 step 4 {
    affine.for %i = max #lb(%ii)[%lo] to min #ub(%ii)[%hi] {
      %t = arith.index_cast %ii : index to i64
      affine.store %t, %A[%i] : memref<30xi64>
    }
  }
  return
}
func.func @steps(%A: memref<40xi64>, %n: index) {
  affine.for %i = 2 to %n step 3 {
    %j = affine.apply #strided(%i)
    %c = arith.index_cast %j : index to i64
    affine.store %c, %A[%i] : memref<40xi64>
  }
  affine.for %i = -7 to 5 step 5 {
    %c = arith.index_cast %i : index to i64
    affine.store %c, %A[%i + 7] : memref<40xi64>
  }
  return
}
""")
    for lo, hi in [(0, 30), (3, 17), (9, 9), (12, 5)]:
        A = np.full(30, -1, dtype=np.int64)
        fns["tiles"](A, lo, hi)
        ref = np.array([(i // 4) * 4 if lo <= i < hi else -1 for i in range(30)])
        np.testing.assert_array_equal(A, ref)
    A = np.full(40, -1, dtype=np.int64)
    fns["steps"](A, 38)
    ref = np.full(40, -1, dtype=np.int64)
    for i in range(2, 38, 3):
        ref[i] = 3 * i + 1
    for i in range(-7, 5, 5):
        ref[i + 7] = i
    np.testing.assert_array_equal(A, ref)


def test_iter_args_reduction_returns_value():
    fns = run("""
func.func @sum(%A: memref<100xf64>, %n: index) -> f64 {
  %zero = arith.constant 0.0 : f64
  %r = affine.for %i = 0 to %n iter_args(%acc = %zero) -> (f64) {
    %a = affine.load %A[%i] : memref<100xf64>
    %s = arith.addf %acc, %a : f64
    affine.yield %s : f64
  }
  return %r : f64
}
func.func @minmax(%A: memref<100xi32>) -> (i32, i32, index) {
  %big = arith.constant 2147483647 : i32
  %small = arith.constant -2147483648 : i32
  %c0 = arith.constant 0 : index
  %r:3 = affine.for %i = 0 to 100 step 2 iter_args(%lo = %big, %hi = %small, %cnt = %c0)
      -> (i32, i32, index) {
    %a = affine.load %A[%i] : memref<100xi32>
    %l = arith.minsi %lo, %a : i32
    %h = arith.maxsi %hi, %a : i32
    %c = affine.apply affine_map<(d0) -> (d0 + 1)>(%cnt)
    affine.yield %l, %h, %c : i32, i32, index
  }
  return %r#0, %r#1, %r#2 : i32, i32, index
}
""")
    A = rand(100)
    assert fns["sum"](A, 100) == pytest.approx(A.sum(), rel=1e-12)
    assert fns["sum"](A, 37) == pytest.approx(A[:37].sum(), rel=1e-12)
    assert fns["sum"](A, 0) == 0.0
    B = RNG.integers(-1000, 1000, 100).astype(np.int32)
    assert fns["minmax"](B) == (int(B[::2].min()), int(B[::2].max()), 50)


# ---------------------------------------------------------------------------------------------
# affine expressions: exact floordiv / ceildiv / mod semantics on negative values


def _random_expr(rng: random.Random, depth: int) -> str:
    leaves = ["d0", "d1", "s0", "s1", str(rng.randint(-9, 9))]
    if depth == 0:
        return rng.choice(leaves)
    a = _random_expr(rng, depth - 1)
    kind = rng.choice(["+", "-", "*", "floordiv", "ceildiv", "mod", "leaf"])
    if kind == "leaf":
        return rng.choice(leaves)
    if kind == "*":
        return f"({a}) * {rng.randint(-5, 5)}"
    if kind in ("+", "-"):
        return f"({a}) {kind} ({_random_expr(rng, depth - 1)})"
    divisor = rng.choice([1, 2, 3, 4, 7, 8, 16, "s1"])
    return f"({a}) {kind} {divisor}"


def test_affine_apply_matches_evaluate_on_negative_values():
    rng = random.Random(42)
    maps = []
    while len(maps) < 40:
        try:
            maps.append(parse_affine_map(f"(d0, d1)[s0, s1] -> ({_random_expr(rng, 3)})"))
        except ValueError:
            continue
    # the loop IVs make the operands range-known (non-negative / bounded) in the second case
    funcs = []
    for k, m in enumerate(maps):
        funcs.append(f"""
func.func @e{k}(%d0: index, %d1: index, %s0: index, %s1: index) -> index {{
  %r = affine.apply affine_map<{m}>(%d0, %d1)[%s0, %s1]
  return %r : index
}}
func.func @l{k}(%out: memref<8x5xindex>, %s0: index, %s1: index) {{
  affine.for %i = 0 to 8 {{
    affine.for %j = 0 to 5 {{
      %r = affine.apply affine_map<{m}>(%i, %j)[%s0, %s1]
      affine.store %r, %out[%i, %j] : memref<8x5xindex>
    }}
  }}
  return
}}""")
    fns = run("\n".join(funcs))
    points = [(-13, 5, -4, 3), (7, -1, 0, 4), (-1, -1, -1, 1), (100, -37, 12, 7), (0, 0, 0, 2),
              (-64, 33, 5, 16), (21, 8, -9, 5)]
    for k, m in enumerate(maps):
        for p in points:
            assert fns[f"e{k}"](*p) == m.evaluate(p[:2], p[2:])[0], (str(m), p)
        out = np.zeros((8, 5), dtype=np.int64)
        fns[f"l{k}"](out, -3, 3)
        ref = [[m.evaluate((i, j), (-3, 3))[0] for j in range(5)] for i in range(8)]
        np.testing.assert_array_equal(out, ref, err_msg=str(m))


# ---------------------------------------------------------------------------------------------
# memref layouts


def test_transposed_argument_takes_the_physical_buffer():
    lowered, fns, _ = build("""
#T = affine_map<(d0, d1) -> (d1, d0)>
func.func @copy(%A: memref<4x6xf64, #T>, %B: memref<4x6xf64>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 6 {
      %v = affine.load %A[%i, %j] : memref<4x6xf64, #T>
      affine.store %v, %B[%i, %j] : memref<4x6xf64>
    }
  }
  return
}
""")
    arg = lowered.signatures["copy"].args[0]
    assert arg.shape == (4, 6) and arg.physical_shape == (6, 4)
    phys = rand((6, 4))
    B = np.zeros((4, 6))
    fns["copy"](phys, B)
    np.testing.assert_array_equal(B, phys.T)  # logical A is the transpose of its buffer
    with pytest.raises(ValueError, match="physical buffer"):
        fns["copy"](np.zeros((4, 6)), B)


def test_tiled_layout_alloc_and_argument():
    fns = run("""
#tiled = affine_map<(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>
#lo = affine_map<(d0) -> (d0 * 4)>
#hi = affine_map<(d0) -> (d0 * 4 + 4, 10)>
func.func @roundtrip(%A: memref<10x7xf64>, %B: memref<10x7xf64>) {
  %buf = memref.alloc() : memref<10x7xf64, #tiled>
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 7 {
      %v = affine.load %A[%i, %j] : memref<10x7xf64>
      affine.store %v, %buf[%i, %j] : memref<10x7xf64, #tiled>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 7 {
      %v = affine.load %buf[%i, %j] : memref<10x7xf64, #tiled>
      affine.store %v, %B[%i, %j] : memref<10x7xf64>
    }
  }
  memref.dealloc %buf : memref<10x7xf64, #tiled>
  return
}
func.func @pack(%A: memref<10x7xf64>, %P: memref<10x7xf64, #tiled>) {
  affine.for %ii = 0 to 3 {
    affine.for %j = 0 to 7 {
      affine.for %i = #lo(%ii) to min #hi(%ii) {
        %v = affine.load %A[%i, %j] : memref<10x7xf64>
        affine.store %v, %P[%i, %j] : memref<10x7xf64, #tiled>
      }
    }
  }
  return
}
""")
    A = rand((10, 7))
    B = np.zeros((10, 7))
    fns["roundtrip"](A, B)
    np.testing.assert_array_equal(A, B)
    P = np.zeros((3, 7, 4))  # physical shape: 10 rows in 3 tiles of 4
    fns["pack"](A, P)
    for i, j in itertools.product(range(10), range(7)):
        assert P[i // 4, j, i % 4] == A[i, j]
    assert not P[2, :, 2:].any()  # padding of the partial last tile is untouched


def test_strided_layout():
    fns = run("""
func.func @f(%A: memref<3x4xf64, strided<[10, 2], offset: 5>>, %B: memref<3x4xf64>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %v = affine.load %A[%i, %j] : memref<3x4xf64, strided<[10, 2], offset: 5>>
      affine.store %v, %B[%i, %j] : memref<3x4xf64>
    }
  }
  return
}
""")
    buf = rand(5 + 2 * 10 + 3 * 2 + 1)
    B = np.zeros((3, 4))
    fns["f"](buf, B)
    ref = np.lib.stride_tricks.as_strided(buf[5:], (3, 4), (80, 16))
    np.testing.assert_array_equal(B, ref)


# ---------------------------------------------------------------------------------------------
# vectors


def test_vector_load_store_broadcast_fma_f64_and_f32():
    fns = run("""
func.func @mm4(%A: memref<8x16xf64>, %B: memref<16x12xf64>, %C: memref<8x12xf64>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 3 {
      affine.for %k = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<8x16xf64>
        %va = vector.broadcast %a : f64 to vector<4xf64>
        %vb = affine.vector_load %B[%k, %j * 4] : memref<16x12xf64>, vector<4xf64>
        %vc = affine.vector_load %C[%i, %j * 4] : memref<8x12xf64>, vector<4xf64>
        %r = vector.fma %va, %vb, %vc : vector<4xf64>
        affine.vector_store %r, %C[%i, %j * 4] : memref<8x12xf64>, vector<4xf64>
      }
    }
  }
  return
}
func.func @mm8(%A: memref<5x7xf32>, %B: memref<7x16xf32>, %C: memref<5x16xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 16 step 8 {
      affine.for %k = 0 to 7 {
        %a = affine.load %A[%i, %k] : memref<5x7xf32>
        %va = vector.broadcast %a : f32 to vector<8xf32>
        %vb = vector.load %B[%k, %j] : memref<7x16xf32>, vector<8xf32>
        %vc = vector.load %C[%i, %j] : memref<5x16xf32>, vector<8xf32>
        %p = arith.mulf %va, %vb : vector<8xf32>
        %s = arith.addf %vc, %p : vector<8xf32>
        vector.store %s, %C[%i, %j] : memref<5x16xf32>, vector<8xf32>
      }
    }
  }
  return
}
func.func @vecmemref(%B: memref<4x2xvector<4xf64>>, %x: f64) {
  %vx = vector.broadcast %x : f64 to vector<4xf64>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 2 {
      %v = affine.load %B[%i, %j] : memref<4x2xvector<4xf64>>
      %w = arith.mulf %v, %vx : vector<4xf64>
      affine.store %w, %B[%i, %j] : memref<4x2xvector<4xf64>>
    }
  }
  return
}
""")
    A, B, C = rand((8, 16)), rand((16, 12)), rand((8, 12))
    ref = C + A @ B
    fns["mm4"](A, B, C)
    np.testing.assert_allclose(C, ref, rtol=1e-12, atol=1e-12)
    A, B, C = rand((5, 7), np.float32), rand((7, 16), np.float32), rand((5, 16), np.float32)
    ref = C + A @ B
    fns["mm8"](A, B, C)
    np.testing.assert_allclose(C, ref, rtol=1e-5, atol=1e-5)
    V = rand((4, 2, 4))  # memref<4x2xvector<4xf64>> is an (4, 2, 4) float64 array
    ref = V * 3.0
    fns["vecmemref"](V, 3.0)
    np.testing.assert_array_equal(V, ref)


def test_2d_vectors(capsys):
    fns = run("""
func.func @f(%A: memref<4x8xf64>, %B: memref<4x8xf64>, %x: f64) {
  %vx = vector.broadcast %x : f64 to vector<2x4xf64>
  %row = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf64>
  %rows = vector.broadcast %row : vector<4xf64> to vector<2x4xf64>
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 2 {
      %a = affine.vector_load %A[%i * 2, %j * 4] : memref<4x8xf64>, vector<2x4xf64>
      %p = arith.mulf %a, %vx : vector<2x4xf64>
      %s = vector.fma %p, %rows, %a : vector<2x4xf64>
      %n = arith.negf %s : vector<2x4xf64>
      affine.vector_store %n, %B[%i * 2, %j * 4] : memref<4x8xf64>, vector<2x4xf64>
    }
  }
  %first = affine.vector_load %B[0, 0] : memref<4x8xf64>, vector<2x4xf64>
  vector.print %first : vector<2x4xf64>
  %z = arith.constant dense<0.5> : vector<2x3xf32>
  vector.print %z : vector<2x3xf32>
  return
}
""")
    A = np.arange(32, dtype=np.float64).reshape(4, 8)
    B = np.zeros((4, 8))
    fns["f"](A, B, 2.0)
    ref = -(A * 2.0 * np.tile([1.0, 2.0, 3.0, 4.0], 2) + A)
    np.testing.assert_array_equal(B, ref)
    out = capsys.readouterr().out
    assert out == ("( ( -0, -5, -14, -27 ), ( -24, -45, -70, -99 ) )\n"
                   "( ( 0.5, 0.5, 0.5 ), ( 0.5, 0.5, 0.5 ) )\n")


def test_vector_reduction_and_print(capsys):
    fns = run("""
func.func @f(%A: memref<8xf64>, %I: memref<8xi32>) -> (f64, f64, i32, i32) {
  %c0 = arith.constant 0 : index
  %v = vector.load %A[%c0] : memref<8xf64>, vector<8xf64>
  %acc = arith.constant 10.0 : f64
  %s = vector.reduction <add>, %v, %acc : vector<8xf64> into f64
  %m = vector.reduction <maxnumf>, %v : vector<8xf64> into f64
  %w = vector.load %I[%c0] : memref<8xi32>, vector<8xi32>
  %p = vector.reduction <mul>, %w : vector<8xi32> into i32
  %lo = vector.reduction <minsi>, %w : vector<8xi32> into i32
  vector.print %w : vector<8xi32>
  %idx = arith.constant dense<[3, -1]> : vector<2xindex>
  vector.print %idx : vector<2xindex>
  %b = arith.constant dense<[true, false]> : vector<2xi1>
  vector.print %b : vector<2xi1>
  vector.print %s : f64 punctuation <comma>
  vector.print str "done"
  vector.print punctuation <newline>
  return %s, %m, %p, %lo : f64, f64, i32, i32
}
""")
    A = np.array([1.5, -2.0, 3.25, 0.0, 8.0, -1.0, 0.5, 2.0])
    I = np.array([1, -2, 3, 1, 1, 2, -1, 1], dtype=np.int32)
    s, m, p, lo = fns["f"](A, I)
    assert s == 10.0 + A.sum() and m == 8.0 and p == 12 and lo == -2
    assert capsys.readouterr().out == ("( 1, -2, 3, 1, 1, 2, -1, 1 )\n"
                                       "( 3, 18446744073709551615 )\n"
                                       "( 1, 0 )\n"
                                       "22.25, done\n")


# ---------------------------------------------------------------------------------------------
# arith


def test_integer_arithmetic_matches_python():
    fns = run("""
func.func @i32ops(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32, i32, i32) {
  %0 = arith.floordivsi %a, %b : i32
  %1 = arith.ceildivsi %a, %b : i32
  %2 = arith.remsi %a, %b : i32
  %3 = arith.divsi %a, %b : i32
  %4 = arith.muli %a, %b : i32
  %5 = arith.subi %a, %b : i32
  %6 = arith.xori %a, %b : i32
  return %0, %1, %2, %3, %4, %5, %6 : i32, i32, i32, i32, i32, i32, i32
}
func.func @i64ops(%a: i64, %b: i64) -> (i64, i64, i64, i64, i64, i64) {
  %0 = arith.floordivsi %a, %b : i64
  %1 = arith.ceildivsi %a, %b : i64
  %2 = arith.remsi %a, %b : i64
  %c3 = arith.constant 3 : i64
  %3 = arith.shli %a, %c3 : i64
  %4 = arith.shrsi %a, %c3 : i64
  %5 = arith.maxsi %a, %b : i64
  return %0, %1, %2, %3, %4, %5 : i64, i64, i64, i64, i64, i64
}
func.func @vec(%A: memref<4xi64>, %B: memref<4xi64>, %C: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %A[%c0] : memref<4xi64>, vector<4xi64>
  %b = vector.load %B[%c0] : memref<4xi64>, vector<4xi64>
  %f = arith.floordivsi %a, %b : vector<4xi64>
  vector.store %f, %C[%c0] : memref<4xi64>, vector<4xi64>
  return
}
""")

    def trunc_div(a, b):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    def wrap32(v):
        return (v + 2**31) % 2**32 - 2**31

    for a, b in [(-7, 2), (7, -2), (7, 2), (-7, -2), (-8, 2), (0, -3), (123456, -1000), (-1, 7)]:
        q = trunc_div(a, b)
        assert fns["i32ops"](a, b) == (a // b, -(-a // b), a - b * q, q, wrap32(a * b), a - b,
                                       a ^ b)
        assert fns["i64ops"](a, b) == (a // b, -(-a // b), a - b * q, a << 3, a >> 3, max(a, b))
    A = np.array([-7, 7, -9, 9], dtype=np.int64)
    B = np.array([2, -2, -3, 4], dtype=np.int64)
    C = np.zeros(4, dtype=np.int64)
    fns["vec"](A, B, C)
    np.testing.assert_array_equal(C, A // B)


def test_casts():
    fns = run("""
func.func @casts(%i: i32, %f: f64, %n: index) -> (f64, i32, i64, f32, i8, index, f64, i64, f64) {
  %0 = arith.sitofp %i : i32 to f64
  %1 = arith.fptosi %f : f64 to i32
  %2 = arith.extsi %i : i32 to i64
  %3 = arith.truncf %f : f64 to f32
  %4 = arith.trunci %i : i32 to i8
  %5 = arith.index_cast %i : i32 to index
  %t = arith.truncf %f : f64 to f32
  %6 = arith.extf %t : f32 to f64
  %7 = arith.extui %i : i32 to i64
  %m = arith.index_cast %n : index to i64
  %8 = arith.uitofp %m : i64 to f64
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : f64, i32, i64, f32, i8, index, f64, i64, f64
}
""")
    r = fns["casts"](-300, -2.75, 5)
    assert r[0] == -300.0 and r[1] == -2 and r[2] == -300
    assert r[3] == float(np.float32(-2.75)) and r[4] == -300 % 256 - 256 * (-300 % 256 >= 128)
    assert r[5] == -300 and r[6] == -2.75 and r[7] == 2**32 - 300 and r[8] == 5.0
    r = fns["casts"](7, 0.1, 0)
    assert r[3] == float(np.float32(0.1)) and r[6] == float(np.float32(0.1))


def test_select_cmp_and_float_minmax():
    fns = run("""
func.func @cmp(%a: f64, %b: f64, %x: i64, %y: i64) -> (i1, i1, i1, i1, i1, i1, i64) {
  %0 = arith.cmpf olt, %a, %b : f64
  %1 = arith.cmpf ult, %a, %b : f64
  %2 = arith.cmpf oeq, %a, %b : f64
  %3 = arith.cmpf une, %a, %b : f64
  %4 = arith.cmpi ult, %x, %y : i64
  %5 = arith.cmpi sge, %x, %y : i64
  %6 = arith.select %5, %x, %y : i64
  return %0, %1, %2, %3, %4, %5, %6 : i1, i1, i1, i1, i1, i1, i64
}
func.func @minmax(%a: f64, %b: f64) -> (f64, f64, f64, f64) {
  %0 = arith.maximumf %a, %b : f64
  %1 = arith.minimumf %a, %b : f64
  %2 = arith.maxnumf %a, %b : f64
  %3 = arith.minnumf %a, %b : f64
  return %0, %1, %2, %3 : f64, f64, f64, f64
}
func.func @vselect(%A: memref<4xf64>, %B: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %A[%c0] : memref<4xf64>, vector<4xf64>
  %b = vector.load %B[%c0] : memref<4xf64>, vector<4xf64>
  %c = arith.cmpf ogt, %a, %b : vector<4xf64>
  %m = arith.select %c, %a, %b : vector<4xi1>, vector<4xf64>
  vector.store %m, %A[%c0] : memref<4xf64>, vector<4xf64>
  return
}
""")
    nan = float("nan")
    assert fns["cmp"](1.0, 2.0, -1, 3) == (True, True, False, True, False, False, 3)
    assert fns["cmp"](nan, 2.0, 5, 3) == (False, True, False, True, False, True, 5)
    r = fns["minmax"](nan, 1.0)
    assert np.isnan(r[0]) and np.isnan(r[1]) and r[2] == 1.0 and r[3] == 1.0
    assert fns["minmax"](-0.5, 3.0) == (3.0, -0.5, 3.0, -0.5)
    A, B = np.array([1.0, 5.0, -2.0, 0.0]), np.array([2.0, 4.0, -3.0, 0.5])
    ref = np.maximum(A, B)
    fns["vselect"](A, B)
    np.testing.assert_array_equal(A, ref)


# ---------------------------------------------------------------------------------------------
# memory and calls


def test_alloc_alloca_dealloc_and_calls_with_multiple_results():
    lowered, fns, _ = build("""
func.func @stats(%A: memref<10xf64>) -> (f64, f64, i1) {
  %zero = arith.constant 0.0 : f64
  %tmp = memref.alloca() : memref<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.store %zero, %tmp[%c0] : memref<2xf64>
  memref.store %zero, %tmp[%c1] : memref<2xf64>
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf64>
    %s = memref.load %tmp[%c0] : memref<2xf64>
    %s2 = arith.addf %s, %a : f64
    memref.store %s2, %tmp[%c0] : memref<2xf64>
    %q = memref.load %tmp[%c1] : memref<2xf64>
    %aa = arith.mulf %a, %a : f64
    %q2 = arith.addf %q, %aa : f64
    memref.store %q2, %tmp[%c1] : memref<2xf64>
  }
  %sum = memref.load %tmp[%c0] : memref<2xf64>
  %sq = memref.load %tmp[%c1] : memref<2xf64>
  %pos = arith.cmpf ogt, %sum, %zero : f64
  return %sum, %sq, %pos : f64, f64, i1
}
func.func @driver(%A: memref<10xf64>, %out: memref<3xf64>) -> i1 {
  %buf = memref.alloc() {alignment = 128 : i64} : memref<10xf64>
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf64>
    %n = arith.negf %a : f64
    affine.store %n, %buf[%i] : memref<10xf64>
  }
  %s, %q, %p = func.call @stats(%buf) : (memref<10xf64>) -> (f64, f64, i1)
  affine.store %s, %out[0] : memref<3xf64>
  affine.store %q, %out[1] : memref<3xf64>
  %t = func.call @twice(%q) : (f64) -> f64
  affine.store %t, %out[2] : memref<3xf64>
  memref.dealloc %buf : memref<10xf64>
  return %p : i1
}
func.func private @twice(%x: f64) -> f64 {
  %y = arith.addf %x, %x : f64
  return %y : f64
}
""")
    assert calls(lowered.llvm_ir, "aligned_alloc") and calls(lowered.llvm_ir, "free")
    A = rand(10)
    s, q, p = fns["stats"](A)
    assert s == pytest.approx(A.sum()) and q == pytest.approx((A * A).sum())
    assert p == bool(A.sum() > 0)
    out = np.zeros(3)
    assert fns["driver"](A, out) == bool(-A.sum() > 0)
    np.testing.assert_allclose(out, [-A.sum(), (A * A).sum(), 2 * (A * A).sum()])
    assert fns["twice"](1.25) == 2.5


def test_alloca_is_hoisted_to_the_entry_block():
    lowered, fns, _ = build("""
func.func @f(%A: memref<1000xf64>) {
  affine.for %i = 0 to 1000 {
    %t = memref.alloca() : memref<64xf64>
    %a = affine.load %A[%i] : memref<1000xf64>
    affine.store %a, %t[%i mod 64] : memref<64xf64>
    %b = affine.load %t[%i mod 64] : memref<64xf64>
    %c = arith.addf %a, %b : f64
    affine.store %c, %A[%i] : memref<1000xf64>
  }
  return
}
func.func @big(%A: memref<4xf64>) {
  %t = memref.alloca() : memref<512x512xf64>
  %x = affine.load %A[0] : memref<4xf64>
  affine.store %x, %t[511, 511] : memref<512x512xf64>
  %y = affine.load %t[511, 511] : memref<512x512xf64>
  affine.store %y, %A[3] : memref<4xf64>
  return
}
""", max_stack_bytes=1 << 20)
    entry = lowered.llvm_ir.split('define void @"f"')[1].split("body:")[0]
    assert "alloca [64 x double], align 64" in entry
    A = rand(1000)
    ref = 2 * A
    fns["f"](A)
    np.testing.assert_array_equal(A, ref)
    B = np.array([1.0, 2.0, 3.0, 4.0])
    fns["big"](B)  # 2 MiB alloca goes to the heap (given back at return)
    assert B[3] == 1.0
    big = lowered.llvm_ir.split('define void @"big"')[1].split("\n}")[0]
    # through the buffer cache (large blocks are kept between calls), which allocates and
    # frees on the heap
    assert calls(big, "__polyopt_buffer_take") and calls(big, "__polyopt_buffer_give")
    assert calls(lowered.llvm_ir, "aligned_alloc") and calls(lowered.llvm_ir, "free")


PAPER_2_5 = """
#map7 = (d0) -> (d0 * 16)
#map8 = (d0) -> (20, d0 * 16 + 16)
func @matmul(%A: memref<40x24xf64>, %B: memref<24x12xf64>, %C: memref<40x12xf64>) {
  %c0 = constant 0 : index
  affine.for %arg3 = 0 to 3 {
    affine.for %arg4 = 0 to 3 {
      affine.for %arg5 = 0 to 12 {
        affine.for %arg6 = #map7(%arg4) to min #map8(%arg4) {
          %0 = alloca() : memref<1xf64>
          %1 = affine.load %C[%arg6, %arg5] : memref<40x12xf64>
          affine.store %1, %0[%c0] : memref<1xf64>
          affine.for %arg7 = 0 to 8 {
            %3 = affine.load %A[%arg6, %arg3 * 8 + %arg7] : memref<40x24xf64>
            %4 = affine.load %B[%arg3 * 8 + %arg7, %arg5] : memref<24x12xf64>
            %5 = affine.load %0[0] : memref<1xf64>
            %6 = mulf %3, %4 : f64
            %7 = addf %5, %6 : f64
            affine.store %7, %0[0] : memref<1xf64>
          }
          %2 = affine.load %0[%c0] : memref<1xf64>
          affine.store %2, %C[%arg6, %arg5] : memref<40x12xf64>
        }
      }
    }
  }
  return
}
"""


def test_paper_section_2_5_nest_with_alloca_in_loops():
    lowered, fns, _ = build(PAPER_2_5)
    entry = lowered.llvm_ir.split("body:")[0]
    assert entry.count("alloca") == 1  # one slot, not one per iteration
    A, B, C = rand((40, 24)), rand((24, 12)), rand((40, 12))
    ref = C.copy()
    ref[:20] += A[:20] @ B  # rows 0..19 (the min bound), all of k
    fns["matmul"](A, B, C)
    np.testing.assert_allclose(C, ref, rtol=1e-12, atol=1e-12)


PAPER_2_1 = """
// C += A * B.
func @matmul(%A: memref<3x4xf64>, %B: memref<4x5xf64>, %C: memref<3x5xf64>) {
  affine.for %arg3 = 0 to 3 {
    affine.for %arg4 = 0 to 5 {
      affine.for %arg5 = 0 to 4 {
        %a = affine.load %A[%arg3, %arg5] : memref<3x4xf64>
        %b = affine.load %B[%arg5, %arg4] : memref<4x5xf64>
        %ci = affine.load %C[%arg3, %arg4] : memref<3x5xf64>
        %p = mulf %a, %b : f64
        %co = addf %ci, %p : f64
        affine.store %co, %C[%arg3, %arg4] : memref<3x5xf64>
      }
    }
  }
  return
}
func @main() {
  %A = alloc() : memref<3x4xf64>
  %B = alloc() : memref<4x5xf64>
  %C = alloc() : memref<3x5xf64>
  %cf1 = constant 1.00000e+00 : f64
  linalg.fill(%A, %cf1) : memref<3x4xf64>, f64
  linalg.fill(%B, %cf1) : memref<4x5xf64>, f64
  linalg.fill(%C, %cf1) : memref<3x5xf64>, f64
  call @matmul(%A, %B, %C) : (memref<3x4xf64>, memref<4x5xf64>, memref<3x5xf64>) -> ()
  call @print_memref_2d_f64(%C): (memref<3x5xf64>) -> ()
  return
}
func @print_memref_2d_f64(memref<3x5xf64>)
"""


def _strip_address(text: str) -> str:
    return re.sub(r"base@ = 0x[0-9a-f]+", "base@ = ADDR", text)


def test_paper_section_2_1_main_prints_the_result(capsys):
    fns = run(PAPER_2_1)
    fns["main"]()
    out = _strip_address(capsys.readouterr().out)
    assert out == (
        "Unranked Memref base@ = ADDR rank = 2 offset = 0 sizes = [3, 5] strides = [5, 1] data = \n"
        "[[5,   5,   5,   5,   5], \n"
        " [5,   5,   5,   5,   5], \n"
        " [5,   5,   5,   5,   5]]\n")


def test_print_memref_unranked_and_rtclock(capsys):
    fns = run("""
func.func private @printMemrefF64(memref<*xf64>)
func.func private @printMemrefI32(memref<*xi32>)
func.func private @rtclock() -> f64
func.func @main() -> f64 {
  %t0 = func.call @rtclock() : () -> f64
  %A = memref.alloc() : memref<2x3xf64>
  %v = arith.constant 0.5 : f64
  linalg.fill ins(%v : f64) outs(%A : memref<2x3xf64>)
  %c1 = arith.constant 1 : index
  %x = arith.constant 2049.0 : f64
  memref.store %x, %A[%c1, %c1] : memref<2x3xf64>
  %U = memref.cast %A : memref<2x3xf64> to memref<*xf64>
  func.call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  %I = memref.alloca() : memref<4xi32>
  %k = arith.constant -7 : i32
  linalg.fill ins(%k : i32) outs(%I : memref<4xi32>)
  %J = memref.cast %I : memref<4xi32> to memref<*xi32>
  func.call @printMemrefI32(%J) : (memref<*xi32>) -> ()
  memref.dealloc %A : memref<2x3xf64>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  return %dt : f64
}
""")
    dt = fns["main"]()
    assert 0.0 <= dt < 10.0
    out = _strip_address(capsys.readouterr().out)
    assert out == (
        "Unranked Memref base@ = ADDR rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data = \n"
        "[[0.5,   0.5,   0.5], \n"
        " [0.5,   2049,   0.5]]\n"
        "Unranked Memref base@ = ADDR rank = 1 offset = 0 sizes = [4] strides = [1] data = \n"
        "[-7,  -7,  -7,  -7]\n")
    assert out.splitlines()[0] == _strip_address(format_memref(np.zeros((2, 3)), 0xBEEF)
                                                 .splitlines()[0])


def test_linalg_fill_on_layout_mapped_memref_and_math_fma():
    fns = run("""
#T = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%A: memref<3x5xf64, #T>, %x: f64, %y: f64, %z: f64) -> f64 {
  linalg.fill ins(%x : f64) outs(%A : memref<3x5xf64, #T>)
  %r = math.fma %x, %y, %z : f64
  return %r : f64
}
""")
    P = np.zeros((5, 3))
    assert fns["f"](P, 1.5, 2.0, 0.25) == 3.25
    assert (P == 1.5).all()


def test_noalias_option():
    text = matmul_text(2, 2, 2, "f64")
    assert "noalias" not in lower_module(parse(text)).llvm_ir
    assert lower_module(parse(text), noalias_memref_args=True).llvm_ir.count("ptr noalias") == 3


def test_external_c_function():
    fns = run("""
func.func private @labs(i64) -> i64
func.func @f(%x: i64) -> i64 {
  %r = func.call @labs(%x) : (i64) -> i64
  return %r : i64
}
""")
    assert fns["f"](-42) == 42


# ---------------------------------------------------------------------------------------------
# signatures and errors


def test_signatures_and_memref_results():
    lowered, fns, _ = build("""
func.func @make() -> memref<4xf64> {
  %m = memref.alloc() : memref<4xf64>
  return %m : memref<4xf64>
}
func.func @use() -> f64 {
  %m = func.call @make() : () -> memref<4xf64>
  %c = arith.constant 3.0 : f64
  linalg.fill ins(%c : f64) outs(%m : memref<4xf64>)
  %v = affine.load %m[2] : memref<4xf64>
  memref.dealloc %m : memref<4xf64>
  return %v : f64
}
func.func @s(%a: index, %b: i1, %A: memref<2x3xi32>) {
  return
}
""")
    assert isinstance(lowered, LoweredModule) and set(lowered.signatures) == {"make", "use", "s"}
    sig = lowered.signatures["s"]
    assert isinstance(sig, FunctionSignature)
    assert sig.args[0] == ScalarArg("arg0", "index") and sig.args[1] == ScalarArg("arg1", "i1")
    assert sig.args[2] == MemRefArg("arg2", (2, 3), np.int32)
    assert fns["use"]() == 3.0
    assert lowered.signatures["make"].numpy_error is not None
    with pytest.raises(TypeError, match="memref"):
        fns["make"]()
    with pytest.raises(TypeError, match="dtype"):
        fns["s"](0, True, np.zeros((2, 3)))


@pytest.mark.parametrize("text, message", [
    ("func.func @f(%A: memref<?x4xf64, affine_map<(d0, d1) -> (d1, d0)>>) {\n  return\n}",
     "dynamic sizes under a layout map that is not strided are not supported"),
    ("func.func private @no_such_function_xyz(f64)\n",
     "undefined external function '@no_such_function_xyz' (declare only polyopt runtime "
     "functions or C symbols)"),
    ("func.func @f(%A: memref<4x4xf64>, %B: memref<4x4xf64>, %C: memref<4x4xf64>) {\n"
     "  hop.matmul %A, %B, %C : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>)\n"
     "  return\n}",
     "'hop.matmul' must be expanded before lowering"),
])
def test_codegen_errors(text, message):
    with pytest.raises(CodegenError) as info:
        lower_module(parse(text, "bad.mlir"))
    assert message in info.value.message
    assert info.value.loc is not None and info.value.loc.file.name == "bad.mlir"


def test_unknown_op_error_names_the_op():
    module = parse('func.func @f() {\n  "foo.bar"() : () -> ()\n  return\n}', "bad.mlir")
    with pytest.raises(CodegenError, match="'foo.bar'") as info:
        lower_module(module)
    assert (info.value.loc.line, info.value.loc.col) == (2, 3)


# ---------------------------------------------------------------------------------------------
# differential test against upstream MLIR 22 (mlir-opt-22 + mlir-runner-22)

ORACLE_PROGRAM = """
#set = affine_set<(d0) : (d0 + 2 >= 0, 3 - d0 >= 0)>
#lb = affine_map<(d0) -> (d0 * 4, 2)>
#ub = affine_map<(d0) -> (d0 * 4 + 4, 13)>
func.func private @printMemrefF64(memref<*xf64>)
func.func @main() {
  %c5 = arith.constant 5 : index
  %m3 = arith.constant -3 : i32
  %c4 = arith.constant 4 : i32
  affine.for %i = -9 to 9 step 2 {
    %a = affine.apply affine_map<(d0) -> (d0 floordiv 3)>(%i)
    %b = affine.apply affine_map<(d0) -> (d0 mod 4)>(%i)
    %c = affine.apply affine_map<(d0) -> (d0 ceildiv 2)>(%i)
    %d = affine.apply affine_map<(d0)[s0] -> ((d0 * 5 - s0) floordiv 8)>(%i)[%c5]
    %e = affine.apply affine_map<(d0)[s0] -> ((d0 + s0) mod 7)>(%i)[%c5]
    %f = affine.apply affine_map<(d0)[s0] -> (d0 floordiv s0)>(%i)[%c5]
    %g = affine.apply affine_map<(d0)[s0] -> (d0 mod s0)>(%i)[%c5]
    %h = affine.apply affine_map<(d0)[s0] -> (d0 ceildiv s0 + d0 * s0)>(%i)[%c5]
    %sel = affine.if #set(%i) -> index {
      affine.yield %a : index
    } else {
      affine.yield %b : index
    }
    vector.print %a : index punctuation <comma>
    vector.print %b : index punctuation <comma>
    vector.print %c : index punctuation <comma>
    vector.print %d : index punctuation <comma>
    vector.print %e : index punctuation <comma>
    vector.print %f : index punctuation <comma>
    vector.print %g : index punctuation <comma>
    vector.print %h : index punctuation <comma>
    vector.print %sel : index
    %x = arith.index_cast %i : index to i32
    %x0 = arith.floordivsi %x, %m3 : i32
    %x1 = arith.ceildivsi %x, %c4 : i32
    %x2 = arith.remsi %x, %m3 : i32
    %x3 = arith.divsi %x, %c4 : i32
    %x4 = arith.ceildivsi %x, %m3 : i32
    %x5 = arith.shrsi %x, %c4 : i32
    vector.print %x0 : i32 punctuation <comma>
    vector.print %x1 : i32 punctuation <comma>
    vector.print %x2 : i32 punctuation <comma>
    vector.print %x3 : i32 punctuation <comma>
    vector.print %x4 : i32 punctuation <comma>
    vector.print %x5 : i32
  }
  // min/max bounds and iter_args
  %zero = arith.constant 0 : index
  affine.for %t = 0 to 4 {
    %s = affine.for %j = max #lb(%t) to min #ub(%t) iter_args(%acc = %zero) -> (index) {
      %n = affine.apply affine_map<(d0, d1) -> (d0 * 10 + d1)>(%acc, %j)
      affine.yield %n : index
    }
    vector.print %s : index
  }
  // floats
  %fz = arith.constant 0.0 : f64
  %nan = arith.divf %fz, %fz : f64
  %one = arith.constant 1.0 : f64
  %mx = arith.maximumf %nan, %one : f64
  %mn = arith.maxnumf %nan, %one : f64
  %lt = arith.cmpf olt, %nan, %one : f64
  %ult = arith.cmpf ult, %nan, %one : f64
  vector.print %mx : f64
  vector.print %mn : f64
  vector.print %lt : i1
  vector.print %ult : i1
  %row = arith.constant dense<[1.5, -2.0, 3.25, 4.0]> : vector<4xf64>
  %two = arith.constant 2.0 : f64
  %b2 = vector.broadcast %two : f64 to vector<3x4xf64>
  %r2 = vector.broadcast %row : vector<4xf64> to vector<3x4xf64>
  %p2 = arith.mulf %b2, %r2 : vector<3x4xf64>
  %f2 = vector.fma %p2, %r2, %b2 : vector<3x4xf64>
  vector.print %f2 : vector<3x4xf64>
  %red = vector.reduction <add>, %row, %two : vector<4xf64> into f64
  %rmx = vector.reduction <maximumf>, %row : vector<4xf64> into f64
  vector.print %red : f64
  vector.print %rmx : f64
  %fi = arith.fptosi %row : vector<4xf64> to vector<4xi32>
  %ff = arith.sitofp %fi : vector<4xi32> to vector<4xf32>
  vector.print %fi : vector<4xi32>
  vector.print %ff : vector<4xf32>
  vector.print str "memref:"
  // alloca in loops, then a printed memref
  %M = memref.alloc() : memref<3x4xf64>
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %tmp = memref.alloca() : memref<1xf64>
      %ii = arith.index_cast %i : index to i64
      %jj = arith.index_cast %j : index to i64
      %fi2 = arith.sitofp %ii : i64 to f64
      %fj2 = arith.sitofp %jj : i64 to f64
      %q = arith.divf %fi2, %two : f64
      %w = arith.subf %q, %fj2 : f64
      affine.store %w, %tmp[0] : memref<1xf64>
      %y = affine.load %tmp[0] : memref<1xf64>
      affine.store %y, %M[%i, %j] : memref<3x4xf64>
    }
  }
  %U = memref.cast %M : memref<3x4xf64> to memref<*xf64>
  func.call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  memref.dealloc %M : memref<3x4xf64>
  return
}
"""


def test_same_output_as_mlir_runner(capsys):
    """affine.apply floordiv/ceildiv/mod (also by a symbol) on negative values, affine.if,
    min/max bounds with iter_args, signed integer division, NaN semantics of max/cmp, 2-D
    vectors, reductions, casts, alloca in loops and printMemrefF64: same text as MLIR 22."""
    passes = ["--lower-affine", "--convert-vector-to-scf", "--convert-scf-to-cf",
              "--convert-vector-to-llvm", "--finalize-memref-to-llvm", "--convert-math-to-llvm",
              "--convert-arith-to-llvm", "--convert-ub-to-llvm", "--convert-func-to-llvm",
              "--convert-cf-to-llvm", "--reconcile-unrealized-casts"]
    upstream = lower_and_run(ORACLE_PROGRAM, passes, timeout=60)
    run(ORACLE_PROGRAM)["main"]()
    ours = capsys.readouterr().out
    assert _strip_address(ours) == _strip_address(upstream)
    assert "nan" in ours and "memref:Unranked Memref" in ours


def test_prefetch_lowers_to_llvm_prefetch_and_never_faults():
    # a prefetch far outside its memref is a hint: no fault, no effect on the result
    text = """
func.func @f(%A: memref<8xf64>, %i: index) {
  affine.prefetch %A[%i * 4096 + 100000], read, locality<3>, data : memref<8xf64>
  affine.prefetch %A[%i], write, locality<1>, data : memref<8xf64>
  %c1 = arith.constant 1.0 : f64
  affine.store %c1, %A[%i] : memref<8xf64>
  return
}
"""
    lowered, fns, _ = build(text)
    assert re.search(r"call void @\"?llvm\.prefetch\.p0\"?\(ptr [^,]+, i32 0, i32 3, i32 1\)",
                     lowered.llvm_ir)
    assert re.search(r"call void @\"?llvm\.prefetch\.p0\"?\(ptr [^,]+, i32 1, i32 1, i32 1\)",
                     lowered.llvm_ir)
    a = np.zeros(8)
    fns["f"](a, 3)
    assert list(a) == [0, 0, 0, 1, 0, 0, 0, 0]
