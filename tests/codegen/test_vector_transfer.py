"""``vector.transfer_read``/``transfer_write``, the mask ops and ``ub.poison`` run against a
numpy model of their semantics, on shapes that are not multiples of the vector length: a lane
past the end of a memref (along a dim that is not ``in_bounds``) reads the padding value and is
not written, which the tests see through sentinels placed right after the memref's data.  The
last tests run what ``mlir-opt-22 --affine-super-vectorize`` makes of simple loops."""

import itertools

import numpy as np
import pytest

import polyopt
from upstream_mlir import mlir_opt

PAD = -7.0
SENTINEL = 1234.5


def _ref_read(a, idx, results, shape, in_bounds, pad, mask=None):
    """The numpy model: ``results[j]`` is the memref dim vector dim j walks, None for a
    broadcast; ``mask`` is indexed in memref dim order without the broadcast dims."""
    out = np.full(shape, pad, a.dtype)
    used = sorted(r for r in results if r is not None)
    for pos in itertools.product(*map(range, shape)):
        s = list(idx)
        ok = True
        for j, r in enumerate(results):
            if r is not None:
                s[r] += pos[j]
                if s[r] >= a.shape[r]:
                    assert not in_bounds[j], "the test reads out of bounds along an in_bounds dim"
                    ok = False
        if mask is not None:
            by_dim = {r: pos[j] for j, r in enumerate(results) if r is not None}
            ok = ok and bool(mask[tuple(by_dim[d] for d in used)])
        if ok:
            out[pos] = a[tuple(s)]
    return out


def _map_text(rank, results):
    dims = ", ".join(f"d{k}" for k in range(rank))
    res = ", ".join("0" if r is None else f"d{r}" for r in results)
    return f"affine_map<({dims}) -> ({res})>"


def _attrs(rank, results, in_bounds):
    parts = [f"permutation_map = {_map_text(rank, results)}"]
    if any(in_bounds):
        parts.append("in_bounds = [" + ", ".join(str(b).lower() for b in in_bounds) + "]")
    return " {" + ", ".join(parts) + "}"


def _shape_str(shape):
    return "x".join(map(str, shape))


def _read_program(mshape, vshape, results, in_bounds, mask_shape=None, memref=None):
    rank = len(mshape)
    mt = memref or f"memref<{_shape_str(mshape)}xf32>"
    vt = f"vector<{_shape_str(vshape)}xf32>"
    ot = f"memref<{_shape_str(vshape)}xf32>"
    idx = ", ".join(f"%i{k}" for k in range(rank))
    idx_args = ", ".join(f"%i{k}: index" for k in range(rank))
    mask_arg = mask_use = mask_load = ""
    if mask_shape is not None:
        mask_arg = f", %M: memref<{_shape_str(mask_shape)}xi1>"
        zeros = ", ".join(["%c0"] * len(mask_shape))
        mask_load = (f"    %m = vector.load %M[{zeros}] : memref<{_shape_str(mask_shape)}xi1>, "
                     f"vector<{_shape_str(mask_shape)}xi1>\n")
        mask_use = ", %m"
    zeros = ", ".join(["%c0"] * len(vshape))
    return (f"func.func @f(%A: {mt}, %O: {ot}, {idx_args}{mask_arg}) {{\n"
            f"    %c0 = arith.constant 0 : index\n"
            f"    %pad = arith.constant {PAD:e} : f32\n{mask_load}"
            f"    %v = vector.transfer_read %A[{idx}], %pad{mask_use}"
            f"{_attrs(rank, results, in_bounds)} : {mt}, {vt}\n"
            f"    vector.store %v, %O[{zeros}] : {ot}, {vt}\n"
            f"    return\n  }}\n")


def _with_sentinels(shape, seed=0):
    """A C-contiguous array of ``shape`` that is the head of a bigger buffer whose tail holds
    :data:`SENTINEL`: a read past its end that is not masked would see the sentinel."""
    n = int(np.prod(shape))
    buf = np.full(n + 64, SENTINEL, np.float32)
    buf[:n] = np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)
    return buf, buf[:n].reshape(shape)


