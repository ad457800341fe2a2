"""The parameter model decides from the machine's facts (issue 20): the measured register tiles
of the CPUs this project has met are reproduced from their MachineModels, never their names,
and every choice carries the numbers behind it."""

import pytest

from polyopt.schedules.blis_schedule import (GEBP_MIN_K_C, MachineModel, accumulators_needed,
                                             _gebp_k_c, _register_tile, _row_need,
                                             default_blis_params, row_bytes, rows_in_one_l1_set)
from polyopt.affine.types import MemRefType, StridedLayout, f32, f64

ZEN3 = MachineModel(256, 16, 32 << 10, 512 << 10, l1d_ways=8, fma_latency=4, fma_per_cycle=2)
ZEN4 = MachineModel(512, 32, 32 << 10, 1 << 20, l1d_ways=8, fma_latency=4, fma_per_cycle=1,
                    full_width_fma=False, embedded_broadcast=True)
ZEN5 = MachineModel(512, 32, 48 << 10, 1 << 20, l1d_ways=12, fma_latency=4, fma_per_cycle=2,
                    embedded_broadcast=True)
XEON_AMX = MachineModel(512, 32, 48 << 10, 2 << 20, 504 << 20, l1d_ways=12, l2_ways=16,
                        fma_latency=4, fma_per_cycle=2, embedded_broadcast=True)


@pytest.mark.parametrize("machine,elem,measured", [
    (ZEN5, 8, {(4, 32)}), (ZEN5, 4, {(4, 64)}),               # 1.11x / 1.04x OpenBLAS
    (ZEN3, 8, {(6, 8), (4, 12)}), (ZEN3, 4, {(4, 24), (6, 16)}),
    (ZEN4, 8, {(3, 32), (4, 32)}), (ZEN4, 4, {(3, 64), (4, 64)}),
])
def test_model_reproduces_the_measured_tiles(machine, elem, measured):
    t = _register_tile(machine, elem)
    assert (t.m_r, t.n_r) in measured
    assert t.form == "row"


@pytest.mark.parametrize("machine", [ZEN3, ZEN4, ZEN5, XEON_AMX, MachineModel()])
@pytest.mark.parametrize("elem", [4, 8])
def test_tile_fits_the_registers_and_covers_the_latency(machine, elem):
    t = _register_tile(machine, elem)
    vecs = t.n_r // machine.lanes(elem)
    assert t.m_r * vecs >= accumulators_needed(machine)
    folded = machine.embedded_broadcast and vecs == 1
    assert _row_need(t.m_r, vecs, t.order, folded) <= machine.num_vector_registers


def test_more_l1_ways_allow_more_rows_of_c():
    assert _register_tile(ZEN4, 8).m_r < _register_tile(ZEN5, 8).m_r


def test_rows_of_c_count_against_the_l1_ways_only_when_they_share_sets():
    # 16 KiB apart (2048 f64): every row of the tile in the same sets
    assert rows_in_one_l1_set(4, 16384, 256, ZEN4) == 4
    assert rows_in_one_l1_set(4, None, 256, ZEN4) == 4       # unknown: the worst case
    # 256 bytes apart (a convolution's 64 f32 channels): no two rows in one set
    assert rows_in_one_l1_set(4, 256, 256, ZEN4) == 1
    # 2 KiB apart: rows 0 and 2 (and 1 and 3) meet, 4 KiB being one L1 way of ZEN4
    assert rows_in_one_l1_set(4, 2048, 256, ZEN4) == 2
    # 8000 bytes (1000 f64): row 1's 4 lines wrap onto row 0's first set
    assert rows_in_one_l1_set(2, 8000, 256, ZEN4) == 2


def test_c_rows_in_different_sets_allow_a_taller_tile():
    """The ResNet-50 stem's C (12544 x 64 f32, rows 256 bytes apart) takes 4x64 on Zen 4,
    measured 1.19x the 3x64 of a C whose rows share one set (2026-11-25, same process)."""
    stem = _register_tile(ZEN4, 4, c_row_bytes=256)
    paper = _register_tile(ZEN4, 4, c_row_bytes=2048 * 4)
    assert (stem.m_r, stem.n_r) == (4, 64)
    assert (paper.m_r, paper.n_r) == (3, 64)
    assert _register_tile(ZEN4, 4).m_r == 3     # stride unknown
    assert "C's rows 256 bytes apart" in default_blis_params(12544, 64, 147, 4, ZEN4,
                                                             c_row_bytes=256).explain()


