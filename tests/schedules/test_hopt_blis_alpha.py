"""``--hopt --hopt-blis`` with ``hop.matmul``'s ``alpha``/``beta`` (C = alpha*A*B + beta*C).

Regression tests of issue 13's silent wrong answer: the micro-kernel call replaced the register
tile's statement ``C += (alpha * A) * B`` and dropped alpha (7x13x5, all ones, alpha = 2.5,
beta = 0.5 gave 5.5 instead of 13.0).  The tile's scalar factor is now the kernel's alpha; these
tests run every kernel this CPU has (f32 and f64, the swapped skx kernel), full and edge tiles
(the stack tile), operand layouts, beta = 0 (C not read), beta != 1 and negative alpha, against
numpy, and check that a tile with anything but the product is refused, not miscompiled."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.codegen import microkernels
from polyopt.codegen.target import host_target
from polyopt.pipeline import PipelineOptions, run_passes
from polyopt.schedules.microkernel_call import map_to_microkernels

DTYPES = {"f64": np.float64, "f32": np.float32}


def runnable_kernels():
    kernels = [k for k in microkernels.REGISTRY
               if not microkernels.missing_features(k, host_target())]
    assert kernels, "no registered BLIS micro-kernel runs on this CPU"
    return kernels


KERNELS = [k.symbol for k in runnable_kernels()]


def scaled_text(m, n, k, t, alpha=None, beta=None, layouts=(None, None, None), attrs=""):
    """``@matmul`` with one hop.matmul C = alpha*A*B + beta*C; ``layouts`` of A, B, C."""
    def mt(shape, layout):
        return f"memref<{shape[0]}x{shape[1]}x{t}" + (f", {layout}>" if layout else ">")
    ta, tb, tc = mt((m, k), layouts[0]), mt((k, n), layouts[1]), mt((m, n), layouts[2])
    items = [attrs] if attrs else []
    items += [f"{name} = {v!r} : {t}" for name, v in (("alpha", alpha), ("beta", beta))
              if v is not None]
    attr = f" {{{', '.join(items)}}}" if items else ""
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attr} : ({ta}, {tb}, {tc})\n  return\n}}\n")


def expected(a, b, c, alpha, beta):
    al = 1.0 if alpha is None else alpha
    be = 1.0 if beta is None else beta
    ref = al * (a.astype(np.float64) @ b.astype(np.float64))
    return ref if be == 0 else ref + be * c.astype(np.float64)


def run_scaled(m, n, k, t, alpha, beta, kernel=None, seed=0, attrs=""):
    compiled = polyopt.compile(scaled_text(m, n, k, t, alpha, beta, attrs=attrs), hopt=True,
                               blis=True, blis_kernel=kernel)
    dtype = DTYPES[t]
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(dtype)
    c = rng.uniform(-1, 1, (m, n)).astype(dtype)
    want = expected(a, b, c, alpha, beta)
    compiled["matmul"](a, b, c)
    tol = (1e-12 if t == "f64" else 1e-5) * max(k, 1) * max(1.0, abs(alpha or 1))
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_issue_example_all_ones(t):
    """The issue's case: every element is 0.5 * 1 + 2.5 * 5 = 13."""
    compiled = polyopt.compile(scaled_text(7, 13, 5, t, 2.5, 0.5), hopt=True, blis=True)
    dtype = DTYPES[t]
    a, b, c = np.ones((7, 5), dtype), np.ones((5, 13), dtype), np.ones((7, 13), dtype)
    compiled["matmul"](a, b, c)
    np.testing.assert_array_equal(c, np.full((7, 13), 13.0, dtype))


