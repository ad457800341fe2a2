"""Mixed-precision contractions on AMX tiles (:mod:`polyopt.schedules.amx_gemm`).

Whatever this CPU is, the template is built for a CPU with AMX (``compiling_for`` a
Sapphire Rapids target): its assembly is read (the tile configuration, the tile products,
no tile spilled), upstream ``mlir-opt-22`` parses what ``polyopt opt`` prints, and the same
IR is run on this CPU with the ``amx`` ops emulated (:mod:`polyopt.codegen.lower_amx`), so
that the packing layouts, the edges, the threads and the epilogues are checked against numpy
here; the real instructions run where the CPU has them (the skip names the missing flags).

Shapes are not multiples of the register tile (32 x 32), of a k-step (32 bf16/f16, 64
bytes) or of the K_C block; K = 4200 is three K_C blocks of bf16 (1408), two of bytes (2112)."""

import re

import ml_dtypes
import numpy as np
import pytest

import polyopt
from polyopt.codegen.cpu_facts import host_facts
from polyopt.codegen.target import Target, compiling_for
from host_targets import vector_engines_only
from polyopt.pipeline import CompiledModule, PipelineOptions, load, run_passes
from upstream_mlir import mlir_opt

from test_lowp_gemm import (ALL, AVX512, TRIPLE, check, check_transposed, conv3x3_data,
                            hop_source, operands, transposed_source, _run_where_present)

AMX = Target.from_features(TRIPLE, "sapphirerapids",
                           AVX512 + ",+avx512vnni,+avx512bf16,+avx512fp16,+amx-tile,+amx-bf16,"
                                    "+amx-int8,+amx-fp16", (48 * 1024, 2 << 20, 105 << 20))
INSTRUCTION = {"bf16": "tdpbf16ps", "f16": "tdpfp16ps", "s8": "tdpbssd", "u8": "tdpbusd"}
SHAPES = [(1, 1, 1), (7, 65, 33), (32, 32, 64), (40, 70, 90), (97, 101, 103), (33, 17, 4200)]


def scheduled_for_amx(src: str, threads: int = 1, remark=None):
    """The module after polyopt's passes for the AMX CPU."""
    with compiling_for(AMX):
        module = load(src)
        run_passes(module, PipelineOptions(**ALL, threads=threads), remark)
    return module


def emulated(src: str, threads: int = 1):
    """Scheduled for the AMX CPU, compiled for this one: the ``amx`` ops run on its tiles
    where it has every AMX feature the target has, else emulated (an AMX CPU without
    AMX-FP16 is told it has no AMX)."""
    module = scheduled_for_amx(src, threads)
    amx = [f[1:] for f in AMX.features.split(",") if f.startswith("+amx")]
    if not host_facts().missing(amx) and host_facts().arch == "x86_64":
        return CompiledModule(module, PipelineOptions(**ALL, threads=threads))
    with vector_engines_only():
        return CompiledModule(module, PipelineOptions(**ALL, threads=threads))


@pytest.mark.parametrize("kind", list(INSTRUCTION))
def test_the_remark_names_the_amx_instruction(kind):
    remarks = []
    scheduled_for_amx(hop_source(kind, 40, 70, 90), remark=lambda loc, m: remarks.append(m))
    assert any("AMX" in r and INSTRUCTION[kind] in r and "register tile 32x32" in r
               for r in remarks), remarks


@pytest.mark.parametrize("kind", list(INSTRUCTION))
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_emulated_amx_gemm_matches_numpy(kind, m, n, k):
    check(emulated(hop_source(kind, m, n, k))["mm"], kind, m, n, k)


@pytest.mark.parametrize("kind", ["bf16", "s8"])
@pytest.mark.parametrize("a_t, b_t", [(True, False), (False, True)])
def test_emulated_amx_gemm_of_transposed_operands(kind, a_t, b_t):
    m, n, k = 40, 70, 90
    check_transposed(emulated(transposed_source(kind, m, n, k, a_t, b_t))["mm"], kind, m, n, k,
                     a_t, b_t)


@pytest.mark.parametrize("kind", ["bf16", "u8"])
def test_one_amx_compilation_for_every_size(kind):
    fn = emulated(hop_source(kind, 0, 0, 0, dynamic=True))["mm"]
    rng = np.random.default_rng(5)
    for seed in range(4):
        m, n, k = (int(x) for x in rng.integers(1, 100, 3))
        check(fn, kind, m, n, k, seed)