@pytest.mark.parametrize("machine,elem,vectors", [(ZEN4, 8, 2), (ZEN4, 4, 2), (ZEN5, 8, 3),
                                                  (ZEN5, 4, 3)])
def test_gebp_tile_leaves_k_c_deep_enough_for_a_deep_k(machine, elem, vectors):
    """GEBP keeps B's K_C x N_R micro-panel in L1: a deep K takes a narrower tile whose K_C
    is at least GEBP_MIN_K_C (Zen 4, 49x512x4608 f64: 3x32 with K_C 80 1.02x numpy, 3x16..7x16
    with K_C 168 1.11x-1.16x); a K that one shallow K_C covers keeps 4 vectors."""
    lanes = machine.lanes(elem)
    deep = _register_tile(machine, elem, c_row_bytes=4096, k=4608)
    assert deep.n_r == vectors * lanes
    assert _gebp_k_c(machine, elem, deep.n_r) >= GEBP_MIN_K_C
    assert _gebp_k_c(machine, elem, (vectors + 1) * lanes) < GEBP_MIN_K_C
    assert any("vectors wide: GEBP's K_C" in r for r in deep.reasons)
    assert _register_tile(machine, elem, c_row_bytes=4096, k=64).n_r == 4 * lanes
    assert _register_tile(machine, elem, c_row_bytes=4096).n_r == 4 * lanes   # K unknown


def test_the_loop_order_is_decided_once():
    """A short A makes GEBP the order, whose tile has fewer rows; deciding again with them
    (49 rows: 17 micro-panels of 3, no longer short) gave GEPB with GEBP's tile, 0.97x numpy
    on Zen 4 where GEBP with its own tile ran 1.11x."""
    zen4 = MachineModel(512, 32, 32 << 10, 1 << 20, l1d_ways=8, fma_latency=4, fma_per_cycle=1,
                        full_width_fma=False, embedded_broadcast=True, l2_bytes_per_cycle=32)
    p = default_blis_params(49, 512, 4608, 8, zen4, c_row_bytes=4096)
    assert p.l2_block == "A"
    assert (p.M_R, p.N_R) == (3, 16) and p.K_C >= GEBP_MIN_K_C
    assert "M = 49 is 13 micro-panels of A" in p.explain()
    assert default_blis_params(2088, 2048, 2048, 8, zen4, c_row_bytes=16384).l2_block == "B"


def test_row_bytes_reads_the_memref_type():
    assert row_bytes(MemRefType((12544, 64), f32)) == 256
    assert row_bytes(MemRefType((8, 100), f64, StridedLayout((2048, 1), None))) == 16384
    assert row_bytes(MemRefType((8, None), f64)) is None


def test_blocking_follows_the_caches_and_says_why():
    p4 = default_blis_params(2088, 2048, 2048, 8, ZEN4)
    p5 = default_blis_params(2088, 2048, 2048, 8, ZEN5)
    # B's K_C x N_R micro-panel in 2/3 of L1's ways: a larger L1 holds a larger one
    assert p4.K_C * p4.N_R * 8 <= 0.67 * ZEN4.l1d_bytes
    assert p5.K_C * p5.N_R * 8 <= 0.67 * ZEN5.l1d_bytes
    assert p5.K_C * p5.N_R > p4.K_C * p4.N_R
    text = p4.explain()
    assert "form row" in text
    assert f"{p4.M_R}x{p4.N_R}: {p4.M_R * p4.N_R // 8} accumulators >= latency 4 x 1" in text
    assert f"K_C {p4.K_C}: B's micro-panel {p4.K_C}x{p4.N_R}" in text
    assert "5 of 8 L1 ways" in text
    assert f"M_C {p4.M_C}: A's block" in text


@pytest.mark.parametrize("machine", [ZEN4, ZEN5, XEON_AMX])
def test_gepb_keeps_a_block_of_a_read_once_in_l2(machine):
    # doitgen's 21000x160x160: N is one block of B, so each packed block of A is read once
    # and should still be in L2 when the micro-kernel reads it (not a 13 MiB block in L3)
    p = default_blis_params(21000, 160, 160, 8, machine, {"l2_block": "B"})
    assert p.N_C >= 160
    assert p.M_C * p.K_C * 8 <= machine.l2_bytes / 4 and p.M_C % p.M_R == 0
    assert "in a quarter of L2, since the one block of B" in p.explain()
    # several blocks of B reuse A's block: it stays large (B packed once per K_C x N_C block)
    wide = default_blis_params(21000, 2048, 160, 8, machine, {"l2_block": "B"})
    assert wide.N_C < 2048 and wide.M_C * wide.K_C * 8 > machine.l2_bytes
    assert "reused by" in wide.explain()


