"""The BLIS nest on several threads (polyopt/schedules/blis_parallel.py): the loop over M_C
blocks becomes ``affine.parallel`` with a per-thread packed A block, B's packing runs on the
team; results are bitwise those of one thread (K_C unchanged: every element of C is summed in
the same order) at 2 and 3 threads, on shapes that are multiples of nothing, for hop.matmul,
the N_C-tiled nest, f32, BLIS's micro-kernels (--hopt-blis), convolutions and raised
contractions."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.bench import conv2d_source, ConvShape, matmul_source
from polyopt.schedules.blis_parallel import balance_m_c, balance_n_c
from polyopt.schedules.blis_schedule import BlisParams
from cache_targets import l2_multiple
from upstream_mlir import mlir_opt

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _operands(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    t = np.float64 if dtype == "f64" else np.float32
    return (rng.uniform(-1, 1, (m, k)).astype(t), rng.uniform(-1, 1, (k, n)).astype(t),
            rng.uniform(-1, 1, (m, n)).astype(t))


def _run(src, threads, args, name="matmul", **switches):
    f = polyopt.compile(src, threads=threads, **switches)[name]
    out = [a.copy() for a in args]
    f(*out)
    return out[-1]


@pytest.mark.parametrize("m,n,k,dtype,attrs,switches", [
    (131, 97, 203, "f64", None, ALL),
    (517, 300, 611, "f32", None, ALL),
    (301, 250, 170, "f64", {"N_C": "64 : i32", "M_C": "60 : i32", "K_C": "48 : i32"}, ALL),
    (89, 45, 77, "f64", {"M_C": "12 : i32", "K_C": "20 : i32"}, {"hopt": True, "copy": True}),
    (700, 33, 50, "f32", None, dict(ALL, unroll=False)),
    (422, 7, 451, "f32", None, ALL),    # the stack tile's padding zeroed before the nest
    (131, 97, 203, "f64", None, {"hopt": True, "blis": True}),     # BLIS's micro-kernel
    (517, 300, 611, "f32", None, {"hopt": True, "blis": True}),
])
def test_bitwise_identical_at_every_thread_count(m, n, k, dtype, attrs, switches):
    src = matmul_source(m, n, k, dtype, attrs)
    args = _operands(m, n, k, dtype)
    one = _run(src, 1, args, **switches)
    ref = args[2].astype(np.float64) + args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.max(np.abs(one - ref)) <= (1e-12 if dtype == "f64" else 1e-4) * k
    for threads in (2, 3):
        assert np.array_equal(_run(src, threads, args, **switches), one), threads


def test_printed_nest_shows_the_parallel_loops_and_upstream_accepts_it():
    src = matmul_source(301, 250, 170, "f64", {"N_C": "64 : i32", "M_C": "60 : i32"})
    module = polyopt.parse(src)
    from polyopt.passes import run_pipeline
    run_pipeline(module, "hopt-expand{copy=true unroll=true scalrep=true vect=true threads=2},"
                         "hopt-normalize-memrefs")
    text = str(module)
    # B's copy (and its zero padding) on the team, then the ic loop with per-thread buffers
    assert text.count("affine.parallel") >= 2
    # the ic loop: ceil(301 / M_C) blocks, whatever the K_C loop around it (none where the
    # model's K_C holds all of K = 170, as on Zen 5)
    ic = text[re.search(r"affine.parallel \(%arg\d+\) = \(0\) to \(6\)", text).start():]
    assert ic.split("\n")[1].strip().startswith("%alloca = memref.alloca() {alignment = 64")
    assert mlir_opt(text) == text


@pytest.mark.parametrize("switches", [{"hopt": True, "copy": True}, ALL])
def test_a_single_m_c_block_never_runs_k_blocks_in_parallel(switches):
    """With M inside one M_C block there is no ic loop; the loop around A's packing is then
    pc, whose iterations all add into C: running it on the team raced on C (a hypothesis
    example, 2x111x135 f32 with M_C 4 and K_C 51, lost updates in CI)."""
    m, n, k = 2, 111, 135
    src = matmul_source(m, n, k, "f32", {"M_C": "4 : i32", "K_C": "51 : i32",
                                         "M_R": "1 : i32", "N_R": "2 : i32"})
    remarks = []
    compiled = polyopt.compile(src, threads=2, remark=lambda loc, msg: remarks.append(msg),
                               **switches)
    assert not any("(ic) parallel" in r for r in remarks), remarks
    assert "affine.parallel" not in str(compiled.module)
    args = _operands(m, n, k, "f32")
    out = [a.copy() for a in args]
    compiled["matmul"](*out)
    assert np.array_equal(out[2], _run(src, 1, args, **switches))


def test_500_repeated_two_thread_calls_are_bitwise_identical():
    m, n, k = 173, 211, 190
    src = matmul_source(m, n, k, "f64", {"M_C": "30 : i32", "K_C": "64 : i32"})
    f = polyopt.compile(src, threads=2, **ALL)["matmul"]
    a, b, c0 = _operands(m, n, k, "f64", seed=5)
    first = None
    for _ in range(500):
        c = c0.copy()
        f(a, b, c)
        if first is None:
            first = c
        assert np.array_equal(c, first)
    assert np.allclose(first, c0 + a @ b, rtol=0, atol=1e-12 * k)


@pytest.mark.parametrize("s", [ConvShape(1, 13, 11, 17, 23, 3, 3), ConvShape(1, 9, 8, 5, 7, 3, 3),
                               ConvShape(2, 30, 30, 16, 40, 3, 3, 2)])
def test_convolutions_on_threads(s):
    src = conv2d_source(s, "f32")
    oh, ow = s.out_hw
    rng = np.random.default_rng(3)
    args = (rng.uniform(-1, 1, (s.n, s.h, s.w, s.c)).astype(np.float32),
            rng.uniform(-1, 1, (s.kh, s.kw, s.c, s.f)).astype(np.float32),
            rng.uniform(-1, 1, (s.n, oh, ow, s.f)).astype(np.float32))
    one = _run(src, 1, args, name="conv", **ALL)
    for threads in (2, 3):
        assert np.array_equal(_run(src, threads, args, name="conv", **ALL), one), threads


def test_raised_contraction_on_threads():
    gemm = """\
