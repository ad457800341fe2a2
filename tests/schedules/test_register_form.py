"""The register tile's two forms (issue 20): the row form (broadcast A, vector loads of B's
packed row) and the column form (vector loads of A's packed column, broadcast B, C's tile
accumulated from zero in a transposed buffer and added after the k loop), against numpy on
shapes no tile divides, with every pass flag; the attribute's verification; the k loop's shape."""

import itertools
import subprocess
import sys

import pytest

import polyopt
from polyopt.affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from polyopt.affine.diagnostics import VerifyError
from polyopt.codegen.target import host_target

from test_hopt import matmul_text  # noqa: E402  (tests/schedules on sys.path)
from matmul_check import check_matmul  # noqa: E402
from upstream_mlir import mlir_opt  # noqa: E402

FLAGS = ("copy", "unroll", "scalrep", "vect")


def lanes(t):
    return host_target().vector_width(64 if t == "f64" else 32)


def col_attrs(t, m_vecs, n_r, k_c=16, m_c=None, k_u=4):
    mr = m_vecs * lanes(t)
    return (f'register_form = "col", M_R = {mr} : i32, N_R = {n_r} : i32, K_C = {k_c} : i32, '
            f'M_C = {m_c or 2 * mr} : i32, K_U = {k_u} : i32')


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "-".join(f for f, on in zip(FLAGS, c) if on) or "none")
@pytest.mark.parametrize("m,n,k,t,m_vecs,n_r", [
    (37, 29, 53, "f64", 2, 6),     # two vectors of A's column, 6 broadcasts of B
    (41, 37, 19, "f32", 1, 5),     # one vector: the broadcasts fold into the FMAs
])
def test_column_form_every_flag_subset_matches_numpy(combo, m, n, k, t, m_vecs, n_r):
    compiled = polyopt.compile(matmul_text(m, n, k, t, col_attrs(t, m_vecs, n_r)), hopt=True,
                               **dict(zip(FLAGS, combo)))
    check_matmul(compiled["matmul"], m, n, k, t)


@pytest.mark.parametrize("t", ["f64", "f32"])
@pytest.mark.parametrize("m,n,k,m_vecs,n_r,k_u", [
    (300, 301, 302, 2, 14, 4),     # BLIS's skx shape (16x14 f64)
    (131, 67, 250, 1, 28, 2),      # 28 accumulators, one vector of A per k
    (5, 3, 7, 1, 4, 3),            # smaller than one tile
])
def test_column_form_full_pipeline_matches_numpy(m, n, k, m_vecs, n_r, k_u, t):
    text = matmul_text(m, n, k, t, col_attrs(t, m_vecs, n_r, k_c=64, k_u=k_u))
    compiled = polyopt.compile(text, hopt=True, copy=True, unroll=True, scalrep=True,
                               vect=True)
    check_matmul(compiled["matmul"], m, n, k, t, seed=3)


def _tile_k_loop(module):
    loops = [op for op in module.walk() if isinstance(op, AffineForOp) and op.inits]
    assert loops, "no k loop carries the accumulators"
    return max(loops, key=lambda op: len(op.inits))


def _optimized(text):
    from polyopt.pipeline import PipelineOptions, run_passes
    module = polyopt.parse(text)
    run_passes(module, PipelineOptions(hopt=True, copy=True, unroll=True, scalrep=True,
                                       vect=True))
    return module


def test_column_form_k_loop_accumulates_from_zero_and_touches_no_c():
    t, m_vecs, n_r = "f64", 1, 6
    module = _optimized(matmul_text(256, 282, 256, t, col_attrs(t, m_vecs, n_r, k_c=128,
                                                                m_c=128)))
    k_loop = _tile_k_loop(module)
    # the accumulators (vectors along i when --hopt-vect applies, else scalars: M_R x N_R
    # elements either way) start from zero
    width = lanes(t) if str(k_loop.inits[0].type).startswith("vector") else 1
    assert len(k_loop.inits) * width == m_vecs * lanes(t) * n_r
    assert all(v.defining_op.name == "arith.constant" for v in k_loop.inits)
    c = module.body.ops[0].body.args[2]
    assert not any(getattr(op, "memref", None) is c for op in k_loop.walk())
    # C is updated after the loop from the transposed tile buffer
    func = module.body.ops[0]
    assert any(isinstance(op, AffineStoreOp) and op.memref is c for op in func.walk())


def test_column_form_prints_what_mlir_opt_accepts():
    t = "f64"
    module = _optimized(matmul_text(19, 23, 17, t, col_attrs(t, 1, 5)))
    printed = str(module)
    assert "affine.for" in printed
    mlir_opt(printed, "--allow-unregistered-dialect")