def test_given_form_and_tile_are_kept_and_said():
    p = default_blis_params(500, 500, 500, 8, ZEN4, {"register_form": "col", "M_R": 16,
                                                     "N_R": 14})
    assert (p.register_form, p.M_R, p.N_R) == ("col", 16, 14)
    assert p.reasons[0].startswith("form col (given")
    assert "16x14 given by the op" in p.reasons


@pytest.mark.parametrize("order", ["A", "B"])
def test_given_blocks_hold_whole_register_tiles(order):
    """A given M_C (N_C) that is not a multiple of M_R (N_R) is taken down to one, as BLIS
    does, and said: the register tiles are aligned to the matrix, and a block that cuts them
    leaves their loops rolled (the stem at 44.7 GFLOPS instead of 187).  A block covering the
    whole dimension stays as given."""
    given = {"M_C": 196, "N_C": 100, "M_R": 8, "N_R": 32, "l2_block": order}
    p = default_blis_params(1000, 500, 300, 4, ZEN4, given)
    assert (p.M_C, p.N_C) == (192, 96)
    assert "M_C 196 -> 192: a multiple of M_R 8" in p.explain()
    assert "N_C 100 -> 96: a multiple of N_R 32" in p.explain()
    assert default_blis_params(150, 80, 300, 4, ZEN4, given).M_C == 196
    assert default_blis_params(1000, 500, 300, 4, ZEN4, {**given, "M_C": 5}).M_C == 8


def test_given_m_c_off_the_register_tile_still_unrolls():
    """hop.matmul with M_C = 196 and an 8-row tile: the register tile is unrolled (no
    remark that it stays partial) and the product is right, 1001 x 70 x 300."""
    import polyopt
    from tests.schedules.matmul_check import check_matmul
    m, n, k = 1001, 70, 300
    t = f"memref<{m}x{k}xf32>, memref<{k}x{n}xf32>, memref<{m}x{n}xf32>"
    src = (f"func.func @mm(%A: memref<{m}x{k}xf32>, %B: memref<{k}x{n}xf32>, "
           f"%C: memref<{m}x{n}xf32>) {{\n  hop.matmul %A, %B, %C {{M_C = 196 : i32, "
           f"M_R = 8 : i32, N_R = 32 : i32}} : ({t})\n  return\n}}\n")
    remarks = []
    mod = polyopt.compile(src, hopt=True, copy=True, unroll=True, scalrep=True, vect=True,
                          threads=2, remark=lambda loc, msg: remarks.append(msg))
    assert not [r for r in remarks if "not unrolled" in r or "stay partial" in r], remarks
    check_matmul(mod["mm"], m, n, k, "f32")


def test_small_products_whose_tile_divides_them_are_not_packed():
    """A and B in L2 and a register tile dividing M x N: BLIS's small, unpacked path, said;
    packing stays where a tile would be cut (100^3) or the operands outgrow L2 (512^3)."""
    from polyopt.schedules.blis_schedule import unpacked_params
    p = unpacked_params(96, 96, 96, 4, ZEN4)
    assert 96 % p.M_R == 0 and 96 % p.N_R == 0 and p.M_R * p.N_R // 16 >= 4
    assert p.reasons[-1].startswith("not packed: A and B (72 KiB) fit in L2")
    assert not any("given by the op" in r for r in p.reasons)
    assert unpacked_params(100, 100, 100, 4, ZEN4) is None
    assert unpacked_params(512, 512, 512, 4, ZEN4) is None
    assert unpacked_params(16, 16, 16, 8, ZEN4).N_R == 16


