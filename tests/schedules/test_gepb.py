"""GEPB, the BLIS schedule with B's K_C x N_C block in L2 (``l2_block = "B"``): the loops
(ic, pc, jc, ir, jr), A packed in M_R-row micro-panels under ic and pc, B in N_R-column
micro-panels under jc; every pass combination and thread count checked against numpy on
shapes no tile divides; the model's choice between GEBP and GEPB from the machine's facts."""

import numpy as np
import pytest

import polyopt
from polyopt.bench import matmul_source
from polyopt.schedules.blis_schedule import BlisParams, MachineModel, default_blis_params
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
ZEN4 = MachineModel(512, 32, 32 << 10, 1 << 20, 32 << 20, l1d_ways=8, l2_ways=8,
                    fma_latency=4, fma_per_cycle=1, full_width_fma=False,
                    embedded_broadcast=True, l2_bytes_per_cycle=32)


def _attrs(**tiles):
    out = {"l2_block": '"B"'}
    out.update({k: f"{v} : i32" for k, v in tiles.items()})
    return out


def _operands(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = np.float64 if dtype == "f64" else np.float32
    return (rng.uniform(-1, 1, (m, k)).astype(t), rng.uniform(-1, 1, (k, n)).astype(t),
            rng.uniform(-1, 1, (m, n)).astype(t))


def _run(src, args, threads=1, **switches):
    f = polyopt.compile(src, threads=threads, **switches)["matmul"]
    out = [a.copy() for a in args]
    f(*out)
    return out[-1]


def test_schedule_is_ic_pc_jc_ir_jr():
    p = BlisParams(M_C=60, K_C=48, M_R=4, N_R=16, N_C=64, l2_block="B")
    assert str(p.schedule()) == (
        "(d0, d1, d2) -> (d0 floordiv 60, d2 floordiv 48, d1 floordiv 64, d0 floordiv 4, "
        "d1 floordiv 16, d2, d1, d0)")
    with pytest.raises(ValueError, match="l2_block must be 'A' or 'B'"):
        BlisParams(M_C=60, K_C=48, M_R=4, N_R=16, l2_block="C")


@pytest.mark.parametrize("m,n,k,dtype,tiles,switches", [
    # several blocks in every loop, none of them full at the edges
    (131, 97, 203, "f64", dict(M_C=60, K_C=48, N_C=40, M_R=4, N_R=8), ALL),
    (131, 97, 203, "f64", dict(M_C=60, K_C=48, N_C=40, M_R=4, N_R=8),
     {"hopt": True, "copy": True}),
    (131, 97, 203, "f64", dict(M_C=60, K_C=48, N_C=40, M_R=4, N_R=8),
     dict(ALL, scalrep=False)),
    (77, 301, 150, "f32", dict(M_C=33, K_C=64, N_C=96, M_R=3, N_R=32), ALL),
    (77, 301, 150, "f32", dict(M_C=33, K_C=64, N_C=96, M_R=3, N_R=32), dict(ALL, vect=False)),
    # one block of rows (no ic loop), one of k (no pc loop)
    (45, 130, 30, "f64", dict(K_C=64, N_C=32, M_R=4, N_R=16), ALL),
    # the model's tile and blocking under GEPB
    (257, 255, 259, "f64", {}, ALL),
    (257, 255, 259, "f32", {}, ALL),
])
def test_gepb_computes_the_product(m, n, k, dtype, tiles, switches):
    src = matmul_source(m, n, k, dtype, _attrs(**tiles))
    args = _operands(m, n, k, dtype)
    got = _run(src, args, **switches)
    ref = args[2].astype(np.float64) + args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.max(np.abs(got - ref)) <= (1e-12 if dtype == "f64" else 2e-5) * k


@pytest.mark.parametrize("m,n,k,dtype,tiles,switches", [
    (131, 97, 203, "f64", dict(M_C=60, K_C=48, N_C=16, M_R=4, N_R=8), ALL),
    (77, 301, 150, "f32", dict(M_C=33, K_C=64, N_C=96, M_R=3, N_R=32), ALL),
    (131, 197, 103, "f64", {}, ALL),
    (131, 197, 103, "f64", dict(N_C=32), {"hopt": True, "blis": True}),   # the host's kernel
])
def test_gepb_is_bitwise_identical_at_every_thread_count(m, n, k, dtype, tiles, switches):
    """jc runs on the threads, each with its own packed B block; K_C is unchanged, so every
    element of C is summed in the same order."""
    src = matmul_source(m, n, k, dtype, _attrs(**tiles))
    args = _operands(m, n, k, dtype, seed=1)
    one = _run(src, args, **switches)
    ref = args[2].astype(np.float64) + args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.max(np.abs(one - ref)) <= (1e-12 if dtype == "f64" else 2e-5) * k
    for threads in (2, 3):
        remarks = []
        f = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                            **switches)["matmul"]
        out = [a.copy() for a in args]
        f(*out)
        assert np.array_equal(out[-1], one), threads
        jc = any("loop over N_C blocks (jc) parallel, each thread with its own packed B "
                 "block; A's block packed by the team" in r for r in remarks)
        # the model's N_C may hold all of N (a large L2): then there is no jc loop and the
        # ic loop runs on the threads
        ic = any("loop over M_C blocks (ic) parallel (all of N in one block of B" in r
                 for r in remarks)
        assert jc or (ic and not tiles), remarks


