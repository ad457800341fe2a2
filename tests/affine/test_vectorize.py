"""Outer-loop vectorization (polyopt.affine.vectorize) and its ISL legality check
(polyopt.schedules.vector_legality).

* differential execution: the vectorized function against the scalar one in the same module,
  f32 and f64, the vector width of this machine's target (never hard-coded), trip counts that
  are and are not multiples of it (1, 7, 8, 9, 33, 100), symbolic and min/max bounds;
* the naive matmul vectorized along j (the paper's section 2.8 listing), a BLIS-tiled matmul
  (apply_schedule) with the j point loop vectorized, and the scalar-replaced register tile whose
  C accumulators in iter_args become vector iter_args;
* golden IR (accepted by mlir-opt-22, and mlir-opt-22's output parses back);
* interop: the vectorized module lowered by upstream passes and run by mlir-runner-22 prints
  exactly what ``polyopt run`` prints;
* refusals (not parallel, strided, IV in another dimension, ...) that leave the IR untouched.
"""

from __future__ import annotations

import difflib
import re
import textwrap

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.affine.dialects.affine import AffineForOp, AffineIfOp
from polyopt.affine.verifier import verify
from polyopt.affine.vectorize import (check_independent_iterations, is_contiguous_in_last_dim,
                                      vector_element_bits, vectorize_loop)
from polyopt.affine.types import MemRefType, StridedLayout, f64 as F64
from polyopt.affine.affine_expr import parse_affine_map
from polyopt.codegen.target import host_target
from polyopt.schedules.apply import apply_schedule
from polyopt.schedules.vector_legality import check_parallel, is_loop_parallel
from run_helpers import mask_addresses, polyopt_run
from upstream_mlir import lower_and_run, mlir_opt

DTYPES = {"f64": np.float64, "f32": np.float32}


def width(t: str) -> int:
    """The vector width of this machine for element type ``t`` (8 x f64 on AVX-512)."""
    return host_target().vector_width(64 if t == "f64" else 32)


# ---------------------------------------------------------------------------------------------
# helpers


def funcs(module) -> dict:
    return {f.attributes["sym_name"].value: f for f in module.regions[0].blocks[0].ops
            if f.name == "func.func"}


def loops_of(op) -> list[AffineForOp]:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def ref_and_vec(template: str, cases, t: str) -> str:
    """One module with ``@ref_<n>`` and ``@vec_<n>`` copies of ``template`` (``@f``, ``{T}``
    the element type, other ``{...}`` from each case's dict)."""
    out = []
    for n, case in enumerate(cases):
        body = textwrap.dedent(template).format(T=t, **case)
        out.append(body.replace("@f(", f"@ref_{n}(") + body.replace("@f(", f"@vec_{n}("))
    return "\n".join(out)


def check_mlir_opt(text: str) -> None:
    """mlir-opt-22 accepts ``text``, and what it prints parses back here."""
    verify(polyopt.parse(mlir_opt(text, "--allow-unregistered-dialect"), "mlir-opt-output.mlir"))


def assert_golden(actual: str, expected: str) -> None:
    expected = textwrap.dedent(expected).lstrip("\n")
    if actual != expected:
        diff = "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                              "expected", "actual", lineterm=""))
        pytest.fail(f"golden IR mismatch:\n{diff}")


def rand(shape, t: str, seed: int):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(DTYPES[t])


def tol(t: str, k: int = 1) -> float:
    return (1e-12 if t == "f64" else 2e-6) * max(k, 1)


# ---------------------------------------------------------------------------------------------
# differential execution: elementwise loops, all trip counts, f32 and f64

ELEMENTWISE = """
func.func @f(%x: memref<{N}x{T}>, %y: memref<{N}x{T}>, %w: memref<4x{T}>, %a: {T}) {{
  %c = arith.constant 1.5 : {T}
  affine.for %j = 0 to {N} {{
    %u = affine.load %x[%j] : memref<{N}x{T}>
    %v = affine.load %y[%j] : memref<{N}x{T}>
    %s = affine.load %w[2] : memref<4x{T}>
    %p = arith.mulf %a, %u : {T}
    %q = arith.addf %p, %v : {T}
    %r = arith.divf %q, %c : {T}
    %n = arith.negf %r : {T}
    %m = arith.maximumf %n, %s : {T}
    %lt = arith.cmpf olt, %u, %v : {T}
    %sel = arith.select %lt, %m, %u : {T}
    affine.store %sel, %y[%j] : memref<{N}x{T}>
  }}
  return
}}
"""
TRIPS = (1, 7, 8, 9, 33, 100)


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_elementwise_loop_matches_scalar_on_every_trip_count(t):
    W = width(t)
    module = polyopt.parse(ref_and_vec(ELEMENTWISE, [{"N": n} for n in TRIPS], t))
    fs = funcs(module)
    for k, n in enumerate(TRIPS):
        loop = loops_of(fs[f"vec_{k}"])[0]
        assert vector_element_bits(loop) == (64 if t == "f64" else 32)
        out = vectorize_loop(loop, W)
        vector_loops = [l for l in loops_of(fs[f"vec_{k}"]) if l.step == W]
        if n < W:
            assert out is loop and not vector_loops          # nothing to vectorize
        else:
            assert vector_loops == [out] and out.constant_trip_count == n // W
            rest = [l for l in loops_of(fs[f"vec_{k}"]) if l.step == 1]
            assert [l.constant_trip_count for l in rest] == ([n % W] if n % W else [])
    verify(module)
    compiled = polyopt.compile(module)
    for k, n in enumerate(TRIPS):
        x, y, w = rand(n, t, 1), rand(n, t, 2), rand(4, t, 3)
        y_ref = y.copy()
        compiled[f"ref_{k}"](x, y_ref, w, 0.75)
        compiled[f"vec_{k}"](x, y, w, 0.75)
        np.testing.assert_allclose(y, y_ref, rtol=tol(t), atol=tol(t))


