"""Tests of polyopt.codegen.microkernels: the BLIS micro-kernel registry, loading the kernels
from the PyPI package ``blis``, and the wrapper the LLVM lowering defines for
``func.func private @w(...) attributes {polyopt.blis_kernel = "<symbol>"}``, run on numpy
arrays against numpy.

``blis`` is a test dependency: a missing package fails these tests, it does not skip them
(only a kernel this CPU cannot run is skipped).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

import polyopt
from polyopt.affine.diagnostics import CodegenError
from polyopt.codegen import microkernels as mk
from polyopt.codegen.target import Target, host_target

KMAX = 256
DTYPES = {"f64": np.float64, "f32": np.float32}


def host_kernels():
    """One parameter per registered kernel; the ones this CPU lacks the instructions of skip."""
    params = []
    for kernel in mk.REGISTRY:
        missing = mk.missing_features(kernel)
        marks = [pytest.mark.skip(reason=f"this CPU lacks {', '.join(missing)}")] if missing \
            else []
        params.append(pytest.param(kernel, id=kernel.symbol, marks=marks))
    return params


def aligned_zeros(n: int, dtype, align: int = 64) -> np.ndarray:
    """A C-contiguous 1-D array of ``n`` zeros whose data is ``align``-byte aligned (polyopt
    passes the array's own pointer, with numpy's 16-byte alignment only)."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(n + align // itemsize, dtype)
    start = (-raw.ctypes.data % align) // itemsize
    out = raw[start:start + n]
    assert out.ctypes.data % align == 0 and out.flags.c_contiguous
    return out


def round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def sizes(kernel):
    """(elements per aligned panel slot, A buffer length, B buffer length, C side)."""
    lanes = kernel.alignment // np.dtype(DTYPES[kernel.dtype]).itemsize
    a_len = 3 * round_up(KMAX * kernel.m_r, lanes)
    b_len = 3 * round_up(KMAX * kernel.n_r, lanes)
    side = kernel.m_r + kernel.n_r + 5  # wider than a tile both ways
    return lanes, a_len, b_len, side


SIGNATURE = ("({a}, index, {b}, index, {c}, index, index, index, index, index, index, index, "
             "index, {t})")


def tile_module(kernel, symbol=None, signature=None) -> str:
    """``@tile`` passes its arguments on to the wrapper ``@w`` of ``kernel``."""
    t = kernel.dtype
    _, a_len, b_len, side = sizes(kernel)
    a, b, c = f"memref<{a_len}x{t}>", f"memref<{b_len}x{t}>", f"memref<{side}x{side}x{t}>"
    call_sig = SIGNATURE.format(a=a, b=b, c=c, t=t)
    decl_sig = call_sig if signature is None else signature
    return f"""
func.func private @w{decl_sig} attributes {{polyopt.blis_kernel = "{symbol or kernel.symbol}"}}
func.func @tile(%A: {a}, %B: {b}, %C: {c}, %a_off: index, %b_off: index, %c_off: index,
                %rs_c: index, %cs_c: index, %k: index, %m: index, %n: index, %a_next: index,
                %b_next: index, %alpha: {t}) {{
  func.call @w(%A, %a_off, %B, %b_off, %C, %c_off, %rs_c, %cs_c, %k, %m, %n, %a_next, %b_next,
               %alpha) : {call_sig} -> ()
  return
}}
"""


@functools.lru_cache(maxsize=None)
def compiled_tile(symbol: str):
    return polyopt.compile(tile_module(mk.lookup(symbol)), filename="tile.mlir")