@pytest.mark.parametrize("kind", ["bf16", "s8"])
def test_amx_threads_give_the_same_bits(kind):
    m, n, k = 70, 97, 130
    results = []
    for threads in (1, 2, 3):
        a, b, c = operands(kind, m, n, k, seed=3)
        emulated(hop_source(kind, m, n, k), threads)["mm"](a, b, c)
        results.append(c)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_unsigned_bytes_on_both_sides_take_tdpbuud():
    src = """func.func @mm(%A: memref<37x45xi8>, %B: memref<45x70xi8>, %C: memref<37x70xi32>) {
  linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%A, %B : memref<37x45xi8>, memref<45x70xi8>) outs(%C : memref<37x70xi32>)
  return
}
"""
    remarks = []
    scheduled_for_amx(src, remark=lambda loc, m: remarks.append(m))
    assert any("AMX tdpbuud" in r for r in remarks), remarks
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (37, 45)).astype(np.uint8)
    b = rng.integers(0, 256, (45, 70)).astype(np.uint8)
    c = np.zeros((37, 70), np.int32)
    emulated(src)["mm"](a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


BIAS_RELU = """func.func @mm(%A: memref<{m}x{k}xbf16>, %B: memref<{k}x{n}xbf16>, %bias: memref<{n}xf32>, %C: memref<{m}x{n}xf32>) {{
  hop.matmul %A, %B, %C : (memref<{m}x{k}xbf16>, memref<{k}x{n}xbf16>, memref<{m}x{n}xf32>)
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to {m} {{
    affine.for %j = 0 to {n} {{
      %c = affine.load %C[%i, %j] : memref<{m}x{n}xf32>
      %b = affine.load %bias[%j] : memref<{n}xf32>
      %s = arith.addf %c, %b : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %C[%i, %j] : memref<{m}x{n}xf32>
    }}
  }}
  return
}}
"""


@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (97, 101, 2600)])
def test_a_fused_epilogue_on_amx_tiles(m, n, k):
    """Bias + ReLU after the product: fused into the tiles' store after the last K block
    (tiles inside C through the buffer, vectorized; tiles on the edge element by element)."""
    src = BIAS_RELU.format(m=m, n=n, k=k)
    remarks = []
    scheduled_for_amx(src, remark=lambda loc, msg: remarks.append(msg))
    assert any("fused into" in r for r in remarks), remarks
    a, b, c = operands("bf16", m, n, k, seed=4)
    bias = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    c0 = c.copy()
    emulated(src)["mm"](a, b, bias, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = np.maximum(c0 + a64 @ b64 + bias, 0)
    bound = (k + 2) * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64) + np.abs(c0) + np.abs(bias))
    assert (np.abs(c - want) <= bound).all()


def _tile_lines(asm: str, word: str) -> list:
    return [line.strip() for line in asm.splitlines() if re.search(rf"\b{word}\b", line)]


@pytest.mark.parametrize("kind", list(INSTRUCTION))
@pytest.mark.parametrize("threads", [1, 2])
def test_amx_assembly(kind, threads):
    """Compiled for the AMX CPU: the tile configuration is written, each of the two k loops
    (tiles inside C, tiles on its edge) issues four tile products per k-step, and no tile
    goes through the stack (a spill, or a copy of a tile used twice, stores it to a stack
    slot and loads it back).  On a team the loops are the outlined body's and LLVM keeps
    them as the IR has them: a ``tilestored`` per ``amx.tile_store``, a ``tileloadd`` per
    operand of a product and per tile of C.  On one thread LLVM peels and unrolls the
    loops around the k loops (12 stores for the IR's 8 here, all to C), so only the stack
    is checked; run where the CPU has AMX.  (The thread count is given: the default is
    the cores this process may run on, one under ``taskset -c 0``.)"""
    with compiling_for(AMX):
        compiled = polyopt.compile(hop_source(kind, 40, 70, 90), threads=threads, **ALL)
    asm = compiled.asm()
    assert len(_tile_lines(asm, "ldtilecfg")) == 1
    products = _tile_lines(asm, INSTRUCTION[kind])
    assert len(products) >= 8 and all("%tmm" in line for line in products), products
    tiles = _tile_lines(asm, "tilestored") + _tile_lines(asm, "tileloadd")
    assert not [line for line in tiles if "%rsp" in line or "%rbp" in line], tiles
    if threads > 1:
        ir = str(compiled.module)
        assert len(_tile_lines(asm, "tilestored")) == ir.count("amx.tile_store ") == 8
        assert len(_tile_lines(asm, "tileloadd")) <= len(products) + 4
    _run_where_present(AMX, lambda: check(compiled["mm"], kind, 40, 70, 90))


@pytest.mark.parametrize("kind", ["bf16", "u8"])
def test_upstream_mlir_accepts_the_amx_ir(kind):
    """What ``polyopt opt`` prints for the AMX path (``amx.tile_load``, ``amx.tile_mulf``,
    ``amx.tile_muli ... zext``) is valid upstream MLIR."""
    text = str(scheduled_for_amx(hop_source(kind, 40, 70, 90)))
    assert "amx.tile_mul" in text
    mlir_opt(text)


