"""One compiled GEMM for every size (:mod:`polyopt.schedules.dynamic_gemm`): ``hop.matmul`` on
``?`` operands runs BLIS's loops with run-time trip counts; one compilation is checked against
numpy on random sizes from 1 to 300 (no tile divides most of them), with partly static types,
alpha and beta, on threads, and upstream ``mlir-opt`` accepts what it prints."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import polyopt
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _source(ta, tb, tc, attrs=""):
    return (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")


def _compiled(dtype, threads=1):
    t = f"memref<?x?x{dtype}>"
    remarks = []
    mm = polyopt.compile(_source(t, t, t), remark=lambda loc, msg: remarks.append(msg),
                         threads=threads, **ALL)
    assert any("one GEMM for every size" in r for r in remarks), remarks
    return mm


@functools.lru_cache(maxsize=None)
def _shared(dtype, threads=1):
    """:func:`_compiled`, once per process for each ``(dtype, threads)``: the tests below
    share these compilations (and only read them); compiled on first use, not when the file
    is imported (every xdist worker imports every test file when it collects)."""
    return _compiled(dtype, threads)


def _check(fn, m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = np.float64 if dtype == "f64" else np.float32
    a, b, c = (rng.uniform(-1, 1, s).astype(t) for s in ((m, k), (k, n), (m, n)))
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    fn(a, b, c)
    tol = (1e-13 if dtype == "f64" else 3e-6) * (k + 1) * 4
    np.testing.assert_allclose(c, want, rtol=0, atol=tol)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300),
       st.sampled_from(["f64", "f32"]))
def test_one_compilation_runs_every_size(m, n, k, dtype):
    _check(_shared(dtype)["mm"], m, n, k, dtype)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (4, 32, 256), (5, 33, 257), (3, 64, 512),
                                   (300, 1, 7), (1, 300, 7), (257, 129, 513),
                                   (1, 2100, 37), (1, 17, 300), (1001, 1, 33), (7, 1, 1),
                                   (129, 65, 257), (6, 34, 19), (9, 67, 300), (3, 131, 70),
                                   (130, 66, 129), (1003, 1, 613), (97, 96, 33), (12, 48, 20)])
def test_tile_and_block_edges(m, n, k):
    """Exactly one register tile (4 x 32 f64 on AVX-512), one past it, K one past K_C (a
    whole K_C block then a partial one); a
    row or a column (the GEMV forms the function switches to at run time; a column of a
    matrix larger than L2 in the dot form's streaming shape), past a block
    of C's row, past a group of rows; N's edge 1, 2 or 3 columns past a tile (the column
    form, f64 and f32 on AVX-512), with M's edge too; N's edge a whole number of vectors
    (96 f32 and 48 f64 on AVX-512)."""
    _check(_shared("f64")["mm"], m, n, k, "f64")
    _check(_shared("f32")["mm"], m, n, k, "f32")


def test_m_past_a_block_of_a():
    """M five rows past the M_C the host's model gives the dynamic GEMM (8192 rows of A on
    Zen 4: A's block in half of L3), so that a second block of A with an edge tile follows."""
    from polyopt.pipeline import machine_model
    from polyopt.schedules.dynamic_gemm import dynamic_params
    for dtype, elem in (("f64", 8), ("f32", 4)):
        _check(_shared(dtype)["mm"], dynamic_params(elem, machine_model()).M_C + 5, 35, 9, dtype)


def test_a_short_a_takes_the_gebp_variant_at_run_time():
    """On one thread, below GEPB_MIN_PANELS_OF_A of GEPB's micro-panels of A, against a B of
    at least SHORT_A_MIN_N_K rows and columns, the function runs the order and tile the model
    gives a short A (GEBP, a narrower tile with a deeper K_C); checked on both sides of each
    switch, across its K_C blocks, on its tile's edges and with alpha."""
    from polyopt.pipeline import machine_model
    from polyopt.schedules.dynamic_gemm import SHORT_A_MIN_N_K, dynamic_params, short_a_params
    machine = machine_model()
    least = SHORT_A_MIN_N_K
    for dtype, elem in (("f64", 8), ("f32", 4)):
        short, rows = short_a_params(elem, machine, dynamic_params(elem, machine))
        if short is None:
            pytest.skip("the model runs a short A in the same order on this machine")
        t = f"memref<?x?x{dtype}>"
        remarks = []
        mm = polyopt.compile(_source(t, t, t, f" {{alpha = 0.5 : {dtype}}}"),
                             remark=lambda loc, msg: remarks.append(msg), threads=1,
                             **ALL)["mm"]
        assert any(f"M below {rows} (N and K at least {least}) at run time: GEBP" in r
                   for r in remarks), remarks
        nr, kc = short.N_R, short.K_C
        for m, n, k in ((rows - 1, least + nr + 1, 2 * kc + 1), (rows, least + 1, kc + 1),
                        (2, least + 2 * nr - 1, least), (short.M_R + 1, least - 1, 2 * kc),
                        (rows - 2, 300, least - 1), (5, least, 2 * kc + 3)):
            rng = np.random.default_rng(m * n)
            tp = np.float64 if dtype == "f64" else np.float32
            a, b, c = (rng.uniform(-1, 1, s).astype(tp) for s in ((m, k), (k, n), (m, n)))
            want = c.astype(np.float64) + 0.5 * (a.astype(np.float64) @ b.astype(np.float64))
            mm(a, b, c)
            tol = (1e-13 if dtype == "f64" else 3e-6) * (k + 1) * 4
            np.testing.assert_allclose(c, want, rtol=0, atol=tol)


def test_partly_static_types_alpha_and_beta():
    src = _source("memref<?x40xf64>", "memref<40x?xf64>", "memref<?x?xf64>",
                  " {alpha = 2.5 : f64, beta = 0.5 : f64}")
    remarks = []
    mm = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("one GEMM for every size" in r for r in remarks), remarks
    for m, n in ((1, 1), (37, 70), (130, 33), (1, 70), (37, 1)):
        rng = np.random.default_rng(m)
        a, b, c = rng.random((m, 40)), rng.random((40, n)), rng.random((m, n))
        want = 0.5 * c + 2.5 * a @ b
        mm(a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-12)


def test_sizes_that_disagree_raise_and_write_nothing():
    t = "memref<?x?xf64>"
    mm = polyopt.compile(_source(t, t, t), filename="mm.mlir", **ALL)["mm"]
    c = np.ones((3, 6))
    with pytest.raises(RuntimeError, match=r"^mm.mlir:2:3: error: 'hop.matmul' operands have "
                                           r"sizes that do not agree at run time"):
        mm(np.zeros((3, 4)), np.zeros((5, 6)), c)
    assert (c == 1).all()


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_threads_give_bitwise_the_same_result(dtype):
    """Packing and register tiles split over the team; every element summed in the same
    order (3 threads on 2 cores: oversubscribed, still the same bits).  Products whose sides
    are all at most SMALL_ON_ONE_THREAD run on one thread (5x2x1, 33x65x50); those just past
    it are split (33x65x150, 7x130x9)."""
    fns = {1: _shared(dtype)["mm"]}
    for threads in (2, 3):
        compiled = _shared(dtype, threads=threads)
        assert "affine.parallel" in str(compiled.module)
        fns[threads] = compiled["mm"]
    rng = np.random.default_rng(1)
    t = np.float64 if dtype == "f64" else np.float32
    for m, n, k in ((97, 101, 103), (300, 70, 290), (1, 3000, 70), (3001, 1, 70), (5, 2, 1),
                    (33, 65, 50), (41, 131, 77), (33, 65, 150), (7, 130, 9), (1003, 1, 1024),
                    (1, 4096, 300)):
        a, b, c0 = (rng.uniform(-1, 1, s).astype(t) for s in ((m, k), (k, n), (m, n)))
        results = []
        for threads, fn in fns.items():
            c = c0.copy()
            fn(a, b, c)
            results.append(c)
        np.testing.assert_allclose(results[0], c0 + a.astype(np.float64) @ b, rtol=0,
                                   atol=(1e-12 if dtype == "f64" else 1e-3))
        for other in results[1:]:
            assert np.array_equal(results[0], other)


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_a_column_product_aligns_its_rows_wherever_a_starts(dtype):
    """With N = 1 and K a whole number of vectors (every row of A then starts at the same
    offset from a vector boundary), the dot form starts each row's vector loop at the
    boundary, after a masked head, and ends with a masked tail, as the static one does: right
    for every start of A, in A's L2 shape and in its streaming one."""
    fn = _shared(dtype)["mm"]
    text = str(_shared(dtype).module)
    assert "memref.extract_aligned_pointer_as_index" in text and "vector.maskedload" in text
    t = np.float64 if dtype == "f64" else np.float32
    rng = np.random.default_rng(3)
    for m, k in ((37, 512), (9, 2048), (1003, 1024), (300, 272), (5, 4096)):
        for offset in range(0, 64, 3 * t(0).itemsize):
            raw = np.empty(m * k * t(0).itemsize + 128, np.uint8)
            start = (-raw.ctypes.data) % 64 + offset
            a = raw[start:start + m * k * t(0).itemsize].view(t).reshape(m, k)
            a[:] = rng.uniform(-1, 1, (m, k))
            b, c = rng.uniform(-1, 1, (k, 1)).astype(t), rng.uniform(-1, 1, (m, 1)).astype(t)
            want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
            fn(a, b, c)
            tol = (1e-13 if dtype == "f64" else 3e-6) * (k + 1) * 4
            np.testing.assert_allclose(c, want, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_a_row_product_aligns_on_b_wherever_b_starts(dtype):
    """With M = 1 and N a whole number of vectors (or of half vectors), the axpy form's
    blocks run from B's first vector boundary to its last, with a masked head and tail, as
    the static one does."""
    fn = _shared(dtype)["mm"]
    t = np.float64 if dtype == "f64" else np.float32
    rng = np.random.default_rng(4)
    for n, k in ((512, 37), (2048, 300), (272, 9), (4096, 3), (1000, 11), (1004, 6)):
        for offset in range(0, 64, 3 * t(0).itemsize):
            raw = np.empty(n * k * t(0).itemsize + 128, np.uint8)
            start = (-raw.ctypes.data) % 64 + offset
            b = raw[start:start + n * k * t(0).itemsize].view(t).reshape(k, n)
            b[:] = rng.uniform(-1, 1, (k, n))
            a, c = rng.uniform(-1, 1, (1, k)).astype(t), rng.uniform(-1, 1, (1, n)).astype(t)
            want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
            fn(a, b, c)
            tol = (1e-13 if dtype == "f64" else 3e-6) * (k + 1) * 4
            np.testing.assert_allclose(c, want, rtol=0, atol=tol)


def test_upstream_accepts_the_nest():
    text = str(_shared("f32").module)
    assert "affine.prefetch" in text and "vector.fma" in text
    assert mlir_opt(text) == text


def test_what_the_dynamic_gemm_does_not_take_runs_naive_and_says_why():
    # A strided view (a slice of a bigger array): not row-major, the naive nest reads it
    ta, t = "memref<?x?xf64, strided<[?, 1], offset: ?>>", "memref<?x?xf64>"
    remarks = []
    mm = polyopt.compile(_source(ta, t, t), remark=lambda loc, msg: remarks.append(msg),
                         **ALL)["mm"]
    assert any("runs as a naive nest: the one GEMM for every size needs" in r
               for r in remarks), remarks
    big = np.random.default_rng(0).random((9, 11))
    a, b, c = big[2:7, 3:9], np.ones((6, 4)), np.ones((5, 4))
    want = c + a @ b
    mm(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["f64", "f32"])
def test_a_small_product_reads_a_and_b_in_place(dtype):
    """Every side at most SMALL_ON_ONE_THREAD: the tiles read A and B where they are, B's
    vectors masked at N's edge (no read past B's last element: B is the tail of a larger
    buffer), the rows past M not stored; alpha scales the tiles; the remark says so."""
    from polyopt.schedules.dynamic_gemm import SMALL_ON_ONE_THREAD as side
    t = f"memref<?x?x{dtype}>"
    remarks = []
    mm = polyopt.compile(_source(t, t, t, f" {{alpha = -1.5 : {dtype}}}"),
                         remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any(f"every side at most {side} at run time: A and B read in place" in r
               for r in remarks), remarks
    tp = np.float64 if dtype == "f64" else np.float32
    for m, n, k in ((side, side, side), (5, side, side), (side, 5, side), (side, side, 5),
                    (3, 17, 2), (63, 65, 64), (4, 8, 1), (7, 47, 33)):
        rng = np.random.default_rng(m + n + k)
        a = rng.uniform(-1, 1, (m, k)).astype(tp)
        b = rng.uniform(-1, 1, k * n + 5).astype(tp)[5:].reshape(k, n)
        c = rng.uniform(-1, 1, (m, n)).astype(tp)
        want = c.astype(np.float64) - 1.5 * (a.astype(np.float64) @ b.astype(np.float64))
        mm(a, b, c)
        tol = (1e-13 if dtype == "f64" else 3e-6) * (k + 1) * 4
        np.testing.assert_allclose(c, want, rtol=0, atol=tol, err_msg=str((m, n, k)))


def test_a_small_product_on_a_team_runs_on_one_thread():
    """On a team, the ?x? function runs a product with every side at most
    SMALL_ON_ONE_THREAD on one thread (unpacked): the sequential nest sits beside the
    parallel one, under the run-time test of the sizes."""
    from polyopt.schedules.dynamic_gemm import SMALL_ON_ONE_THREAD
    from polyopt.schedules.blis_parallel import MIN_THREADED_PRODUCT
    assert SMALL_ON_ONE_THREAD ** 3 <= MIN_THREADED_PRODUCT < (SMALL_ON_ONE_THREAD + 1) ** 3
    text = str(_shared("f32", threads=2).module)
    side = SMALL_ON_ONE_THREAD
    assert f"(-s0 + {side} >= 0, -s1 + {side} >= 0, -s2 + {side} >= 0)" in text
    assert "affine.parallel" in text


def test_a_column_product_streams_more_rows_past_l2_on_a_split_core(monkeypatch):
    """On a core that splits 512-bit loads (Zen 4's model) the dot form checks at run time
    whether A is larger than L2 and then reads 8 rows with one accumulator each
    (gemv.dot_streams_past): right on both sides of that size and with K not a whole number
    of vectors; on a core whose 512-bit loads are whole there is no such branch."""
    import polyopt.pipeline
    from tests.schedules.test_tile_model import ZEN4, ZEN5
    for model, streams in ((ZEN4, True), (ZEN5, False)):
        monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None, m=model: m)
        mm = _compiled("f64")
        assert str(mm.module).count("arith.cmpi ugt") == (1 if streams else 0)
        k = ZEN4.l2_bytes // 8 // 100            # 100 rows of f64 fit in L2, 203 do not
        for m in (100, 203):
            _check(mm["mm"], m, 1, k, "f64")
            _check(mm["mm"], m, 1, k - 3, "f64")