@pytest.mark.parametrize("start", [0, 8, 13, 16, 20, 21])
def test_read_past_the_end_gives_the_padding(start):
    buf, a = _with_sentinels((21,))
    f = polyopt.compile(_read_program((21,), (8,), [0], [False]))["f"]
    out = np.zeros(8, np.float32)
    f(a, out, start)
    np.testing.assert_array_equal(out, _ref_read(a, [start], [0], (8,), [False], PAD))
    assert SENTINEL not in out


def test_in_bounds_read_is_a_plain_load_and_correct():
    text = _read_program((21,), (8,), [0], [True])
    assert "in_bounds = [true]" in str(polyopt.parse(text))
    _, a = _with_sentinels((21,))
    out = np.zeros(8, np.float32)
    polyopt.compile(text)["f"](a, out, 5)
    np.testing.assert_array_equal(out, a[5:13])


CASES_2D = [
    # (vector shape, results, in_bounds)
    ((8,), [1], [False]),                    # minor identity along the rows
    ((8,), [0], [False]),                    # down a column (a gather)
    ((8,), [None], [True]),                  # broadcast of one element
    ((4, 8), [0, 1], [False, False]),        # a 2-D tile
    ((4, 8), [None, 1], [True, False]),      # a row broadcast 4 times
    ((4, 8), [1, 0], [False, False]),        # transposed
    ((3, 8), [0, 1], [True, False]),         # only the columns are checked
]


def _defined(vshape, results, in_bounds, ij, mshape=(13, 21)):
    """Reading out of bounds along an in_bounds dim is undefined: no such case is run."""
    return all(not ib or r is None or ij[r] + n <= mshape[r]
               for r, n, ib in zip(results, vshape, in_bounds))


@pytest.mark.parametrize("vshape, results, in_bounds, i, j", [
    (*case, *ij) for case in CASES_2D for ij in [(0, 0), (10, 15), (12, 20), (5, 2)]
    if _defined(*case, ij)])
def test_read_2d_maps_against_numpy(vshape, results, in_bounds, i, j):
    mshape = (13, 21)
    _, a = _with_sentinels(mshape, seed=1)
    text = _read_program(mshape, vshape, results, in_bounds)
    out = np.zeros(vshape, np.float32)
    polyopt.compile(text)["f"](a, out, i, j)
    np.testing.assert_array_equal(out, _ref_read(a, [i, j], results, vshape, in_bounds, PAD))


@pytest.mark.parametrize("vshape, results, mask_shape", [
    ((8,), [0], (8,)),
    ((4, 8), [0, 1], (4, 8)),
    ((4, 8), [1, 0], (8, 4)),          # the mask is in the memref's dim order
    ((4, 8), [None, 1], (8,)),         # no mask dim for the broadcast
])
def test_masked_read_against_numpy(vshape, results, mask_shape):
    mshape = (13, 21)
    rank = len(mshape)
    if len(vshape) == 1:
        results_full, idx = results, [3, 17]
    else:
        results_full, idx = results, [11, 16]
    rng = np.random.default_rng(5)
    mask = rng.integers(0, 2, mask_shape).astype(np.bool_)
    _, a = _with_sentinels(mshape, seed=2)
    text = _read_program(mshape, vshape, results_full, [False] * len(vshape), mask_shape)
    out = np.zeros(vshape, np.float32)
    polyopt.compile(text)["f"](a, out, *idx, mask)
    want = _ref_read(a, idx, results_full, vshape, [False] * len(vshape), PAD, mask)
    assert rank == 2
    np.testing.assert_array_equal(out, want)
    assert (out == PAD).sum() > 0      # the mask and the bounds disabled some lanes


def test_read_from_a_dynamic_memref():
    text = _read_program((None, None), (4, 8), [0, 1], [False, False],
                         memref="memref<?x?xf32>")
    f = polyopt.compile(text)["f"]
    for shape, (i, j) in [((5, 11), (2, 6)), ((9, 7), (0, 0)), ((3, 30), (1, 24))]:
        _, a = _with_sentinels(shape, seed=3)
        out = np.zeros((4, 8), np.float32)
        f(a, out, i, j)
        np.testing.assert_array_equal(out, _ref_read(a, [i, j], [0, 1], (4, 8),
                                                     [False, False], PAD))