def test_an_unpacked_b_whose_rows_share_l1_sets_is_packed_on_a_core_that_waits_on_it():
    """B's K x N_R panel, read again by every tile of a column, overflows its L1 sets when
    its rows are a power of two apart (128 f64: 1 KiB, 32 lines in each of the 16 sets the
    panel maps to, 12 ways): on Zen 5 (2 full-width FMAs a cycle, 32 of L2's 48 bytes a
    cycle) packing pays; on Zen 4 (16 of 32) the unpacked tile still ran ahead."""
    import dataclasses

    from polyopt.schedules.blis_schedule import (b_panel_thrashes_l1, l1_set_load,
                                                 unpacked_params)
    zen5 = dataclasses.replace(ZEN5, l2_bytes_per_cycle=48.0)
    zen4 = dataclasses.replace(ZEN4, l2_bytes_per_cycle=32.0)
    assert l1_set_load(1024, 128, 256, zen5) == 32      # 128 rows x 4 lines over 16 sets
    assert l1_set_load(512, 64, 256, zen5) == 8         # 64 f64: 64 x 4 lines over 32 sets
    assert l1_set_load(200, 100, 128, zen5) <= 12       # a stride that is no power of two
    assert b_panel_thrashes_l1(128, 128, 32, 4, 8, zen5)
    assert not b_panel_thrashes_l1(128, 128, 32, 4, 8, zen4)
    for shape, eb in (((128, 128, 128), 8), ((192, 192, 192), 8), ((128, 128, 128), 4),
                      ((2048, 2048, 32), 8), ((128, 128, 64), 8)):
        assert unpacked_params(*shape, eb, zen5) is None, shape
        assert unpacked_params(*shape, eb, zen4) is not None, shape
    for shape, eb in (((64, 64, 64), 8), ((96, 96, 96), 8), ((128, 128, 64), 4)):
        assert unpacked_params(*shape, eb, zen5) is not None, shape


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("m, n, k", [(96, 96, 96), (16, 64, 77), (40, 128, 300), (128, 32, 5)])
def test_unpacked_small_products_are_right(monkeypatch, t, m, n, k):
    """The unpacked small product (--hopt-copy asked, the model declines) against numpy, K
    not a multiple of the unroll; the remark says so and nothing is packed.  On Zen 4's model
    (its measured 32 bytes a cycle from L2), which leaves 40x128x300 unpacked whatever the
    host: Zen 5's packs it (B's rows, 512 bytes apart, overflow their L1 sets)."""
    import dataclasses

    import polyopt
    import polyopt.pipeline
    zen4 = dataclasses.replace(ZEN4, l2_bytes_per_cycle=32.0)
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: zen4)
    from tests.schedules.matmul_check import check_matmul
    ty = f"memref<{m}x{k}x{t}>, memref<{k}x{n}x{t}>, memref<{m}x{n}x{t}>"
    src = (f"func.func @mm(%A: memref<{m}x{k}x{t}>, %B: memref<{k}x{n}x{t}>, "
           f"%C: memref<{m}x{n}x{t}>) {{\n  hop.matmul %A, %B, %C : ({ty})\n  return\n}}\n")
    remarks = []
    mod = polyopt.compile(src, hopt=True, copy=True, unroll=True, scalrep=True, vect=True,
                          threads=1, remark=lambda loc, msg: remarks.append(msg))
    assert any("not packed: A and B" in r for r in remarks), remarks
    assert not any("packed A into" in r or "not unrolled" in r for r in remarks), remarks
    assert "memref.alloc" not in str(mod.module)
    check_matmul(mod["mm"], m, n, k, t)


def test_explain_cli_prints_the_reasons():
    from polyopt.cli import _explain_matmul
    out = _explain_matmul(1000, 1000, 1000, "f32", {})
    assert out.startswith("model's choice for 1000x1000x1000 f32: M_C=")
    assert "accumulators >=" in out and "K_C " in out


def test_memory_bound_loops_use_half_vectors_where_512_bits_issue_as_two_halves():
    halves = MachineModel(vector_bits=512, full_width_fma=False)
    full = MachineModel(vector_bits=512, full_width_fma=True)
    avx2 = MachineModel(vector_bits=256, full_width_fma=False)
    assert (halves.stream_lanes(4), halves.lanes(4)) == (8, 16)
    assert (full.stream_lanes(4), full.stream_lanes(8)) == (16, 8)
    assert (avx2.stream_lanes(8), avx2.lanes(8)) == (4, 4)


