"""Mixed-precision contractions (:mod:`polyopt.schedules.lowp_gemm`): bf16 x bf16 -> f32,
f16 x f16 -> f32, i8 x i8 -> i32 (signed, or A unsigned) through ``hop.matmul`` and
``linalg.matmul`` on the CPU's dot engine (AVX512-BF16 ``vdpbf16ps``, AVX512-VNNI
``vpdpbusd``) or, where it has none, on operands converted at packing.

Integers are exact against numpy's int64 product.  bf16 and f16 inputs are exact in f32 and
so are their products (8- and 11-bit significands), so the only error is f32's summation:
``|C - C_ref| <= (K + 1) * 2^-24 * (sum_k |a||b| + |C0|)``, far inside the issue's bound of K
times the input type's unit roundoff (2^-8 for bf16, 2^-11 for f16).  Shapes are not
multiples of the register tile (6 x 64), of the K groups (2, 4) or of the blocks (M_C 510;
K = 2601 is three K_C blocks in bf16, two in i8)."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.codegen.cpu_facts import host_facts
from polyopt.codegen.target import Target, compiling_for
from host_targets import vector_engines_only
from upstream_mlir import mlir_opt

ml_dtypes = pytest.importorskip("ml_dtypes")

ALL = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)
KINDS = {  # name -> (A, B, C element types, hop.matmul attributes, numpy A, numpy B)
    "bf16": ("bf16", "bf16", "f32", ""),
    "f16": ("f16", "f16", "f32", ""),
    "s8": ("i8", "i8", "i32", ""),
    "u8": ("i8", "i8", "i32", " {a_unsigned}"),
}
SHAPES = [(1, 1, 1), (3, 5, 7), (6, 64, 2), (7, 65, 33), (97, 101, 103), (13, 150, 2601),
          (520, 70, 515)]

TRIPLE = "x86_64-unknown-linux-gnu"
AVX512 = "+avx,+avx2,+fma,+f16c,+avx512f,+avx512dq,+avx512bw,+avx512vl,+avx512cd"
DOT_ENGINES = Target.from_features(TRIPLE, "znver4", AVX512 + ",+avx512vnni,+avx512bf16",
                                   (32 * 1024, 1 << 20, 32 << 20))
NO_ENGINE = Target.from_features(TRIPLE, "haswell", "+avx,+avx2,+fma,+f16c,-avx512f",
                                 (32 * 1024, 256 * 1024, 8 << 20))


@pytest.fixture(autouse=True)
def _vector_engines():
    """The vector templates, on an AMX CPU too (the tiles: test_amx_gemm.py)."""
    with vector_engines_only():
        yield


def _host_has(feature: str) -> bool:
    """Does the machine model polyopt compiles for (this CPU) have ``feature`` at 512 bits?"""
    model = polyopt.pipeline.machine_model()
    return model.vector_bits >= 512 and feature in model.features


def hop_source(kind, m, n, k, dynamic=False):
    a, b, c, attrs = KINDS[kind]
    dims = ("?", "?", "?") if dynamic else (m, n, k)
    ta, tb, tc = (f"memref<{dims[0]}x{dims[2]}x{a}>", f"memref<{dims[2]}x{dims[1]}x{b}>",
                  f"memref<{dims[0]}x{dims[1]}x{c}>")
    return (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
            f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")


def operands(kind, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    if kind in ("bf16", "f16"):
        t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
        a = rng.standard_normal((m, k)).astype(t)
        b = rng.standard_normal((k, n)).astype(t)
        c = rng.standard_normal((m, n)).astype(np.float32)
    else:
        a = (rng.integers(0, 256, (m, k)).astype(np.uint8) if kind == "u8"
             else rng.integers(-128, 128, (m, k)).astype(np.int8))
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        c = rng.integers(-10**6, 10**6, (m, n)).astype(np.int32)
    return a, b, c


def check(fn, kind, m, n, k, seed=0):
    a, b, c = operands(kind, m, n, k, seed)
    c0 = c.copy()
    fn(a, b, c)
    if kind in ("s8", "u8"):
        want = c0.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
        np.testing.assert_array_equal(c, want)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = c0.astype(np.float64) + a64 @ b64
    bound = (k + 1) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + np.abs(c0))
    err = np.abs(c - want)
    assert (err <= bound).all(), f"max error {err.max()}, bound there {bound[err > bound][:3]}"


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_hop_matmul_matches_numpy(kind, m, n, k):
    remarks = []
    fn = polyopt.compile(hop_source(kind, m, n, k), remark=lambda loc, msg: remarks.append(msg),
                         **ALL)["mm"]
    # (a column vector B takes the GEMV path, int8 where the CPU has VNNI: test_gemv_narrow)
    gemv = n == 1 and (kind in ("bf16", "f16") or _host_has("avx512vnni"))
    path = "matrix-vector product" if gemv else "groups of"
    assert any(path in r for r in remarks), remarks
    check(fn, kind, m, n, k)


@pytest.mark.parametrize("kind", list(KINDS))
def test_one_compilation_for_every_size(kind):
    fn = polyopt.compile(hop_source(kind, 0, 0, 0, dynamic=True), **ALL)["mm"]
    rng = np.random.default_rng(11)
    for seed in range(6):
        m, n, k = (int(x) for x in rng.integers(1, 140, 3))
        check(fn, kind, m, n, k, seed)


def test_the_remark_names_the_engine():
    wants = {"bf16": "AVX512-BF16 vdpbf16ps", "s8": "AVX512-VNNI vpdpbusd",
             "u8": "AVX512-VNNI vpdpbusd", "f16": "f32 FMA on operands converted at packing"}
    for kind, want in wants.items():
        remarks = []
        with compiling_for(DOT_ENGINES):
            polyopt.parse(hop_source(kind, 8, 8, 8))
            polyopt.compile(hop_source(kind, 8, 8, 8),
                            remark=lambda loc, msg: remarks.append(msg), **ALL)
        assert any(want in r for r in remarks), (kind, remarks)


def _asm(kind, target, m=40, n=70, k=90):
    with compiling_for(target):
        compiled = polyopt.compile(hop_source(kind, m, n, k), **ALL)
    return compiled, compiled.asm()


def _run_where_present(target, fn):
    enabled = [f[1:] for f in target.features.split(",") if f.startswith("+")]
    missing = host_facts().missing(enabled)
    if missing or host_facts().arch != "x86_64":
        pytest.skip(f"compiled for {target.cpu}; this CPU lacks {', '.join(missing)}")
    fn()


@pytest.mark.parametrize("kind, instruction", [("bf16", "vdpbf16ps"), ("s8", "vpdpbusd"),
                                               ("u8", "vpdpbusd")])
def test_dot_engine_assembly(kind, instruction):
    """Compiled for a CPU with AVX512-BF16 and VNNI: the register tile is 24 zmm dot
    instructions per k group (6 rows x 4 vectors), whatever this CPU is; run where it has
    them."""
    compiled, asm = _asm(kind, DOT_ENGINES, m=42)
    dots = [line for line in asm.splitlines() if re.search(rf"\b{instruction}\b", line)]
    assert len(dots) >= 24 and all("%zmm" in line for line in dots), dots[:4]
    _run_where_present(DOT_ENGINES, lambda: check(compiled["mm"], kind, 42, 70, 90))


@pytest.mark.parametrize("kind", list(KINDS))
def test_without_an_engine_the_operands_are_converted(kind):
    """A CPU without AVX512-BF16 or VNNI (AVX2 only): no dot instructions; the operands are
    converted to C's type at packing, the remark says which engine is missing."""
    remarks = []
    with compiling_for(NO_ENGINE):
        compiled = polyopt.compile(hop_source(kind, 40, 70, 90),
                                   remark=lambda loc, msg: remarks.append(msg), **ALL)
    asm = compiled.asm()
    assert "vdpbf16ps" not in asm and "vpdpbusd" not in asm and "%zmm" not in asm
    if kind != "f16":
        assert any("this CPU has no avx512" in r for r in remarks), remarks
    _run_where_present(NO_ENGINE, lambda: check(compiled["mm"], kind, 40, 70, 90))