def test_alpha_is_the_calls_last_operand():
    """The tile's product is gone: alpha is the call's last operand, and the only mulf left
    is the beta nest's C *= 0.5."""
    module = polyopt.parse(scaled_text(7, 13, 5, "f64", 2.5, 0.5))
    run_passes(module, PipelineOptions(hopt=True, blis=True))
    out = str(module)
    alpha = next(line for line in out.splitlines() if "arith.constant 2.500000e+00" in line)
    name = alpha.split("=")[0].strip()
    call = next(line for line in out.splitlines() if "call @polyopt_bli_" in line)
    assert call.split("(")[1].split(")")[0].split(", ")[-1] == name
    assert out.count("arith.mulf") == 1


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("alpha, beta", [(2.5, 0.5), (-1.75, None), (None, 0.0), (-0.5, 0.0),
                                         (3.0, -2.0), (1.0, 1.0)])
def test_every_kernel_alpha_beta(kernel, alpha, beta):
    spec = microkernels.lookup(kernel)
    for m, n, k in [(7, 13, 5), (spec.m_r + 1, spec.n_r - 1, 33), (2 * spec.m_r, spec.n_r, 3)]:
        run_scaled(m, n, k, spec.dtype, alpha, beta, kernel=kernel)


@pytest.mark.parametrize("kernel", KERNELS)
def test_97x101x103(kernel):
    spec = microkernels.lookup(kernel)
    run_scaled(97, 101, 103, spec.dtype, -1.25, 0.75, kernel=kernel, seed=3)


@pytest.mark.parametrize("t", ["f64", "f32"])
def test_97x101x103_default_kernel(t):
    run_scaled(97, 101, 103, t, 2.5, 0.5, seed=4)


def test_beta_zero_does_not_read_c():
    """beta = 0: NaNs in C do not survive (BLAS semantics), through full and edge tiles."""
    m, n, k = 45, 38, 19
    compiled = polyopt.compile(scaled_text(m, n, k, "f64", -2.0, 0.0), hopt=True, blis=True)
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    c = np.full((m, n), np.nan)
    compiled["matmul"](a, b, c)
    np.testing.assert_allclose(c, -2.0 * a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_layouts_with_alpha_beta(kernel):
    """A transposed, B with an offset, C with a leading dimension: the gap between C's rows
    is left alone."""
    spec = microkernels.lookup(kernel)
    t, dtype = spec.dtype, DTYPES[spec.dtype]
    m, n, k, ld, off = 37, 29, 41, 40, 3
    layouts = ("affine_map<(d0, d1) -> (d1, d0)>", f"strided<[{n}, 1], offset: {off}>",
               f"strided<[{ld}, 1]>")
    compiled = polyopt.compile(scaled_text(m, n, k, t, -0.5, 1.5, layouts), hopt=True,
                               blis=True, blis_kernel=kernel)
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(dtype)
    c = rng.uniform(-1, 1, (m, n)).astype(dtype)
    b_buf = np.concatenate([np.full(off, 9.0, dtype), b.ravel()])
    c_buf = np.full((m, ld), 7.5, dtype)
    c_buf[:, :n] = c
    compiled["matmul"](np.ascontiguousarray(a.T), b_buf, c_buf)
    tol = 1e-12 * k if t == "f64" else 1e-4
    np.testing.assert_allclose(c_buf[:, :n], expected(a, b, c, -0.5, 1.5), rtol=tol, atol=tol)
    assert (c_buf[:, n:] == 7.5).all()


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(2, 70), n=st.integers(2, 70), k=st.integers(2, 70),
       kernel=st.sampled_from(KERNELS),
       alpha=st.one_of(st.none(), st.sampled_from([0.0, -1.0, 0.5, -3.25, 1.0, 7.0])),
       beta=st.one_of(st.none(), st.sampled_from([0.0, 1.0, -0.5, 2.0])),
       mc_tiles=st.integers(1, 3), kc=st.sampled_from([None, 4, 8, 20]),
       seed=st.integers(0, 2 ** 16))
def test_hypothesis_alpha_beta(m, n, k, kernel, alpha, beta, mc_tiles, kc, seed):
    spec = microkernels.lookup(kernel)
    attrs = f"M_C = {mc_tiles * spec.m_r} : i32" + (f", K_C = {kc} : i32" if kc else "")
    run_scaled(m, n, k, spec.dtype, alpha, beta, kernel=kernel, seed=seed, attrs=attrs)