def run_tile(kernel, k, m, n, panel, layout, origin, seed=0, alpha=1.0):
    """Run one tile through ``@tile`` and check all of C against numpy."""
    dtype = DTYPES[kernel.dtype]
    m_r, n_r = kernel.m_r, kernel.n_r
    lanes, a_len, b_len, side = sizes(kernel)
    rng = np.random.default_rng(seed)
    A, B = aligned_zeros(a_len, dtype), aligned_zeros(b_len, dtype)
    # random padding too: the wrapper must add only the m x n part of the kernel's tile
    A[:] = rng.standard_normal(a_len)
    B[:] = rng.standard_normal(b_len)
    C = rng.standard_normal((side, side)).astype(dtype)
    a_off = panel * round_up(k * m_r, lanes)  # the second of consecutive aligned panels
    b_off = panel * round_up(k * n_r, lanes)
    assert (B.ctypes.data + b_off * B.itemsize) % kernel.alignment == 0
    assert (A.ctypes.data + a_off * A.itemsize) % kernel.alignment == 0
    r0, c0 = origin
    if layout == "row":  # C's rows: stride side > n_r
        rs_c, cs_c, c_off = side, 1, r0 * side + c0
    else:  # the tile transposed in C: unit row stride
        rs_c, cs_c, c_off = 1, side, c0 * side + r0
    a_next, b_next = a_off + round_up(k * m_r, lanes), b_off + round_up(k * n_r, lanes)

    want = C.astype(np.float64)
    a_panel = A[a_off:a_off + k * m_r].reshape(k, m_r).astype(np.float64)
    b_panel = B[b_off:b_off + k * n_r].reshape(k, n_r).astype(np.float64)
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    want.ravel()[c_off + rows * rs_c + cols * cs_c] += alpha * (a_panel.T @ b_panel)[:m, :n]

    compiled_tile(kernel.symbol)["tile"](A, B, C, a_off, b_off, c_off, rs_c, cs_c, k, m, n,
                                         a_next, b_next, alpha)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(C, want, **tol, err_msg=f"k={k} m={m} n={n} panel={panel} "
                                                      f"layout={layout} origin={origin} "
                                                      f"alpha={alpha}")


# -- the registry -------------------------------------------------------------------------------


def test_registry_orientation():
    haswell = mk.lookup("bli_dgemm_haswell_asm_6x8")
    assert (haswell.mr, haswell.nr, haswell.m_r, haswell.n_r) == (6, 8, 6, 8)
    assert haswell.requires == ("avx2", "fma") and haswell.alignment == 32
    single = mk.lookup("bli_sgemm_haswell_asm_6x16")
    assert (single.dtype, single.m_r, single.n_r) == ("f32", 6, 16)
    skx = mk.lookup("bli_dgemm_skx_asm_16x14")
    assert skx.swapped and (skx.mr, skx.nr, skx.m_r, skx.n_r) == (16, 14, 14, 16)
    assert skx.requires == ("avx512f",) and skx.alignment == 64
    assert mk.lookup("bli_dgemm_nosuch_6x8") is None


def fake_target(cpu: str, features: str) -> Target:
    return Target.from_features("x86_64-unknown-linux-gnu", cpu, features,
                                cache_sizes=(32768, 1 << 20, 1 << 25))


@pytest.mark.parametrize("features, f64, f32", [
    ("+avx512f,+avx2,+fma", "bli_dgemm_skx_asm_16x14", "bli_sgemm_skx_asm_32x12_l2"),
    ("+avx2,+fma,-avx512f", "bli_dgemm_haswell_asm_6x8", "bli_sgemm_haswell_asm_6x16"),
    ("+avx2,-fma", None, None),
    ("+sse4.2", None, None),
])
def test_default_kernel(features, f64, f32):
    target = fake_target("somecpu", features)
    for dtype, want in (("f64", f64), ("f32", f32)):
        got = mk.default_kernel(dtype, target)
        assert (got.symbol if got else None) == want
    assert mk.default_kernel("i32", target) is None


def test_blis_is_installed_and_embeds_blis_0_7():
    path = mk.blis_library_path()
    assert path is not None, "the Python package 'blis' must be installed for these tests"
    assert re.search(r"blis[/\\]cy[^/\\]*$", path)
    version = ctypes.CDLL(path).bli_info_get_version_str
    version.restype = ctypes.c_char_p
    assert version().decode().startswith("0.7.")


@pytest.mark.parametrize("kernel", host_kernels())
def test_load_microkernel_resolves_the_symbol(kernel):
    address = mk.load_microkernel(kernel)
    assert address == llvm.address_of_symbol(kernel.symbol)
    lib = ctypes.CDLL(mk.blis_library_path())
    assert address == ctypes.cast(getattr(lib, kernel.symbol), ctypes.c_void_p).value


# -- the wrapper, run through polyopt.compile -------------------------------------------------