CONV = """func.func @conv(%I: memref<{n}x{h}x{w}x{c}x{t}>, %K: memref<3x3x{c}x{f}x{t}>, %O: memref<{n}x{oh}x{ow}x{f}x{o}>) {{
  linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{s}> : tensor<2xi64>}} ins(%I, %K : memref<{n}x{h}x{w}x{c}x{t}>, memref<3x3x{c}x{f}x{t}>) outs(%O : memref<{n}x{oh}x{ow}x{f}x{o}>)
  return
}}
"""


@pytest.mark.parametrize("kind", ["bf16", "s8"])
@pytest.mark.parametrize("n, h, w, c, f, s, threads", [(1, 10, 9, 5, 19, 1, 1),
                                                       (2, 11, 12, 16, 70, 2, 2),
                                                       (1, 9, 10, 64, 70, 1, 1),
                                                       (2, 9, 8, 128, 33, 2, 2)])
def test_a_convolution_on_amx_tiles(kind, n, h, w, c, f, s, threads):
    """The implicit GEMM of a 3x3 convolution on the tiles.  Where a window position's
    channels are whole k-steps (C = 64, 128 bf16; 128 bytes), A's k-steps are copied straight
    from the input by 64-byte vectors; where the window rows' runs (3 x C = 15, 48) are not
    whole k-steps, A's 16-row panels hold each row's K_C elements one after the other,
    copied by the runs' vector pieces, and a k-step's tile is read across a panel's rows with
    a stride of K_C (before: element by element, 0.2x torch on the stem, then on the dot
    engine, 0.3x).  Against numpy."""
    from polyopt.schedules.lowp_gemm import run_pieces
    t, o = ("bf16", "f32") if kind == "bf16" else ("i8", "i32")
    oh, ow = (h - 3) // s + 1, (w - 3) // s + 1
    src = CONV.format(n=n, h=h, w=w, c=c, f=f, t=t, o=o, s=s, oh=oh, ow=ow)
    text = str(scheduled_for_amx(src, threads))
    step = 32 if kind == "bf16" else 64
    whole_steps = c % step == 0
    assert "amx.tile_mul" in text
    row_vectors = re.findall(rf"affine.vector_load %arg0\[.*vector<{step}x{t}>", text)
    assert bool(row_vectors) == whole_steps, row_vectors[:2]
    if not whole_steps:
        panel = re.search(rf"amx.tile_load (%\w+)\[%\w+, %c0, %\w+\] : "
                          rf"(memref<\d+x16x(\d+)x{t}>) into !amx.tile<16x{step}x{t}>", text)
        assert panel, "A's k-step tiles are not read across row-major panels"
        assert int(panel.group(3)) % step == 0
        for _, piece in run_pieces(3 * c, step):
            if piece > 1:
                assert re.search(rf"affine.vector_load [^\n]*vector<{piece}x{t}>", text), piece
    inp, flt, want, mags = conv3x3_data(kind, n, h, w, c, f, s)
    out = np.zeros((n, oh, ow, f), np.float32 if kind == "bf16" else np.int32)
    emulated(src, threads)["conv"](inp, flt, out)
    if kind == "s8":
        np.testing.assert_array_equal(out, want)
    else:
        assert (np.abs(out - want) <= (9 * c + 1) * 2.0 ** -24 * mags).all()


@pytest.mark.parametrize("kh, h, threads", [(7, 35, 1), (7, 35, 2), (100, 104, 1)])
def test_window_runs_of_21_on_amx_tiles(kh, h, threads):
    """ResNet-50's stem, smaller (7x7, stride 2, 3 channels: window runs of 21 bf16): K = 147
    is one K_C block of 160 that is no multiple of the run; a window of 100 x 7 (K = 2100)
    is two blocks of whole runs and whole k-steps (1344 = lcm(21, 32) x 2).  Against
    numpy."""
    remarks = []
    w, c, f = 37, 3, 19
    oh, ow = (h - kh) // 2 + 1, (w - 7) // 2 + 1
    src = (f"func.func @conv(%I: memref<1x{h}x{w}x{c}xbf16>, %K: memref<{kh}x7x{c}x{f}xbf16>, "
           f"%O: memref<1x{oh}x{ow}x{f}xf32>) {{\n  linalg.conv_2d_nhwc_hwcf {{dilations = "
           f"dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}} ins(%I, %K : "
           f"memref<1x{h}x{w}x{c}xbf16>, memref<{kh}x7x{c}x{f}xbf16>) outs(%O : "
           f"memref<1x{oh}x{ow}x{f}xf32>)\n  return\n}}\n")
    scheduled_for_amx(src, threads, remark=lambda loc, m: remarks.append(m))
    k_c = 160 if kh == 7 else 1344
    assert any("AMX tdpbf16ps" in r and f"K_C={k_c}," in r for r in remarks), remarks
    rng = np.random.default_rng(kh)
    inp = rng.standard_normal((1, h, w, c)).astype(ml_dtypes.bfloat16)
    flt = rng.standard_normal((kh, 7, c, f)).astype(ml_dtypes.bfloat16)
    out = rng.standard_normal((1, oh, ow, f)).astype(np.float32)
    i64, f64 = inp.astype(np.float64), flt.astype(np.float64)
    want, mags = out.astype(np.float64), np.abs(out.astype(np.float64))
    for y in range(kh):
        for x in range(7):
            window = i64[:, y:y + 2 * (oh - 1) + 1:2, x:x + 2 * (ow - 1) + 1:2, :]
            want += np.einsum("nhwc,cf->nhwf", window, f64[y, x])
            mags += np.einsum("nhwc,cf->nhwf", np.abs(window), np.abs(f64[y, x]))
    emulated(src, threads)["conv"](inp, flt, out)
    assert (np.abs(out - want) <= (kh * 7 * c + 1) * 2.0 ** -24 * mags).all()