CONTROL = """
func.func @f(%x: memref<{N}x{T}>, %y: memref<{N}x{T}>, %s: memref<8x{T}>, %flag: index) {{
  %zero = arith.constant 0.0 : {T}
  affine.for %j = 0 to {N} {{
    %u = affine.load %x[%j] : memref<{N}x{T}>
    %acc = affine.for %k = 0 to 8 iter_args(%a = %zero) -> ({T}) {{
      %v = affine.load %s[%k] : memref<8x{T}>
      %n = arith.addf %a, %v : {T}
      affine.yield %n : {T}
    }}
    %r = affine.if affine_set<()[s0] : (s0 - 1 >= 0)>()[%flag] -> {T} {{
      %p = arith.mulf %u, %acc : {T}
      affine.yield %p : {T}
    }} else {{
      affine.yield %acc : {T}
    }}
    affine.store %r, %y[%j] : memref<{N}x{T}>
  }}
  return
}}
"""


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_uniform_inner_loop_and_if_with_vector_results(t):
    """A reduction that does not depend on j stays scalar (computed once per vector
    iteration); an affine.if on a uniform condition yields vectors, broadcasting the scalar it
    yields on one branch."""
    W = width(t)
    module = polyopt.parse(ref_and_vec(CONTROL, [{"N": 3 * W + 2}], t))
    vectorize_loop(loops_of(funcs(module)["vec_0"])[0], W, check=check_parallel)
    verify(module)
    vec = funcs(module)["vec_0"]
    inner = [l for l in loops_of(vec) if l.inits]
    assert str(inner[0].results[0].type) == t
    ifs = [o for o in vec.walk() if isinstance(o, AffineIfOp)]
    assert str(ifs[0].results[0].type) == f"vector<{W}x{t}>"
    compiled = polyopt.compile(module)
    x, sv = rand(3 * W + 2, t, 7), rand(8, t, 8)
    for flag in (0, 1):
        y_ref, y = np.zeros(3 * W + 2, DTYPES[t]), np.zeros(3 * W + 2, DTYPES[t])
        compiled["ref_0"](x, y_ref, sv, flag)
        compiled["vec_0"](x, y, sv, flag)
        np.testing.assert_allclose(y, y_ref, rtol=tol(t), atol=tol(t))


def test_integer_elementwise_loop():
    W = host_target().vector_width(32)
    text = """
        func.func @f(%x: memref<{N}xi32>, %y: memref<{N}xi32>) {{
          %c3 = arith.constant 3 : i32
          affine.for %j = 0 to {N} {{
            %u = affine.load %x[%j] : memref<{N}xi32>
            %v = affine.load %y[%j] : memref<{N}xi32>
            %p = arith.muli %u, %c3 : i32
            %q = arith.addi %p, %v : i32
            %m = arith.maxsi %q, %u : i32
            %f = arith.sitofp %m : i32 to f32
            %h = arith.fptosi %f : f32 to i32
            affine.store %h, %y[%j] : memref<{N}xi32>
          }}
          return
        }}
        """
    n = 2 * W + 5
    module = polyopt.parse(ref_and_vec(text, [{"N": n}], "i32"))
    vectorize_loop(loops_of(funcs(module)["vec_0"])[0], W)
    verify(module)
    text = str(module)
    assert f"arith.constant dense<3> : vector<{W}xi32>" in text
    assert re.search(rf"arith.maxsi %\d+, %\d+ : vector<{W}xi32>", text)
    assert re.search(rf"arith.sitofp %\d+ : vector<{W}xi32> to vector<{W}xf32>", text)
    compiled = polyopt.compile(module)
    rng = np.random.default_rng(9)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y0 = rng.integers(-1000, 1000, n).astype(np.int32)
    y_ref, y = y0.copy(), y0.copy()
    compiled["ref_0"](x, y_ref)
    compiled["vec_0"](x, y)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(y, np.maximum(3 * x + y0, x))


BOUNDED = """
func.func @f(%x: memref<100x{T}>, %y: memref<100x{T}>, %lo: index, %n: index) {{
  affine.for %j = {BOUNDS} {{
    %u = affine.load %x[%j] : memref<100x{T}>
    %v = affine.load %y[%j] : memref<100x{T}>
    %s = arith.subf %v, %u : {T}
    affine.store %s, %y[%j] : memref<100x{T}>
  }}
  return
}}
"""
BOUNDS = [
    "%lo to %n",
    "0 to %n",
    "max affine_map<()[s0] -> (s0, 3)>()[%lo] to min affine_map<()[s0] -> (s0, 90)>()[%n]",
    "affine_map<()[s0] -> (s0 + 2)>()[%lo] to min affine_map<()[s0, s1] -> (s0 + 37, s1, 95)>()"
    "[%lo, %n]",
]


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_symbolic_min_and_max_bounds_match_scalar(t):
    """The epilogue starts where the last full group of W ends, for every active combination
    of min/max bounds (guarded copies), including loops that run zero or < W times."""
    W = width(t)
    module = polyopt.parse(ref_and_vec(BOUNDED, [{"BOUNDS": b} for b in BOUNDS], t))
    fs = funcs(module)
    for k in range(len(BOUNDS)):
        vectorize_loop(loops_of(fs[f"vec_{k}"])[0], W)
    verify(module)
    compiled = polyopt.compile(module)
    x = rand(100, t, 4)
    for k in range(len(BOUNDS)):
        for lo in (0, 2, 3, 5, 40):
            for n in (0, 4, 11, 20, 42, 77, 89, 90, 95, 100):
                y_ref, y = rand(100, t, 5), rand(100, t, 5)
                compiled[f"ref_{k}"](x, y_ref, lo, n)
                compiled[f"vec_{k}"](x, y, lo, n)
                np.testing.assert_array_equal(y, y_ref, err_msg=f"bounds {BOUNDS[k]}, lo={lo}, "
                                                                 f"n={n}")


