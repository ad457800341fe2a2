"""Matrix-vector products (M = 1 or N = 1) take the GEMV path of
:mod:`polyopt.schedules.gemv` instead of a packed GEMM: checked against numpy on sizes that no
vector width, row group or column block divides, with alpha and beta, on 1 to 3 threads
(bitwise the same results: every element is summed by the same code whatever the thread),
and accepted by upstream ``mlir-opt``."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import ScheduleError
from polyopt.bench import matmul_source
from polyopt.codegen.openmp import MIN_PARALLEL_WORK, iteration_cost
from polyopt.schedules.gemv import gemv_form
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _compile(src, threads=1, **switches):
    remarks = []
    compiled = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg),
                               threads=threads, **{**ALL, **switches})
    return compiled, remarks


def _operands(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = np.float64 if dtype == "f64" else np.float32
    return (rng.uniform(-1, 1, (m, k)).astype(t), rng.uniform(-1, 1, (k, n)).astype(t),
            rng.uniform(-1, 1, (m, n)).astype(t))


def _check(fn, m, n, k, dtype, alpha=1.0, beta=1.0):
    a, b, c = _operands(m, n, k, dtype)
    want = beta * c.astype(np.float64) + alpha * (a.astype(np.float64) @ b.astype(np.float64))
    fn(a, b, c)
    tol = (1e-12 if dtype == "f64" else 2e-5) * max(k, 1) * 4
    np.testing.assert_allclose(c, want, rtol=0, atol=tol)
    return c


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 5, 3), (1, 37, 19), (1, 16, 64),
                                   (1, 2100, 9), (1, 1100, 11), (1, 255, 130),
                                   (5, 1, 3), (37, 1, 45), (9, 1, 33), (130, 1, 77),
                                   (3, 1, 1), (64, 1, 16), (1003, 1, 613)])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_matrix_vector_products_match_numpy(m, n, k, dtype):
    compiled, remarks = _compile(matmul_source(m, n, k, dtype))
    _check(compiled["matmul"], m, n, k, dtype)
    form = "axpy form" if m == 1 and n > 1 else "dot form"
    path = [r for r in remarks if "matrix-vector product" in r]
    # a row shorter than one vector has nothing to vectorize along: it stays a GEMM
    lanes = polyopt.pipeline.machine_model().stream_lanes(8 if dtype == "f64" else 4)
    if m == 1 and 1 < n < lanes:
        assert not path, remarks
    else:
        assert path and form in path[0], remarks
        assert "packed" not in " ".join(remarks)


@pytest.mark.parametrize("m,n,k", [(1, 45, 23), (29, 1, 41)])
def test_alpha_and_beta(m, n, k):
    src = matmul_source(m, n, k, "f64", {"alpha": "2.5 : f64", "beta": "0.5 : f64"})
    compiled, remarks = _compile(src)
    assert any("matrix-vector product" in r for r in remarks), remarks
    _check(compiled["matmul"], m, n, k, "f64", alpha=2.5, beta=0.5)


@pytest.mark.parametrize("m,n,k,dtype", [(1, 3000, 200, "f64"), (1, 4100, 70, "f32"),
                                         (1001, 1, 300, "f64"), (517, 1, 250, "f32")])
def test_threads_give_bitwise_the_same_result(m, n, k, dtype):
    """The same operands at 1, 2 and 3 threads (the aligned forms' sum order depends on where
    A's or B's rows sit in memory, not on the threads)."""
    a, b, c = _operands(m, n, k, dtype)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    results = []
    for threads in (1, 2, 3):
        compiled, remarks = _compile(matmul_source(m, n, k, dtype), threads=threads)
        text = str(compiled.module)
        assert ("affine.parallel" in text) == (threads > 1), remarks
        if threads > 1:
            assert any(f"split over {threads} threads" in r for r in remarks), remarks
        out = c.copy()
        compiled["matmul"](a, b, out)
        np.testing.assert_allclose(out, want, rtol=0,
                                   atol=(1e-12 if dtype == "f64" else 2e-5) * k * 4)
        results.append(out)
    for other in results[1:]:
        assert np.array_equal(results[0], other)


def test_a_matrix_past_l2_streams_more_rows_at_a_time(monkeypatch):
    """The dot form reads 4 rows of A at a time with 2 accumulators each while A fits in L2,
    8 rows with 1 accumulator each past it (more lines in flight from L3 or memory) on a core
    that splits 512-bit loads in halves (Zen 4) or has 256-bit vectors; 4 x 2 at every size
    where 512-bit loads are whole (Zen 5)."""
    import dataclasses

    import polyopt.pipeline
    from polyopt.schedules.gemv import dot_shape, dot_streams_past
    from tests.schedules.test_tile_model import ZEN4, ZEN5
    l2 = 1 << 20
    assert dot_shape(l2, l2) == (4, 2) and dot_shape(l2 + 8, l2) == (8, 1)
    assert dot_shape(l2 + 8, None) == (4, 2)
    avx2 = dataclasses.replace(ZEN4, vector_bits=256, full_width_fma=True)
    assert dot_streams_past(ZEN4) == dot_streams_past(avx2) == ZEN4.l2_bytes
    assert dot_streams_past(ZEN5) is None
    assert gemv_form(2048, 1, 2048, 4, 8, streams_past=l2).rows == 8
    assert gemv_form(256, 1, 256, 4, 8, streams_past=l2).rows == 4
    assert gemv_form(2048, 1, 2048, 4, 16, streams_past=None).rows == 4
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: ZEN4)
    k = ZEN4.l2_bytes // 8 // 100                    # 100 rows of f64 fit, 103 do not
    for m, rows, accumulators in ((100, 4, 2), (103, 8, 1)):
        compiled, remarks = _compile(matmul_source(m, 1, k, "f64"))
        assert any(f"dot form (matrix times column): {rows} rows of A per step, "
                   f"{accumulators} accumulators" in r for r in remarks), remarks
        _check(compiled["matmul"], m, 1, k, "f64")


def test_small_products_stay_on_one_thread():
    form = gemv_form(1, 200, 100, 8, 8, threads=2)
    assert form.threads == 1          # 160 KB: a fork costs more than it saves
    assert gemv_form(1, 2000, 1000, 8, 8, threads=2).threads == 2


def test_upstream_accepts_both_forms_on_threads():
    for m, n, k in ((1, 3001, 301), (1003, 1, 301)):
        compiled, _ = _compile(matmul_source(m, n, k, "f32"), threads=2)
        text = str(compiled.module)
        assert "vector.fma" in text
        assert mlir_opt(text) == text


def test_linalg_matmul_with_a_row_takes_the_path():
    src = """