func.func @gemm(%A: memref<131x97xf64>, %B: memref<97x103xf64>, %C: memref<131x103xf64>) {
  affine.for %i = 0 to 131 {
    affine.for %j = 0 to 103 {
      affine.for %k = 0 to 97 {
        %a = affine.load %A[%i, %k] : memref<131x97xf64>
        %b = affine.load %B[%k, %j] : memref<97x103xf64>
        %c = affine.load %C[%i, %j] : memref<131x103xf64>
        %p = arith.mulf %a, %b : f64
        %s = arith.addf %c, %p : f64
        affine.store %s, %C[%i, %j] : memref<131x103xf64>
      }
    }
  }
  return
}
"""
    args = _operands(131, 103, 97, "f64", seed=9)
    one = _run(gemm, 1, args, name="gemm", **ALL)
    assert np.allclose(one, args[2] + args[0] @ args[1], rtol=0, atol=1e-12)
    assert "affine.parallel" in str(polyopt.compile(gemm, threads=2, **ALL).module)
    assert np.array_equal(_run(gemm, 2, args, name="gemm", **ALL), one)


def test_m_c_is_balanced_over_the_threads():
    p = BlisParams(M_C=501, K_C=80, M_R=3, N_R=32)
    assert balance_m_c(p, 1000, 1) is p
    assert balance_m_c(p, 1000, 2) is p                  # 2 blocks: one each already
    q = balance_m_c(p, 2088, 2)                          # 5 blocks -> 6 of 348 rows
    assert q.M_C == 348 and -(-2088 // q.M_C) == 6 and q.K_C == 80
    r = balance_m_c(p, 1000, 3)                          # 2 blocks -> 3 of 336 rows
    assert r.M_C == 336 and -(-1000 // r.M_C) == 3
    assert balance_m_c(p, 2088, 2, {"M_C": 501}) is p   # the user's M_C is kept
    assert balance_m_c(p, 5, 2) is p                     # fewer rows than threads x M_R


def test_n_c_is_balanced_in_micro_panels():
    # PolyBench gemm's 1100 columns: 35 panels of 32; 9 blocks of 4 panels gave one thread
    # 20 panels and the other 15; 12 blocks of 3 give 18 and 17
    p = BlisParams(M_C=1000, K_C=240, N_C=128, M_R=4, N_R=32, l2_block="B")
    assert balance_n_c(p, 1100, 2).N_C == 96
    assert balance_n_c(p, 2048, 2) is p                  # 16 blocks: 8 each already
    assert balance_n_c(p, 2048, 3).N_C == 64             # 32 blocks of 2 panels: 22, 22, 20
    assert balance_n_c(p, 40, 2) is None                 # fewer panels than threads


def test_m_c_is_balanced_exactly_when_a_few_more_blocks_do_it():
    # the ResNet-50 stem's 12544 rows on 2 threads: 29 blocks of the model's 436 give one
    # thread 15 (4% over an even share); 32 blocks of 392 give 16 and 16
    from polyopt.schedules.blis_parallel import balance_m_c
    p = BlisParams(M_C=436, K_C=147, N_C=64, M_R=4, N_R=64, l2_block="B")
    assert balance_m_c(p, 12544, 2).M_C == 392
    assert balance_m_c(p, 12544, 1) is p
    # the fewest blocks among the most even: 11 rows of tiles are 6 and 5 with 2 blocks
    q = BlisParams(M_C=24, K_C=64, N_C=64, M_R=4, N_R=64, l2_block="B")
    assert balance_m_c(q, 44, 2).M_C == 24


@pytest.mark.parametrize("m,n,k,dtype", [(32, 2048, 2048, "f64"), (19, 1000, 700, "f32")])
def test_a_short_a_splits_n_on_the_team(m, n, k, dtype):
    """A short A (GEBP on one thread) is not split over the threads (a few micro-panels each):
    the team splits N in GEPB's order, each thread its own block of B; the same bits as one
    thread's GEBP nest at 2 and 3 threads (each element of C one chain of FMAs in k's order,
    whatever the K_C blocks)."""
    from polyopt.schedules.expand import matmul_blis_params
    from polyopt.pipeline import machine_model
    src = matmul_source(m, n, k, dtype)
    op = next(o for o in polyopt.parse(src).walk() if o.name == "hop.matmul")
    machine = machine_model()
    assert matmul_blis_params(op, machine, 1).l2_block == "A"
    team = matmul_blis_params(op, machine, 2)
    assert team.l2_block == "B" and team.N_C < n
    assert "the threads split N (jc)" in team.reasons[-1]
    # a user's blocking is kept as given
    given = matmul_source(m, n, k, dtype, {"M_C": "12 : i32"})
    op = next(o for o in polyopt.parse(given).walk() if o.name == "hop.matmul")
    assert matmul_blis_params(op, machine, 2).l2_block == "A"
    args = _operands(m, n, k, dtype, seed=2)
    one = _run(src, 1, args, **ALL)
    ref = args[2].astype(np.float64) + args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.max(np.abs(one - ref)) <= (1e-12 if dtype == "f64" else 1e-4) * k
    for threads in (2, 3):
        remarks = []
        f = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                            **ALL)["matmul"]
        assert any("loop over N_C blocks (jc) parallel" in r for r in remarks), remarks
        out = [a.copy() for a in args]
        f(*out)
        assert np.array_equal(out[-1], one), threads


def test_a_raised_contraction_with_a_temporary_output_runs_on_the_team():
    """doitgen's contraction writes a fresh buffer, copied back after the nest: the threads
    share it as they share C (each its own rows or columns), so the nest is not left
    sequential for writing a buffer that is used outside the parallel loop."""
    from polyopt.polybench.suite import kernel
    from polyopt.polybench import harness
    k = kernel("doitgen")
    params = k.params_of("MEDIUM")   # (SMALL's 500x30x30 is too little work to split)
    remarks = []
    switches = dict(harness.HOPT_SWITCHES, parallel=True)
    outs = []
    for threads in (1, 2):
        compiled = polyopt.compile(harness.mlir_source(k, params), threads=threads,
                                   remark=lambda loc, msg: remarks.append(msg), **switches)
        work = harness._copy(harness.init_values(k, params))
        compiled[k.symbol](*[work[a.name] for a in k.args])
        outs.append(work)
    assert any("blocks (jc) parallel" in r or "blocks (ic) parallel" in r for r in remarks), \
        remarks
    assert not any("left sequential" in r for r in remarks), remarks
    for name in k.outputs:
        assert np.array_equal(outs[0][name], outs[1][name]), name


@pytest.mark.parametrize("m,n,k,attrs", [
    (1203, 70, 90, {"l2_block": '"B"', "M_C": "200 : i32"}),    # one K_C block: B shared
    (997, 61, 150, {"l2_block": '"B"', "K_C": "64 : i32", "M_C": "120 : i32"}),  # B per K_C
])
def test_gepb_with_one_block_of_b_runs_its_m_c_blocks_on_the_threads(m, n, k, attrs):
    # all of N in one K_C x N_C block of B: no jc loop to split, the ic loop runs on the team
    src = matmul_source(m, n, k, "f64", attrs)
    remarks = []
    module = polyopt.compile(src, threads=2, remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any("loop over M_C blocks (ic) parallel (all of N in one block of B" in r
               for r in remarks), remarks
    args = _operands(m, n, k, "f64", seed=4)
    one = _run(src, 1, args, **ALL)
    assert np.allclose(one, args[2] + args[0] @ args[1], rtol=1e-12, atol=1e-12 * k)
    out = [a.copy() for a in args]
    module["matmul"](*out)
    assert np.array_equal(out[2], one)
    assert np.array_equal(_run(src, 3, args, **ALL), one)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_each_thread_packs_b_once_per_k_c_block_around_its_m_c_blocks(threads):
    """GEPB with all of N in one block of B and K in several K_C blocks: the team's region
    encloses the K_C loop, and each thread packs B's block there, once per K_C block, then
    runs its own chunk of the M_C blocks (it had packed B again for each of its M_C
    blocks).  9 M_C blocks do not split evenly over 2 or 4 threads: the last chunk is cut
    short (or empty).  The bits are one thread's."""
    from polyopt.affine.dialects.affine import AffineForOp, AffineParallelOp
    m, n, k = 997, 61, 150
    src = matmul_source(m, n, k, "f64", {"l2_block": '"B"', "K_C": "64 : i32",
                                         "M_C": "112 : i32"})
    remarks = []
    compiled = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                               **ALL)
    assert any("packed once per K_C block (the team's region around the K_C loop)" in r
               for r in remarks), remarks
    func = next(op for op in compiled.module.walk() if op.name == "func.func")
    a_arg, b_arg = func.regions[0].blocks[0].args[:2]
    [par] = [op for op in compiled.module.walk() if isinstance(op, AffineParallelOp)]
    team = par.body.args[0]

    def loops_between(op):
        return [l for l in op.ancestors() if isinstance(l, AffineForOp) and
                any(p is par for p in l.ancestors())]

    def on_thread_chunk(loop):
        return any(v is team for v in loop.operands)

    reads = {id(a_arg): [], id(b_arg): []}
    for op in compiled.module.walk():
        if op.name == "affine.load" and id(op.operands[0]) in reads:
            reads[id(op.operands[0])].append(op)
    assert reads[id(b_arg)] and reads[id(a_arg)]
    # B's copy sits under the K_C loop only, A's under the thread's chunk of M_C blocks
    assert not any(on_thread_chunk(l) for op in reads[id(b_arg)] for l in loops_between(op))
    assert all(any(on_thread_chunk(l) for l in loops_between(op)) for op in reads[id(a_arg)])
    args = _operands(m, n, k, "f64", seed=5)
    one = _run(src, 1, args, **ALL)
    assert np.allclose(one, args[2] + args[0] @ args[1], rtol=1e-12, atol=1e-12 * k)
    out = [a.copy() for a in args]
    compiled["matmul"](*out)
    assert np.array_equal(out[2], one)