def tile_cases(kernel):
    m_r, n_r = kernel.m_r, kernel.n_r
    cases = []
    for k in (1, 7, KMAX):
        cases += [(k, m_r, n_r, 0, "row", (0, 0)),           # full tile at C's origin
                  (k, m_r, n_r, 1, "row", (2, 3)),           # second panels, inside C
                  (k, m_r - 1, n_r, 1, "row", (1, 2)),       # partial rows
                  (k, m_r, n_r - 3, 0, "row", (3, 1)),       # partial columns
                  (k, m_r - 2, n_r - 5, 1, "row", (4, 4)),   # both
                  (k, m_r, n_r, 1, "col", (1, 2)),           # unit row stride (transposed)
                  (k, 3, 2, 1, "col", (0, 5))]
    side = sizes(kernel)[3]
    cases += [(1, 1, 1, 0, "row", (side - 1, side - 1)),     # C's last element
              (5, m_r, n_r, 1, "row", (side - m_r, side - n_r)),  # C's bottom-right tile
              (5, m_r, n_r, 1, "col", (side - m_r, side - n_r))]
    return cases


@pytest.mark.parametrize("kernel", host_kernels())
def test_wrapper_matches_numpy(kernel):
    for seed, case in enumerate(tile_cases(kernel)):
        run_tile(kernel, *case, seed=seed)


@pytest.mark.parametrize("kernel", host_kernels())
@pytest.mark.parametrize("alpha", [2.5, -0.75, 0.0])
def test_wrapper_scales_by_alpha(kernel, alpha):
    """alpha reaches the kernel on full tiles and on edge tiles (through the stack tile)."""
    for seed, case in enumerate(tile_cases(kernel)):
        run_tile(kernel, *case, seed=seed, alpha=alpha)


@pytest.mark.parametrize("kernel", host_kernels())
def test_wrapper_empty_tiles_leave_c_alone(kernel):
    dtype = DTYPES[kernel.dtype]
    _, a_len, b_len, side = sizes(kernel)
    A, B = aligned_zeros(a_len, dtype), aligned_zeros(b_len, dtype)
    A[:], B[:] = 1, 1
    C = np.arange(side * side, dtype=dtype).reshape(side, side)
    before = C.copy()
    tile = compiled_tile(kernel.symbol)["tile"]
    for k, m, n in ((0, kernel.m_r, kernel.n_r), (3, 0, kernel.n_r), (3, kernel.m_r, 0)):
        tile(A, B, C, 0, 0, 0, side, 1, k, m, n, 0, 0, 1.0)
    np.testing.assert_array_equal(C, before)


@pytest.mark.parametrize("kernel", host_kernels())
def test_wrapper_llvm_ir(kernel):
    ir_text = compiled_tile(kernel.symbol).llvm_ir
    assert re.search(rf'declare void @"?{kernel.symbol}"?\(i64[^,]*, ptr[^,]*, ptr[^,]*, '
                     rf'ptr[^,]*, ptr[^,]*, ptr[^,]*, i64[^,]*, i64[^,]*, ptr[^,]*, ptr[^)]*\)',
                     ir_text)
    header = re.search(r'define void @"?w"?\(([^)]*)\)([^{]*)', ir_text)
    params = [p.split()[0] for p in header.group(1).split(",")]
    elem = "double" if kernel.dtype == "f64" else "float"
    assert params == ["ptr", "i64", "ptr", "i64", "ptr"] + ["i64"] * 8 + [elem]
    assert "nounwind" in header.group(2)
    assert re.search(r'alloca \[\d+ x (double|float)\], align 64', ir_text)


# -- errors -------------------------------------------------------------------------------------


HASWELL = mk.lookup("bli_dgemm_haswell_asm_6x8")


def compile_error(text: str) -> CodegenError:
    with pytest.raises(CodegenError) as info:
        polyopt.compile(text, filename="bad.mlir")
    err = info.value
    assert err.loc is not None and err.loc.file.name == "bad.mlir"
    return err


