"""``--hopt --hopt-copy``: BLIS packing of hop.matmul (paper section 2.6): golden IR for the
paper's example (A packed under the second loop, B under the third, buffers allocated once),
accepted by mlir-opt-22, and execution against numpy on the paper's size, awkward sizes and a
hypothesis sweep of sizes and tile parameters."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from polyopt.cli import main as cli_main
from polyopt.pipeline import PipelineOptions, run_passes

from matmul_check import check_matmul  # noqa: E402  (tests/schedules on sys.path)
from upstream_mlir import assert_mlir_opt_prints_back, mlir_opt

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("POLYOPT_UPDATE_GOLDEN") == "1"

PAPER_TILES = "M_C = 64 : i32, K_C = 256 : i32, M_R = 4 : i32, N_R = 8 : i32"


def matmul_text(m, n, k, t="f64", attrs="", types=None):
    ta, tb, tc = types or (f"memref<{m}x{k}x{t}>", f"memref<{k}x{n}x{t}>",
                           f"memref<{m}x{n}x{t}>")
    attrs = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @matmul(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with POLYOPT_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def packed(text: str, **switches):
    module = polyopt.parse(text, "mm.mlir")
    run_passes(module, PipelineOptions(hopt=True, copy=True, **switches))
    return module


def func_body(module):
    return module.regions[0].blocks[0].ops[0].regions[0].blocks[0]


def copy_depths(module) -> dict:
    """For each buffer: (its alloc's block is the function body, the number of affine.for
    ops around the loop nest that copies an argument into it)."""
    body = func_body(module)
    allocs = [op for op in body.ops if op.name == "memref.alloc"]
    out = {}
    for alloc in allocs:
        buf = alloc.result
        stores = [u.op for u in buf.uses if isinstance(u.op, AffineStoreOp)
                  and isinstance(u.op.value.defining_op, AffineLoadOp)]
        assert stores, "a packing buffer is filled by a copy nest"
        store = stores[0]
        src = store.value.defining_op.memref
        # the loops around the copy nest also hold the nest that reads the buffer
        readers = [u.op for u in buf.uses if isinstance(u.op, AffineLoadOp)]
        depth = sum(1 for a in store.ancestors() if isinstance(a, AffineForOp)
                    and any(a.is_proper_ancestor_of(r) for r in readers))
        out[src] = (alloc.parent is body, depth, str(alloc.result.type))
    return out


def run_and_check(text, m, n, k, t, seed=0, **switches):
    compiled = polyopt.compile(text, hopt=True, copy=True, **switches)
    check_matmul(compiled["matmul"], m, n, k, t, seed)
    return compiled


# ---------------------------------------------------------------------------------------------
# golden IR


def test_paper_section_2_6_golden():
    """The paper's example (2088x2048x2048 f64, M_C = 64, K_C = 256, M_R = 4, N_R = 8): A's
    64x256 panel is packed under the second loop (K_C, M_C tiles) into M_R-row micro-panels,
    normalized to memref<16x256x4xf64>; B's 256x8 panel under the third loop (the N_R tile);
    both allocated once before the nest and freed after it; the rows of the last M_C tile past
    row 2088 are zeroed; C is not packed."""
    module = packed(matmul_text(2088, 2048, 2048, attrs=PAPER_TILES))
    text = str(module)
    check_golden("hopt_copy_paper_2_6.mlir", text)
    args = list(func_body(module).args)
    depths = copy_depths(module)
    assert depths == {args[0]: (True, 2, "memref<16x256x4xf64>"),
                      args[1]: (True, 3, "memref<256x8xf64>")}
    assert "%alloc[%arg4 * -16 + %arg6, %arg7, %arg9] : memref<16x256x4xf64>" in text
    assert "%alloc_0[%arg7, %arg8] : memref<256x8xf64>" in text


def test_paper_golden_is_accepted_by_mlir_opt():
    assert_mlir_opt_prints_back((GOLDEN / "hopt_copy_paper_2_6.mlir").read_text())


def test_n_c_packs_b_into_k_c_by_n_c_panels_golden():
    """With N_C, B's K_C x N_C block is packed under the K_C loop inside the N_C loop, in
    N_R-column micro-panels ((d0, d1) -> (d1 floordiv N_R, d0, d1 mod N_R), normalized to
    N_C/N_R x K_C x N_R), and A under the M_C loop below it."""
    attrs = "M_C = 15 : i32, K_C = 32 : i32, N_C = 24 : i32, M_R = 3 : i32, N_R = 8 : i32"
    module = packed(matmul_text(100, 90, 80, attrs=attrs))
    check_golden("hopt_copy_n_c.mlir", str(module))
    args = list(func_body(module).args)
    assert copy_depths(module) == {args[0]: (True, 3, "memref<5x32x3xf64>"),
                                   args[1]: (True, 2, "memref<3x32x8xf64>")}
    mlir_opt(str(module), "--allow-unregistered-dialect")
    run_and_check(matmul_text(100, 90, 80, attrs=attrs), 100, 90, 80, "f64")


def test_no_hopt_copy_is_the_plain_tiled_nest():
    text = matmul_text(2088, 2048, 2048, attrs=PAPER_TILES)
    plain = polyopt.parse(text)
    run_passes(plain, PipelineOptions(hopt=True))
    off = polyopt.parse(text)
    run_passes(off, PipelineOptions(hopt=True, copy=False))
    assert str(off) == str(plain) and "memref.alloc" not in str(plain)
    assert PipelineOptions().copy is False


def test_cli_flags(tmp_path, capsys):
    src = tmp_path / "mm.mlir"
    src.write_text(matmul_text(2088, 2048, 2048, attrs=PAPER_TILES))
    assert cli_main(["opt", "--hopt", "--hopt-copy", str(src)]) == 0
    assert capsys.readouterr().out == (GOLDEN / "hopt_copy_paper_2_6.mlir").read_text()
    assert cli_main(["opt", "--hopt", "--hopt-copy", "--no-hopt-copy", str(src)]) == 0
    assert "memref.alloc" not in capsys.readouterr().out
    assert cli_main(["opt", "--hopt", "--hopt-copy", "--remarks", str(src)]) == 0
    err = capsys.readouterr().err
    assert "packed A into memref<64x256xf64, affine_map<(d0, d1) -> (d0 floordiv 4, d1, " \
           "d0 mod 4)>> at loop depth 2" in err
    assert "packed B into memref<256x8xf64> at loop depth 3" in err


def test_user_schedule_is_not_packed():
    text = matmul_text(33, 20, 17, attrs="schedule = (d0, d1, d2) -> (d2 floordiv 8, "
                                         "d0 floordiv 16, d1, d0, d2)")
    seen = []
    compiled = run_and_check(text, 33, 20, 17, "f64",
                             remark=lambda loc, msg: seen.append(msg))
    assert any("packing (--hopt-copy) skipped" in msg for msg in seen)
    assert "memref.alloc" not in str(compiled.module)


# ---------------------------------------------------------------------------------------------
# execution against numpy


@pytest.mark.parametrize("attrs,t", [(PAPER_TILES, "f64"), ("", "f32")])
def test_paper_size_matches_numpy(attrs, t):
    run_and_check(matmul_text(2088, 2048, 2048, t, attrs), 2088, 2048, 2048, t)


@pytest.mark.parametrize("m,n,k", [(1000, 1000, 1000), (17, 31, 5), (1, 1, 1)])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_awkward_sizes_match_numpy(m, n, k, t):
    run_and_check(matmul_text(m, n, k, t), m, n, k, t)


@pytest.mark.parametrize("attrs", [
    "M_C = 180 : i32, K_C = 480 : i32, M_R = 3 : i32, N_R = 16 : i32, K_U = 4 : i32",
    "M_C = 64 : i32, K_C = 64 : i32, N_C = 96 : i32, M_R = 6 : i32, N_R = 8 : i32"])
def test_tile_attributes_on_awkward_sizes(attrs):
    run_and_check(matmul_text(131, 197, 75, "f64", attrs), 131, 197, 75, "f64")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 200), n=st.integers(1, 200), k=st.integers(1, 200),
       mc=st.integers(1, 64), kc=st.integers(1, 64), mr=st.integers(1, 8),
       nr=st.integers(1, 32), nc=st.one_of(st.none(), st.integers(1, 96)),
       t=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 1000))
def test_hypothesis_sizes_and_tiles(m, n, k, mc, kc, mr, nr, nc, t, seed):
    attrs = f"M_C = {mc} : i32, K_C = {kc} : i32, M_R = {mr} : i32, N_R = {nr} : i32"
    if nc is not None:
        attrs += f", N_C = {nc} : i32"
    run_and_check(matmul_text(m, n, k, t, attrs), m, n, k, t, seed)


def test_alpha_beta_and_linalg_matmul_are_packed():
    text = matmul_text(45, 38, 29, attrs="M_C = 16 : i32, K_C = 8 : i32, M_R = 4 : i32, "
                                         "N_R = 8 : i32, alpha = 2.0 : f64, beta = 0.5 : f64")
    rng = np.random.default_rng(3)
    a, b, c = rng.random((45, 29)), rng.random((29, 38)), rng.random((45, 38))
    expected = 2.0 * a @ b + 0.5 * c
    compiled = polyopt.compile(text, hopt=True, copy=True)
    assert str(compiled.module).count("memref.alloc") == 2
    compiled["matmul"](a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-12, atol=1e-12)
    lin = ("func.func @matmul(%A: memref<37x29xf32>, %B: memref<29x41xf32>, "
           "%C: memref<37x41xf32>) {\n  linalg.matmul ins(%A, %B : memref<37x29xf32>, "
           "memref<29x41xf32>) outs(%C : memref<37x41xf32>)\n  return\n}\n")
    compiled = run_and_check(lin, 37, 41, 29, "f32")
    assert str(compiled.module).count("memref.alloc") == 2


def test_operands_with_layouts_are_absorbed_by_packing():
    """A transposed A (its physical buffer is K x M) and a C with leading dimension 2N: the
    packed panels are the same, the nest reads them as before."""
    m, n, k = 37, 29, 41
    ta = f"memref<{m}x{k}xf64, affine_map<(d0, d1) -> (d1, d0)>>"
    tb = f"memref<{k}x{n}xf64>"
    tc = f"memref<{m}x{n}xf64, strided<[{2 * n}, 1]>>"
    text = matmul_text(m, n, k, attrs="M_C = 16 : i32, K_C = 8 : i32, M_R = 4 : i32, "
                                      "N_R = 8 : i32", types=(ta, tb, tc))
    compiled = polyopt.compile(text, hopt=True, copy=True)
    body = str(compiled.module)
    assert body.count("memref.alloc") == 2
    rng = np.random.default_rng(5)
    at = rng.random((k, m))                   # A's physical (transposed) buffer
    b = rng.random((k, n))
    cfull = rng.random((m, 2 * n))
    expected = cfull.copy()
    expected[:, :n] += at.T @ b
    compiled["matmul"](at, b, cfull.reshape(-1)[:(m - 1) * 2 * n + n])
    np.testing.assert_allclose(cfull, expected, rtol=1e-12, atol=1e-12)


def test_b_is_packed_one_micro_panel_row_at_a_time():
    """B's copy into N_R-column micro-panels runs over (panel, row, column in panel), so its
    subscripts need no floordiv/mod (LLVM copies contiguous vectors instead of scattering);
    the last, partial panel of a ragged N copies only the valid columns."""
    attrs = "M_C = 16 : i32, K_C = 32 : i32, N_C = 48 : i32, M_R = 4 : i32, N_R = 16 : i32"
    text = matmul_text(37, 100, 45, t="f32", attrs=attrs)
    module = packed(text)
    args = list(func_body(module).args)
    stores = [op for op in module.walk() if isinstance(op, AffineStoreOp)
              and isinstance(op.value.defining_op, AffineLoadOp)
              and op.value.defining_op.memref is args[1]]
    assert len(stores) == 1
    subscripts = [str(e) for e in stores[0].map.results]
    assert not any("floordiv" in s or "mod" in s for s in subscripts), subscripts
    assert "memref<3x32x16xf32>" in str(stores[0].memref.type)
    run_and_check(text, 37, 100, 45, "f32")
    run_and_check(text, 37, 100, 45, "f32", unroll=True, scalrep=True, vect=True)