@pytest.mark.parametrize("dtype,attrs", [
    ("f64", {"l2_block": '"B"'}),                                 # GEPB: A's block is shared
    ("f32", {"l2_block": '"B"'}),
    ("f64", {"l2_block": '"A"', "N_C": "64 : i32"}),               # GEBP: B's panel is shared
])
def test_every_copy_into_the_shared_block_runs_on_the_team(dtype, attrs):
    """The shared operand's packing loop is split into full micro-panels and a last partial
    one (``panelize_rows``); the team ran only the latter (DGEMM 2088 on 2 threads packed
    A's 4 MiB blocks on one thread: 0.93x numpy, 1.04x once both loops ran on the team)."""
    from polyopt.affine.dialects.affine import AffineParallelOp
    m, n, k = 2086, 512, 300                 # a partial micro-panel of rows at the end
    compiled = polyopt.compile(matmul_source(m, n, k, dtype, attrs), threads=2, **ALL)
    func = next(op for op in compiled.module.walk() if op.name == "func.func")
    args = func.regions[0].blocks[0].args
    for op in compiled.module.walk():
        if op.name == "affine.load" and op.operands[0] in (args[0], args[1]):
            # every read of A or B is a packing copy, on the team
            assert any(isinstance(a, AffineParallelOp) for a in op.ancestors()), op
    out = [a.copy() for a in _operands(m, n, k, dtype)]
    compiled["matmul"](*out)
    assert np.array_equal(out[2], _run(matmul_source(m, n, k, dtype, attrs), 1,
                                       _operands(m, n, k, dtype), **ALL))