LINALG = """func.func @mm(%A: memref<{m}x{k}x{a}>, %B: memref<{k}x{n}x{b}>, %C: memref<{m}x{n}x{c}>) {{
  linalg.matmul{cast} ins(%A, %B : memref<{m}x{k}x{a}>, memref<{k}x{n}x{b}>) outs(%C : memref<{m}x{n}x{c}>)
  return
}}
"""


@pytest.mark.parametrize("kind, cast", [("bf16", ""), ("f16", ""), ("s8", ""),
                                        ("u8u8", " {cast = #linalg.type_fn<cast_unsigned>}")])
def test_linalg_matmul_with_casts(kind, cast):
    """``linalg.matmul`` of narrow operands into a wider C: its payload casts them (signed
    by default, both unsigned with ``cast_unsigned``, which VNNI cannot take: B unsigned)."""
    m, n, k = 37, 70, 45
    a_t, b_t, c_t = KINDS["s8" if kind == "u8u8" else kind][:3]
    src = LINALG.format(m=m, n=n, k=k, a=a_t, b=b_t, c=c_t, cast=cast)
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("groups of" in r for r in remarks), remarks
    if kind != "u8u8":
        check(fn, kind, m, n, k)
        return
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (m, k)).astype(np.uint8)
    b = rng.integers(0, 256, (k, n)).astype(np.uint8)
    c = np.zeros((m, n), np.int32)
    fn(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("kind", ["bf16", "s8"])
def test_upstream_mlir_accepts_the_ir(kind):
    """What ``polyopt opt`` prints for the dot engines (``x86vector.avx512.dot``,
    ``llvm.call_intrinsic``) is valid upstream MLIR."""
    from polyopt.pipeline import PipelineOptions, load, run_passes
    with compiling_for(DOT_ENGINES):
        module = load(hop_source(kind, 30, 70, 45))
        run_passes(module, PipelineOptions(**ALL))
    text = str(module)
    assert ("x86vector.avx512.dot" if kind == "bf16" else "llvm.x86.avx512.vpdpbusd.512") in text
    mlir_opt(text)


@pytest.mark.parametrize("types, attrs, message", [
    (("bf16", "f32", "f32"), "", "of a mixed contraction: (bf16, bf16, f32), (f16, f16, f32), "
                                 "(i8, i8, i32); got (bf16, f32, f32)"),
    (("bf16", "bf16", "f32"), " {a_unsigned}", "a_unsigned applies to an i8 A"),
    (("bf16", "bf16", "f32"), " {alpha = 2.0 : f32}", "alpha with mixed element types"),
    (("i8", "i8", "i16"), "", "got (i8, i8, i16)"),
    (("i8", "i8", "i8"), "", "operand #0 (A) must have element type f32 or f64, got 'i8'"),
])
def test_unsupported_combinations_are_located_errors(types, attrs, message):
    a, b, c = types
    ta, tb, tc = f"memref<4x5x{a}>", f"memref<5x6x{b}>", f"memref<4x6x{c}>"
    src = (f"func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
           f"  hop.matmul %A, %B, %C{attrs} : ({ta}, {tb}, {tc})\n  return\n}}\n")
    with pytest.raises(polyopt.PolyoptError) as e:
        polyopt.parse(src, filename="mixed.mlir")
    assert message in str(e.value)
    assert "mixed.mlir:2:3" in str(e.value)


def test_uint8_arrays_pass_as_i8():
    """MLIR's integers are signless: an i8 memref takes int8 and uint8 arrays alike."""
    fn = polyopt.compile(hop_source("u8", 5, 6, 7), **ALL)["mm"]
    check(fn, "u8", 5, 6, 7)
    with pytest.raises(TypeError, match="int8 or uint8"):
        fn(np.zeros((5, 7), np.int16), np.zeros((7, 6), np.int8), np.zeros((5, 6), np.int32))


@pytest.mark.parametrize("kind", ["bf16", "s8"])
def test_threads_give_the_same_bits(kind):
    """On two threads the packing and the tiles are split, every element of C summed in the
    same order: the same bits as one thread, at shapes with edges."""
    one = polyopt.compile(hop_source(kind, 0, 0, 0, dynamic=True), threads=1, **ALL)["mm"]
    remarks = []
    two = polyopt.compile(hop_source(kind, 0, 0, 0, dynamic=True), threads=2,
                          remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("split over 2 threads" in r for r in remarks), remarks
    for m, n, k in [(97, 301, 203), (7, 600, 1100), (520, 70, 33)]:
        a, b, c = operands(kind, m, n, k, seed=m)
        c1, c2 = c.copy(), c.copy()
        one(a, b, c1)
        two(a, b, c2)
        np.testing.assert_array_equal(c1, c2)
        check(two, kind, m, n, k, seed=m)


RAISED = """func.func @mm(%A: memref<{m}x{k}x{a}>, %B: memref<{k}x{n}x{b}>, %C: memref<{m}x{n}x{c}>) {{
  affine.for %i = 0 to {m} {{
    affine.for %k = 0 to {k} {{
      affine.for %j = 0 to {n} {{
        %a = affine.load %A[%i, %k] : memref<{m}x{k}x{a}>
        %b = affine.load %B[%k, %j] : memref<{k}x{n}x{b}>
        %ae = {cast_a} %a : {a} to {c}
        %be = {cast_b} %b : {b} to {c}
        %p = {mul} {first}, {second} : {c}
        %x = affine.load %C[%i, %j] : memref<{m}x{n}x{c}>
        %s = {add} %x, %p : {c}
        affine.store %s, %C[%i, %j] : memref<{m}x{n}x{c}>
      }}
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("kind, cast_a, cast_b, swapped", [
    ("bf16", "arith.extf", "arith.extf", False), ("f16", "arith.extf", "arith.extf", True),
    ("s8", "arith.extsi", "arith.extsi", False), ("u8", "arith.extui", "arith.extsi", True)])
def test_raised_nest_with_casts(kind, cast_a, cast_b, swapped):
    """The affine nest a user writes for a mixed-type product (each factor cast to C's type,
    the ``extui`` of a u8 A) is raised to the same contraction as hop.matmul's."""
    a, b, c, _ = KINDS[kind]
    floats = c == "f32"
    m, n, k = 37, 70, 45
    src = RAISED.format(m=m, n=n, k=k, a=a, b=b, c=c, cast_a=cast_a, cast_b=cast_b,
                        mul="arith.mulf" if floats else "arith.muli",
                        add="arith.addf" if floats else "arith.addi",
                        first="%be" if swapped else "%ae", second="%ae" if swapped else "%be")
    remarks = []
    fn = polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("raised to a contraction" in r for r in remarks), remarks
    sign = {"u8": "u8 x s8", "s8": "s8 x s8"}.get(kind, f"{kind} x {kind}")
    assert any(f"contraction {sign} -> {c}" in r for r in remarks), remarks
    check(fn, kind, m, n, k)


def test_a_nest_with_one_cast_factor_is_a_near_miss():
    src = RAISED.format(m=8, n=9, k=10, a="bf16", b="f32", c="f32", cast_a="arith.extf",
                        cast_b="arith.extf", mul="arith.mulf", add="arith.addf", first="%ae",
                        second="%b").replace("        %be = arith.extf %b : f32 to f32\n", "")
    remarks = []
    polyopt.compile(src, remark=lambda loc, msg: remarks.append(msg), **ALL)
    assert any("different element types (bf16, f32)" in r for r in remarks), remarks


def transposed_source(kind, m, n, k, a_t, b_t):
    """``C[i, j] += cast(A[k, i]) * cast(B[j, k])`` (``a_t``, ``b_t``: A stored K x M, B
    stored N x K) as the affine nest a user writes."""
    a, b, c, _ = KINDS[kind]
    casts = {"bf16": ("arith.extf",) * 2, "f16": ("arith.extf",) * 2,
             "s8": ("arith.extsi",) * 2, "u8": ("arith.extui", "arith.extsi")}[kind]
    ta = f"memref<{k}x{m}x{a}>" if a_t else f"memref<{m}x{k}x{a}>"
    tb = f"memref<{n}x{k}x{b}>" if b_t else f"memref<{k}x{n}x{b}>"
    tc = f"memref<{m}x{n}x{c}>"
    mul, add = ("arith.mulf", "arith.addf") if c == "f32" else ("arith.muli", "arith.addi")
    return f"""func.func @mm(%A: {ta}, %B: {tb}, %C: {tc}) {{
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = 0 to {k} {{
        %a = affine.load %A[{"%k, %i" if a_t else "%i, %k"}] : {ta}
        %b = affine.load %B[{"%j, %k" if b_t else "%k, %j"}] : {tb}
        %ae = {casts[0]} %a : {a} to {c}
        %be = {casts[1]} %b : {b} to {c}
        %p = {mul} %ae, %be : {c}
        %o = affine.load %C[%i, %j] : {tc}
        %s = {add} %o, %p : {c}
        affine.store %s, %C[%i, %j] : {tc}
      }}
    }}
  }}
  return
}}
"""


def check_transposed(fn, kind, m, n, k, a_t, b_t):
    """``check`` with A and B stored transposed as ``transposed_source`` says."""
    def call(a, b, c):
        fn(np.ascontiguousarray(a.T) if a_t else a, np.ascontiguousarray(b.T) if b_t else b, c)
    check(call, kind, m, n, k)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("a_t, b_t", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m, n, k, threads", [(50, 60, 70, 1), (97, 101, 103, 2)])
def test_transposed_operands(kind, a_t, b_t, m, n, k, threads):
    """A stored K x M, B stored N x K: the packing copies their views element by element
    (vector copies of a row read a column there: the compilation failed before)."""
    remarks = []
    fn = polyopt.compile(transposed_source(kind, m, n, k, a_t, b_t), threads=threads,
                         remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any("groups of" in r for r in remarks), remarks
    check_transposed(fn, kind, m, n, k, a_t, b_t)


CONV = """func.func @conv(%I: memref<{n}x{h}x{w}x{c}x{t}>, %K: memref<3x3x{c}x{f}x{t}>, %O: memref<{n}x{oh}x{ow}x{f}x{o}>) {{
  linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{s}> : tensor<2xi64>}} ins(%I, %K : memref<{n}x{h}x{w}x{c}x{t}>, memref<3x3x{c}x{f}x{t}>) outs(%O : memref<{n}x{oh}x{ow}x{f}x{o}>)
  return
}}
"""


def conv3x3_data(kind, n, h, w, c, f, s):
    """Random input (n x h x w x c) and 3x3 filter (c -> f) of bf16 or s8, the convolution at
    stride ``s`` in f64, and the sums of the magnitudes of its terms (for f32's bound)."""
    oh, ow = (h - 3) // s + 1, (w - 3) // s + 1
    rng = np.random.default_rng(n + c)
    if kind == "bf16":
        inp = rng.standard_normal((n, h, w, c)).astype(ml_dtypes.bfloat16)
        flt = rng.standard_normal((3, 3, c, f)).astype(ml_dtypes.bfloat16)
    else:
        inp = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
        flt = rng.integers(-128, 128, (3, 3, c, f)).astype(np.int8)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    want, mags = np.zeros((n, oh, ow, f)), np.zeros((n, oh, ow, f))
    for kh in range(3):
        for kw in range(3):
            window = i64[:, kh:kh + s * (oh - 1) + 1:s, kw:kw + s * (ow - 1) + 1:s, :]
            want += np.einsum("nhwc,cf->nhwf", window, f64[kh, kw])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[kh, kw]))
    return inp, flt, want, mags


@pytest.mark.parametrize("kind", ["bf16", "s8"])
@pytest.mark.parametrize("n, h, w, c, f, s", [(1, 10, 9, 5, 19, 1), (2, 11, 12, 16, 70, 2),
                                              (1, 9, 10, 64, 70, 1), (2, 9, 8, 128, 33, 2)])
@pytest.mark.parametrize("threads", [1, 2])
def test_convolution_of_narrow_types(kind, n, h, w, c, f, s, threads):
    """linalg.conv_2d_nhwc_hwcf of bf16 (i8) input and filter into an f32 (i32) output: the
    implicit GEMM on the dot engine, against numpy.  A's panels are copied straight from the
    input: by 64-byte vectors where a window position's channels come in such runs (64 bf16
    or 64 bytes: C = 64, 128), else by the window rows' runs of 3 x C (test below)."""
    t, o = ("bf16", "f32") if kind == "bf16" else ("i8", "i32")
    oh, ow = (h - 3) // s + 1, (w - 3) // s + 1
    src = CONV.format(n=n, h=h, w=w, c=c, f=f, t=t, o=o, s=s, oh=oh, ow=ow)
    remarks = []
    compiled = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                               **ALL)
    fn = compiled["conv"]
    assert any("groups of" in r for r in remarks), remarks
    run = 32 if kind == "bf16" else 64
    row_vectors = re.findall(rf"affine.vector_load %arg0\[.*vector<{run}x{t}>", str(compiled.module))
    assert bool(row_vectors) == (c % run == 0), row_vectors[:2]
    inp, flt, want, mags = conv3x3_data(kind, n, h, w, c, f, s)
    out = np.zeros((n, oh, ow, f), np.float32 if kind == "bf16" else np.int32)
    fn(inp, flt, out)
    if kind == "s8":
        np.testing.assert_array_equal(out, want)
    else:
        assert (np.abs(out - want) <= (9 * c + 1) * 2.0 ** -24 * mags).all()
    naive = polyopt.compile(src, hopt=False)["conv"]
    ref = np.zeros_like(out)
    naive(inp, flt, ref)
    if kind == "s8":
        np.testing.assert_array_equal(ref, want)



@pytest.mark.parametrize("c, kc, run", [(64, 576, 192),      # one K_C block of 3 window rows
                                        (512, 1536, 1536),   # three blocks of one window row
                                        (384, 1728, 32)])    # K_C = 1.5 rows: 64-byte vectors
def test_convolution_copies_whole_window_rows(c, kc, run):
    """A's rows are copied by whole window rows (KW x C consecutive input elements) where
    those are whole 64-byte vectors and K_C holds whole rows: one window position per row of
    the window, then the row's vectors at constant offsets (the packing loop has KW x C / 32
    vector loads of the input); else by single vectors.  Against numpy, with a K cut into
    several K_C blocks."""
    h, w, f = 6, 7, 20
    oh, ow = h - 2, w - 2
    src = CONV.format(n=1, h=h, w=w, c=c, f=f, t="bf16", o="f32", s=1, oh=oh, ow=ow)
    remarks = []
    compiled = polyopt.compile(src, threads=1, remark=lambda loc, msg: remarks.append(msg),
                               **ALL)
    assert any(f"K_C={kc}," in r for r in remarks), remarks
    loads = re.findall(r"affine.vector_load %arg0\[[^\n]*vector<32xbf16>",
                       str(compiled.module))
    assert len(loads) == run // 32, loads[:2]
    rng = np.random.default_rng(c)
    inp = rng.standard_normal((1, h, w, c)).astype(ml_dtypes.bfloat16)
    flt = rng.standard_normal((3, 3, c, f)).astype(ml_dtypes.bfloat16)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    want, mags = np.zeros((1, oh, ow, f)), np.zeros((1, oh, ow, f))
    for kh in range(3):
        for kw in range(3):
            window = i64[:, kh:kh + oh, kw:kw + ow, :]
            want += np.einsum("nhwc,cf->nhwf", window, f64[kh, kw])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[kh, kw]))
    out = np.zeros((1, oh, ow, f), np.float32)
    compiled["conv"](inp, flt, out)
    assert (np.abs(out - want) <= (9 * c + 1) * 2.0 ** -24 * mags).all()