@pytest.mark.skipif("+avx512f" not in host_target().features.split(","),
                    reason="the CPU has no avx512f: no {1toN} operands to check")
def test_column_form_folds_broadcasts_of_b_into_the_fmas():
    # one vector of A's column per k: each element of B feeds one FMA, which takes it as a
    # {1to8} memory operand (what BLIS's skx kernel does), and nothing spills
    compiled = polyopt.compile(matmul_text(256, 280, 256, "f64", col_attrs("f64", 1, 28,
                                                                           k_c=128)),
                               hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
    asm = compiled.asm()
    blocks = asm.split("\n.LBB")
    hot = max(blocks, key=lambda b: b.count("vfmadd")).split("\n\tj")[0]   # up to its branch
    assert hot.count("vfmadd") == 28 * 4
    assert hot.count("{1to8}") == 28 * 4
    assert "(%rsp)" not in hot


def test_register_form_attribute_is_verified():
    text = matmul_text(8, 8, 8, "f64", 'register_form = "diag"')
    with pytest.raises(VerifyError, match='register_form must be "row" or "col", got "diag"'):
        polyopt.parse(text)
    text = matmul_text(8, 8, 8, "f64", "register_form = 3 : i32")
    with pytest.raises(VerifyError, match="register_form must be"):
        polyopt.parse(text)


def test_row_and_column_forms_agree_with_each_other():
    import numpy as np
    m, n, k, t = 45, 33, 70, "f32"
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(
        np.float32)
    outs = []
    for form in ("row", "col"):
        text = matmul_text(m, n, k, t, f'register_form = "{form}", M_R = 16 : i32, '
                                       f'N_R = 16 : i32')
        c = np.zeros((m, n), np.float32)
        polyopt.compile(text, hopt=True, copy=True, unroll=True, scalrep=True,
                        vect=True)["matmul"](a, b, c)
        outs.append(c)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_bench_form_option_is_checked():
    out = subprocess.run([sys.executable, "-m", "polyopt", "bench", "matmul", "--form", "diag"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "invalid choice: 'diag'" in out.stderr


def _column_edge_loops(module, m_r, t):
    """The k loops carrying the column form's accumulators of N's edge: vector<M_R x t>."""
    return [op for op in module.walk() if isinstance(op, AffineForOp) and op.inits
            and all(str(v.type) == f"vector<{m_r}x{t}>" for v in op.inits)]


@pytest.mark.parametrize("t", ["f64", "f32"])
@pytest.mark.parametrize("edge", [1, 2, 3])
def test_n_edge_narrower_than_m_r_runs_in_the_column_form(t, edge):
    # row-form tiles of 4 x 2 vectors; N's edge of 1-3 columns: each column is one vector of
    # 4 rows (A's packed column) times a broadcast of B, on K_U partial sums
    n_r = 2 * lanes(t)
    m, n, k = 4 * 7 + 3, 2 * n_r + edge, 101
    attrs = (f'register_form = "row", M_R = 4 : i32, N_R = {n_r} : i32, K_C = 48 : i32, '
             f'M_C = 16 : i32, K_U = 4 : i32')
    text = matmul_text(m, n, k, t, attrs)
    loops = _column_edge_loops(_optimized(text), 4, t)
    # one accumulator per column, each as K_U partial sums (the k loops of the remainder of
    # K_C by K_U have one)
    assert loops and max(len(loop.inits) for loop in loops) == 4 * edge
    # B's edge columns are read from a buffer of their own, contiguous along k ([.., k, edge]),
    # filled outside the loop over the row tiles around the edge's k loops, not once per tile
    module = _optimized(text)
    loops = _column_edge_loops(module, 4, t)
    b_reads = {id(op.memref): op.memref for loop in loops for op in loop.walk()
               if isinstance(op, AffineLoadOp)}
    assert len(b_reads) == 1
    column_of_b = next(iter(b_reads.values()))
    assert column_of_b.type.shape[-1] == edge
    fills = [op for op in module.walk() if isinstance(op, AffineStoreOp)
             and op.memref is column_of_b]
    tile_loops = [next(a for a in edge_loop.ancestors() if isinstance(a, AffineForOp))
                  for edge_loop in loops]
    assert fills and not any(tile.is_proper_ancestor_of(fill) for fill in fills
                             for tile in tile_loops)
    for seed in range(2):
        check_matmul(polyopt.compile(text, hopt=True, copy=True, unroll=True, scalrep=True,
                                     vect=True)["matmul"], m, n, k, t, seed=seed)


def test_n_edge_as_wide_as_m_r_stays_in_the_row_form():
    n_r = 2 * lanes("f64")
    text = matmul_text(13, n_r + 4, 20, "f64", f'M_R = 4 : i32, N_R = {n_r} : i32')
    assert not _column_edge_loops(_optimized(text), 4, "f64")