# ---------------------------------------------------------------------------------------------
# what the mapping refuses: a tile whose statement is not C += alpha * A * B

MARKED = """func.func @f(%A: memref<4x8x6xf64>, %B: memref<4x8x8xf64>, %C: memref<6x8xf64>) {{
  affine.for %k = 0 to 8 {{
    affine.for %i = 0 to 6 {{
      affine.for %j = 0 to 8 {{
        %a = affine.load %A[0, %k, %i] : memref<4x8x6xf64>
        %b = affine.load %B[0, %k, %j] : memref<4x8x8xf64>
        %c = affine.load %C[%i, %j] : memref<6x8xf64>
{body}
        affine.store %r, %C[%i, %j] : memref<6x8xf64>
      }}
    }}
  }} {{polyopt.microkernel = "bli_dgemm_haswell_asm_6x8", polyopt.m_r = 6 : i64, polyopt.n_r = 8 : i64}}
  return
}}
"""


def map_marked(body):
    module = polyopt.parse(MARKED.format(body=body), "tile.mlir")
    map_to_microkernels(module)
    return module


def test_plain_product_maps_with_alpha_one():
    out = str(map_marked("        %p = arith.mulf %a, %b : f64\n"
                         "        %r = arith.addf %c, %p : f64"))
    assert "arith.constant 1.000000e+00 : f64" in out and "affine.for" not in out


def test_scalar_from_outside_is_alpha():
    text = MARKED.replace("%C: memref<6x8xf64>) {{", "%C: memref<6x8xf64>, %s: f64) {{")
    module = polyopt.parse(text.format(body="        %x = arith.mulf %b, %s : f64\n"
                                            "        %p = arith.mulf %a, %x : f64\n"
                                            "        %r = arith.addf %p, %c : f64"), "tile.mlir")
    map_to_microkernels(module)
    out = str(module)
    assert "%c0, %arg3) : (" in out  # the argument %s is the call's alpha


@pytest.mark.parametrize("body, why", [
    ("        %p = arith.mulf %a, %b : f64\n        %r = arith.subf %c, %p : f64",
     "the stored value is not a floating-point sum"),
    ("        %p = arith.addf %a, %b : f64\n        %r = arith.addf %c, %p : f64",
     "'arith.addf' in the product"),
    ("        %p = arith.mulf %a, %a : f64\n        %r = arith.addf %c, %p : f64",
     "'affine.load' besides the product"),
    ("        %p = arith.mulf %a, %b : f64\n        %q = arith.mulf %p, %b : f64\n"
     "        %r = arith.addf %c, %q : f64", "3 panel loads in the product, not 2"),
    ("        %p = arith.mulf %a, %b : f64\n        %e = arith.divf %p, %a : f64\n"
     "        %r = arith.addf %c, %p : f64", "'arith.divf' besides the product"),
    ("        %p = arith.mulf %a, %b : f64\n        %r = arith.addf %p, %p : f64",
     "no accumulation into the stored element of C"),
])
def test_other_statements_are_refused(body, why):
    with pytest.raises(ScheduleError, match="--hopt-blis: ") as info:
        map_marked(body)
    assert why in info.value.message
    assert info.value.loc.line == 2


def test_panel_in_the_wrong_layout_is_refused():
    text = MARKED.replace("%A[0, %k, %i]", "%A[0, %i, %k]").replace("affine.for %i = 0 to 6",
                                                                    "affine.for %i = 0 to 4")
    with pytest.raises(ScheduleError, match=r"the packed A panel \(memref<4x8x6xf64>\) is not "
                                            r"in the micro-kernel's layout"):
        map_to_microkernels(polyopt.parse(text.format(
            body="        %p = arith.mulf %a, %b : f64\n        %r = arith.addf %c, %p : f64")))