def test_read_from_a_strided_memref_gathers():
    mt = "memref<6x5xf32, strided<[1, 6]>>"     # column-major: the minor dim has stride 6
    text = _read_program((6, 5), (8,), [1], [False], memref=mt)
    f = polyopt.compile(text)["f"]
    a = np.asfortranarray(np.arange(30, dtype=np.float32).reshape(6, 5))
    out = np.zeros(8, np.float32)
    f(a.T.copy().reshape(-1), out, 2, 1)        # the buffer in column-major order
    np.testing.assert_array_equal(out, _ref_read(a, [2, 1], [1], (8,), [False], PAD))


def _write_program(mshape, vshape, results, in_bounds, mask_shape=None):
    rank = len(mshape)
    mt = f"memref<{_shape_str(mshape)}xf32>"
    vt = f"vector<{_shape_str(vshape)}xf32>"
    it = f"memref<{_shape_str(vshape)}xf32>"
    idx = ", ".join(f"%i{k}" for k in range(rank))
    idx_args = ", ".join(f"%i{k}: index" for k in range(rank))
    zeros = ", ".join(["%c0"] * len(vshape))
    mask_arg = mask_use = mask_load = ""
    if mask_shape is not None:
        mask_arg = f", %M: memref<{_shape_str(mask_shape)}xi1>"
        mz = ", ".join(["%c0"] * len(mask_shape))
        mask_load = (f"    %m = vector.load %M[{mz}] : memref<{_shape_str(mask_shape)}xi1>, "
                     f"vector<{_shape_str(mask_shape)}xi1>\n")
        mask_use = ", %m"
    return (f"func.func @f(%V: {it}, %A: {mt}, {idx_args}{mask_arg}) {{\n"
            f"    %c0 = arith.constant 0 : index\n{mask_load}"
            f"    %v = vector.load %V[{zeros}] : {it}, {vt}\n"
            f"    vector.transfer_write %v, %A[{idx}]{mask_use}"
            f"{_attrs(rank, results, in_bounds)} : {vt}, {mt}\n"
            f"    return\n  }}\n")


def _ref_write(a, v, idx, results, in_bounds, mask=None):
    a = a.copy()
    used = sorted(results)
    for pos in itertools.product(*map(range, v.shape)):
        s = list(idx)
        ok = True
        for j, r in enumerate(results):
            s[r] += pos[j]
            if s[r] >= a.shape[r]:
                assert not in_bounds[j]
                ok = False
        if mask is not None:
            by_dim = {r: pos[j] for j, r in enumerate(results)}
            ok = ok and bool(mask[tuple(by_dim[d] for d in used)])
        if ok:
            a[tuple(s)] = v[pos]
    return a


@pytest.mark.parametrize("vshape, results", [((8,), [1]), ((8,), [0]), ((4, 8), [0, 1]),
                                             ((4, 8), [1, 0])])
@pytest.mark.parametrize("i, j", [(0, 0), (11, 17), (12, 20)])
@pytest.mark.parametrize("masked", [False, True])
def test_write_skips_the_lanes_past_the_end(vshape, results, i, j, masked):
    mshape = (13, 21)
    buf, a = _with_sentinels(mshape, seed=4)
    before = a.copy()
    v = np.arange(np.prod(vshape), dtype=np.float32).reshape(vshape) + 100
    mask_shape = tuple(vshape[results.index(d)] for d in sorted(results)) if masked else None
    mask = np.random.default_rng(6).integers(0, 2, mask_shape).astype(np.bool_) \
        if masked else None
    text = _write_program(mshape, vshape, results, [False] * len(vshape), mask_shape)
    f = polyopt.compile(text)["f"]
    f(v, a, i, j, *([mask] if masked else []))
    np.testing.assert_array_equal(a, _ref_write(before, v, [i, j], results,
                                                [False] * len(vshape), mask))
    assert (buf[a.size:] == SENTINEL).all(), "a lane past the end was written"