func.func @vecmat(%A: memref<1x70xf32>, %B: memref<70x50xf32>, %C: memref<1x50xf32>) {
  linalg.matmul ins(%A, %B : memref<1x70xf32>, memref<70x50xf32>) outs(%C : memref<1x50xf32>)
  return
}
"""
    compiled, remarks = _compile(src)
    assert any("matrix-vector product" in r for r in remarks), remarks
    _check(compiled["vecmat"], 1, 50, 70, "f32")


def test_shared_operands_keep_the_gemm_path():
    # C aliases A: the GEMV loop order would read elements it has already updated
    src = """
func.func @f(%A: memref<1x64xf64>, %B: memref<64x64xf64>) {
  hop.matmul %A, %B, %A : (memref<1x64xf64>, memref<64x64xf64>, memref<1x64xf64>)
  return
}
"""
    remarks = []
    # the BLIS schedule of the GEMM path refuses the reordering, naming the dependence
    with pytest.raises(ScheduleError, match="RAW dependence"):
        polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert not any("matrix-vector product" in r for r in remarks), remarks


def test_tile_attributes_keep_the_gemm_path():
    src = matmul_source(1, 64, 64, "f64", {"K_C": "32 : i32"})
    compiled, remarks = _compile(src)
    assert not any("matrix-vector product" in r for r in remarks), remarks
    _check(compiled["matmul"], 1, 64, 64, "f64")


def test_a_vector_op_costs_its_lanes():
    """The fork decision (:func:`polyopt.codegen.openmp.iteration_cost`) counts a 16-lane FMA
    as 16 operations: counted as one, a 4 MiB matrix-vector product ran on one thread."""
    compiled, _ = _compile(matmul_source(1000, 1, 1000, "f32"), threads=2)
    par = next(op for op in compiled.module.walk() if op.name == "affine.parallel")
    lo, hi = par.lower_map.single_constant_result, par.upper_map.single_constant_result
    trips = (hi - lo) // par.steps[0]
    assert trips * iteration_cost(par.body) >= MIN_PARALLEL_WORK


def _at_offset(shape, dtype, offset, seed):
    """A C-contiguous array whose data starts ``offset`` bytes past a 64-byte boundary."""
    t = np.float64 if dtype == "f64" else np.float32
    nbytes = int(np.prod(shape)) * np.dtype(t).itemsize
    raw = np.empty(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    a = raw[start:start + nbytes].view(t).reshape(shape)
    a[:] = np.random.default_rng(seed).uniform(-1, 1, shape)
    return a


@pytest.mark.parametrize("m,k", [(37, 512), (1003, 1024), (9, 2048), (101, 1000)])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_the_dot_form_aligns_its_rows_wherever_a_starts(m, k, dtype):
    """Rows of a whole number of vectors share their offset from a vector boundary: the dot
    form starts each row's vector loop there, after a masked head, and ends with a masked
    tail (of half vectors where only those divide K: 1000 f32 on 16 lanes).  Right for every
    start of A (numpy's large arrays start 16 bytes into a line), and bitwise the same on 1
    to 3 threads for one A."""
    results = {}
    for threads in (1, 2, 3):
        compiled, remarks = _compile(matmul_source(m, 1, k, dtype), threads=threads)
        assert any("vectors aligned (masked head and tail)" in r for r in remarks), remarks
        text = str(compiled.module)
        assert "memref.extract_aligned_pointer_as_index" in text and "vector.maskedload" in text
        elem = 8 if dtype == "f64" else 4
        for offset in range(0, 64, elem * 3):
            a = _at_offset((m, k), dtype, offset, seed=offset)
            b = _at_offset((k, 1), dtype, 8, seed=1)
            c = _at_offset((m, 1), dtype, 0, seed=2)
            want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
            compiled["matmul"](a, b, c)
            tol = (1e-12 if dtype == "f64" else 2e-5) * k * 4
            np.testing.assert_allclose(c, want, rtol=0, atol=tol)
            results.setdefault(offset, []).append(c.copy())
    for same_a in results.values():
        assert all(np.array_equal(same_a[0], other) for other in same_a[1:])


@pytest.mark.parametrize("n,k", [(512, 37), (1024, 9), (2048, 300), (1000, 21), (1004, 5)])
@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_the_axpy_form_aligns_on_b_wherever_b_starts(n, k, dtype):
    """Rows of B of a whole number of vectors share their offset from a vector boundary:
    the axpy form's blocks run from B's first boundary to its last, the first block adding
    the masked head and the last the masked tail.  Right for every start of B and of C (C's
    offset differs from B's), bitwise the same on 1 to 3 threads for one B."""
    results = {}
    for threads in (1, 2, 3):
        compiled, remarks = _compile(matmul_source(1, n, k, dtype), threads=threads)
        elem = 8 if dtype == "f64" else 4
        lanes = polyopt.pipeline.machine_model().stream_lanes(elem)
        aligned = gemv_form(1, n, k, elem, lanes).aligned
        assert aligned or n % (lanes // 2)       # 1004 f32 on 16 lanes: neither width aligns
        assert any("axpy form" in r and ("vectors aligned (masked head and tail)" in r)
                   == aligned for r in remarks), remarks
        for offset in range(0, 64, elem * 3):
            a = _at_offset((1, k), dtype, 8, seed=1)
            b = _at_offset((k, n), dtype, offset, seed=offset)
            c = _at_offset((1, n), dtype, (offset + 24) % 64, seed=2)
            want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
            compiled["matmul"](a, b, c)
            tol = (1e-12 if dtype == "f64" else 2e-5) * k * 4
            np.testing.assert_allclose(c, want, rtol=0, atol=tol)
            results.setdefault(offset, []).append(c.copy())
    for same_b in results.values():
        assert all(np.array_equal(same_b[0], other) for other in same_b[1:])


def test_rows_of_a_part_of_a_vector_or_few_vectors_are_not_aligned():
    """The head and tail cost about two vectors a row: rows of fewer than
    ALIGN_MIN_VECTORS groups of accumulators, or whose starts differ from row to row (K, or
    N for the axpy form, not a whole number of vectors), run the plain form."""
    from polyopt.schedules.gemv import ALIGN_MIN_VECTORS
    assert gemv_form(100, 1, 2048, 4, 16).aligned
    assert not gemv_form(100, 1, 2044, 4, 16).aligned
    # rows of A a whole number of half vectors: the dot form aligns half vectors
    form = gemv_form(100, 1, 2040, 4, 16)
    assert form.aligned and form.lanes == 8
    assert gemv_form(100, 1, 2040, 4, 16, can_align=False).lanes == 16
    form = gemv_form(100, 1, 256, 4, 16, streams_past=1 << 20)
    assert form.accumulators == 2 and form.aligned == (256 >= ALIGN_MIN_VECTORS * 32)
    assert not gemv_form(100, 1, 64, 4, 16).aligned
    assert not gemv_form(100, 1, 2048, 4, 16, can_align=False).aligned
    assert gemv_form(1, 2048, 100, 4, 16).aligned
    assert not gemv_form(1, 2044, 100, 4, 16).aligned
    assert not gemv_form(1, 64, 100, 4, 16).aligned
    # rows of B a whole number of half vectors: the axpy form aligns half vectors
    form = gemv_form(1, 1000, 100, 4, 16)
    assert form.aligned and form.lanes == 8
    assert gemv_form(1, 1000, 100, 4, 16, can_align=False).lanes == 16
    assert not gemv_form(1, 1002, 100, 4, 16).aligned


def test_a_product_inside_a_loop_is_not_aligned():
    """A's address bounds the aligned loops, and only a value of the function's top level may
    (an affine symbol): a product inside a loop keeps the plain form, and is right."""
    src = """
func.func @twice(%A: memref<24x512xf32>, %B: memref<512x1xf32>, %C: memref<24x1xf32>) {
  affine.for %t = 0 to 2 {
    hop.matmul %A, %B, %C : (memref<24x512xf32>, memref<512x1xf32>, memref<24x1xf32>)
  }
  return
}
"""
    compiled, remarks = _compile(src)
    assert any("dot form" in r for r in remarks), remarks
    assert not any("aligned" in r for r in remarks), remarks
    a, b = _at_offset((24, 512), "f32", 16, 0), _at_offset((512, 1), "f32", 0, 1)
    c = _at_offset((24, 1), "f32", 0, 2)
    want = c.astype(np.float64) + 2 * (a.astype(np.float64) @ b.astype(np.float64))
    compiled["twice"](a, b, c)
    np.testing.assert_allclose(c, want, rtol=0, atol=2e-5 * 512 * 8)


def test_upstream_accepts_the_aligned_forms():
    for threads in (1, 2):
        for m, n in ((1003, 1), (1, 3008)):
            compiled, remarks = _compile(matmul_source(m, n, 512, "f32"), threads=threads)
            assert any("aligned" in r for r in remarks), remarks
            text = str(compiled.module)
            assert mlir_opt(text) == text