AMX_NO_FP16 = Target.from_features(TRIPLE, "sapphirerapids",
                                   AVX512 + ",+avx512vnni,+avx512bf16,+avx512fp16,+amx-tile,"
                                            "+amx-bf16,+amx-int8,-amx-fp16",
                                   (48 * 1024, 2 << 20, 105 << 20))


def _halves(src: str, threads: int = 1, remark=None):
    """Scheduled for Sapphire Rapids without AMX-FP16; run on the tiles where this CPU has
    AMX-BF16, else emulated."""
    with compiling_for(AMX_NO_FP16):
        module = load(src)
        run_passes(module, PipelineOptions(**ALL, threads=threads), remark)
    if not host_facts().missing(["amx-tile", "amx-bf16"]) and host_facts().arch == "x86_64":
        return CompiledModule(module, PipelineOptions(**ALL, threads=threads))
    with vector_engines_only():
        return CompiledModule(module, PipelineOptions(**ALL, threads=threads))


@pytest.mark.parametrize("m, n, k, threads", [(7, 65, 33, 1), (97, 101, 103, 2),
                                              (33, 40, 1100, 1)])
def test_f16_on_bf16_tiles_in_halves(m, n, k, threads):
    """f16 without AMX-FP16: each f16 split into two bf16 halves (exact), one bf16 product of
    depth 4K on the tiles.  Every product is exact in f32, so the error is f32's summation
    of the 4K terms; K = 1100 is three K_C blocks of the halves (4400)."""
    remarks = []
    fn = _halves(hop_source("f16", m, n, k), threads, lambda loc, msg: remarks.append(msg))["mm"]
    assert any("split into bf16 halves" in r for r in remarks), remarks
    a, b, c = operands("f16", m, n, k)
    c0 = c.copy()
    fn(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = c0 + a64 @ b64
    bound = (4 * k + 1) * 2.0 ** -24 * (1 + 2.0 ** -8) ** 2 * (np.abs(a64) @ np.abs(b64) +
                                                                 np.abs(c0))
    assert (np.abs(c - want) <= bound).all()


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan])
def test_f16_halves_leave_infinities_to_the_f32_path(special):
    """An infinity or a NaN in A or B would make a term inf x 0 (a half of zero) a NaN: the
    product then runs on f32 FMAs, and gives what numpy's f32 product gives."""
    m, n, k = 20, 37, 45
    fn = _halves(hop_source("f16", m, n, k))["mm"]
    for where in ("A", "B"):
        a, b, c = operands("f16", m, n, k, seed=7)
        (a if where == "A" else b)[3, 4] = special
        c0 = c.copy()
        fn(a, b, c)
        want = c0 + a.astype(np.float32) @ b.astype(np.float32)
        np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isinf(c), np.isinf(want))
        np.testing.assert_array_equal(c[np.isinf(want)], want[np.isinf(want)])
        assert (np.abs(c[finite] - want[finite]) <= 1e-3 * (1 + np.abs(want[finite]))).all()


def test_f16_halves_of_any_size():
    """One compilation for every size (the halves' buffers sized at run time; the branch
    inside the run-time size check), on two threads."""
    fn = _halves(hop_source("f16", 0, 0, 0, dynamic=True), threads=2)["mm"]
    for m, n, k in [(5, 3, 2), (40, 70, 90), (33, 17, 130)]:
        a, b, c = operands("f16", m, n, k, seed=m)
        c0 = c.copy()
        fn(a, b, c)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        bound = (4 * k + 1) * 2.0 ** -24 * (1 + 2.0 ** -8) ** 2 * (np.abs(a64) @ np.abs(b64) +
                                                                     np.abs(c0))
        assert (np.abs(c - (c0 + a64 @ b64)) <= bound).all()
