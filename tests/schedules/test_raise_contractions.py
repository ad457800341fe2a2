"""Contraction raising (``--hopt``, pass ``hopt-raise-contractions``): affine nests that compute
a matrix product go through the BLIS pipeline.  Every raised program is run against the
unoptimized program and numpy, on sizes that are multiples of no tile size, with every pass
flag combination; the remarks say what was recognized, and near misses say why not."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import polyopt
from polyopt.affine.parser import parse
from polyopt.passes import parse_pipeline, print_pipeline, run_pipeline
from polyopt.schedules.raise_contractions import raise_contractions

from run_helpers import PASS_FLAG_SETS

HERE = Path(__file__).parent / "raising"

FLAGS = PASS_FLAG_SETS


def remarks_of(text, **switches):
    out = []
    polyopt.compile(text, remark=lambda loc, msg: out.append((loc, msg)), **switches)
    return [m for _, m in out]


def raising_remarks(text):
    module = parse(text)
    out = []
    raise_contractions(module, remark=lambda loc, msg: out.append(msg))
    return [m for m in out if "contraction" in m]


def random_args(func_text_args, rng):
    """Arguments for the function's signature: memrefs random, scalars fixed."""
    raise NotImplementedError


def run_both(text, fname, args, switches):
    """(result of the unoptimized program, result with ``switches``) on copies of ``args``."""
    def run(**sw):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        polyopt.compile(text, **sw)[fname](*copies)
        return copies
    return run(), run(**switches)


def assert_same(ref, got, dtype):
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for r, g in zip(ref, got):
        if isinstance(r, np.ndarray):
            if np.issubdtype(r.dtype, np.integer):
                np.testing.assert_array_equal(g, r)
            else:
                np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol)


# ---------------------------------------------------------------------------------------------
# PolyBench gemm, 2mm, 3mm (their loop structure, small odd sizes)


def polybench_args(name, rng):
    if name == "gemm":
        return [1.5, 1.2, rng.random((23, 19)), rng.random((23, 17)), rng.random((17, 19))], \
            "kernel_gemm", np.float64
    if name == "2mm":
        f = np.float32
        return [f(1.5), f(1.2), rng.random((13, 11)).astype(f), rng.random((13, 17)).astype(f),
                rng.random((17, 11)).astype(f), rng.random((11, 19)).astype(f),
                rng.random((13, 19)).astype(f)], "kernel_2mm", f
    shapes = [(11, 13), (11, 15), (15, 13), (13, 17), (13, 19), (19, 17), (11, 17)]
    return [rng.random(s) for s in shapes], "kernel_3mm", np.float64


def polybench_numpy(name, args):
    if name == "gemm":
        alpha, beta, c, a, b = args
        return {2: alpha * a @ b + beta * c}
    if name == "2mm":
        alpha, beta, tmp, a, b, c, d = [np.float64(x) if not isinstance(x, np.ndarray)
                                        else x.astype(np.float64) for x in args]
        t = alpha * a @ b
        return {2: t, 6: beta * d + t @ c}
    e, a, b, f, c, d, g = args
    e2, f2 = a @ b, c @ d
    return {0: e2, 3: f2, 6: e2 @ f2}


@pytest.mark.parametrize("name", ["gemm", "2mm", "3mm"])
def test_polybench_kernels_are_recognized(name):
    text = (HERE / f"{name}.mlir").read_text()
    raised = [m for m in remarks_of(text, hopt=True) if m.startswith("raised to a contraction")]
    assert len(raised) == {"gemm": 1, "2mm": 2, "3mm": 3}[name]
    if name == "gemm":
        assert raised[0].startswith("raised to a contraction: C[i, j] = beta * C[i, j] + alpha *"
                                    " A[i, k] * B[k, j] (ixjxk = 23x19x17)")