def test_packing_sits_under_ic_pc_and_jc_and_upstream_accepts_the_nest():
    src = matmul_source(131, 97, 203, "f64",
                        _attrs(M_C=60, K_C=48, N_C=40, M_R=4, N_R=8))
    remarks = []
    compiled = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), threads=2,
                               **ALL)
    packed = [r for r in remarks if "packed" in r and "loop depth" in r]
    assert any("packed A into memref<60x48xf64, affine_map<(d0, d1) -> (d0 floordiv 4, d1, "
               "d0 mod 4)>> at loop depth 2" in r for r in packed), packed
    assert any("packed B into memref<48x40xf64, affine_map<(d0, d1) -> (d1 floordiv 8, d0, "
               "d1 mod 8)>> at loop depth 3" in r for r in packed), packed
    text = str(compiled.module)
    assert "affine.parallel" in text
    assert mlir_opt(text) == text


def test_gepb_with_the_columns_too_narrow_for_the_threads_splits_its_rows(monkeypatch):
    """N = 20 is one micro-panel of 32 columns: no jc loop for two threads; all of N is one
    block of B, so GEPB's ic loop runs on them (each thread packing its own A blocks)."""
    import polyopt.pipeline
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: ZEN4)
    src = matmul_source(300, 20, 700, "f64")
    remarks = []
    args = _operands(300, 20, 700, "f64")
    f = polyopt.compile(src, threads=2, remark=lambda loc, msg: remarks.append(msg),
                        **ALL)["matmul"]
    out = [a.copy() for a in args]
    f(*out)
    assert np.allclose(out[-1], args[2] + args[0] @ args[1])
    text = " ".join(remarks)
    assert "l2_block=B" in text
    assert "loop over M_C blocks (ic) parallel (all of N in one block of B" in text


class TestModel:
    """default_blis_params's choice between GEBP and GEPB (no CPU names: a MachineModel)."""

    def test_zen4_dgemm_takes_gepb_with_a_deeper_k_c(self):
        p = default_blis_params(2088, 2048, 2048, 8, ZEN4, c_row_bytes=2048 * 8)
        assert p.l2_block == "B"
        assert (p.M_R, p.N_R, p.K_C, p.N_C, p.M_C) == (4, 32, 256, 128, 2088)
        text = p.explain()
        assert "K_C 256 instead of GEBP's 80, 8 passes over C instead of 26" in text
        assert "B streams from L2 at 16 of the measured 32 bytes/cycle" in text
        assert "N_C 128: B's block 256x128 = 256 KiB in a quarter of L2" in text

    def test_sgemm_k_c_divides_k(self):
        p = default_blis_params(2088, 2048, 2048, 4, ZEN4)
        assert (p.l2_block, p.M_R, p.N_R, p.K_C) == ("B", 4, 64, 512)

    def test_unmeasured_l2_keeps_gebp(self):
        import dataclasses
        p = default_blis_params(2088, 2048, 2048, 8,
                                dataclasses.replace(ZEN4, l2_bytes_per_cycle=0.0))
        assert p.l2_block == "A"
        assert "L2's bandwidth is not measured" in p.explain()

    def test_a_stream_beyond_three_quarters_of_l2_keeps_gebp(self):
        # two full-width FMAs per cycle: 4 rows would draw 32 bytes/cycle of 32
        import dataclasses
        fast = dataclasses.replace(ZEN4, fma_per_cycle=2, full_width_fma=True)
        p = default_blis_params(2088, 2048, 2048, 8, fast)
        assert p.l2_block == "A"
        assert "more than 3/4 of the measured 32" in p.explain()

    def test_one_k_block_either_way_keeps_gebp(self):
        p = default_blis_params(500, 500, 64, 8, ZEN4)
        assert p.l2_block == "A"
        assert "takes 1 K_C block(s) either way" in p.explain()

    def test_given_blocking_or_form_keeps_gebp(self):
        assert default_blis_params(2088, 2048, 2048, 8, ZEN4, {"K_C": 256}).l2_block == "A"
        assert default_blis_params(2088, 2048, 2048, 8, ZEN4,
                                   {"register_form": "col"}).l2_block == "A"
        p = default_blis_params(2088, 2048, 2048, 8, ZEN4, {"l2_block": "B", "K_C": 128})
        assert (p.l2_block, p.K_C) == ("B", 128)
        assert "l2_block B (given)" in p.explain()

    def test_gebp_keeps_the_rows_of_c_out_of_one_l1_set(self):
        """GEBP's tile has at most 3 rows of a 2048-wide C on an 8-way L1; GEPB's does not
        count them (B streams through L1 beside A's micro-panel)."""
        gebp = default_blis_params(2088, 2048, 2048, 8, ZEN4, {"l2_block": "A"},
                                   c_row_bytes=2048 * 8)
        gepb = default_blis_params(2088, 2048, 2048, 8, ZEN4, c_row_bytes=2048 * 8)
        assert (gebp.M_R, gepb.M_R) == (3, 4)