def test_a_small_packed_product_on_a_team_runs_on_one_thread():
    """f32 24^3 (no tile of the unpacked path divides its 24 columns) and 50^3: packed, on
    one thread, said, with one thread's bits and numpy's values (24^3's A read in place: K is
    one block in either order and GEPB's 4-row tile divides M)."""
    for n, a_packed in ((24, False), (50, True)):
        src = matmul_source(n, n, n, "f32")
        remarks = []
        module = polyopt.compile(src, threads=2, remark=lambda loc, msg: remarks.append(msg),
                                 **ALL).module
        assert any("too little work for 2 threads" in r and r.endswith("one thread")
                   for r in remarks), remarks
        assert any("packed B" in r for r in remarks), remarks
        assert any("packed A" in r for r in remarks) == a_packed, remarks
        assert any("A not packed" in r for r in remarks) != a_packed, remarks
        assert "affine.parallel" not in str(module)
        args = _operands(n, n, n, "f32", seed=6)
        one = _run(src, 1, args, **ALL)
        assert np.allclose(one, args[2] + args[0] @ args[1], rtol=0, atol=1e-5 * n)
        assert np.array_equal(_run(src, 2, args, **ALL), one)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_a_small_product_on_a_team_runs_unpacked_on_one_thread(t):
    """64^3 on 2 threads: the unpacked small path on one thread (a fork costs more than the
    second core gives back), said, with the bits of one thread; 128^3 is split."""
    from polyopt.schedules.blis_parallel import MIN_THREADED_PRODUCT
    assert 64 ** 3 <= MIN_THREADED_PRODUCT < 128 ** 3
    small = matmul_source(64, 64, 64, t)
    remarks = []
    module = polyopt.compile(small, threads=2, remark=lambda loc, msg: remarks.append(msg),
                             **ALL).module
    assert any("too little work for 2 threads" in r and "one thread, unpacked" in r
               for r in remarks), remarks
    assert "affine.parallel" not in str(module) and "memref.alloc" not in str(module)
    args = _operands(64, 64, 64, t, seed=4)
    one = _run(small, 1, args, **ALL)
    assert np.array_equal(_run(small, 2, args, **ALL), one)
    assert np.allclose(one, args[2] + args[0] @ args[1], rtol=0, atol=1e-4)
    large = polyopt.compile(matmul_source(128, 128, 128, t), threads=2, **ALL).module
    assert "affine.parallel" in str(large)