def test_column_form_asked_for_gets_a_column_tile():
    # two vectors of A's column times as many broadcasts of B as the registers allow:
    # BLIS's skx 16x14 with 32 registers and {1toN} broadcasts, 8x6 f64 with AVX2's 16
    for machine, elem, tile in ((ZEN4, 8, (16, 14)), (ZEN4, 4, (32, 14)), (ZEN3, 8, (8, 6))):
        p = default_blis_params(2000, 2000, 2000, elem, machine, {"register_form": "col"})
        assert (p.register_form, p.M_R, p.N_R) == ("col", *tile)
    # a tile given with the form is kept
    p = default_blis_params(2000, 2000, 2000, 8, ZEN4, {"register_form": "col", "M_R": 24,
                                                         "N_R": 8})
    assert (p.M_R, p.N_R) == (24, 8)


def test_a_library_kernel_gets_the_loop_order_it_was_written_for():
    """--hopt-blis: a kernel called with A and B swapped keeps A's micro-panel in L1, so GEPB,
    with K_C filling all but one L1 way with it (skx's sgemm 32x12, our 12x32: 12 x 592 floats
    in 28 of 32 KiB, fitted to K = 2048 as 4 blocks of 512); one called as it is keeps B's
    micro-panel there (GEBP, the model's K_C); given parameters win."""
    from polyopt.schedules.blis_schedule import MicroKernelChoice, microkernel_params
    skx = MicroKernelChoice("bli_sgemm_skx_asm_32x12_l2", 12, 32, l1_panel="A")
    p = microkernel_params(2088, 2048, 2048, 4, ZEN4, {}, skx)
    assert (p.l2_block, p.K_C, p.M_R, p.N_R) == ("B", 512, 12, 32)
    assert 12 * p.K_C * 4 <= 7 * (32 << 10) // 8
    assert p.origin["K_C"] == "model"
    assert any("keeps A's micro-panel in L1" in r for r in p.reasons), p.reasons
    assert any(r.startswith("K_C 512: A's micro-panel 12x512") for r in p.reasons), p.reasons
    assert not any("(given)" in r for r in p.reasons if r.startswith(("K_C", "l2_block")))
    d = microkernel_params(2088, 2048, 2048, 8, ZEN4, {},
                           MicroKernelChoice("bli_dgemm_skx_asm_16x14", 14, 16, l1_panel="A"))
    assert (d.l2_block, d.K_C) == ("B", 256)
    haswell = MicroKernelChoice("bli_dgemm_haswell_asm_6x8", 6, 8, l1_panel="B")
    h = microkernel_params(2088, 2048, 2048, 8, ZEN4, {}, haswell)
    assert h.l2_block == "A" and h.K_C == default_blis_params(
        2088, 2048, 2048, 8, ZEN4, {"M_R": 6, "N_R": 8, "l2_block": "A"}).K_C
    g = microkernel_params(2088, 2048, 2048, 4, ZEN4, {"K_C": 256, "l2_block": "A"}, skx)
    assert (g.l2_block, g.K_C, g.origin["K_C"]) == ("A", 256, "attribute")


def test_one_block_of_b_puts_the_k_c_loop_outside():
    """GEPB with all of N in one block of B and K in several K_C blocks: the K_C loop runs
    outside the M_C loop, so that B's block is packed once per K_C block, not once per M_C
    block of A; a team keeps the order (one parallel region, each thread its own B); the
    product runs right, M's edge in the last block."""
    from polyopt.schedules.blis_parallel import balance_for_threads
    gepb = {"l2_block": "B"}
    p = default_blis_params(3000, 64, 1100, 4, ZEN4, gepb)
    assert p.N_C >= 64 and p.K_C < 1100 and p.M_C < 3000
    assert p.k_outer and str(p.schedule()).startswith(
        f"(d0, d1, d2) -> (d2 floordiv {p.K_C}, d0 floordiv {p.M_C},")
    assert any(r.startswith("K_C loop outside the M_C loop") for r in p.reasons)
    team = balance_for_threads(p, 3000, 64, 2)
    assert not team.k_outer and str(team.schedule()).startswith(
        f"(d0, d1, d2) -> (d0 floordiv {team.M_C}, d2 floordiv {team.K_C},")
    assert not default_blis_params(3000, 64, 300, 4, ZEN4, gepb).k_outer     # one K_C block
    assert not default_blis_params(3000, 2048, 1100, 4, ZEN4, gepb).k_outer   # N in blocks
    assert not default_blis_params(3000, 64, 1100, 4, ZEN4, {"l2_block": "A"}).k_outer

    import numpy as np
    import polyopt
    from polyopt.bench import matmul_source
    remarks = []
    mm = polyopt.compile(matmul_source(1001, 64, 1100, "f32", {"l2_block": '"B"'}), threads=1,
                         remark=lambda loc, msg: remarks.append(msg), hopt=True, copy=True,
                         unroll=True, scalrep=True, vect=True)["matmul"]
    assert any("K_C loop outside the M_C loop" in r for r in remarks), remarks
    assert any(r.startswith("hop.matmul: packed B") and r.endswith("at loop depth 1")
               for r in remarks), remarks
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-1, 1, s).astype(np.float32)
               for s in ((1001, 1100), (1100, 64), (1001, 64)))
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    mm(a, b, c)
    np.testing.assert_allclose(c, want, rtol=0, atol=2e-5 * 1100 * 4)