@pytest.mark.parametrize("signature", [
    # a memref of the wrong element type
    "(memref<4xf32>, index, memref<4xf64>, index, memref<4x4xf64>, index, index, index, index, "
    "index, index, index, index, f64)",
    # no alpha
    "(memref<4xf64>, index, memref<4xf64>, index, memref<4x4xf64>, index, index, index, index, "
    "index, index, index, index)",
    # i64 where an index goes
    "(memref<4xf64>, i64, memref<4xf64>, index, memref<4x4xf64>, index, index, index, index, "
    "index, index, index, index, f64)",
    # alpha of the wrong type
    "(memref<4xf64>, index, memref<4xf64>, index, memref<4x4xf64>, index, index, index, index, "
    "index, index, index, index, f32)",
    # a result
    "(memref<4xf64>, index, memref<4xf64>, index, memref<4x4xf64>, index, index, index, index, "
    "index, index, index, index, f64) -> f64",
])
def test_wrong_wrapper_signature(signature):
    attrs = f'attributes {{polyopt.blis_kernel = "{HASWELL.symbol}"}}'
    text = f"""func.func private @w{signature} {attrs}
func.func @f() {{
  return
}}
"""
    err = compile_error(text)
    assert err.message.startswith(f"the wrapper @w of {HASWELL.symbol} must have the type "
                                  "(memref<...xf64>, index, memref<...xf64>, index, "
                                  "memref<...xf64>, index, index, index, index, index, index, "
                                  "index, index, f64) -> () (arguments A, a_off, B, b_off, C, "
                                  "c_off, rs_c, cs_c, k, m, n, a_next_off, b_next_off, alpha")
    assert (err.loc.line, err.loc.col) == (1, 1)


def test_unknown_kernel_symbol():
    err = compile_error(tile_module(HASWELL, symbol="bli_dgemm_zen9_asm_6x8"))
    assert err.message == ("@w: unknown BLIS micro-kernel 'bli_dgemm_zen9_asm_6x8' (known: "
                           + ", ".join(k.symbol for k in mk.REGISTRY) + ")")
    assert err.loc.line == 2


def test_kernel_attribute_must_be_a_string():
    text = tile_module(HASWELL).replace(f'"{HASWELL.symbol}"', "6 : i64")
    err = compile_error(text)
    assert "'polyopt.blis_kernel' must be a string" in err.message