def _params(m, n, k, dtype, threads, attrs=None):
    from polyopt.pipeline import machine_model
    from polyopt.schedules.expand import matmul_blis_params
    module = polyopt.parse(matmul_source(m, n, k, dtype, attrs))
    op = [o for o in module.walk() if o.name == "hop.matmul"][0]
    return matmul_blis_params(op, machine_model(), threads=threads)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_a_lopsided_column_split_runs_the_rows_on_the_threads(dtype):
    """N = 196 in GEPB's blocks of N_R-column panels gives one of two threads about two
    thirds of the columns; M = 256 splits into even halves: GEBP's ic loop runs on the
    threads, with one thread's tile and K_C."""
    one, two = _params(256, 196, 2304, dtype, 1), _params(256, 196, 2304, dtype, 2)
    assert one.l2_block == "B" and two.l2_block == "A", (one, two)
    assert (two.K_C, two.M_R, two.N_R) == (one.K_C, one.M_R, one.N_R)
    assert "gives one thread 65% of them, M = 256 in rows of 4 50%" in two.reasons[-1]
    assert _params(1000, 1000, 1000, dtype, 2).l2_block == "B"     # 8 blocks: even
    assert _params(256, 196, 2304, dtype, 2, {"l2_block": '"B"'}).l2_block == "B"