def test_a_short_a_takes_gebp():
    """Fewer than 16 micro-panels of A against a B larger than L2: GEPB's block of B would
    be packed for few rows; GEBP keeps B's micro-panel in L1 for them."""
    short = default_blis_params(32, 2048, 2048, 8, ZEN4)
    assert short.l2_block == "A"
    assert any("M = 32 is" in r and "micro-panels of A, fewer than 16" in r
               for r in short.reasons), short.reasons
    assert default_blis_params(128, 2048, 2048, 8, ZEN4).l2_block == "B"
    # B fits in L2: the rule does not apply (GEPB when K is deep enough for it to pay)
    assert default_blis_params(48, 64, 2048, 8, ZEN4).l2_block == "B"
    # the short A's product is still right
    src = matmul_source(29, 301, 290, "f64")
    fn = polyopt.compile(src, threads=1, **ALL)["matmul"]
    a, b, c = _operands(29, 301, 290, "f64")
    want = c + a @ b
    fn(a, b, c)
    np.testing.assert_allclose(c, want, rtol=0, atol=1e-12 * 290)


def _b_prefetches(src: str, **switches) -> list[str]:
    """The ``affine.prefetch`` lines on B (%arg1) in what the pipeline makes of ``src``."""
    from polyopt.pipeline import PipelineOptions, load, run_passes
    module = load(src)
    run_passes(module, PipelineOptions(threads=1, **switches))
    text = str(module)
    return [ln.strip() for ln in text.splitlines() if "affine.prefetch %arg1[" in ln]


@pytest.mark.parametrize("m,n,k,dtype,tiles,threads,switches", [
    # rows of B 4400 / 4800 bytes apart, blocks of 96 / 40 columns, 61 / 37 rows of A: no
    # tile divides any size; the prefetches of the last rows point past B (harmless)
    (61, 1100, 150, "f32", dict(N_C=96, K_C=64, M_R=4, N_R=32), 1, ALL),
    (61, 1100, 150, "f32", dict(N_C=96, K_C=64, M_R=4, N_R=32), 2, ALL),
    (37, 600, 77, "f64", dict(N_C=40, K_C=32, M_R=4, N_R=8), 1, ALL),
    (37, 600, 77, "f64", dict(N_C=40, K_C=32, M_R=4, N_R=8), 1,
     {"hopt": True, "copy": True}),
])
def test_narrow_blocks_of_b_prefetch_rows_ahead(m, n, k, dtype, tiles, threads, switches):
    """A block of B narrower than B's rows, rows a page or more apart, few rows of A: the copy
    prefetches each panel row ``B_ROWS_AHEAD`` rows ahead, and the product stays exact."""
    from polyopt.schedules.expand import B_ROWS_AHEAD
    src = matmul_source(m, n, k, dtype, _attrs(**tiles))
    lines = _b_prefetches(src, **switches)
    per_line = 64 // (4 if dtype == "f32" else 8)
    assert len(lines) == -(-tiles["N_R"] // per_line), lines
    assert all(f" + {B_ROWS_AHEAD}," in ln and "locality<3>" in ln for ln in lines), lines
    a, b, c = _operands(m, n, k, dtype)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    got = _run(src, (a, b, c), threads=threads, **switches)
    tol = (1e-12 if dtype == "f64" else 1e-5) * k
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("m,n,k,dtype,tiles", [
    (131, 1100, 150, "f32", dict(M_C=128, N_C=96, K_C=64, M_R=4, N_R=32)),   # many rows of A
    (61, 1000, 150, "f32", dict(N_C=96, K_C=64, M_R=4, N_R=32)),   # rows 4000 bytes apart
    (61, 1100, 150, "f32", dict(N_C=1100, K_C=64, M_R=4, N_R=32)),   # the block is whole rows
])
def test_b_rows_are_not_prefetched_where_the_copy_streams(m, n, k, dtype, tiles):
    """No prefetches where the hardware follows the copy or the copy is a small share."""
    assert _b_prefetches(matmul_source(m, n, k, dtype, _attrs(**tiles)), **ALL) == []
