"""The register tile (issue 5): --hopt-copy/--hopt-unroll/--hopt-scalrep/--hopt-vect, every
subset, against numpy on sizes that no tile divides, and the shape of the inner loop."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polyopt
from polyopt.affine.dialects.affine import AffineForOp
from polyopt.codegen.target import host_target

from test_hopt import matmul_text  # noqa: E402  (tests/schedules on sys.path)
from matmul_check import check_matmul  # noqa: E402

FLAGS = ("copy", "unroll", "scalrep", "vect")
PAPER = "M_C = 64 : i32, K_C = 256 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 4 : i32"


def run(m, n, k, t, attrs, seed=0, **switches):
    compiled = polyopt.compile(matmul_text(m, n, k, t, attrs), hopt=True, **switches)
    check_matmul(compiled["matmul"], m, n, k, t, seed)
    return compiled


@pytest.mark.parametrize("combo", list(itertools.product([False, True], repeat=4)),
                         ids=lambda c: "-".join(f for f, on in zip(FLAGS, c) if on) or "none")
@pytest.mark.parametrize("m,n,k,t,attrs", [
    (50, 37, 29, "f64", "M_C = 16 : i32, K_C = 16 : i32, M_R = 4 : i32, N_R = 8 : i32, "
                        "K_U = 4 : i32"),
    (17, 31, 5, "f32", ""),
    (1, 1, 1, "f64", ""),
])
def test_every_flag_subset_matches_numpy(combo, m, n, k, t, attrs):
    run(m, n, k, t, attrs, **dict(zip(FLAGS, combo)))


@pytest.mark.parametrize("t", ["f64", "f32"])
@pytest.mark.parametrize("m,n,k,attrs", [(2088, 2048, 2048, ""), (1000, 1000, 1000, ""),
                                         (1000, 1000, 1000, PAPER)])
def test_full_pipeline_on_the_papers_and_awkward_sizes(m, n, k, attrs, t):
    run(m, n, k, t, attrs, copy=True, unroll=True, scalrep=True, vect=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300),
       mr=st.integers(1, 8), nr_vecs=st.integers(1, 4), ku=st.integers(1, 8),
       t=st.sampled_from(["f32", "f64"]), seed=st.integers(0, 100))
def test_hypothesis_register_tiles(m, n, k, mr, nr_vecs, ku, t, seed):
    width = host_target().vector_width(64 if t == "f64" else 32)
    nr = min(nr_vecs * width, 32) if width <= 32 else width
    attrs = (f"M_C = {mr * 8} : i32, K_C = 64 : i32, M_R = {mr} : i32, N_R = {nr} : i32, "
             f"K_U = {ku} : i32")
    run(m, n, k, t, attrs, seed, copy=True, unroll=True, scalrep=True, vect=True)


def _tile_k_loop(module):
    """The k loop of the register tile: the loop carrying vector iter_args."""
    loops = [op for op in module.walk() if isinstance(op, AffineForOp) and op.inits]
    assert loops, "no loop carries the register tile"
    return loops[0]


def test_inner_loop_has_no_c_access_and_is_the_unrolled_tile():
    compiled = run(50, 37, 29, "f64", PAPER.replace("64 :", "16 :").replace("256 :", "16 :"),
                   copy=True, unroll=True, scalrep=True, vect=True)
    k_loop = _tile_k_loop(compiled.module)
    body = list(k_loop.body.ops)
    assert not any(isinstance(op, AffineForOp) for op in body)     # fully unrolled tile
    stores = [op for op in body if op.name in ("affine.store", "affine.vector_store")]
    assert stores == []                                            # no store of C
    # loads only from the packed panels (A broadcast, B vectors), none from C or its tile
    loaded = {op.memref for op in body if op.name in ("affine.load", "affine.vector_load")}
    # (a thread's own A block is an alloca in the parallel loop over M_C blocks)
    assert all(v.defining_op is not None
               and v.defining_op.name in ("memref.alloc", "memref.alloca")
               for v in loaded) and len(loaded) == 2
    fmas = [op for op in body if op.name == "arith.addf"]
    width = host_target().vector_width(64)
    assert len(fmas) == 4 * (8 // min(8, width)) * 4              # M_R x N_R/W x K_U
    assert len(k_loop.inits) == 4 * max(1, 8 // width)            # the tile in iter_args


def test_remarks_say_what_was_skipped():
    seen = []
    polyopt.compile(matmul_text(50, 37, 29, "f64", PAPER), hopt=True, unroll=True,
                    remark=lambda loc, msg: seen.append(msg))
    assert any("no constant trip count" in s for s in seen)       # partial tiles, no packing


def test_tile_accumulates_from_zero_and_prefetches_c():
    """The micro-kernel never waits for C: its accumulators start at zero, C's lines are
    prefetched before the k loop and C is read (all of the tile) only after it."""
    compiled = run(50, 37, 29, "f64", PAPER.replace("64 :", "16 :").replace("256 :", "16 :"),
                   copy=True, unroll=True, scalrep=True, vect=True)
    k_loop = _tile_k_loop(compiled.module)
    inits = {v.defining_op.name for v in k_loop.inits}
    assert inits == {"arith.constant"}
    block = k_loop.parent
    ops = list(block.ops)
    at = ops.index(k_loop)
    after = ops[at + 1:]
    loads = [n for n, op in enumerate(after) if op.name in ("affine.load", "affine.vector_load")]
    stores = [n for n, op in enumerate(after)
              if op.name in ("affine.store", "affine.vector_store")]
    assert len(loads) == len(stores) == len(k_loop.inits)
    assert max(loads) < min(stores)                  # every load of C before the first store
    # the prefetches come before the k loop (or the affine.if choosing the full-tile version)
    owner = block.parent_op
    outer = owner.parent if owner.name == "affine.if" else block
    prefetches = [op for op in outer.ops if op.name == "affine.prefetch"]
    # M_R = 4 rows x (the first element of the row's 8 f64 = one 64-byte line, and its last)
    assert len(prefetches) == 4 * 2


def test_long_k_loops_fetch_c_to_l1_shortly_before_they_end():
    """K_C = 256: the k loop's last C_TILE_LEAD iterations are peeled; the tile's own lines of
    C are prefetched into L1 between the two parts (locality 3), and before the loop the lines
    of the tile M_R rows below go to L2 (locality 1).  The result is unchanged."""
    from polyopt.schedules.register_tile import C_TILE_LEAD
    attrs = "M_C = 16 : i32, K_C = 256 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 4 : i32"
    compiled = run(37, 21, 300, "f64", attrs, copy=True, unroll=True, scalrep=True, vect=True)
    loops = [op for op in compiled.module.walk() if isinstance(op, AffineForOp) and op.inits]
    # the full tile's k loop and its peeled tail (and those of the edge versions)
    from polyopt.affine.loop_utils import constant_trip_count
    trips = sorted(constant_trip_count(op) for op in loops)
    assert C_TILE_LEAD // 4 in trips and (256 - C_TILE_LEAD) // 4 in trips
    main = next(op for op in loops if constant_trip_count(op) == (256 - C_TILE_LEAD) // 4)
    ops = list(main.parent.ops)
    at = ops.index(main)
    tail = ops[at + 1 + [o.name for o in ops[at + 1:]].index("affine.for")]
    between = ops[at + 1:ops.index(tail)]
    assert [op.locality for op in between] == [3] * 8        # 4 rows x 2 lines, into L1
    assert list(tail.inits) == list(main.results)
    owner = main.parent.parent_op
    outer = owner.parent if owner.name == "affine.if" else main.parent
    early = [op for op in outer.ops if op.name == "affine.prefetch"]
    assert [op.locality for op in early] == [1] * 8          # the next rows' tile, into L2


def test_tiles_cut_by_n_edge_compute_only_its_vectors():
    """N = 2 * N_R + 5: the tiles cut by N's edge are 5 columns wide, so their version of the
    register tile holds one vector per row (5 rounded up to the vector width), not N_R's."""
    width = host_target().vector_width(32)
    n_r = 4 * width
    attrs = (f"M_C = 16 : i32, K_C = 16 : i32, M_R = 4 : i32, N_R = {n_r} : i32, "
             f"K_U = 4 : i32")
    compiled = run(37, 2 * n_r + 5, 29, "f32", attrs, copy=True, unroll=True, scalrep=True,
                   vect=True)
    tiles = sorted(len(op.inits) for op in compiled.module.walk()
                   if isinstance(op, AffineForOp) and op.inits)
    edge = -(-5 // width)
    # N's edge (5 columns: one vector per row), M's edge (37 = 9 x 4 + 1: one row of 4
    # vectors) and the full tile
    assert sorted(tiles) == sorted([4 * edge, 1 * 4, 4 * 4])
    # without vectorization the partial tiles keep the full N_R extent
    run(37, 2 * n_r + 5, 29, "f32", attrs, copy=True, unroll=True, scalrep=True)