@pytest.mark.parametrize("m,n,k,dtype", [(130, 196, 300, "f64"), (210, 150, 517, "f32")])
def test_a_lopsided_column_split_gives_the_same_bits_on_the_rows(m, n, k, dtype):
    # N as chosen for a 1 MiB L2 (Zen 4, Zen 5), scaled with this CPU's: GEPB's block of B
    # takes a quarter of L2, so that its N_C grows with L2 (on Emerald Rapids' 2 MiB, f32's
    # N_C is 192: all of N = 150 in one block, whose rows the threads split evenly; N = 299
    # splits 64% / 36%).  n - 1 columns scaled, not n: 2 x 196 = 392 is a multiple of f64's
    # 8 lanes, and where a register tile divides M and N, one thread takes the unpacked path,
    # whose sums round otherwise than the team's packed nest
    n = (n - 1) * l2_multiple() + 1
    assert _params(m, n, k, dtype, 1).l2_block == "B"
    assert _params(m, n, k, dtype, 2).l2_block == "A"
    src = matmul_source(m, n, k, dtype, None)
    args = _operands(m, n, k, dtype, seed=4)
    one = _run(src, 1, args, **ALL)
    ref = args[2].astype(np.float64) + args[0].astype(np.float64) @ args[1].astype(np.float64)
    assert np.max(np.abs(one - ref)) <= (1e-12 if dtype == "f64" else 1e-4) * k
    for threads in (2, 3):
        assert np.array_equal(_run(src, threads, args, **ALL), one), threads
