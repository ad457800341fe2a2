"""``hop.matmul`` with a batch dimension: ``C[b] += A[b] * B[b]``, with A or B of rank 2 when
one matrix is shared by the batch.  Each batch element goes through the BLIS pipeline of one
product (the batch loop outermost, parallel on threads); a B shared by the batch makes the
batch one product of ``batch * M`` rows over ``memref.collapse_shape`` views, B packed once.
Checked against numpy's broadcasting ``matmul`` in f64, f32, bf16 -> f32 and i8 -> i32, on
shapes that are not multiples of any tile, at 1, 2 and 3 threads (the same bits)."""

import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError

from test_lowp_gemm import ALL

ml_dtypes = pytest.importorskip("ml_dtypes")

FORMS = {"batched": (3, 3), "shared B": (3, 2), "shared A": (2, 3)}
ELEM = {"f64": ("f64", "f64"), "f32": ("f32", "f32"), "bf16": ("bf16", "f32"),
        "s8": ("i8", "i32")}


def source(form: str, kind: str, bt: int, m: int, n: int, k: int) -> str:
    ra, rb = FORMS[form]
    t, tc = ELEM[kind]
    ta = f"memref<{bt}x{m}x{k}x{t}>" if ra == 3 else f"memref<{m}x{k}x{t}>"
    tb = f"memref<{bt}x{k}x{n}x{t}>" if rb == 3 else f"memref<{k}x{n}x{t}>"
    tcc = f"memref<{bt}x{m}x{n}x{tc}>"
    return (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tcc}) {{\n"
            f"  hop.matmul %A, %B, %C : ({ta}, {tb}, {tcc})\n  return\n}}\n")


def operands(form: str, kind: str, bt: int, m: int, n: int, k: int, seed: int = 0):
    ra, rb = FORMS[form]
    rng = np.random.default_rng(seed)
    sa = (bt, m, k) if ra == 3 else (m, k)
    sb = (bt, k, n) if rb == 3 else (k, n)
    if kind == "s8":
        return (rng.integers(-128, 128, sa).astype(np.int8),
                rng.integers(-128, 128, sb).astype(np.int8),
                rng.integers(-1000, 1000, (bt, m, n)).astype(np.int32))
    t = {"f64": np.float64, "f32": np.float32, "bf16": ml_dtypes.bfloat16}[kind]
    return (rng.standard_normal(sa).astype(t), rng.standard_normal(sb).astype(t),
            rng.standard_normal((bt, m, n)).astype(np.float64 if kind == "f64" else np.float32))


def check(fn, form, kind, bt, m, n, k, seed=0):
    a, b, c = operands(form, kind, bt, m, n, k, seed)
    c0 = c.copy()
    fn(a, b, c)
    if kind == "s8":
        np.testing.assert_array_equal(c, c0 + np.matmul(a.astype(np.int64), b.astype(np.int64)))
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = c0 + np.matmul(a64, b64)
    eps = 2.0 ** -53 if kind == "f64" else 2.0 ** -24
    bound = (k + 1) * eps * (np.matmul(np.abs(a64), np.abs(b64)) + np.abs(c0))
    assert (np.abs(c - want) <= bound).all()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("kind", list(ELEM))
@pytest.mark.parametrize("bt, m, n, k", [(5, 37, 41, 29), (3, 6, 64, 2), (2, 1, 1, 1),
                                         (4, 97, 101, 103)])
def test_batched_hop_matmul_matches_numpy(form, kind, bt, m, n, k):
    fn = polyopt.compile(source(form, kind, bt, m, n, k), **ALL)["mm"]
    check(fn, form, kind, bt, m, n, k)


@pytest.mark.parametrize("kind", ["f32", "bf16"])
def test_a_shared_b_is_packed_once_for_the_batch(kind):
    remarks = []
    fn = polyopt.compile(source("shared B", kind, 6, 37, 70, 45),
                         remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("B is shared by the batch: one product of 222 = 6 x 37 rows" in r
               for r in remarks), remarks
    text = str(polyopt.compile(source("shared B", kind, 6, 37, 70, 45), **ALL).module)
    assert "memref.collapse_shape" in text
    check(fn, "shared B", kind, 6, 37, 70, 45)


@pytest.mark.parametrize("form", list(FORMS))
def test_the_batch_loop_is_parallel_and_gives_the_same_bits(form):
    """A shared B has no batch loop left (one product of batch x M rows, which the team
    splits as any product)."""
    bt, m, n, k = 4, 33, 65, 50
    results = []
    for threads in (1, 2, 3):
        remarks = []
        opts = dict(ALL, threads=threads)
        fn = polyopt.compile(source(form, "f32", bt, m, n, k),
                             remark=lambda loc, msg: remarks.append(msg), **opts)["mm"]
        if threads > 1:
            assert any("the batch loop is affine.parallel" in r for r in remarks) == \
                (form != "shared B"), remarks
        check(fn, form, "f32", bt, m, n, k, seed=3)
        a, b, c = operands(form, "f32", bt, m, n, k, seed=3)
        fn(a, b, c)
        results.append(c)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


RAISED_SHARED_B = """
func.func @f(%A: memref<{b}x{n}x{n}xf64>, %B: memref<{n}x{n}xf64>, %C: memref<{b}x{n}x{n}xf64>) {{
  affine.for %b = 0 to {b} {{
    affine.for %i = 0 to {n} {{
      affine.for %j = 0 to {n} {{
        affine.for %k = 0 to {n} {{
          %a = affine.load %A[%b, %i, %k] : memref<{b}x{n}x{n}xf64>
          %x = affine.load %B[%k, %j] : memref<{n}x{n}xf64>
          %c = affine.load %C[%b, %i, %j] : memref<{b}x{n}x{n}xf64>
          %p = arith.mulf %a, %x : f64
          %s = arith.addf %c, %p : f64
          affine.store %s, %C[%b, %i, %j] : memref<{b}x{n}x{n}xf64>
        }}
      }}
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("opts", [dict(hopt=True), ALL], ids=["tiled", "all passes"])
def test_a_raised_nest_with_b_shared_by_the_batch_adds_its_product_once(threads, opts):
    """The raised nest is the anchor of the collapsed product: it was taken for a batch loop
    and kept, as affine.parallel, beside the product that replaced it (C + 2 A B on a team)."""
    bt, n = 3, 7
    fn = polyopt.compile(RAISED_SHARED_B.format(b=bt, n=n), threads=threads, **opts)["f"]
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((bt, n, n)), rng.standard_normal((n, n)), \
        rng.standard_normal((bt, n, n))
    want = c + np.matmul(a, b)
    fn(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)


def test_without_passes_the_batch_runs_as_loops():
    fn = polyopt.compile(source("shared A", "f64", 3, 7, 9, 5))["mm"]
    check(fn, "shared A", "f64", 3, 7, 9, 5)


@pytest.mark.parametrize("types, message", [
    (("memref<4x5xf32>", "memref<5x6xf32>", "memref<2x4x6xf32>"),
     "A and B must have rank 3 (a matrix per batch) or 2 (one shared matrix), not both 2"),
    (("memref<3x4x5xf32>", "memref<2x5x6xf32>", "memref<2x4x6xf32>"),
     "operand #0 (A) has a batch of 3 but C has 2"),
    (("memref<2x4x5xf32>", "memref<2x5x6xf32>", "memref<4x6xf32>"),
     "operand #0 (A) must have rank 2"),
    (("memref<?x4x5xf32>", "memref<5x6xf32>", "memref<2x4x6xf32>"),
     "a hop.matmul with a batch dimension takes static shapes"),
])
def test_batch_shapes_that_do_not_agree_are_located_errors(types, message):
    ta, tb, tc = types
    src = (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
           f"  hop.matmul %A, %B, %C : ({ta}, {tb}, {tc})\n  return\n}}\n")
    with pytest.raises(VerifyError) as e:
        polyopt.parse(src, "f.mlir")
    assert str(e.value).startswith("f.mlir:2:3: error: 'hop.matmul' op ") and \
        message in str(e.value), str(e.value)


def test_a_schedule_takes_no_batch():
    t = ("memref<2x4x5xf32>", "memref<2x5x6xf32>", "memref<2x4x6xf32>")
    src = (f"func.func @mm(%A: {t[0]}, %B: {t[1]}, %C: {t[2]}) {{\n"
           f"  hop.matmul %A, %B, %C {{schedule = affine_map<(d0, d1, d2) -> (d0, d1, d2)>}} "
           f": ({t[0]}, {t[1]}, {t[2]})\n  return\n}}\n")
    with pytest.raises(VerifyError, match="takes none"):
        polyopt.parse(src)