WINDOW = """func.func @conv(%I: memref<1x{h}x{w}x{c}x{t}>, %K: memref<{kh}x{kw}x{c}x{f}x{t}>, %O: memref<1x{oh}x{ow}x{f}x{o}>) {{
  linalg.conv_2d_nhwc_hwcf {{dilations = dense<[1, {d}]> : tensor<2xi64>, strides = dense<{s}> : tensor<2xi64>}} ins(%I, %K : memref<1x{h}x{w}x{c}x{t}>, memref<{kh}x{kw}x{c}x{f}x{t}>) outs(%O : memref<1x{oh}x{ow}x{f}x{o}>)
  return
}}
"""


@pytest.mark.parametrize("kind", ["bf16", "s8"])
@pytest.mark.parametrize("h, w, c, f, kh, kw, s, d, run", [
    (29, 31, 3, 17, 7, 7, 2, 1, 21),      # ResNet-50's stem, smaller: runs of 7 x 3
    (12, 11, 5, 19, 3, 3, 1, 1, 15),      # runs of 3 x 5
    (13, 14, 6, 9, 2, 3, 1, 2, 6),        # dilated along W: runs of the 6 channels
    (23, 22, 12, 9, 11, 11, 1, 1, 132),   # K = 1452 in two K_C blocks of 6 runs of 11 x 12
])
@pytest.mark.parametrize("threads", [1, 2])
def test_convolution_copies_window_runs(kind, h, w, c, f, kh, kw, s, d, run, threads):
    """Where a window position's channels are fewer than 64 bytes, A's rows are copied by the
    runs of consecutive input elements: a window row's KW x C (read through the input with W
    and C folded: the stem's 21 bf16 as 16 and 8), or C where the window is dilated along
    W; K_C is a multiple of the run.  Each piece of a run (16 and 8 for 21 bf16) is a
    vector load of the folded view, or of the input where it stays in one window position's
    channels.  Against numpy, on 1 and 2 threads."""
    from polyopt.schedules.lowp_gemm import run_pieces
    t, o = ("bf16", "f32") if kind == "bf16" else ("i8", "i32")
    pieces = [n for _, n in run_pieces(run, 32 if kind == "bf16" else 64) if n > 1]
    oh, ow = (h - kh) // s + 1, (w - d * (kw - 1) - 1) // s + 1
    src = WINDOW.format(h=h, w=w, c=c, f=f, kh=kh, kw=kw, s=s, d=d, t=t, o=o, oh=oh, ow=ow)
    compiled = polyopt.compile(src, threads=threads, **ALL)
    text = str(compiled.module)
    folded, unfolded = f"memref<1x{h}x{w * c}x{t}>", f"memref<1x{h}x{w}x{c}x{t}>"
    for n in pieces:
        assert re.search(rf"affine.vector_load [^\n]* : ({folded}|{unfolded}), "
                         rf"vector<{n}x{t}>", text), n
    assert (f"{folded}, vector<" in text) == (d == 1)
    rng = np.random.default_rng(c + kw)
    if kind == "bf16":
        inp = rng.standard_normal((1, h, w, c)).astype(ml_dtypes.bfloat16)
        flt = rng.standard_normal((kh, kw, c, f)).astype(ml_dtypes.bfloat16)
    else:
        inp = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
        flt = rng.integers(-128, 128, (kh, kw, c, f)).astype(np.int8)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    want = np.zeros((1, oh, ow, f))
    mags = np.zeros((1, oh, ow, f))
    for y in range(kh):
        for x in range(kw):
            window = i64[:, y:y + s * (oh - 1) + 1:s, x * d:x * d + s * (ow - 1) + 1:s, :]
            want += np.einsum("nhwc,cf->nhwf", window, f64[y, x])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[y, x]))
    out = np.zeros((1, oh, ow, f), np.float32 if kind == "bf16" else np.int32)
    compiled["conv"](inp, flt, out)
    if kind == "s8":
        np.testing.assert_array_equal(out, want)
    else:
        assert (np.abs(out - want) <= (kh * kw * c + 1) * 2.0 ** -24 * mags).all()


