"""Code for CPUs this one may not be: compiled for a named target (``compiling_for``), its
assembly read (zmm or ymm FMAs, ``{1toN}`` embedded broadcasts), executed against numpy only
where this CPU has the target's features (the skip names the missing ones)."""

import re

import numpy as np
import pytest

import polyopt
from polyopt.bench import matmul_source
from polyopt.codegen.cpu_facts import host_facts
from polyopt.codegen.target import Target, compiling_for, host_target
from polyopt.pipeline import (CompiledModule, PipelineOptions, load, machine_model,
                              prepare_for_lowering)

TRIPLE = "x86_64-unknown-linux-gnu"
AVX512 = "+avx,+avx2,+fma,+f16c,+avx512f,+avx512dq,+avx512bw,+avx512vl,+avx512cd"
# the Intel AMX host of PERF-NOTES.md, by its features (its reported name is rocketlake)
SAPPHIRE = Target.from_features(TRIPLE, "sapphirerapids",
                                AVX512 + ",+avx512vnni,+avx512bf16,+avx512fp16,+amx-tile,"
                                         "+amx-bf16,+amx-int8", (48 * 1024, 2 << 20, 504 << 20))
SKX = Target.from_features(TRIPLE, "skylake-avx512", AVX512, (32 * 1024, 1 << 20, 32 << 20))
HASWELL = Target.from_features(TRIPLE, "haswell", "+avx,+avx2,+fma,+f16c,-avx512f",
                               (32 * 1024, 256 * 1024, 8 << 20))
TARGETS = {"sapphirerapids": SAPPHIRE, "skylake-avx512": SKX, "haswell": HASWELL}


def _enabled(t: Target) -> list:
    return [f[1:] for f in t.features.split(",") if f.startswith("+")]


def run_or_skip(t: Target, fn, *args):
    missing = host_facts().missing(_enabled(t))
    if missing or host_facts().arch != "x86_64":
        pytest.skip(f"compiled for {t.cpu}; this CPU lacks {', '.join(missing) or 'x86_64'}")
    fn(*args)


def fmas(asm: str) -> list:
    return [line.strip() for line in asm.splitlines() if re.search(r"\bvfmadd\d+p[sd]\b", line)]


def bfma_source(t: str, lanes: int, n: int) -> str:
    """C += sum_i A[i, :] * B[i]: one vector FMA per i with a broadcast scalar of B, the column
    form's inner step (a broadcast used once folds into the FMA as {1toN} on AVX-512)."""
    v = f"vector<{lanes}x{t}>"
    return f"""func.func @bfma(%A: memref<{n}x{lanes}x{t}>, %B: memref<{n}x{t}>, %C: memref<{lanes}x{t}>) {{
  %c0 = arith.constant 0 : index
  %init = vector.load %C[%c0] : memref<{lanes}x{t}>, {v}
  %r = affine.for %i = 0 to {n} iter_args(%acc = %init) -> ({v}) {{
    %a = vector.load %A[%i, %c0] : memref<{n}x{lanes}x{t}>, {v}
    %b = affine.load %B[%i] : memref<{n}x{t}>
    %bb = vector.broadcast %b : {t} to {v}
    %f = vector.fma %a, %bb, %acc : {v}
    affine.yield %f : {v}
  }}
  vector.store %r, %C[%c0] : memref<{lanes}x{t}>, {v}
  return
}}
"""


def test_compiling_for_replaces_the_host_within_the_block():
    real = host_target()
    with compiling_for(HASWELL):
        assert host_target() is HASWELL
        with compiling_for(SAPPHIRE):
            assert host_target() is SAPPHIRE
        assert host_target() is HASWELL
    assert host_target() == real


@pytest.mark.parametrize("name, bits, regs, l1, bcast, has, lacks", [
    ("sapphirerapids", 512, 32, 48 * 1024, True, ("avx512fp16", "amx-tile"), ()),
    ("skylake-avx512", 512, 32, 32 * 1024, True, ("avx512f",), ("avx512fp16", "amx-tile")),
    ("haswell", 256, 16, 32 * 1024, False, ("avx2", "fma"), ("avx512f",)),
])
def test_machine_model_of_a_named_target(name, bits, regs, l1, bcast, has, lacks):
    with compiling_for(TARGETS[name]):
        model = machine_model()
    assert (model.vector_bits, model.num_vector_registers, model.l1d_bytes,
            model.embedded_broadcast) == (bits, regs, l1, bcast)
    assert all(f in model.features for f in has)
    assert not any(f in model.features for f in lacks)


@pytest.mark.parametrize("name", list(TARGETS))
@pytest.mark.parametrize("dtype, lanes", [("f64", 8), ("f32", 16)])
def test_broadcast_fma_assembly(name, dtype, lanes):
    t = TARGETS[name]
    n = 37
    with compiling_for(t):
        module = load(bfma_source(dtype, lanes, n))
        prepare_for_lowering(module)
        compiled = CompiledModule(module, PipelineOptions(), target=t)
    asm = fmas(compiled.asm())
    assert asm, compiled.asm()
    if t.vector_bits == 512:
        # one zmm FMA per step, the broadcast folded into it
        assert all("%zmm" in line for line in asm)
        assert any(f"{{1to{lanes}}}" in line for line in asm), asm
    else:
        # two ymm FMAs per step; AVX2 has no embedded broadcast
        assert all("%ymm" in line and "%zmm" not in line for line in asm)
        assert not any("{1to" in line for line in asm)

    def check():
        rng = np.random.default_rng(3)
        np_t = np.float64 if dtype == "f64" else np.float32
        a = rng.uniform(-1, 1, (n, lanes)).astype(np_t)
        b = rng.uniform(-1, 1, n).astype(np_t)
        c = rng.uniform(-1, 1, lanes).astype(np_t)
        want = c.astype(np.float64) + (a.astype(np.float64) * b[:, None]).sum(axis=0)
        compiled["bfma"](a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-5 if dtype == "f32" else 1e-12,
                                   atol=1e-5 if dtype == "f32" else 1e-12)
    run_or_skip(t, check)


@pytest.mark.parametrize("name", list(TARGETS))
def test_matmul_all_passes_for_a_named_target(name):
    """hop.matmul through every --hopt pass: the register tile is vectorized at the named
    target's width (zmm FMAs for AVX-512 targets, ymm and no zmm for haswell)."""
    t = TARGETS[name]
    m, n, k = 67, 45, 33
    with compiling_for(t):
        compiled = polyopt.compile(matmul_source(m, n, k, "f64"), hopt=True, copy=True,
                                   unroll=True, scalrep=True, vect=True)
    asm = compiled.asm()
    lines = fmas(asm)
    wide = "%zmm" if t.vector_bits == 512 else "%ymm"
    assert sum(wide in line for line in lines) >= 16, lines[:8]
    if t.vector_bits == 256:
        assert "%zmm" not in asm

    def check():
        rng = np.random.default_rng(5)
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        c = rng.uniform(-1, 1, (m, n))
        want = c + a @ b
        compiled["matmul"](a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)
    run_or_skip(t, check)