def test_missing_blis_package(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "blis" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert mk.blis_library_path() is None
    with pytest.raises(mk.MicroKernelError) as info:
        mk.load_microkernel(HASWELL)
    hint = "(pip install 'blis>=0.7' or pip install 'polyopt[blis]')"
    assert str(info.value) == (f"the BLIS micro-kernel {HASWELL.symbol} needs the Python "
                               f"package 'blis' {hint}")
    err = compile_error(tile_module(HASWELL))
    assert err.message == f"@w: {info.value}"


def test_missing_cpu_features(monkeypatch):
    skx = mk.lookup("bli_dgemm_skx_asm_16x14")
    old = fake_target("haswell", "+avx2,+fma,-avx512f")
    with pytest.raises(mk.MicroKernelError, match=r"^bli_dgemm_skx_asm_16x14 needs a CPU with "
                                                  r"avx512f; the target \(haswell\) lacks "
                                                  r"avx512f$"):
        mk.load_microkernel(skx, old)
    monkeypatch.setattr(mk, "host_target", lambda: old)
    with pytest.raises(mk.MicroKernelError, match=r"this host \(haswell\) lacks avx512f$"):
        mk.load_microkernel(skx)
    with pytest.raises(mk.MicroKernelError, match=r"needs a CPU with avx2 and fma; this host "
                                                  r"\(x\) lacks fma$"):
        monkeypatch.setattr(mk, "host_target", lambda: fake_target("x", "+avx2"))
        mk.load_microkernel(HASWELL)


def test_function_named_like_the_kernel():
    text = tile_module(HASWELL) + f"""
func.func @{HASWELL.symbol}() {{
  return
}}
"""
    err = compile_error(text)
    assert err.message.startswith(f"@{HASWELL.symbol} is the symbol of the BLIS micro-kernel "
                                  "that @w calls")


def test_host_target_is_the_default():
    # the skx kernel runs exactly on the hosts that have AVX-512F
    skx = mk.lookup("bli_dgemm_skx_asm_16x14")
    assert (mk.missing_features(skx) == ()) == host_target().has_avx512f


# -- the kernels read from the blis package's exports ------------------------------------------


@pytest.mark.parametrize("symbol, dtype, m_r, n_r, swapped, requires, align", [
    ("bli_dgemm_skx_asm_16x14", "f64", 14, 16, True, ("avx512f",), 64),
    ("bli_sgemm_skx_asm_32x12_l2", "f32", 12, 32, True, ("avx512f",), 64),
    ("bli_dgemm_haswell_asm_8x6", "f64", 6, 8, True, ("avx2", "fma"), 32),
    ("bli_sgemm_haswell_asm_6x16", "f32", 6, 16, False, ("avx2", "fma"), 32),
    ("bli_dgemm_knl_asm_24x8", None, 0, 0, False, (), 0),        # 24 and 8: both whole vectors
    ("bli_dgemm_sandybridge_asm_8x4", None, 0, 0, False, (), 0),  # 8 and 4: both
    ("bli_dgemm_zen9_asm_6x8", None, 0, 0, False, (), 0),         # a configuration not known
    ("bli_cgemm_haswell_asm_3x8", None, 0, 0, False, (), 0),      # complex
    ("bli_info_get_version_str", None, 0, 0, False, (), 0),
])
def test_describe_kernel_from_its_name(symbol, dtype, m_r, n_r, swapped, requires, align):
    k = mk.describe_kernel(symbol)
    if dtype is None:
        assert k is None
        return
    assert (k.dtype, k.m_r, k.n_r, k.swapped, k.requires, k.alignment) == \
        (dtype, m_r, n_r, swapped, requires, align)


def test_exported_kernels_are_the_librarys_symbols():
    path = mk.blis_library_path()
    names = mk._elf_function_symbols(path)
    assert names is not None and "bli_info_get_version_str" in names
    lib = ctypes.CDLL(path)
    kernels = mk.exported_kernels()
    assert kernels == mk.REGISTRY
    for k in kernels:
        assert hasattr(lib, k.symbol) and k.symbol in names
    symbols = {k.symbol for k in kernels}
    assert {"bli_dgemm_skx_asm_16x14", "bli_sgemm_skx_asm_32x12_l2",
            "bli_dgemm_haswell_asm_6x8", "bli_sgemm_haswell_asm_6x16"} <= symbols
    # best first: the widest vectors, then the largest tile
    widths = [k.alignment for k in kernels]
    assert widths == sorted(widths, reverse=True)
    assert mk._elf_function_symbols(__file__) is None   # not an ELF file


@pytest.mark.parametrize("features, why", [
    ("+avx2,-fma", r"no f64 micro-kernel runs on this CPU \(somecpu\): bli_dgemm_skx_asm_16x14, "
                   r"bli_dgemm_skx_asm_16x12_l2 need avx512f; bli_dgemm_haswell_asm_6x8, "
                   r"bli_dgemm_haswell_asm_8x6 need fma; "),
    ("+sse4.2", r"no f64 micro-kernel runs on this CPU \(somecpu\): bli_dgemm_skx_asm_16x14, "
                r"bli_dgemm_skx_asm_16x12_l2 need avx512f; bli_dgemm_haswell_asm_6x8, "
                r"bli_dgemm_haswell_asm_8x6 need avx2 and fma; "),
])
def test_why_no_kernel_names_what_is_missing(features, why):
    target = fake_target("somecpu", features)
    assert mk.default_kernel("f64", target) is None
    assert re.match(why, mk.why_no_kernel("f64", target))


def test_no_kernel_for_the_cpu_is_a_located_error(monkeypatch):
    import polyopt.codegen.target as target_mod
    old = fake_target("haswell-like", "+avx2,-fma")
    monkeypatch.setattr(target_mod, "host_target", lambda: old)
    text = ("func.func @matmul(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {\n"
            "  hop.matmul %A, %B, %C : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>)\n"
            "  return\n}\n")
    with pytest.raises(CodegenError) as info:
        polyopt.compile(text, hopt=True, blis=True)
    assert info.value.loc.line == 2
    msg = info.value.message
    assert msg.startswith("--hopt-blis: no f32 micro-kernel runs on this CPU (haswell-like): ")
    assert "bli_sgemm_skx_asm_32x12_l2 needs avx512f;" in msg
    assert "bli_sgemm_haswell_asm_6x16, bli_sgemm_haswell_asm_16x6 need fma" in msg