# ---------------------------------------------------------------------------------------------
# matmul: naive (paper section 2.8), BLIS-tiled, register tile with iter_args

MATMUL = """
func.func @f(%A: memref<{M}x{K}x{T}>, %B: memref<{K}x{N}x{T}>, %C: memref<{M}x{N}x{T}>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      affine.for %k = 0 to {K} {{
        %a = affine.load %A[%i, %k] : memref<{M}x{K}x{T}>
        %b = affine.load %B[%k, %j] : memref<{K}x{N}x{T}>
        %c = affine.load %C[%i, %j] : memref<{M}x{N}x{T}>
        %p = arith.mulf %a, %b : {T}
        %s = arith.addf %c, %p : {T}
        affine.store %s, %C[%i, %j] : memref<{M}x{N}x{T}>
      }}
    }}
  }}
  return
}}
"""
SIZES = [(1, 1, 1), (17, 31, 5), (9, 100, 7), (4, 33, 12)]


def run_matmuls(module, sizes, t: str) -> None:
    """``@vec_<k>`` computes what ``@ref_<k>`` computes, which is C + A @ B."""
    compiled = polyopt.compile(module)
    for k, (m, n, kk) in enumerate(sizes):
        a, b, c0 = rand((m, kk), t, 10 + k), rand((kk, n), t, 20 + k), rand((m, n), t, 30 + k)
        c_ref, c = c0.copy(), c0.copy()
        compiled[f"ref_{k}"](a, b, c_ref)
        compiled[f"vec_{k}"](a, b, c)
        np.testing.assert_allclose(c, c_ref, rtol=tol(t, kk), atol=tol(t, kk))
        expected = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c_ref, expected, rtol=tol(t, kk), atol=tol(t, kk))


@pytest.mark.parametrize("t", ["f64", "f32"])
@pytest.mark.parametrize("fma", [False, True])
def test_naive_matmul_vectorized_along_j(t, fma):
    W = width(t)
    cases = [{"M": m, "N": n, "K": k} for m, n, k in SIZES]
    module = polyopt.parse(ref_and_vec(MATMUL, cases, t))
    for k, (m, n, kk) in enumerate(SIZES):
        j_loop = loops_of(funcs(module)[f"vec_{k}"])[1]
        vectorize_loop(j_loop, W, check=check_parallel, fma=fma)
    verify(module)
    text = str(module)
    assert f"vector.broadcast %0 : {t} to vector<{W}x{t}>" in text
    assert ("vector.fma" in text) == fma
    run_matmuls(module, SIZES, t)


def blis(kc: int, mc: int, nr: int, mr: int) -> str:
    return (f"(d0, d1, d2) -> (d2 floordiv {kc}, d0 floordiv {mc}, d1 floordiv {nr}, "
            f"d0 floordiv {mr}, d2, d0, d1)")


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_blis_tiled_matmul_with_the_j_point_loop_vectorized(t):
    """apply_schedule's BLIS nest: the innermost loop (j within an NR = 2W tile, min-bounded
    at the edge of N) is vectorized; N is not a multiple of W or NR."""
    W = width(t)
    sizes = [(13, 45, 17), (20, 2 * W + 3, 9), (6, W - 1, 5)]
    module = polyopt.parse(ref_and_vec(MATMUL, [{"M": m, "N": n, "K": k}
                                                for m, n, k in sizes], t))
    for k in range(len(sizes)):
        f = funcs(module)[f"vec_{k}"]
        apply_schedule(f, {"S0": blis(8, 8, 2 * W, 4)})
        j_point = loops_of(f)[-1]
        n = sizes[k][1]
        assert j_point.upper_map.num_results == (2 if n > 2 * W else 1)  # min(tile end, N)
        vectorize_loop(j_point, W, check=check_parallel)
    verify(module)
    assert "affine.if" in str(module)                      # the guarded edge-tile epilogue
    check_mlir_opt(str(module))
    run_matmuls(module, sizes, t)