@pytest.mark.parametrize("m,n,k,dtype,in_place", [
    (1024, 64, 1024, "f32", True),       # every tile whole, K in two K_C blocks
    (1024, 32, 768, "f64", True),
    (1024, 100, 1024, "f32", True),      # N's edge: over B's zero-padded panel
    (512, 32, 1024, "f32", True),        # N narrower than one tile
    (1023, 64, 1024, "f32", False),      # M's edge: only a packed, zero-padded A covers it
    (1024, 64, 1100, "f32", False)])     # K_C (552) does not divide K
def test_one_whole_block_of_b_reads_a_in_place(m, n, k, dtype, in_place):
    """GEPB with all of N in one block of B and M and K in whole tiles: B is packed, A read
    where it is (each of its micro-panels would serve N / N_R tiles); results equal numpy's.
    On a team too, with the loop over M_C blocks on the threads and one thread's bits."""
    import numpy as np
    import polyopt
    from polyopt.bench import matmul_source
    from polyopt.pipeline import machine_model
    p = default_blis_params(m, n, k, 8 if dtype == "f64" else 4, machine_model())
    # (the cases are whole tiles of Zen 4's and Zen 5's GEPB, 4x64 f32 and 4x32 f64; another
    # CPU's tile may cut them)
    whole = p.l2_block == "B" and p.register_form == "row" and p.N_C >= n and \
        m % p.M_R == 0 and (k <= p.K_C or k % p.K_C == 0)
    outs = []
    for threads in (1, 2):
        remarks = []
        mm = polyopt.compile(matmul_source(m, n, k, dtype), threads=threads,
                             remark=lambda loc, msg: remarks.append(msg), hopt=True,
                             copy=True, unroll=True, scalrep=True, vect=True)["matmul"]
        read_in_place = any("A not packed" in r for r in remarks)
        assert read_in_place == whole, remarks
        if in_place and machine_model().vector_bits == 512:
            assert read_in_place, remarks
        if threads == 2 and read_in_place:
            assert any("parallel" in r and "A read in place" in r for r in remarks), remarks
        assert any(r.startswith("hop.matmul: packed A") for r in remarks) != read_in_place
        assert any(r.startswith("hop.matmul: packed B") for r in remarks), remarks
        t = np.float64 if dtype == "f64" else np.float32
        rng = np.random.default_rng(1)
        a, b, c = (rng.uniform(-1, 1, s).astype(t) for s in ((m, k), (k, n), (m, n)))
        want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
        mm(a, b, c)
        np.testing.assert_allclose(c, want, rtol=0, atol=(1e-13 if t is np.float64 else 3e-6)
                                   * k * 4)
        outs.append(c)
    assert np.array_equal(outs[0], outs[1])


def test_gepb_holds_all_of_n_in_one_block_of_b_slightly_over_a_quarter_of_l2():
    """255x257x253 f32 on Zen 5's model: B's 256 x 257 block is 257 KiB, a quarter of L2 and
    one column: one block of B (N_C >= N), not 192 + 65 columns; 300 columns (300 KiB) take
    two blocks, within the quarter each."""
    import dataclasses

    from polyopt.schedules.blis_schedule import default_blis_params
    zen5 = dataclasses.replace(ZEN5, l2_bytes_per_cycle=48.0)
    p = default_blis_params(255, 257, 253, 4, zen5, {})
    assert p.l2_block == "B" and p.K_C == 256 and p.N_C >= 257, p.describe()
    assert any("all of N in B's block 256x257" in r for r in p.reasons), p.reasons
    q = default_blis_params(255, 300, 253, 4, zen5, {})
    assert q.N_C < 300 and q.N_C * q.K_C * 4 <= zen5.l2_bytes / 4, q.describe()