def test_run_pieces():
    """A run of A's row is copied by vectors of powers of two, at most 64 bytes each, the
    last one ending at the run's end (over the tail of the one before it)."""
    from polyopt.schedules.lowp_gemm import run_pieces
    assert run_pieces(21, 32) == [(0, 16), (13, 8)]
    assert run_pieces(48, 32) == [(0, 32), (32, 16)]
    assert run_pieces(64, 32) == [(0, 32), (32, 32)]
    assert run_pieces(150, 32) == [(0, 32), (32, 32), (64, 32), (96, 32), (118, 32)]
    assert run_pieces(3, 64) == [(0, 2), (2, 1)]
    assert run_pieces(1, 64) == [(0, 1)]
    for run in range(1, 300):       # every element of the run, nothing past it
        for widest in (32, 64):
            covered = set()
            for offset, n in run_pieces(run, widest):
                assert n & (n - 1) == 0 and n <= widest and offset + n <= run
                covered |= set(range(offset, offset + n))
            assert covered == set(range(run))


@pytest.mark.parametrize("elem", ["f32", "bf16"])
def test_batch_loop_on_threads(elem):
    """linalg.batch_matmul on a team: the batch loop is affine.parallel, one matrix per thread
    at a time, each summed as on one thread (the same bits)."""
    nb, m, n, k = 5, 33, 70, 45
    c_t = "f32"
    ta, tb, tc = (f"memref<{nb}x{m}x{k}x{elem}>", f"memref<{nb}x{k}x{n}x{elem}>",
                  f"memref<{nb}x{m}x{n}x{c_t}>")
    src = (f"func.func @bmm(%A: {ta}, %B: {tb}, %C: {tc}) {{\n"
           f"  linalg.batch_matmul ins(%A, %B : {ta}, {tb}) outs(%C : {tc})\n  return\n}}\n")
    rng = np.random.default_rng(3)
    t = ml_dtypes.bfloat16 if elem == "bf16" else np.float32
    a = rng.standard_normal((nb, m, k)).astype(t)
    b = rng.standard_normal((nb, k, n)).astype(t)
    outs = []
    for threads in (1, 2):
        remarks = []
        fn = polyopt.compile(src, threads=threads, remark=lambda loc, msg: remarks.append(msg),
                             **ALL)["bmm"]
        assert (threads > 1) == any("batch loop is affine.parallel" in r for r in remarks)
        c = np.zeros((nb, m, n), np.float32)
        fn(a, b, c)
        outs.append(c)
    np.testing.assert_array_equal(outs[0], outs[1])
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(outs[0], want, atol=1e-4 * k)
    # each thread its own packed panels: every buffer is allocated inside the parallel loop
    # (a race on shared panels need not show in a small run)
    from polyopt.pipeline import PipelineOptions, load, run_passes
    module = load(src)
    run_passes(module, PipelineOptions(threads=2, **ALL))
    (par,) = [op for op in module.walk() if op.name == "affine.parallel"
              and op.parent_op.name == "func.func"]
    allocs = [op for op in module.walk() if op.name == "memref.alloc"]
    assert allocs and all(par.is_proper_ancestor_of(op) for op in allocs)