def register_tile(m: int, n: int, k: int, t: str, rows: int = 2) -> str:
    """C[i..i+rows, j] accumulated in iter_args around the k loop (unroll-and-jam of i by
    ``rows`` + scalar replacement), the j loop left to vectorize; one accumulator starts at 0
    and is added to C after the k loop."""
    mt = lambda a, b: f"memref<{a}x{b}x{t}>"
    loads = "\n".join(f"      %c{r} = affine.load %C[%i + {r}, %j] : {mt(m, n)}"
                      for r in range(rows - 1))
    args = ", ".join([f"%a{r} = %c{r}" for r in range(rows - 1)] + [f"%a{rows - 1} = %zero"])
    body = "\n".join(f"        %x{r} = affine.load %A[%i + {r}, %k] : {mt(m, k)}\n"
                     f"        %m{r} = arith.mulf %x{r}, %b : {t}\n"
                     f"        %s{r} = arith.addf %a{r}, %m{r} : {t}" for r in range(rows))
    types = ", ".join([t] * rows)
    stores = "\n".join(f"      affine.store %r#{r}, %C[%i + {r}, %j] : {mt(m, n)}"
                       for r in range(rows - 1))
    last = rows - 1
    return f"""
func.func @f(%A: {mt(m, k)}, %B: {mt(k, n)}, %C: {mt(m, n)}) {{
  %zero = arith.constant 0.0 : {t}
  affine.for %i = 0 to {m} step {rows} {{
    affine.for %j = 0 to {n} {{
{loads}
      %r:{rows} = affine.for %k = 0 to {k} iter_args({args}) -> ({types}) {{
        %b = affine.load %B[%k, %j] : {mt(k, n)}
{body}
        affine.yield {", ".join(f"%s{r}" for r in range(rows))} : {types}
      }}
{stores}
      %cl = affine.load %C[%i + {last}, %j] : {mt(m, n)}
      %sum = arith.addf %cl, %r#{last} : {t}
      affine.store %sum, %C[%i + {last}, %j] : {mt(m, n)}
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("t", ["f64", "f32"])
@pytest.mark.parametrize("check", [None, check_parallel])
def test_register_tile_accumulators_become_vector_iter_args(t, check):
    W = width(t)
    sizes = [(4, n, 9) for n in TRIPS]
    text = "\n".join(register_tile(m, n, k, t, rows=2).replace("@f(", f"@{p}_{i}(")
                     for i, (m, n, k) in enumerate(sizes) for p in ("ref", "vec"))
    module = polyopt.parse(text)
    for i in range(len(sizes)):
        vectorize_loop(loops_of(funcs(module)[f"vec_{i}"])[1], W, check=check)
    verify(module)
    vt = f"vector<{W}x{t}>"
    # vec_4: n = 33, one more than a multiple of any vector width (100 is a multiple of 4)
    inner = [l for l in loops_of(funcs(module)["vec_4"]) if l.inits]
    assert [str(a.type) for a in inner[0].region_iter_args] == [vt, vt]
    assert str(inner[1].region_iter_args[0].type) == t          # the scalar epilogue
    assert f"arith.constant dense<0.000000e+00> : {vt}" in str(module)
    run_matmuls(module, sizes, t)


def test_width_one_and_short_constant_loops_are_left_alone():
    module = polyopt.parse(ref_and_vec(ELEMENTWISE, [{"N": 7}], "f64"))
    loop = loops_of(funcs(module)["vec_0"])[0]
    before = str(module)
    assert vectorize_loop(loop, 1) is loop and str(module) == before
    assert vectorize_loop(loop, 8) is loop and str(module) == before     # 7 < 8
    with pytest.raises(ValueError, match="width must be a positive integer"):
        vectorize_loop(loop, 0)


def test_contiguity_of_layouts():
    assert is_contiguous_in_last_dim(MemRefType((4, 8), F64))
    assert is_contiguous_in_last_dim(MemRefType((4, 8), F64, StridedLayout((16, 1), 3)))
    assert not is_contiguous_in_last_dim(MemRefType((4, 8), F64, StridedLayout((1, 4))))
    assert is_contiguous_in_last_dim(
        MemRefType((4, 8), F64, parse_affine_map("(d0, d1) -> (d0 * 10 + d1 + 2)")))
    assert not is_contiguous_in_last_dim(
        MemRefType((8, 8), F64, parse_affine_map("(d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)")))
    assert not is_contiguous_in_last_dim(
        MemRefType((4, 8), F64, parse_affine_map("(d0, d1) -> (d1, d0)")))


PACKED = """
func.func @f(%B: memref<8x{N}x{T}>, %O: memref<8x{N}x{T}>) {{
  %buf = memref.alloc() : {BUF}
  affine.for %k = 0 to 8 {{
    affine.for %j = {LO} to {N} {{
      %v = affine.load %B[%k, %j] : memref<8x{N}x{T}>
      affine.store %v, %buf[{AT}] : {BUF}
    }}
  }}
  affine.for %k = 0 to 8 {{
    affine.for %j = {LO} to {N} {{
      %v = affine.load %buf[{AT}] : {BUF}
      %w = arith.addf %v, %v : {T}
      affine.store %w, %O[%k, %j] : memref<8x{N}x{T}>
    }}
  }}
  memref.dealloc %buf : {BUF}
  return
}}
"""


def packed_cases(t: str, lo: int = 0):
    nr = 2 * width(t)
    n = 3 * nr + 5
    tiles = -(-n // nr)
    tiled = f"memref<8x{n}x{t}, affine_map<(d0, d1) -> (d1 floordiv {nr}, d0, d1 mod {nr})>>"
    return [{"N": n, "LO": lo, "BUF": tiled, "AT": "%k, %j"},
            {"N": n, "LO": lo, "BUF": f"memref<{tiles}x8x{nr}x{t}>",
             "AT": f"%j floordiv {nr}, %k, %j mod {nr}"}]


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_packed_buffers_with_tiled_layouts_vectorize_when_aligned(t):
    """A B panel packed with the tiled layout (j floordiv NR, k, j mod NR), or its normalized
    form: W consecutive j are consecutive in memory because the groups of W start at
    multiples of W and W divides NR."""
    W = width(t)
    module = polyopt.parse(ref_and_vec(PACKED, packed_cases(t), t))
    for k in range(2):
        for j_loop in loops_of(funcs(module)[f"vec_{k}"])[1::2]:
            vectorize_loop(j_loop, W, check=check_parallel)
    verify(module)
    text = str(module)
    assert text.count("affine.vector_store") == 4 and text.count("affine.vector_load") == 4
    check_mlir_opt(text)
    compiled = polyopt.compile(module)
    n = packed_cases(t)[0]["N"]
    b = rand((8, n), t, 11)
    for k in range(2):
        o_ref, o = np.zeros((8, n), DTYPES[t]), np.zeros((8, n), DTYPES[t])
        compiled[f"ref_{k}"](b, o_ref)
        compiled[f"vec_{k}"](b, o)
        np.testing.assert_array_equal(o, o_ref)
        np.testing.assert_array_equal(o, b + b)


def test_misaligned_groups_on_tiled_layouts_are_refused():
    """Starting at j = 1, a group of W lanes may straddle two tiles of the packed buffer."""
    module = polyopt.parse(ref_and_vec(PACKED, packed_cases("f64", lo=1), "f64"))
    W = width("f64")
    tiled, normalized = (loops_of(funcs(module)[f"vec_{k}"])[1] for k in range(2))
    before = str(module)
    with pytest.raises(ScheduleError, match="whose layout does not keep consecutive iterations "
                                            "consecutive in memory"):
        vectorize_loop(tiled, W)
    with pytest.raises(ScheduleError, match="with a subscript that is not affine in %arg3 \\(or "
                                            "a floordiv/mod that is not aligned"):
        vectorize_loop(normalized, W)
    assert str(module) == before


COLUMN_PANEL = """
func.func @f(%a: memref<5x{M}x{T}>, %o: memref<5x{M}x{T}>) {{
  %buf = memref.alloc() : {BUF}
  affine.for %i = 0 to {M} {{
    affine.for %k = 0 to 5 {{
      %x = affine.load %a[%k, %i] : memref<5x{M}x{T}>
      affine.store %x, %buf[%i, %k] : {BUF}
    }}
  }}
  affine.for %k = 0 to 5 {{
    affine.for %i = {LO} to {M} {{
      %x = affine.load %buf[%i, %k] : {BUF}
      %y = arith.addf %x, %x : {T}
      affine.store %y, %o[%k, %i] : memref<5x{M}x{T}>
    }}
  }}
  memref.dealloc %buf : {BUF}
  return
}}
"""


def _column_panel(t: str, lo: int = 0) -> str:
    w = width(t)
    buf = f"memref<{2 * w}x5x{t}, affine_map<(d0, d1) -> (d0 floordiv {w}, d1, d0 mod {w})>>"
    return COLUMN_PANEL.format(M=2 * w, T=t, BUF=buf, LO=lo)


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_loads_along_the_physical_last_dimension_of_a_layout_vectorize(t):
    """A column of A packed in M_R-row micro-panels is logically A[i, k] and physically
    [i floordiv W, k, i mod W]: the loop over i reads W consecutive elements (the column
    form's vector loads of A), though i is not in the last logical subscript."""
    text = _column_panel(t)
    module = polyopt.parse(text)
    vectorize_loop(loops_of(module)[3], width(t), check=check_parallel)
    verify(module)
    out = str(module)
    assert out.count("affine.vector_load %alloc") + out.count("affine.vector_load %0") == 1, out
    a = rand((5, 2 * width(t)), t, 3)
    o_ref, o = np.zeros((5, 2 * width(t)), DTYPES[t]), np.zeros((5, 2 * width(t)), DTYPES[t])
    polyopt.compile(text)["f"](a, o_ref)
    polyopt.compile(module)["f"](a, o)
    np.testing.assert_array_equal(o, o_ref)
    np.testing.assert_array_equal(o, a + a)


def test_layout_loads_off_the_groups_and_layout_stores_along_them_are_refused():
    module = polyopt.parse(_column_panel("f64", lo=1))   # groups straddle micro-panels
    with pytest.raises(ScheduleError, match="along a dimension other than the last"):
        vectorize_loop(loops_of(module)[3], width("f64"))
    module = polyopt.parse(_column_panel("f64"))         # the packing loop stores along i
    with pytest.raises(ScheduleError, match="stores to .* along a dimension other than the last"):
        vectorize_loop(loops_of(module)[0], width("f64"))


# ---------------------------------------------------------------------------------------------
# golden IR (widths given explicitly: the goldens do not depend on the machine)


def vectorized(text: str, loop_index: int, w: int, **kw) -> str:
    module = polyopt.parse(textwrap.dedent(text))
    vectorize_loop(loops_of(module)[loop_index], w, **kw)
    verify(module)
    out = str(module)
    check_mlir_opt(out)
    return out


def test_golden_paper_section_2_8_listing():
    """The paper's vectorized naive matmul, with upstream ops: vector<4xf64> loads/stores on
    the original memrefs instead of memref_shape_cast, a broadcast instead of splat."""
    text = MATMUL.format(M=2048, N=2048, K=2048, T="f64")
    assert_golden(vectorized(text, 1, 4), """
        module {
          func.func @f(%arg0: memref<2048x2048xf64>, %arg1: memref<2048x2048xf64>, %arg2: memref<2048x2048xf64>) {
            affine.for %arg3 = 0 to 2048 {
              affine.for %arg4 = 0 to 2048 step 4 {
                affine.for %arg5 = 0 to 2048 {
                  %0 = affine.load %arg0[%arg3, %arg5] : memref<2048x2048xf64>
                  %1 = vector.broadcast %0 : f64 to vector<4xf64>
                  %2 = affine.vector_load %arg1[%arg5, %arg4] : memref<2048x2048xf64>, vector<4xf64>
                  %3 = affine.vector_load %arg2[%arg3, %arg4] : memref<2048x2048xf64>, vector<4xf64>
                  %4 = arith.mulf %1, %2 : vector<4xf64>
                  %5 = arith.addf %3, %4 : vector<4xf64>
                  affine.vector_store %5, %arg2[%arg3, %arg4] : memref<2048x2048xf64>, vector<4xf64>
                }
              }
            }
            return
          }
        }
        """)


def test_golden_symbolic_bound_hoisted_broadcasts_and_epilogue():
    """A function argument is broadcast and a constant splatted once, before the loop; the
    epilogue starts at the last multiple of 16 below %n (and never below the lower bound)."""
    text = """
        func.func @axpy(%x: memref<100xf32>, %y: memref<100xf32>, %a: f32, %n: index) {
          %two = arith.constant 2.0 : f32
          affine.for %j = 0 to %n {
            %u = affine.load %x[%j] : memref<100xf32>
            %v = affine.load %y[%j] : memref<100xf32>
            %p = arith.mulf %a, %u : f32
            %q = arith.addf %p, %v : f32
            %r = arith.mulf %q, %two : f32
            affine.store %r, %y[%j] : memref<100xf32>
          }
          return
        }
        """
    assert_golden(vectorized(text, 0, 16), """
        #map = affine_map<()[s0] -> (s0 - 15)>
        #map1 = affine_map<()[s0] -> (0, (s0 floordiv 16) * 16)>
        module {
          func.func @axpy(%arg0: memref<100xf32>, %arg1: memref<100xf32>, %arg2: f32, %arg3: index) {
            %cst = arith.constant 2.000000e+00 : f32
            %0 = vector.broadcast %arg2 : f32 to vector<16xf32>
            %cst_0 = arith.constant dense<2.000000e+00> : vector<16xf32>
            affine.for %arg4 = 0 to #map()[%arg3] step 16 {
              %1 = affine.vector_load %arg0[%arg4] : memref<100xf32>, vector<16xf32>
              %2 = affine.vector_load %arg1[%arg4] : memref<100xf32>, vector<16xf32>
              %3 = arith.mulf %0, %1 : vector<16xf32>
              %4 = arith.addf %3, %2 : vector<16xf32>
              %5 = arith.mulf %4, %cst_0 : vector<16xf32>
              affine.vector_store %5, %arg1[%arg4] : memref<100xf32>, vector<16xf32>
            }
            affine.for %arg4 = max #map1()[%arg3] to %arg3 {
              %1 = affine.load %arg0[%arg4] : memref<100xf32>
              %2 = affine.load %arg1[%arg4] : memref<100xf32>
              %3 = arith.mulf %arg2, %1 : f32
              %4 = arith.addf %3, %2 : f32
              %5 = arith.mulf %4, %cst : f32
              affine.store %5, %arg1[%arg4] : memref<100xf32>
            }
            return
          }
        }
        """)


def test_golden_min_bounded_tile_loop_gets_a_guarded_epilogue():
    """j in [16 jt, min(16 jt + 16, 45)) with W = 8: full tiles need no epilogue (16 is a
    multiple of 8), so only the edge case `45 is the smaller bound` keeps a guarded one."""
    text = """
        func.func @f(%A: memref<45xf64>, %B: memref<45xf64>) {
          affine.for %jt = 0 to 3 {
            affine.for %j = affine_map<(d0) -> (d0 * 16)>(%jt) to min affine_map<(d0) -> (d0 * 16 + 16, 45)>(%jt) {
              %a = affine.load %A[%j] : memref<45xf64>
              %b = arith.addf %a, %a : f64
              affine.store %b, %B[%j] : memref<45xf64>
            }
          }
          return
        }
        """
    assert_golden(vectorized(text, 1, 8), """
        #map = affine_map<(d0) -> (d0 * 16)>
        #map1 = affine_map<(d0) -> (d0 * 16 + 9, 38)>
        #map2 = affine_map<(d0) -> (d0 * 16, d0 * 16 + (d0 * -2 + 5) * 8)>
        #set = affine_set<(d0) : (d0 * 16 - 30 >= 0)>
        module {
          func.func @f(%arg0: memref<45xf64>, %arg1: memref<45xf64>) {
            affine.for %arg2 = 0 to 3 {
              affine.for %arg3 = #map(%arg2) to min #map1(%arg2) step 8 {
                %0 = affine.vector_load %arg0[%arg3] : memref<45xf64>, vector<8xf64>
                %1 = arith.addf %0, %0 : vector<8xf64>
                affine.vector_store %1, %arg1[%arg3] : memref<45xf64>, vector<8xf64>
              }
              affine.if #set(%arg2) {
                affine.for %arg3 = max #map2(%arg2) to 45 {
                  %0 = affine.load %arg0[%arg3] : memref<45xf64>
                  %1 = arith.addf %0, %0 : f64
                  affine.store %1, %arg1[%arg3] : memref<45xf64>
                }
              }
            }
            return
          }
        }
        """)


def test_golden_register_tile_with_vector_fma_accumulators():
    text = register_tile(4, 16, 8, "f64", rows=2)
    assert_golden(vectorized(text, 1, 8, check=check_parallel, fma=True), """
        module {
          func.func @f(%arg0: memref<4x8xf64>, %arg1: memref<8x16xf64>, %arg2: memref<4x16xf64>) {
            %cst = arith.constant 0.000000e+00 : f64
            affine.for %arg3 = 0 to 4 step 2 {
              %cst_0 = arith.constant dense<0.000000e+00> : vector<8xf64>
              affine.for %arg4 = 0 to 16 step 8 {
                %0 = affine.vector_load %arg2[%arg3, %arg4] : memref<4x16xf64>, vector<8xf64>
                %1:2 = affine.for %arg5 = 0 to 8 iter_args(%arg6 = %0, %arg7 = %cst_0) -> (vector<8xf64>, vector<8xf64>) {
                  %4 = affine.vector_load %arg1[%arg5, %arg4] : memref<8x16xf64>, vector<8xf64>
                  %5 = affine.load %arg0[%arg3, %arg5] : memref<4x8xf64>
                  %6 = vector.broadcast %5 : f64 to vector<8xf64>
                  %7 = vector.fma %6, %4, %arg6 : vector<8xf64>
                  %8 = affine.load %arg0[%arg3 + 1, %arg5] : memref<4x8xf64>
                  %9 = vector.broadcast %8 : f64 to vector<8xf64>
                  %10 = vector.fma %9, %4, %arg7 : vector<8xf64>
                  affine.yield %7, %10 : vector<8xf64>, vector<8xf64>
                }
                affine.vector_store %1#0, %arg2[%arg3, %arg4] : memref<4x16xf64>, vector<8xf64>
                %2 = affine.vector_load %arg2[%arg3 + 1, %arg4] : memref<4x16xf64>, vector<8xf64>
                %3 = arith.addf %2, %1#1 : vector<8xf64>
                affine.vector_store %3, %arg2[%arg3 + 1, %arg4] : memref<4x16xf64>, vector<8xf64>
              }
            }
            return
          }
        }
        """)


# ---------------------------------------------------------------------------------------------
# refusals: the message names the op and the memref, the IR is untouched

REFUSALS = [
    # (body of the j loop over %j = 0 to 64, expected message, loop-carried check too?)
    ("%v = affine.load %x[%j] : memref<65xf64>\n"
     "affine.store %v, %x[%j + 1] : memref<65xf64>",
     "its iterations may not be independent: 'affine.store' writes %arg0 and 'affine.load' "
     "reads it"),
    ("%v = affine.load %x[%j * 2] : memref<65xf64>\n"
     "affine.store %v, %y[0, %j] : memref<8x65xf64>",
     "'affine.load' op loads from %arg0 with stride 2 along %arg3"),
    ("%v = affine.load %z[%j, 0] : memref<65x65xf64>\n"
     "affine.store %v, %x[%j] : memref<65xf64>",
     "'affine.load' op loads from %arg2 along a dimension other than the last"),
    ("%v = affine.load %y[0, %j floordiv 3] : memref<8x65xf64>\n"
     "affine.store %v, %x[%j] : memref<65xf64>",
     "'affine.load' op loads from %arg1 with a subscript that is not affine in %arg3"),
    ("%v = affine.load %x[%j] : memref<65xf64>\n"
     "affine.store %v, %z[%j, 0] : memref<65x65xf64>",
     "'affine.store' op stores to %arg2 along a dimension other than the last"),
    ("%v = affine.load %x[%j] : memref<65xf64>\n"
     "affine.store %v, %y[0, 0] : memref<8x65xf64>",
     "'affine.store' op stores a value that differs between iterations to %arg1 at a place "
     "that does not"),
    ("%i = arith.index_cast %j : index to i64\n"
     "%f = arith.sitofp %i : i64 to f64\n"
     "affine.store %f, %x[%j] : memref<65xf64>",
     "'arith.index_cast' op uses the induction variable as a value"),
    ("affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) {\n"
     "  %v = affine.load %x[%k] : memref<65xf64>\n"
     "  affine.store %v, %y[0, %j] : memref<8x65xf64>\n"
     "}",
     "'affine.for' op has bounds that depend on %arg3"),
    ("affine.if affine_set<(d0) : (d0 - 10 >= 0)>(%j) {\n"
     "  %v = affine.load %x[%j] : memref<65xf64>\n"
     "  affine.store %v, %y[0, %j] : memref<8x65xf64>\n"
     "}",
     "'affine.if' op has a condition that depends on %arg3"),
    ("%t = memref.alloca() : memref<1xf64>\n"
     "%v = affine.load %x[%j] : memref<65xf64>\n"
     "affine.store %v, %t[0] : memref<1xf64>",
     "'memref.alloca' op has side effects"),
]


@pytest.mark.parametrize("body, message", REFUSALS)
def test_refusals_leave_the_ir_untouched(body, message):
    text = ("func.func @f(%x: memref<65xf64>, %y: memref<8x65xf64>, %z: memref<65x65xf64>) {\n"
            "  affine.for %j = 0 to 64 {\n" + textwrap.indent(body, "    ") + "\n  }\n"
            "  return\n}\n")
    module = polyopt.parse(text, "refuse.mlir")
    before = str(module)
    with pytest.raises(ScheduleError) as err:
        vectorize_loop(loops_of(module)[0], 8)
    assert message in err.value.message
    assert err.value.loc is not None and err.value.loc.file.name == "refuse.mlir"
    assert str(module) == before


def test_non_parallel_loop_is_refused_by_the_isl_check_with_a_violating_pair():
    text = """
        func.func @f(%x: memref<65xf64>) {
          affine.for %j = 0 to 64 {
            %v = affine.load %x[%j] : memref<65xf64>
            affine.store %v, %x[%j + 1] : memref<65xf64>
          }
          return
        }
        """
    module = polyopt.parse(textwrap.dedent(text))
    before = str(module)
    with pytest.raises(ScheduleError, match=r"cannot vectorize the loop over %arg1: it carries a "
                                            r"RAW dependence on %arg0 from S0\[0\] to S0\[1\]"):
        vectorize_loop(loops_of(module)[0], 8, check=check_parallel)
    assert str(module) == before


def test_isl_check_on_a_register_tile_with_a_carried_dependence():
    """The model does not represent iter_args: the memory-based test decides, and names the
    iterations."""
    text = register_tile(4, 16, 8, "f64").replace("%C[%i + 1, %j]", "%C[%i + 1, %j + 1]", 1)
    module = polyopt.parse(text)
    j_loop = loops_of(module)[1]
    assert not is_loop_parallel(j_loop)
    with pytest.raises(ScheduleError, match=r"'affine.store' writes %arg2 in iteration "
                                            r"%arg4 = \d+ and 'affine.load' reads the same "
                                            r"element in iteration %arg4 = \d+"):
        check_parallel(j_loop)
    ok = polyopt.parse(register_tile(4, 16, 8, "f64"))
    assert is_loop_parallel(loops_of(ok)[1])


def test_isl_check_is_more_precise_than_the_syntactic_one():
    """x[j] = x[j + 64]: different iterations never touch the same element (the read range
    starts where the written one ends), which only ISL proves."""
    text = """
        func.func @f(%x: memref<128xf64>) {
          affine.for %j = 0 to 64 {
            %v = affine.load %x[%j + 64] : memref<128xf64>
            affine.store %v, %x[%j] : memref<128xf64>
          }
          return
        }
        """
    module = polyopt.parse(textwrap.dedent(text))
    loop = loops_of(module)[0]
    with pytest.raises(ScheduleError, match="not provable without ISL"):
        check_independent_iterations(loop)
    check_parallel(loop)
    vectorize_loop(loop, 8, check=check_parallel)
    x = rand(128, "f64", 6)
    expected = x.copy()
    expected[:64] = x[64:]
    polyopt.compile(module)["f"](x)
    np.testing.assert_array_equal(x, expected)


def test_reduction_along_the_loop_and_refusing_checks():
    text = """
        func.func @f(%x: memref<64xf64>, %s: f64) -> f64 {
          %r = affine.for %j = 0 to 64 iter_args(%a = %s) -> (f64) {
            %v = affine.load %x[%j] : memref<64xf64>
            %n = arith.addf %a, %v : f64
            affine.yield %n : f64
          }
          return %r : f64
        }
        """
    module = polyopt.parse(textwrap.dedent(text))
    with pytest.raises(ScheduleError, match="a reduction along the vectorized loop is not "
                                            "supported"):
        vectorize_loop(loops_of(module)[0], 8)
    module = polyopt.parse(ref_and_vec(ELEMENTWISE, [{"N": 64}], "f64"))
    loop = loops_of(funcs(module)["vec_0"])[0]
    with pytest.raises(ScheduleError, match="not independent"):
        vectorize_loop(loop, 8, check=lambda l: False)
    assert loop.step == 1


# ---------------------------------------------------------------------------------------------
# interop: upstream lowering + mlir-runner-22 prints what `polyopt run` prints


def main_for(m: int, n: int, k: int, t: str, name: str = "f") -> str:
    """@main: fill A, B, C with small integers (exact in f32 and f64, so no rounding
    difference can hide), call @f, print C with printMemrefF32/F64."""
    P = "F64" if t == "f64" else "F32"
    fills = []
    for mem, (a, b), (p, q) in (("A", (m, k), (5, 3)), ("B", (k, n), (2, 3)),
                                ("C", (m, n), (3, 1))):
        fills.append(f"""
  affine.for %i = 0 to {a} {{
    affine.for %j = 0 to {b} {{
      %v = affine.apply affine_map<(d0, d1) -> ((d0 * {p} + d1 * {q}) mod 7)>(%i, %j)
      %w = arith.index_cast %v : index to i64
      %f = arith.sitofp %w : i64 to {t}
      %g = arith.subf %f, %three : {t}
      affine.store %g, %{mem}[%i, %j] : memref<{a}x{b}x{t}>
    }}
  }}""")
    return f"""
func.func private @printMemref{P}(memref<*x{t}>)
func.func @main() {{
  %three = arith.constant 3.0 : {t}
  %A = memref.alloc() : memref<{m}x{k}x{t}>
  %B = memref.alloc() : memref<{k}x{n}x{t}>
  %C = memref.alloc() : memref<{m}x{n}x{t}>
{"".join(fills)}
  func.call @{name}(%A, %B, %C) : (memref<{m}x{k}x{t}>, memref<{k}x{n}x{t}>, memref<{m}x{n}x{t}>) -> ()
  %U = memref.cast %C : memref<{m}x{n}x{t}> to memref<*x{t}>
  func.call @printMemref{P}(%U) : (memref<*x{t}>) -> ()
  memref.dealloc %A : memref<{m}x{k}x{t}>
  memref.dealloc %B : memref<{k}x{n}x{t}>
  memref.dealloc %C : memref<{m}x{n}x{t}>
  return
}}
"""


def _naive(t):
    m, n, k = 5, 37, 9
    module = polyopt.parse(MATMUL.format(M=m, N=n, K=k, T=t) + main_for(m, n, k, t))
    vectorize_loop(loops_of(funcs(module)["f"])[1], width(t), check=check_parallel)
    return module


def _tiled(t):
    m, n, k = 7, 3 * width(t) + 5, 6
    module = polyopt.parse(MATMUL.format(M=m, N=n, K=k, T=t) + main_for(m, n, k, t))
    f = funcs(module)["f"]
    apply_schedule(f, {"S0": blis(4, 4, 2 * width(t), 2)})
    vectorize_loop(loops_of(f)[-1], width(t), check=check_parallel)
    assert any(isinstance(o, AffineIfOp) for o in f.walk())
    return module


def _tile(t):
    m, n, k = 4, 2 * width(t) + 3, 5
    module = polyopt.parse(register_tile(m, n, k, t) + main_for(m, n, k, t))
    vectorize_loop(loops_of(funcs(module)["f"])[1], width(t), check=check_parallel, fma=True)
    return module


@pytest.mark.parametrize("build, t", [(_naive, "f64"), (_tiled, "f32"), (_tile, "f64")],
                         ids=["naive-f64", "blis-tiled-f32", "register-tile-f64"])
def test_mlir_runner_prints_what_polyopt_run_prints(build, t, tmp_path, capsys):
    module = build(t)
    verify(module)
    text = str(module)
    assert "affine.vector_load" in text
    passes = ["--lower-affine", "--convert-vector-to-scf", "--convert-scf-to-cf",
              "--convert-vector-to-llvm", "--finalize-memref-to-llvm", "--convert-math-to-llvm",
              "--convert-arith-to-llvm", "--convert-func-to-llvm", "--convert-cf-to-llvm",
              "--reconcile-unrealized-casts"]
    upstream = lower_and_run(text, passes, timeout=60)
    ours = polyopt_run(tmp_path, capsys, text, name="vectorized.mlir")
    assert mask_addresses(ours) == mask_addresses(upstream)
    assert "data =" in ours and ours.count("[") > 3