@pytest.mark.parametrize("flags", list(FLAGS))
@pytest.mark.parametrize("name", ["gemm", "2mm", "3mm"])
def test_polybench_kernels_match(name, flags):
    rng = np.random.default_rng(1)
    text = (HERE / f"{name}.mlir").read_text()
    args, fname, dtype = polybench_args(name, rng)
    ref, got = run_both(text, fname, args, FLAGS[flags])
    assert_same(ref, got, dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for pos, want in polybench_numpy(name, args).items():
        np.testing.assert_allclose(got[pos], want, rtol=rtol, atol=rtol)


def test_no_hopt_raise_leaves_the_nest():
    text = (HERE / "gemm.mlir").read_text()
    remarks = remarks_of(text, hopt=True, hopt_raise=False)
    assert not any("contraction" in m for m in remarks)
    module = parse(text)
    # (the automatic scheduler would take the nest next: it is turned off too)
    polyopt.pipeline.run_passes(module, polyopt.PipelineOptions(hopt=True, hopt_raise=False,
                                                                auto_schedule=False))
    assert str(module) == str(parse(text))


# ---------------------------------------------------------------------------------------------
# the paper's section 2.1 listing in every loop order, transposed and strided operands


def matmul_nest(order, m=29, n=31, k=37, t="f64", a_idx="%i, %k", a_shape=None, b_idx="%k, %j",
                b_shape=None, body="addf"):
    a_shape = a_shape or f"{m}x{k}"
    b_shape = b_shape or f"{k}x{n}"
    ext = dict(i=m, j=n, k=k)
    lines = [f"func.func @mm(%A: memref<{a_shape}x{t}>, %B: memref<{b_shape}x{t}>, "
             f"%C: memref<{m}x{n}x{t}>) {{"]
    for d, name in enumerate(order):
        lines.append("  " * (d + 1) + f"affine.for %{name} = 0 to {ext[name]} {{")
    ind = "  " * (len(order) + 1)
    lines.append(f"{ind}%a = affine.load %A[{a_idx}] : memref<{a_shape}x{t}>")
    lines.append(f"{ind}%b = affine.load %B[{b_idx}] : memref<{b_shape}x{t}>")
    lines.append(f"{ind}%c = affine.load %C[%i, %j] : memref<{m}x{n}x{t}>")
    if body == "fma":
        lines.append(f"{ind}%r = math.fma %a, %b, %c : {t}")
    elif t.startswith("i"):
        lines.append(f"{ind}%p = arith.muli %a, %b : {t}")
        lines.append(f"{ind}%r = arith.addi %p, %c : {t}")
    else:
        lines.append(f"{ind}%p = arith.mulf %a, %b : {t}")
        lines.append(f"{ind}%r = arith.addf %p, %c : {t}")
    lines.append(f"{ind}affine.store %r, %C[%i, %j] : memref<{m}x{n}x{t}>")
    for d in reversed(range(len(order))):
        lines.append("  " * (d + 1) + "}")
    lines.append("  return\n}\n")
    return "\n".join(lines)


@pytest.mark.parametrize("order", ["".join(p) for p in itertools.permutations("ijk")])
def test_every_loop_order_is_raised_and_matches(order):
    text = matmul_nest(order)
    assert raising_remarks(text)[0].startswith(
        "raised to a contraction: C[i, j] += A[i, k] * B[k, j] (ixjxk = 29x31x37)")
    rng = np.random.default_rng(2)
    a, b, c = rng.random((29, 37)), rng.random((37, 31)), rng.random((29, 31))
    for flags in ("hopt", "all"):
        ref, got = run_both(text, "mm", [a, b, c], FLAGS[flags])
        assert_same(ref, got, np.float64)
        np.testing.assert_allclose(got[2], c + a @ b, rtol=1e-10)


@pytest.mark.parametrize("flags", ["hopt", "copy", "all", "blis"])
def test_transposed_and_strided_operands(flags):
    # C[i, j] += A[k, i] * B[k, 2j + 1] with A stored transposed and B read every other column
    text = matmul_nest("ikj", m=21, n=13, k=19, a_idx="%k, %i", a_shape="19x21",
                       b_idx="%k, %j * 2 + 1", b_shape="19x28", body="fma")
    remark = raising_remarks(text)[0]
    assert remark.startswith("raised to a contraction: C[i, j] += A[k, i] * B[k, 2 * j + 1]")
    rng = np.random.default_rng(3)
    a, b, c = rng.random((19, 21)), rng.random((19, 28)), rng.random((21, 13))
    ref, got = run_both(text, "mm", [a, b, c], FLAGS[flags])
    assert_same(ref, got, np.float64)
    np.testing.assert_allclose(got[2], c + a.T @ b[:, 1:26:2], rtol=1e-10)


@pytest.mark.parametrize("flags", ["hopt", "all"])
def test_f32_and_integer_nests(flags):
    rng = np.random.default_rng(4)
    text = matmul_nest("kij", m=17, n=35, k=9, t="f32")
    a, b, c = [rng.random(s).astype(np.float32) for s in ((17, 9), (9, 35), (17, 35))]
    ref, got = run_both(text, "mm", [a, b, c], FLAGS[flags])
    assert_same(ref, got, np.float32)
    text = matmul_nest("jik", m=17, n=35, k=9, t="i32")
    assert raising_remarks(text)[0].startswith("raised to a contraction")
    a, b, c = [rng.integers(-50, 50, s).astype(np.int32) for s in ((17, 9), (9, 35), (17, 35))]
    ref, got = run_both(text, "mm", [a, b, c], FLAGS[flags])
    np.testing.assert_array_equal(got[2], c + a @ b)
    np.testing.assert_array_equal(ref[2], got[2])


BATCHED = """\
func.func @bmm(%A: memref<3x13x11xf64>, %B: memref<3x11x17xf64>, %C: memref<3x13x17xf64>) {
  affine.for %b = 0 to 3 {
    affine.for %i = 0 to 13 {
      affine.for %j = 0 to 17 {
        affine.for %k = 0 to 11 {
          %x = affine.load %A[%b, %i, %k] : memref<3x13x11xf64>
          %y = affine.load %B[%b, %k, %j] : memref<3x11x17xf64>
          %z = affine.load %C[%b, %i, %j] : memref<3x13x17xf64>
          %p = arith.mulf %x, %y : f64
          %s = arith.addf %z, %p : f64
          affine.store %s, %C[%b, %i, %j] : memref<3x13x17xf64>
        }
      }
    }
  }
  return
}
"""


@pytest.mark.parametrize("flags", ["hopt", "copy", "all", "blis"])
def test_batched_contraction(flags):
    assert raising_remarks(BATCHED)[0].startswith(
        "raised to a contraction: C[b0, i, j] += A[b0, i, k] * B[b0, k, j] (b0xixjxk = "
        "3x13x17x11)")
    rng = np.random.default_rng(5)
    a, b, c = rng.random((3, 13, 11)), rng.random((3, 11, 17)), rng.random((3, 13, 17))
    ref, got = run_both(BATCHED, "bmm", [a, b, c], FLAGS[flags])
    assert_same(ref, got, np.float64)
    np.testing.assert_allclose(got[2], c + a @ b, rtol=1e-10)


BATCH_REDUCE = """\
func.func @brgemm(%A: memref<4x13x11xf64>, %B: memref<4x11x17xf64>, %C: memref<13x17xf64>) {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 17 {
      affine.store %zero, %C[%i, %j] : memref<13x17xf64>
      affine.for %b = 0 to 4 {
        affine.for %k = 0 to 11 {
          %x = affine.load %A[%b, %i, %k] : memref<4x13x11xf64>
          %y = affine.load %B[%b, %k, %j] : memref<4x11x17xf64>
          %z = affine.load %C[%i, %j] : memref<13x17xf64>
          %p = arith.mulf %x, %y : f64
          %s = arith.addf %z, %p : f64
          affine.store %s, %C[%i, %j] : memref<13x17xf64>
        }
      }
    }
  }
  return
}
"""


@pytest.mark.parametrize("flags", ["hopt", "copy", "all", "blis"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_summed_into_c_is_raised(flags, threads):
    """BRGEMM (linalg.batch_reduce_matmul's loops): two reduction loops, the one A does not
    read innermost is K, the other a batch whose products all add into C, one after the
    other; C = 0 before them once, not per batch (it was a near miss: "2 reduction loops")."""
    assert raising_remarks(BATCH_REDUCE)[0].startswith(
        "raised to a contraction: C[i, j] = A[b0, i, k] * B[b0, k, j] (b0xixjxk = 4x13x17x11, "
        "b0 summed into C)")
    rng = np.random.default_rng(6)
    a, b, c = rng.random((4, 13, 11)), rng.random((4, 11, 17)), rng.random((13, 17))
    ref, got = run_both(BATCH_REDUCE, "brgemm", [a, b, c], dict(FLAGS[flags], threads=threads))
    assert_same(ref, got, np.float64)
    np.testing.assert_allclose(got[2], np.einsum("bik,bkj->ij", a, b), rtol=1e-10)


# (A broadcast over the batch, "mk", is a sum of B along the batch times A: not raised, the
# nest runs as written; its result is checked all the same)
@pytest.mark.parametrize("maps, a_shape, spec", [
    ("", (5, 97, 103), "bmk"),
    ("indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>, "
     "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>]",
     (5, 103, 97), "bkm"),
    ("indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, "
     "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>]",
     (97, 103), "mk"),
])
@pytest.mark.parametrize("t", ["f32", "bf16", "i8"])
@pytest.mark.parametrize("threads", [1, 2])
def test_linalg_batch_reduce_matmul_takes_the_blis_pipeline(maps, a_shape, spec, t, threads):
    b, m, n, k = 5, 97, 101, 103
    ct = {"f32": "f32", "bf16": "f32", "i8": "i32"}[t]
    ta = "x".join(map(str, a_shape)) + f"x{t}"
    tb, tc = f"{b}x{k}x{n}x{t}", f"{m}x{n}x{ct}"
    text = (f"func.func @brm(%A: memref<{ta}>, %B: memref<{tb}>, %C: memref<{tc}>) {{\n"
            f"  linalg.batch_reduce_matmul {maps} ins(%A, %B : memref<{ta}>, memref<{tb}>) "
            f"outs(%C : memref<{tc}>)\n  return\n}}\n")
    rng = np.random.default_rng(7)
    if t == "i8":
        a = rng.integers(-128, 128, a_shape).astype(np.int8)
        bm = rng.integers(-128, 128, (b, k, n)).astype(np.int8)
        c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    else:
        dtype = np.float32
        if t == "bf16":
            dtype = pytest.importorskip("ml_dtypes").bfloat16
        a = rng.standard_normal(a_shape).astype(dtype)
        bm = rng.standard_normal((b, k, n)).astype(dtype)
        c = rng.standard_normal((m, n)).astype(np.float32)
    want = c.astype(np.float64) + np.einsum(f"{spec},bkn->mn", a.astype(np.float64),
                                            bm.astype(np.float64))
    out = []
    fn = polyopt.compile(text, remark=lambda loc, msg: out.append(msg), threads=threads,
                         **FLAGS["all"])["brm"]
    assert any("b0 summed into C" in r for r in out) == (spec != "mk"), out
    fn(a, bm, c)
    if t == "i8":
        np.testing.assert_array_equal(c, want.astype(np.int32))
    else:       # f32 sums; bf16 products are exact in f32
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4 * b * k)


@pytest.mark.parametrize("op", ["batch_matvec", "batch_vecmat"])
@pytest.mark.parametrize("t", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("threads", [1, 2])
def test_batched_matrix_vector_products_take_the_gemv_forms(op, t, threads):
    """linalg.batch_matvec/batch_vecmat: a batch loop around an M x 1 (1 x N) product of
    slices (views with an offset), each the GEMV form (0.36x-0.48x numpy's matmul before, as
    an auto-scheduled near miss)."""
    b, m, k = 3, 97, 103
    c = "f32" if t == "bf16" else t
    if op == "batch_matvec":
        ta, spec, order = f"{b}x{m}x{k}x{t}", "bmk,bk->bm", "%A, %x"
    else:
        ta, spec, order = f"{b}x{k}x{m}x{t}", "bkm,bk->bm", "%x, %A"
    types = f"memref<{ta}>, memref<{b}x{k}x{t}>"
    if op == "batch_vecmat":
        types = f"memref<{b}x{k}x{t}>, memref<{ta}>"
    text = (f"func.func @f(%A: memref<{ta}>, %x: memref<{b}x{k}x{t}>, %y: memref<{b}x{m}x{c}>) {{"
            f"\n  linalg.{op} ins({order} : {types}) outs(%y : memref<{b}x{m}x{c}>)\n"
            f"  return\n}}\n")
    out = []
    fn = polyopt.compile(text, remark=lambda loc, msg: out.append(msg), threads=threads,
                         **FLAGS["all"])["f"]
    assert any("b0 = " in r and "a matrix-vector product" in r for r in out), out
    assert any("matrix-vector product: no packing" in r for r in out), out
    rng = np.random.default_rng(8)
    dtype = {"f32": np.float32, "f64": np.float64}.get(t)
    if t == "bf16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    a = rng.standard_normal(tuple(int(x) for x in ta.split("x")[:3])).astype(dtype)
    x = rng.standard_normal((b, k)).astype(dtype)
    y = rng.standard_normal((b, m)).astype(np.float64 if t == "f64" else np.float32)
    want = y + np.einsum(spec, a.astype(np.float64), x.astype(np.float64))
    fn(a, x, y)
    np.testing.assert_allclose(y, want, rtol=1e-10 if t == "f64" else 1e-4,
                               atol=1e-10 if t == "f64" else 1e-3)


def test_raised_output_is_accepted_by_mlir_opt():
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from upstream_mlir import tool
    import subprocess
    text = matmul_nest("ikj", m=21, n=13, k=19, a_idx="%k, %i", a_shape="19x21",
                       b_idx="%k, %j * 2 + 1", b_shape="19x28")
    module = parse(text)
    run_pipeline(module, "hopt-raise-contractions{copy=true vect=true unroll=true}")
    out = subprocess.run([tool("mlir-opt-22")], input=str(module), capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------------------------------------
# near misses: a remark names the condition; the nest is left as written


NEAR_MISSES = [
    # C[i, j] += C[i, k] * B[k, j]
    (dict(a_idx="%i, %k"), "%A", "%C", "reads C[%arg3, %arg5] as a factor: not a contraction"),
    # a diagonal: A[k, k]
    (dict(a_idx="%k, %k", a_shape="37x37"), None, None, "uses a loop in two subscripts"),
    # A[i + k, k]
    (dict(a_idx="%i + %k, %k", a_shape="70x37"), None, None,
     "combines loops %arg3 and %arg5"),
    # B indexed by i too: B[k, i] with j unused by A and B
    (dict(b_idx="%k, %i", b_shape="37x29"), None, None, "indexes C but neither factor"),
]


@pytest.mark.parametrize("kwargs, old, new, message", NEAR_MISSES)
def test_near_misses_say_why(kwargs, old, new, message):
    text = matmul_nest("ijk", **kwargs)
    if old is not None:
        text = text.replace(f"affine.load {old}[", f"affine.load {new}[", 1) \
            .replace("memref<29x37xf64>", "memref<29x31xf64>", 2) if False else \
            text.replace("%a = affine.load %A[%i, %k] : memref<29x37xf64>",
                         "%a = affine.load %C[%i, %k] : memref<29x31xf64>")
        text = text.replace("%k = 0 to 37", "%k = 0 to 31")
    remarks = raising_remarks(text)
    assert len(remarks) == 1 and remarks[0].startswith("not raised to a contraction: "), remarks
    assert message in remarks[0], remarks
    module = parse(text)
    raise_contractions(module)
    assert str(module) == str(parse(text))


TRIANGULAR = """\
func.func @tri(%A: memref<9x9xf64>, %B: memref<9x9xf64>, %C: memref<9x9xf64>) {
  affine.for %i = 0 to 9 {
    affine.for %j = 0 to 9 {
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {
        %x = affine.load %A[%i, %k] : memref<9x9xf64>
        %y = affine.load %B[%k, %j] : memref<9x9xf64>
        %z = affine.load %C[%i, %j] : memref<9x9xf64>
        %p = arith.mulf %x, %y : f64
        %s = arith.addf %z, %p : f64
        affine.store %s, %C[%i, %j] : memref<9x9xf64>
      }
    }
  }
  return
}
"""

COLUMN_DOT = """\
func.func @dot(%x: memref<7xf64>, %y: memref<7x4xf64>, %s: memref<1xf64>) {
  affine.for %k = 0 to 7 {
    %a = affine.load %x[%k] : memref<7xf64>
    %b = affine.load %y[%k, 3] : memref<7x4xf64>
    %c = affine.load %s[0] : memref<1xf64>
    %p = arith.mulf %a, %b : f64
    %t = arith.addf %c, %p : f64
    affine.store %t, %s[0] : memref<1xf64>
  }
  return
}
"""

MATVEC = """\
func.func @mv(%A: memref<9x7xf64>, %x: memref<7xf64>, %y: memref<9xf64>) {
  affine.for %i = 0 to 9 {
    affine.for %k = 0 to 7 {
      %a = affine.load %A[%i, %k] : memref<9x7xf64>
      %b = affine.load %x[%k] : memref<7xf64>
      %c = affine.load %y[%i] : memref<9xf64>
      %p = arith.mulf %a, %b : f64
      %s = arith.addf %c, %p : f64
      affine.store %s, %y[%i] : memref<9xf64>
    }
  }
  return
}
"""

SCALED_AFTER = (HERE / "gemm.mlir").read_text().replace(
    """    affine.for %j = 0 to 19 {
      %c = affine.load %C[%i, %j] : memref<23x19xf64>
      %s = arith.mulf %c, %beta : f64
      affine.store %s, %C[%i, %j] : memref<23x19xf64>
    }
    affine.for %k = 0 to 17 {""", """    affine.for %k = 0 to 17 {""").replace(
    """    }
  }
  return""", """    }
    affine.for %j = 0 to 19 {
      %c = affine.load %C[%i, %j] : memref<23x19xf64>
      %s = arith.mulf %c, %beta : f64
      affine.store %s, %C[%i, %j] : memref<23x19xf64>
    }
  }
  return""")

DYNAMIC = """\
func.func @dyn(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %C: memref<?x?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %A, %c0 : memref<?x?xf64>
  %k = memref.dim %A, %c1 : memref<?x?xf64>
  %n = memref.dim %B, %c1 : memref<?x?xf64>
  affine.for %i = 0 to %m {
    affine.for %j = 0 to %n {
      affine.for %l = 0 to %k {
        %x = affine.load %A[%i, %l] : memref<?x?xf64>
        %y = affine.load %B[%l, %j] : memref<?x?xf64>
        %z = affine.load %C[%i, %j] : memref<?x?xf64>
        %p = arith.mulf %x, %y : f64
        %s = arith.addf %z, %p : f64
        affine.store %s, %C[%i, %j] : memref<?x?xf64>
      }
    }
  }
  return
}
"""


@pytest.mark.parametrize("text, message", [
    (TRIANGULAR, "the iteration domain is not a box"),
    (COLUMN_DOT, "not a dot product"),
    (SCALED_AFTER, "scales C after some of its updates"),
    (DYNAMIC, "has bounds that are not constants ('?' sizes"),
])
def test_other_near_misses(text, message):
    remarks = raising_remarks(text)
    assert len(remarks) == 1 and message in remarks[0], remarks
    module = parse(text)
    raise_contractions(module)
    assert str(module) == str(parse(text))


def test_near_miss_runs_as_written():
    rng = np.random.default_rng(6)
    a, b, c = rng.random((9, 9)), rng.random((9, 9)), rng.random((9, 9))
    ref, got = run_both(TRIANGULAR, "tri", [a, b, c], FLAGS["all"])
    assert_same(ref, got, np.float64)
    want = c + np.tril(a, -1) @ b
    np.testing.assert_allclose(got[2], want, rtol=1e-12)


def test_dynamic_sizes_stay_correct():
    rng = np.random.default_rng(7)
    a, b, c = rng.random((9, 5)), rng.random((5, 11)), rng.random((9, 11))
    ref, got = run_both(DYNAMIC, "dyn", [a, b, c], FLAGS["all"])
    np.testing.assert_allclose(got[2], c + a @ b, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# the pass registry


def test_textual_pipeline_round_trip_and_errors():
    text = "raise-scf-to-affine,hopt-raise-contractions{copy=true vect=true},hopt-expand"
    pipeline = parse_pipeline(text)
    assert [p.name for p, _ in pipeline] == ["raise-scf-to-affine", "hopt-raise-contractions",
                                             "hopt-expand"]
    assert pipeline[1][1].copy and pipeline[1][1].vect and not pipeline[1][1].unroll
    assert print_pipeline(pipeline) == text
    from polyopt.passes import PipelineSyntaxError
    with pytest.raises(PipelineSyntaxError, match="unknown pass 'hopt-nope'"):
        parse_pipeline("hopt-nope")
    with pytest.raises(PipelineSyntaxError, match="has no option 'kx'"):
        parse_pipeline("hopt-expand{kx=4}")
    with pytest.raises(PipelineSyntaxError, match="expected true or false"):
        parse_pipeline("hopt-expand{copy=maybe}")


def test_default_pipeline_spells_the_flags():
    from polyopt.passes import default_pipeline
    from polyopt.pipeline import PipelineOptions
    names = [p.name for p, _ in default_pipeline(PipelineOptions(hopt=True, blis=True))]
    assert names == ["raise-scf-to-affine", "hopt-report-opaque-nests",
                     "hopt-delicm", "hopt-linalg-to-loops", "hopt-raise-contractions", "hopt-schedule",
                     "hopt-expand", "hopt-collapse-loops",
                     "hopt-normalize-memrefs", "hopt-blis-calls"]
    names = [p.name for p, _ in default_pipeline(PipelineOptions(hopt=True, hopt_raise=False))]
    assert "hopt-raise-contractions" not in names


def test_cli_pass_pipeline(tmp_path, capsys):
    from polyopt.cli import main
    path = tmp_path / "mm.mlir"
    path.write_text(matmul_nest("jki"))
    assert main(["opt", str(path), "--remarks", "-p", "hopt-raise-contractions{tiled=false}"]) == 0
    out = capsys.readouterr()
    assert "remark: raised to a contraction" in out.err
    assert "affine.for" in out.out
    assert main(["opt", str(path), "-p", "hopt-raise{x=1}"]) == 1
    assert "unknown pass 'hopt-raise'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# doitgen: a batched contraction through a temporary reused by every (r, q)


def doitgen_numpy(a, c4):
    out = a.copy()
    out[:] = np.einsum("rqs,sp->rqp", a, c4)
    return out


def test_doitgen_is_recognized():
    text = (HERE / "doitgen.mlir").read_text()
    raised = [m for m in remarks_of(text, hopt=True) if m.startswith("raised to a contraction")]
    assert raised == ["raised to a contraction: C[i, j] = A[i, k] * B[k, j] (ixjxk = 35x9x9) "
                      "with i = (%arg3, %arg4) through a fresh 35x9 buffer for %arg2, j = %arg5,"
                      " k = %arg6; A = %arg0, B = %arg1; then S2 copies the buffer"]


@pytest.mark.parametrize("flags", list(FLAGS))
def test_doitgen_matches(flags):
    rng = np.random.default_rng(8)
    text = (HERE / "doitgen.mlir").read_text()
    a, c4, s = rng.random((5, 7, 9)), rng.random((9, 9)), rng.random(9)
    ref, got = run_both(text, "kernel_doitgen", [a, c4, s], FLAGS[flags])
    assert_same(ref, got, np.float64)
    np.testing.assert_allclose(got[0], doitgen_numpy(a, c4), rtol=1e-10)
    np.testing.assert_allclose(got[2], a[4, 6] @ c4, rtol=1e-10)   # sum holds the last row


def test_doitgen_copy_before_the_product_is_a_near_miss():
    text = (HERE / "doitgen.mlir").read_text()
    copy = """      affine.for %p = 0 to 9 {
        %v = affine.load %sum[%p] : memref<9xf64>
        affine.store %v, %A[%r, %q, %p] : memref<5x7x9xf64>
      }
"""
    moved = text.replace(copy, "").replace("    affine.for %q = 0 to 7 {\n",
                                           "    affine.for %q = 0 to 7 {\n" + copy)
    assert moved != text
    remarks = raising_remarks(moved)
    assert remarks == ["not raised to a contraction: the temporary is not initialized, updated, "
                       "then copied in each row"]


@pytest.mark.parametrize("name, count", [("2mm", 2), ("3mm", 3)])
def test_every_product_of_a_chain_is_raised_with_every_flag(name, count):
    """The register-tile steps of the first expansion (scalar replacement) used to rewrite the
    next nest before it was recognized: 2mm's second product ran as written, silently."""
    text = (HERE / f"{name}.mlir").read_text()
    remarks = remarks_of(text, hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
    assert sum(m.startswith("raised to a contraction") for m in remarks) == count


# a vector C: matrix-vector products


VECMAT_T = """\
func.func @vm(%x: memref<9xf32>, %A: memref<9x37xf32>, %y: memref<37xf32>, %alpha: f32) {
  affine.for %k = 0 to 9 {
    affine.for %j = 0 to 37 {
      %a = affine.load %A[%k, %j] : memref<9x37xf32>
      %b = affine.load %x[%k] : memref<9xf32>
      %c = affine.load %y[%j] : memref<37xf32>
      %p = arith.mulf %b, %a : f32
      %q = arith.mulf %p, %alpha : f32
      %s = arith.addf %c, %q : f32
      affine.store %s, %y[%j] : memref<37xf32>
    }
  }
  return
}
"""

LINALG_MV = """\
func.func @mv(%A: memref<{m}x{k}x{t}>, %x: memref<{k}x{t}>, %y: memref<{m}x{o}>) {{
  linalg.matvec ins(%A, %x : memref<{m}x{k}x{t}>, memref<{k}x{t}>) outs(%y : memref<{m}x{o}>)
  return
}}
func.func @vm(%x: memref<{m}x{t}>, %A: memref<{m}x{k}x{t}>, %y: memref<{k}x{o}>) {{
  linalg.vecmat ins(%x, %A : memref<{m}x{t}>, memref<{m}x{k}x{t}>) outs(%y : memref<{k}x{o}>)
  return
}}
"""


def test_matrix_vector_nests_are_raised():
    """``y[i] += A[i, k] * x[k]`` (C a vector of the row loop) and ``y[j] += x[k] * A[k, j]``
    (in either loop order, with a scalar factor) become contractions of an M x 1 or 1 x N C,
    their vectors seen as matrices by ``memref.expand_shape``: the GEMV forms then run them.
    Against numpy."""
    remarks = raising_remarks(MATVEC)
    assert len(remarks) == 1 and "ixjxk = 9x1x7" in remarks[0] and \
        "seen as columns" in remarks[0], remarks
    rng = np.random.default_rng(8)
    a, x, y = rng.random((9, 7)), rng.random(7), rng.random(9)
    ref, got = run_both(MATVEC, "mv", [a, x, y], FLAGS["all"])
    np.testing.assert_allclose(got[2], y + a @ x, rtol=1e-12)
    remarks = raising_remarks(VECMAT_T)
    assert len(remarks) == 1 and "ixjxk = 1x37x9" in remarks[0] and \
        "seen as rows" in remarks[0] and "alpha" in remarks[0], remarks
    x, a, y = (rng.random(9).astype(np.float32), rng.random((9, 37)).astype(np.float32),
               rng.random(37).astype(np.float32))
    all_remarks = remarks_of(VECMAT_T, **FLAGS["all"])
    assert any("axpy form" in r for r in all_remarks), all_remarks
    ref, got = run_both(VECMAT_T, "vm", [x, a, y, np.float32(1.5)], FLAGS["all"])
    np.testing.assert_allclose(got[2], y + 1.5 * (x.astype(np.float64) @ a), rtol=1e-5)


@pytest.mark.parametrize("t, o", [("f64", "f64"), ("f32", "f32"), ("bf16", "f32"),
                                  ("f16", "f32")])
@pytest.mark.parametrize("m, k", [(37, 45), (130, 1000), (3, 33)])
def test_linalg_matvec_and_vecmat_take_the_gemv_forms(t, o, m, k):
    """``linalg.matvec`` and ``linalg.vecmat`` (bf16 and f16 ones into f32 too) run as the dot
    and axpy forms; against numpy within the type's bound."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    text = LINALG_MV.format(m=m, k=k, t=t, o=o)
    all_remarks = remarks_of(text, **FLAGS["all"])
    assert sum("matrix-vector product" in r and "no packing" in r
               for r in all_remarks) == 2, all_remarks
    compiled = polyopt.compile(text, **FLAGS["all"])
    np_t = {"f64": np.float64, "f32": np.float32, "bf16": ml_dtypes.bfloat16,
            "f16": np.float16}[t]
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((m, k)).astype(np_t)
    for fn, vec, out_n, ref in (("mv", k, m, lambda v: a.astype(np.float64) @ v),
                                ("vm", m, k, lambda v: v @ a.astype(np.float64))):
        v = rng.standard_normal(vec).astype(np_t)
        y = rng.standard_normal(out_n).astype(np.float64 if o == "f64" else np.float32)
        want = y + ref(v.astype(np.float64))
        mags = np.abs(y) + (np.abs(a.astype(np.float64)) @ np.abs(v.astype(np.float64))
                            if fn == "mv" else np.abs(v.astype(np.float64)) @
                            np.abs(a.astype(np.float64)))
        args = (a, v, y) if fn == "mv" else (v, a, y)
        compiled[fn](*args)
        unit = 2.0 ** -53 if o == "f64" else 2.0 ** -24
        assert (np.abs(y - want) <= (max(m, k) + 1) * unit * mags * 2).all(), fn


def test_upstream_accepts_raised_matrix_vector_products():
    """The views and the GEMV forms of raised ``linalg.matvec``/``vecmat`` (bf16 into f32
    too) are IR ``mlir-opt-22`` takes as it is."""
    from upstream_mlir import mlir_opt
    text = str(polyopt.compile(LINALG_MV.format(m=100, k=300, t="bf16", o="f32"),
                               **FLAGS["all"]).module)
    assert "memref.expand_shape" in text and mlir_opt(text) == text


DOT = """\
func.func @dot(%x: memref<{n}x{t}>, %y: memref<{n}x{t}>, %s: memref<{o}>) {{
  linalg.dot ins(%x, %y : memref<{n}x{t}>, memref<{n}x{t}>) outs(%s : memref<{o}>)
  return
}}
"""


@pytest.mark.parametrize("t, o", [("f64", "f64"), ("f32", "f32"), ("bf16", "f32")])
@pytest.mark.parametrize("n", [3, 37, 1000, 4099])
def test_linalg_dot_takes_the_dot_form(t, o, n):
    """``linalg.dot`` (a rank-0 C) is the 1 x 1 x K contraction the GEMV dot form runs with
    vector accumulators (it was a scalar loop LLVM could not vectorize: f32 at 1e6, 2.1
    GFLOPS against numpy's 24); against numpy within the type's bound."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    text = DOT.format(n=n, t=t, o=o)
    remarks = remarks_of(text, **FLAGS["all"])
    assert any("a dot product, A a row" in r for r in remarks), remarks
    np_t = {"f64": np.float64, "f32": np.float32, "bf16": ml_dtypes.bfloat16}[t]
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np_t), rng.standard_normal(n).astype(np_t)
    s = np.array(rng.standard_normal(), np.float64 if o == "f64" else np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = float(s) + x64 @ y64
    polyopt.compile(text, **FLAGS["all"])["dot"](x, y, s)
    unit = 2.0 ** -53 if o == "f64" else 2.0 ** -24
    assert abs(float(s) - want) <= (n + 1) * unit * (abs(want - x64 @ y64) + np.abs(x64) @
                                                     np.abs(y64)) * 2