def test_masks_and_poison_run():
    text = """func.func @f(%O: memref<2x8xf32>, %n: index, %k: index) {
    %c0 = arith.constant 0 : index
    %one = arith.constant dense<1.0> : vector<2x8xf32>
    %p = ub.poison : vector<2x8xf32>
    %m = vector.create_mask %n, %k : vector<2x8xi1>
    %cm = vector.constant_mask [2, 3] : vector<2x8xi1>
    %both = arith.andi %m, %cm : vector<2x8xi1>
    %r = arith.select %both, %one, %p : vector<2x8xi1>, vector<2x8xf32>
    vector.store %r, %O[%c0, %c0] : memref<2x8xf32>, vector<2x8xf32>
    return
  }
"""
    f = polyopt.compile(text)["f"]
    for n, k in [(1, 5), (2, 2), (0, 8), (2, 9), (-1, 3)]:
        out = np.full((2, 8), 9.0, np.float32)
        f(out, n, k)
        rows, cols = np.indices((2, 8))
        want = ((rows < n) & (cols < k) & (cols < 3)).astype(np.float32)
        np.testing.assert_array_equal(out, want)     # poison lowers to zero


# ---------------------------------------------------------------------------------------------
# what mlir-opt-22 --affine-super-vectorize emits

LOOPS = """func.func @add(%A: memref<21xf32>, %B: memref<21xf32>, %C: memref<21xf32>) {
  affine.for %i = 0 to 21 {
    %a = affine.load %A[%i] : memref<21xf32>
    %b = affine.load %B[%i] : memref<21xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %C[%i] : memref<21xf32>
  }
  return
}
func.func @scale_rows(%A: memref<13x21xf32>, %B: memref<13xf32>) {
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 21 {
      %a = affine.load %A[%i, %j] : memref<13x21xf32>
      %b = affine.load %B[%i] : memref<13xf32>
      %c = arith.mulf %a, %b : f32
      affine.store %c, %A[%i, %j] : memref<13x21xf32>
    }
  }
  return
}
func.func @sum(%A: memref<21xf32>, %O: memref<1xf32>) {
  %z = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 21 iter_args(%acc = %z) -> f32 {
    %a = affine.load %A[%i] : memref<21xf32>
    %n = arith.addf %acc, %a : f32
    affine.yield %n : f32
  }
  affine.store %s, %O[0] : memref<1xf32>
  return
}
"""


def test_affine_super_vectorize_output_runs():
    vec = mlir_opt(LOOPS, "--affine-super-vectorize=virtual-vector-size=8 "
                   "vectorize-reductions=true")
    # the oracle did vectorize, with the ops of this file, on a trip count of 21
    for needle in ("vector.transfer_read", "vector.transfer_write", "ub.poison",
                   "permutation_map", "vector.create_mask", "step 8"):
        assert needle in vec, needle
    assert str(polyopt.parse(vec)) == vec
    m = polyopt.compile(vec)
    rng = np.random.default_rng(7)
    bufs = [_with_sentinels((21,), seed=s) for s in (8, 9)]
    a, b = bufs[0][1], bufs[1][1]
    cbuf, c = _with_sentinels((21,), seed=10)
    m["add"](a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert (cbuf[21:] == SENTINEL).all()
    x = rng.uniform(-1, 1, (13, 21)).astype(np.float32)
    y = rng.uniform(-1, 1, 13).astype(np.float32)
    want = x * y[:, None]
    m["scale_rows"](x, y)
    np.testing.assert_array_equal(x, want)
    out = np.zeros(1, np.float32)
    m["sum"](a, out)
    np.testing.assert_allclose(out[0], a.sum(dtype=np.float64), rtol=1e-5)


def test_element_type_change_is_valid_upstream_but_a_located_codegen_error():
    from polyopt.affine.diagnostics import CodegenError
    text = """func.func @f(%A: memref<16xf32>, %i: index) -> vector<4xf64> {
  %c0 = arith.constant 0.0 : f32
  %0 = vector.transfer_read %A[%i], %c0 : memref<16xf32>, vector<4xf64>
  return %0 : vector<4xf64>
}
"""
    assert str(polyopt.parse(text)) == mlir_opt(text)       # both accept it
    with pytest.raises(CodegenError, match=r"3:8: error: 'vector.transfer_read': a transfer of "
                                           r"'vector<4xf64>' from/to 'memref<16xf32>' needs the "
                                           r"same element type"):
        polyopt.compile(text)
