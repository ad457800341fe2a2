"""``linalg.softmax`` under --hopt: vector loops (max, exp with fastmath<afn> and sum,
division), rows on the threads; along another dimension, vectors of its contiguous columns;
numpy's softmax on every length (whole vectors, a masked tail, shorter than a vector), in
place, on special rows and columns as the scalar decomposition computes them; the other cases
stay scalar and say why."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.codegen.vector_math import libmvec_loaded
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
VECTORS = "linalg.softmax: {rows} row{s} of {n} as vectors of"


def source(shape, dim=None, t="f32", in_place=False) -> str:
    ty = f"memref<{'x'.join(map(str, shape))}x{t}>"
    dim = len(shape) - 1 if dim is None else dim
    return (f"func.func @f(%x: {ty}, %y: {ty}) {{\n  linalg.softmax dimension({dim}) "
            f"ins(%x : {ty}) outs({'%x' if in_place else '%y'} : {ty})\n  return\n}}\n")


def softmax(x, axis=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def assert_within_bound(y, x, axis=-1, sequential=False):
    """Against the f64 softmax: ``x - max`` rounded to the type moves ``exp`` by ``|x - max|``
    units of roundoff ``u`` (the problem's conditioning, the same for any order), libmvec's
    exp is within 4 ulp, the sum of ``n`` terms in 8 or 16 lanes then a tree within ``n / 8 + 4``
    roundings (``sequential``, one lane per column in the order of the rows: ``n``), the
    division one: ``|y - r| <= r u (|x - max| + n / 8 + 10)``, plus the spacing of subnormal
    results."""
    info = np.finfo(y.dtype)
    u = float(info.eps) / 2
    x64 = x.astype(np.float64)
    d = np.abs(x64 - x64.max(axis, keepdims=True))
    r = softmax(x, axis)
    n = x.shape[axis]
    bound = r * u * (d + (n if sequential else n / 8) + 10) + float(info.smallest_subnormal)
    assert (np.abs(y - r) <= bound).all(), np.max(np.abs(y - r) / bound)


def compiled(src, threads=1, **switches):
    remarks = []
    mod = polyopt.compile(src, threads=threads, remark=lambda loc, m: remarks.append(m),
                          **(switches or ALL))
    return mod, remarks


@pytest.mark.parametrize("shape", [(1,), (7,), (2, 1), (4, 16), (4, 64), (4, 65), (3, 37),
                                   (3, 5, 100), (9, 1000)])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_every_length_matches_numpy(shape, t):
    mod, remarks = compiled(source(shape, t=t))
    rows = int(np.prod(shape[:-1]))
    assert any(VECTORS.format(rows=rows, s="s" if rows > 1 else "", n=shape[-1]) in r
               for r in remarks), remarks
    dtype = np.float32 if t == "f32" else np.float64
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 20).astype(dtype)
    y = np.zeros_like(x)
    mod["f"](x, y)
    assert_within_bound(y, x)


def test_in_place_and_on_two_threads():
    shape = (40, 1003)
    mod, remarks = compiled(source(shape, in_place=True), threads=2)
    assert any("the 40 rows on 2 threads" in r for r in remarks), remarks
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x0 = x.copy()
    mod["f"](x, x)
    assert_within_bound(x, x0)


def test_special_rows_as_the_scalar_decomposition():
    """-inf, +inf, NaN, all -inf (0/0), the most negative values: NaN where the scalar
    decomposition gives NaN, the same values elsewhere; lengths with and without a tail."""
    for n in (16, 21):
        rows = np.random.default_rng(n).standard_normal((6, n)).astype(np.float32)
        rows[0, 3] = -np.inf
        rows[1, 2] = np.inf
        rows[2, 5] = np.nan
        rows[3, :] = -np.inf
        rows[4, :] = np.finfo(np.float32).min
        rows[5, n - 1] = 80.0
        vec, _ = compiled(source((6, n)))
        scalar, _ = compiled(source((6, n)), hopt=False)
        got, want = np.zeros_like(rows), np.zeros_like(rows)
        vec["f"](rows, got)
        scalar["f"](rows, want)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
        assert np.isnan(got[3]).all() and np.isnan(got[1]).all() and np.isnan(got[2]).all()


COLUMNS = "linalg.softmax: {cols} column{s} of {n} (dimension {dim}) as vectors of {w} "


@pytest.mark.parametrize("shape, dim, w32", [
    ((5, 6), 0, 8), ((64, 48), 0, 16), ((7, 37, 19), 1, 16), ((7, 37, 19), 0, 16),
    ((2, 3, 100, 5), 2, 8), ((3, 1000), 0, 16), ((9, 70, 3), 1, 4), ((1, 1), 0, 4),
    ((4, 200), 0, 16)])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_every_other_dimension_takes_vectors_of_columns(shape, dim, w32, t):
    """Chunks of 4 vectors of the contiguous columns, a masked tail, narrower vectors for
    fewer columns (with AVX-512: 16 f32 or 8 f64 lanes at most)."""
    mod, remarks = compiled(source(shape, dim=dim, t=t))
    cols = int(np.prod(shape)) // shape[dim]
    lanes = polyopt.pipeline.machine_model().vector_bits // (32 if t == "f32" else 64)
    w = min(w32, lanes)
    assert any(COLUMNS.format(cols=cols, s="s" if cols > 1 else "", n=shape[dim], dim=dim,
                              w=w) in r for r in remarks), remarks
    dtype = np.float32 if t == "f32" else np.float64
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 20).astype(dtype)
    y = np.zeros_like(x)
    mod["f"](x, y)
    assert_within_bound(y, x, dim, sequential=True)


@pytest.mark.parametrize("shape, dim, teams", [((300, 200), 0, "the chunks of columns"),
                                               ((6, 40, 99), 1, "the outer index")])
def test_columns_in_place_and_on_two_threads(shape, dim, teams):
    mod, remarks = compiled(source(shape, dim=dim, in_place=True), threads=2)
    assert any(f"{teams} on 2 threads" in r for r in remarks), remarks
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x0 = x.copy()
    mod["f"](x, x)
    assert_within_bound(x, x0, dim, sequential=True)


def test_special_columns_as_the_scalar_decomposition():
    for n in (16, 21):
        cols = np.random.default_rng(n).standard_normal((6, n)).astype(np.float32)
        cols[0, 3] = -np.inf
        cols[1, 2] = np.inf
        cols[2, 5] = np.nan
        cols[3, :] = -np.inf
        cols[4, :] = np.finfo(np.float32).min
        cols[5, n - 1] = 80.0
        cols = np.ascontiguousarray(cols.T)          # (n, 6): the specials along dimension 0
        vec, _ = compiled(source((n, 6), dim=0))
        scalar, _ = compiled(source((n, 6), dim=0), hopt=False)
        got, want = np.zeros_like(cols), np.zeros_like(cols)
        vec["f"](cols, got)
        scalar["f"](cols, want)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
        assert np.isnan(got[:, 3]).all() and np.isnan(got[:, 1]).all()


def test_the_columns_ir_is_upstreams():
    from polyopt.affine.printer import print_module
    from polyopt.pipeline import PipelineOptions, load, run_passes
    text = print_module(run_passes(load(source((7, 37, 19), dim=1)), PipelineOptions(**ALL)))
    assert "vector.maskedload" in text and "fastmath<afn>" in text
    assert mlir_opt(text) == text


@pytest.mark.parametrize("src, why", [
    (source((4, 8), t="f16"), "its elements are f16"),
])
def test_other_softmaxes_stay_scalar_and_say_why(src, why):
    mod, remarks = compiled(src)
    assert any(f"linalg.softmax: scalar loops, not vectors: {why}" in r for r in remarks)
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float16)
    y = np.zeros_like(x)
    mod["f"](x, y)
    np.testing.assert_allclose(y, softmax(x), rtol=2e-3)


def test_without_hopt_vect_the_scalar_loops_and_the_pipelines_ir_is_upstreams():
    src = source((3, 37))
    mod, remarks = compiled(src, hopt=True, copy=True)
    assert not any("as vectors" in r for r in remarks)
    x = np.random.default_rng(3).standard_normal((3, 37)).astype(np.float32)
    y = np.zeros_like(x)
    mod["f"](x, y)
    np.testing.assert_allclose(y, softmax(x), rtol=1e-6)
    from polyopt.affine.printer import print_module
    from polyopt.pipeline import PipelineOptions, load, run_passes
    module = run_passes(load(src), PipelineOptions(**ALL))
    text = print_module(module)
    assert "math.exp" in text and "fastmath<afn>" in text and "vector.reduction <add>" in text
    assert mlir_opt(text) == text


@pytest.mark.skipif(not libmvec_loaded(), reason="no libmvec in this C library")
def test_the_exp_is_libmvecs():
    mod, _ = compiled(source((4, 64)))
    assert "_ZGV" in mod.llvm_ir


@pytest.mark.parametrize("shape", [(3, 37), (9, 1000)])
def test_on_an_avx2_target_eight_lanes(shape):
    """The code an AVX2 CPU gets (8 lanes, libmvec's AVX2 exp), run here: every x86-64 CPU
    this project meets has AVX2."""
    from polyopt.codegen.target import Target, compiling_for, host_target
    if not host_target().has_avx2:
        pytest.skip("this CPU has no avx2")
    haswell = Target.from_features("x86_64-unknown-linux-gnu", "haswell",
                                   "+avx,+avx2,+fma,+f16c", (32 << 10, 256 << 10, 8 << 20))
    with compiling_for(haswell):
        mod, remarks = compiled(source(shape))
    assert any("as vectors of 8 f32" in r for r in remarks), remarks
    x = (np.random.default_rng(5).standard_normal(shape) * 20).astype(np.float32)
    y = np.zeros_like(x)
    mod["f"](x, y)
    assert_within_bound(y, x)