@pytest.mark.parametrize("kind", ["bf16", "u8", "s8"])
@pytest.mark.parametrize("m, n, k", [(97, 101, 104), (13, 70, 4104), (31, 64, 8),
                                     (6, 130, 64), (40, 1, 2048)])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_read_in_place(kind, m, n, k, threads):
    """Where A is a row-major matrix of the packed type and K a whole number of groups, the
    register tile reads A's rows where they are (a group is one 32-bit load of A) and only
    the panel cut by M is packed; s8, offset by 128 at packing, is always packed.  Against
    numpy with M cut by the tile and the blocks, N by the tile, and K in two blocks."""
    compiled = polyopt.compile(hop_source(kind, m, n, k), threads=threads, **ALL)
    g, t = (2, "bf16") if kind == "bf16" else (4, "i8")
    direct = re.findall(rf"affine.vector_load %arg0\[[^\n]*vector<{g}x{t}>", str(compiled.module))
    # (times a column, bf16 and int8 on VNNI take the GEMV path: test_gemv_narrow)
    gemv = n == 1 and (kind == "bf16" or _host_has("avx512vnni"))
    assert bool(direct) == (kind in ("u8", "bf16") and not gemv), direct[:2]
    check(compiled["mm"], kind, m, n, k)


def test_register_rows_cut_fewest_rows():
    """M_R is the widest tile's 6 unless a narrower one computes fewer rows of C's last tile
    than it costs per row: 49 rows are ten tiles of 5, not nine of 6; 196 stay 6 (198 rows)."""
    from polyopt.schedules.lowp_gemm import register_rows
    assert register_rows(6, None) == 6 and register_rows(6, 2048) == 6
    assert register_rows(6, 196) == 6 and register_rows(6, 3136) == 6
    assert register_rows(6, 49) == 5 and register_rows(6, 25) == 5
    assert register_rows(6, 8) == 4 and register_rows(6, 12) == 6
    assert register_rows(2, 49) == 2          # a narrower machine keeps its own
    remarks = []
    fn = polyopt.compile(hop_source("bf16", 49, 70, 96),
                         remark=lambda loc, msg: remarks.append(msg), **ALL)["mm"]
    assert any(re.search(r"register tile 5x\d+\)", r) for r in remarks), remarks
    check(fn, "bf16", 49, 70, 96)
