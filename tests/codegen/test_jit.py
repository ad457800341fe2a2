"""Tests for polyopt.codegen.{target,jit,runtime}.

The LLVM IR below is handwritten and follows the ABI documented in
polyopt/codegen/jit.py.  The print formats are checked against literal text
that was produced by mlir-runner-22 (libmlir_runner_utils /
libmlir_c_runner_utils), and -- when the MLIR tools are installed -- against a
live run of mlir-runner-22 on an equivalent MLIR program.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import subprocess
import time

import numpy as np
import pytest

from polyopt.codegen import runtime
from polyopt.codegen.jit import (
    JITCompileError,
    JITEngine,
    JITFunction,
    MemRefArg,
    ScalarArg,
    make_callable,
    optimize_module,
)
from polyopt.codegen.target import (
    Target,
    create_target_machine,
    host_target,
    read_cache_sizes,
)
from upstream_mlir import lower_and_run

F64 = np.float64

# ---------------------------------------------------------------------------
# Handwritten LLVM IR
# ---------------------------------------------------------------------------

ADD_IR = r"""
; c[i][j] = a[i][j] + b[i][j] for a 3x5 f64 memref (flattened loop).
define void @add(ptr %a, ptr %b, ptr %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %pc = getelementptr double, ptr %c, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %s = fadd double %x, %y
  store double %s, ptr %pc
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, 15
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

SCALAR_IR = r"""
define i32 @addi32(i32 %a, i32 %b) {
  %r = add i32 %a, %b
  ret i32 %r
}
define i64 @twice_index(i64 %a) {
  %r = mul i64 %a, 2
  ret i64 %r
}
define float @axpb_f32(float %a, float %x, float %b) {
  %m = fmul float %a, %x
  %r = fadd float %m, %b
  ret float %r
}
define i1 @lt_f64(double %a, double %b) {
  %r = fcmp olt double %a, %b
  ret i1 %r
}
define i1 @not_i1(i1 %a) {
  %r = xor i1 %a, true
  ret i1 %r
}
define i8 @neg_i8(i8 %a) {
  %r = sub i8 0, %a
  ret i8 %r
}
define i16 @neg_i16(i16 %a) {
  %r = sub i16 0, %a
  ret i16 %r
}
define double @select_f64(i1 %c, double %a, double %b) {
  %r = select i1 %c, double %a, double %b
  ret double %r
}
define void @nothing() {
  ret void
}
"""

MULTI_IR = r"""
; (i64, i64) -> (i64, i64): quotient and remainder through out-pointers.
define void @divmod(i64 %a, i64 %b, ptr %q, ptr %r) {
  %qq = sdiv i64 %a, %b
  %rr = srem i64 %a, %b
  store i64 %qq, ptr %q
  store i64 %rr, ptr %r
  ret void
}
; (memref<4xf64>, i32) -> (f64, i1, index): sum of the array, sum > limit,
; and the number of elements; also scales the array in place by 2.
define void @stats(ptr %a, i32 %limit, ptr %sum, ptr %big, ptr %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %acc = phi double [0.0, %entry], [%acc1, %loop]
  %p = getelementptr double, ptr %a, i64 %i
  %x = load double, ptr %p
  %acc1 = fadd double %acc, %x
  %x2 = fmul double %x, 2.0
  store double %x2, ptr %p
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, 4
  br i1 %done, label %exit, label %loop
exit:
  store double %acc1, ptr %sum
  %lim = sitofp i32 %limit to double
  %b = fcmp ogt double %acc1, %lim
  store i1 %b, ptr %big
  store i64 4, ptr %n
  ret void
}
"""

PRINT_IR = r"""
declare void @polyopt_print_memref_f64(ptr, i64, ptr, ptr, i64)
declare void @polyopt_print_memref_f32(ptr, i64, ptr, ptr, i64)
declare void @polyopt_print_memref_i32(ptr, i64, ptr, ptr, i64)
declare void @polyopt_print_memref_i64(ptr, i64, ptr, ptr, i64)
declare void @polyopt_print_f64(double)
declare void @polyopt_print_f32(float)
declare void @polyopt_print_i64(i64)
declare void @polyopt_print_u64(i64)
declare void @polyopt_print_open()
declare void @polyopt_print_close()
declare void @polyopt_print_comma()
declare void @polyopt_print_newline()
declare void @polyopt_print_string(ptr)
declare double @polyopt_rtclock()

@sizes23 = private constant [2 x i64] [i64 2, i64 3]
@strides23 = private constant [2 x i64] [i64 3, i64 1]
@hello = private constant [7 x i8] c"hello\0A\00"

; print a 2x3 f64 memref passed in, like printMemrefF64
define void @print23(ptr %a) {
  call void @polyopt_print_memref_f64(ptr %a, i64 2, ptr @sizes23, ptr @strides23, i64 0)
  ret void
}

; print a memref of any rank whose sizes are passed as an i64 array
define void @print_f32(ptr %a, i64 %rank, ptr %sizes, ptr %strides) {
  call void @polyopt_print_memref_f32(ptr %a, i64 %rank, ptr %sizes, ptr %strides, i64 0)
  ret void
}
define void @print_i32(ptr %a, i64 %rank, ptr %sizes, ptr %strides) {
  call void @polyopt_print_memref_i32(ptr %a, i64 %rank, ptr %sizes, ptr %strides, i64 0)
  ret void
}
define void @print_i64(ptr %a, i64 %rank, ptr %sizes, ptr %strides) {
  call void @polyopt_print_memref_i64(ptr %a, i64 %rank, ptr %sizes, ptr %strides, i64 0)
  ret void
}
define void @print_f64(ptr %a, i64 %rank, ptr %sizes, ptr %strides) {
  call void @polyopt_print_memref_f64(ptr %a, i64 %rank, ptr %sizes, ptr %strides, i64 0)
  ret void
}

; vector.print %v : vector<4xf64>  (as MLIR lowers it), then a scalar 1.5
define void @vprint(ptr %v) {
  call void @polyopt_print_open()
  %p0 = getelementptr double, ptr %v, i64 0
  %x0 = load double, ptr %p0
  call void @polyopt_print_f64(double %x0)
  call void @polyopt_print_comma()
  %p1 = getelementptr double, ptr %v, i64 1
  %x1 = load double, ptr %p1
  call void @polyopt_print_f64(double %x1)
  call void @polyopt_print_comma()
  %p2 = getelementptr double, ptr %v, i64 2
  %x2 = load double, ptr %p2
  call void @polyopt_print_f64(double %x2)
  call void @polyopt_print_comma()
  %p3 = getelementptr double, ptr %v, i64 3
  %x3 = load double, ptr %p3
  call void @polyopt_print_f64(double %x3)
  call void @polyopt_print_close()
  call void @polyopt_print_newline()
  call void @polyopt_print_f64(double 1.5)
  call void @polyopt_print_newline()
  ret void
}

define void @scalars(float %f, i64 %i, i64 %u) {
  call void @polyopt_print_f32(float %f)
  call void @polyopt_print_comma()
  call void @polyopt_print_i64(i64 %i)
  call void @polyopt_print_comma()
  call void @polyopt_print_u64(i64 %u)
  call void @polyopt_print_newline()
  call void @polyopt_print_string(ptr @hello)
  ret void
}

define double @clock() {
  %t = call double @polyopt_rtclock()
  ret double %t
}
"""

FMA_IR = r"""
; c[i] += a[i] * b[i] over 1024 elements; `contract` allows FMA fusion.
define void @fma_loop(ptr noalias %a, ptr noalias %b, ptr noalias %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %pc = getelementptr double, ptr %c, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %z = load double, ptr %pc
  %m = fmul contract double %x, %y
  %s = fadd contract double %z, %m
  store double %s, ptr %pc
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, 1024
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


@pytest.fixture(scope="module")
def add_fn():
    eng = JITEngine(ADD_IR)
    return make_callable(
        eng,
        "add",
        [MemRefArg("arg0", (3, 5), F64), MemRefArg("arg1", (3, 5), F64), MemRefArg("arg2", (3, 5), F64)],
        [],
    )


@pytest.fixture(scope="module")
def scalar_engine():
    return JITEngine(SCALAR_IR)


@pytest.fixture(scope="module")
def print_engine():
    return JITEngine(PRINT_IR)


# ---------------------------------------------------------------------------
# target.py
# ---------------------------------------------------------------------------


def test_host_target():
    t = host_target()
    assert t is host_target()  # cached
    assert t.triple.startswith(("x86_64", "aarch64", "arm64")) or t.triple
    assert t.cpu
    if "+avx512f" in t.features:
        assert t.has_avx512f and t.vector_bits == 512 and t.num_vector_registers == 32
    elif "+avx2" in t.features:
        assert t.has_avx2 and t.vector_bits == 256 and t.num_vector_registers == 16
    assert t.has_fma == ("+fma" in t.features.split(",")) or t.triple.startswith("aarch64")
    assert t.vector_width(64) == t.vector_bits // 64
    assert t.vector_width(32) == 2 * t.vector_width(64)
    assert t.vector_width(1024) == 1
    with pytest.raises(ValueError):
        t.vector_width(0)
    assert t.l1d_cache_bytes >= 4096
    assert t.l2_cache_bytes >= t.l1d_cache_bytes
    assert t.l3_cache_bytes >= 1
    assert create_target_machine(t) is create_target_machine(t)
    assert "e-m:" in t.data_layout or t.data_layout
    assert "features" not in repr(t)


def test_target_from_features():
    t = Target.from_features("x86_64-unknown-linux-gnu", "znver3", "+avx,+avx2,+fma,-avx512f", (1, 2, 3))
    assert (t.vector_bits, t.num_vector_registers, t.has_fma, t.has_avx2, t.has_avx512f) == (256, 16, True, True, False)
    assert (t.l1d_cache_bytes, t.l2_cache_bytes, t.l3_cache_bytes) == (1, 2, 3)
    assert t.vector_width(64) == 4 and t.vector_width(32) == 8
    t = Target.from_features("x86_64-unknown-linux-gnu", "skx", "+avx2,+avx512f,+fma", (1, 2, 3))
    assert (t.vector_bits, t.num_vector_registers) == (512, 32)
    t = Target.from_features("x86_64-unknown-linux-gnu", "x86-64", "+sse2", (1, 2, 3))
    assert (t.vector_bits, t.num_vector_registers, t.has_fma) == (128, 16, False)


def test_read_cache_sizes(tmp_path):
    def mk(idx, level, typ, size):
        d = tmp_path / f"index{idx}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{typ}\n")
        (d / "size").write_text(f"{size}\n")

    mk(0, 1, "Data", "48K")
    mk(1, 1, "Instruction", "32K")
    mk(2, 2, "Unified", "1024K")
    assert read_cache_sizes(str(tmp_path)) == (48 * 1024, 1024 * 1024, 8 * 1024 * 1024)
    mk(3, 3, "Unified", "32M")
    assert read_cache_sizes(str(tmp_path))[2] == 32 * 1024 * 1024
    assert read_cache_sizes(str(tmp_path / "missing")) == (32 * 1024, 512 * 1024, 8 * 1024 * 1024)


# ---------------------------------------------------------------------------
# jit.py: compilation and calls
# ---------------------------------------------------------------------------


def test_add_arrays(add_fn):
    a = np.arange(15, dtype=F64).reshape(3, 5)
    b = np.full((3, 5), 0.5)
    c = np.zeros((3, 5))
    assert add_fn(a, b, c) is None
    np.testing.assert_array_equal(c, a + b)
    c2 = np.zeros((3, 5))
    add_fn(arg2=c2, arg0=a, arg1=b)  # keywords
    np.testing.assert_array_equal(c2, a + b)
    assert isinstance(add_fn, JITFunction)
    assert "memref<3x5xf64>" in repr(add_fn)


def test_callable_keeps_engine_alive():
    f = make_callable(JITEngine(ADD_IR), "add", [MemRefArg(n, (3, 5), F64) for n in "abc"], [])
    import gc

    gc.collect()
    a, b, c = np.ones((3, 5)), np.ones((3, 5)), np.zeros((3, 5))
    f(a, b, c)
    assert (c == 2).all()


def test_scalar_args_and_results(scalar_engine):
    e = scalar_engine
    addi = make_callable(e, "addi32", [ScalarArg("a", np.int32), ScalarArg("b", "i32")], [ScalarArg("r", np.int32)])
    assert addi(2, 40) == 42
    assert addi(np.int32(-5), np.int64(3)) == -2
    assert addi(2**31 - 1, 1) == -(2**31)  # wraps like i32
    assert type(addi(1, 1)) is np.int32  # results are numpy scalars of their type

    twice = make_callable(e, "twice_index", [ScalarArg("n", "index")], [ScalarArg("r", "index")])
    assert twice(2**40) == 2**41
    assert twice(True) == 2
    assert twice.args[0].mlir_type == "index" and twice.args[0].dtype == np.int64

    axpb = make_callable(
        e, "axpb_f32", [ScalarArg("a", np.float32), ScalarArg("x", "f32"), ScalarArg("b", np.float32)], [ScalarArg("r", np.float32)]
    )
    assert axpb(2.0, 3, np.float32(0.5)) == 6.5
    r = axpb(0.1, 1.0, 0.0)
    assert r == np.float32(0.1) and type(r) is np.float32

    lt = make_callable(e, "lt_f64", [ScalarArg("a", F64), ScalarArg("b", F64)], [ScalarArg("r", bool)])
    assert lt(1.0, 2.0) is np.True_
    assert lt(2.0, 1.0) is np.False_
    assert lt(np.float64(1), 2) is np.True_

    neg = make_callable(e, "not_i1", [ScalarArg("a", np.bool_)], [ScalarArg("r", "i1")])
    assert neg(True) is np.False_ and neg(False) is np.True_
    assert neg(np.bool_(True)) is np.False_ and neg(0) is np.True_ and neg(1) is np.False_

    assert make_callable(e, "neg_i8", [ScalarArg("a", np.int8)], [ScalarArg("r", np.int8)])(100) == -100
    assert make_callable(e, "neg_i8", [ScalarArg("a", np.int8)], [ScalarArg("r", np.int8)])(-128) == -128
    assert make_callable(e, "neg_i16", [ScalarArg("a", np.int16)], [ScalarArg("r", np.int16)])(1000) == -1000

    sel = make_callable(
        e, "select_f64", [ScalarArg("c", bool), ScalarArg("a", F64), ScalarArg("b", F64)], [ScalarArg("r", F64)]
    )
    assert sel(True, 1.5, 2.5) == 1.5 and sel(False, 1.5, 2.5) == 2.5
    assert make_callable(e, "nothing", [], [])() is None


def test_multiple_results_via_out_pointers():
    e = JITEngine(MULTI_IR)
    divmod_ = make_callable(
        e, "divmod", [ScalarArg("a", np.int64), ScalarArg("b", np.int64)], [ScalarArg("q", np.int64), ScalarArg("r", np.int64)]
    )
    assert divmod_(17, 5) == (3, 2)
    assert divmod_(-17, 5) == (-3, -2)  # C semantics (sdiv/srem)
    stats = make_callable(
        e,
        "stats",
        [MemRefArg("a", (4,), F64), ScalarArg("limit", np.int32)],
        [ScalarArg("sum", F64), ScalarArg("big", bool), ScalarArg("n", "index")],
    )
    a = np.array([1.0, 2.0, 3.0, 4.5])
    assert stats(a, 10) == (10.5, True, 4)
    np.testing.assert_array_equal(a, [2.0, 4.0, 6.0, 9.0])
    s, big, n = stats(a, 100)
    assert (s, big, n) == (21.0, False, 4) and type(big) is np.bool_ and type(n) is np.int64


def test_engine_introspection(add_fn):
    e = add_fn.engine
    assert e.function_names == ["add"]
    assert e.function_signature("add") == "void (ptr, ptr, ptr)"
    assert e.function_address("add") == add_fn.address != 0
    with pytest.raises(KeyError):
        e.function_address("nope")
    ir = e.llvm_ir_optimized()
    assert "define void @add" in ir and "target triple" in ir and "target datalayout" in ir
    assert "add:" in e.asm() or "add" in e.asm()


def test_optimize_module_vectorizes():
    mod = optimize_module(FMA_IR, host_target(), 3)
    text = str(mod)
    assert "<" in text and "x double>" in text  # vector types after loop vectorisation
    assert mod.triple == host_target().triple
    mod0 = optimize_module(FMA_IR, opt_level=0)
    assert "x double>" not in str(mod0)


def test_asm_uses_fma():
    t = host_target()
    if not t.has_fma:
        pytest.skip("host has no FMA")
    e = JITEngine(FMA_IR)
    asm = e.asm()
    assert "vfmadd" in asm
    assert e.asm() is asm  # cached
    f = make_callable(e, "fma_loop", [MemRefArg(n, (1024,), F64) for n in "abc"], [])
    a, b, c = np.arange(1024.0), np.full(1024, 2.0), np.ones(1024)
    f(a, b, c)
    np.testing.assert_array_equal(c, 1 + 2 * np.arange(1024.0))


def test_compile_errors():
    with pytest.raises(JITCompileError, match="invalid LLVM IR"):
        JITEngine("define void @f( {")
    with pytest.raises(JITCompileError, match="verification"):
        JITEngine(
            "define i32 @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\na:\n"
            "  %x = add i32 1, 2\n  br label %b\nb:\n  ret i32 %x\n}\n"
        )
    with pytest.raises(JITCompileError, match="undefined external symbol.*no_such_function_xyz"):
        JITEngine("declare void @no_such_function_xyz()\ndefine void @f() {\n  call void @no_such_function_xyz()\n  ret void\n}\n")
    # libc symbols resolve
    JITEngine("declare double @sqrt(double)\ndefine double @f(double %x) {\n  %r = call double @sqrt(double %x)\n  ret double %r\n}\n")


FRESH_PROCESS_IR = r"""
declare ptr @malloc(i64)
declare void @free(ptr)
declare double @llvm.powi.f64.i32(double, i32)
declare float @llvm.powi.f32.i32(float, i32)
define i64 @f(i64 %n) {
  %p = call ptr @malloc(i64 %n)
  store volatile i64 %n, ptr %p
  %v = load volatile i64, ptr %p
  call void @free(ptr %p)
  ret i64 %v
}
define double @pw(double %x, i32 %n) {
  %r = call double @llvm.powi.f64.i32(double %x, i32 %n)
  ret double %r
}
define float @pwf(float %x, i32 %n) {
  %r = call float @llvm.powi.f32.i32(float %x, i32 %n)
  ret float %r
}
"""

FRESH_PROCESS_SCRIPT = """
import sys
from polyopt.codegen.jit import JITEngine, ScalarArg, make_callable
e = JITEngine(sys.stdin.read())
f = make_callable(e, 'f', [ScalarArg('n', 'index')], [ScalarArg('r', 'index')])
pw = make_callable(e, 'pw', [ScalarArg('x', 'f64'), ScalarArg('n', 'i32')], [ScalarArg('r', 'f64')])
pwf = make_callable(e, 'pwf', [ScalarArg('x', 'f32'), ScalarArg('n', 'i32')], [ScalarArg('r', 'f32')])
print(f(64), pw(2.0, 10), pw(2.0, -2), pw(1.5, 3), pwf(3.0, 3))
"""


def test_libc_and_builtins_resolve_in_fresh_process():
    # Before the first MCJIT engine exists LLVM does not search the process
    # for symbols; the undefined-symbol check must still accept libc, and
    # llvm.powi (a call to compiler-rt's __powidf2) must not abort.
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS_SCRIPT],
        input=FRESH_PROCESS_IR,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == "64 1024.0 0.25 3.375 27.0\n"


def test_signature_mismatch(add_fn):
    e = add_fn.engine
    with pytest.raises(TypeError, match=r"has LLVM type 'void \(ptr, ptr, ptr\)' but .* require 'void \(ptr, ptr\)'"):
        make_callable(e, "add", [MemRefArg("a", (3, 5), F64), MemRefArg("b", (3, 5), F64)], [])
    with pytest.raises(TypeError, match=r"require 'double \(ptr, ptr, ptr\)'"):
        make_callable(e, "add", [MemRefArg(n, (3, 5), F64) for n in "abc"], [ScalarArg("r", F64)])
    with pytest.raises(KeyError):
        make_callable(e, "missing", [], [])
    with pytest.raises(ValueError, match="duplicate"):
        make_callable(e, "add", [MemRefArg("a", (3, 5), F64)] * 3, [])
    with pytest.raises(TypeError, match="unsupported dtype"):
        ScalarArg("x", np.complex128)
    with pytest.raises(TypeError, match="unsupported dtype"):
        MemRefArg("x", (2,), np.uint32)


# ---------------------------------------------------------------------------
# jit.py: calling-convention error messages
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def add45():
    ir = ADD_IR.replace("3x5", "4x5").replace("i64 %i1, 15", "i64 %i1, 20")
    return make_callable(
        JITEngine(ir), "add", [MemRefArg("arg0", (4, 5), F64), MemRefArg("arg1", (4, 5), F64), MemRefArg("arg2", (4, 5), F64)]
    )


def test_memref_errors(add45):
    ok = np.zeros((4, 5))
    with pytest.raises(TypeError) as ei:
        add45([[0.0] * 5] * 4, ok, ok)
    assert str(ei.value) == "argument 'arg0' (memref<4x5xf64>): expected a numpy.ndarray, got list"
    with pytest.raises(TypeError) as ei:
        add45(ok, np.zeros((4, 5), np.float32), ok)
    assert str(ei.value) == "argument 'arg1' (memref<4x5xf64>): expected dtype float64, got float32"
    with pytest.raises(ValueError) as ei:
        add45(ok, ok, np.zeros((5, 4)))
    assert str(ei.value) == "argument 'arg2' (memref<4x5xf64>): expected shape (4, 5), got (5, 4)"
    with pytest.raises(ValueError) as ei:
        add45(ok, ok, np.zeros(20))
    assert str(ei.value) == "argument 'arg2' (memref<4x5xf64>): expected shape (4, 5), got (20,)"
    with pytest.raises(ValueError) as ei:
        add45(np.zeros((5, 4)).T, ok, ok)
    assert str(ei.value) == (
        "argument 'arg0' (memref<4x5xf64>): array is not C-contiguous; "
        "pass numpy.ascontiguousarray(arg0) instead"
    )
    ro = np.zeros((4, 5))
    ro.flags.writeable = False
    with pytest.raises(ValueError) as ei:
        add45(ok, ro, ok)
    assert str(ei.value) == (
        "argument 'arg1' (memref<4x5xf64>): array is not writeable (read-only); "
        "pass a writeable array, e.g. arg1.copy()"
    )
    raw = np.zeros(4 * 5 * 8 + 1, np.uint8)
    unaligned = raw[1:].view(F64).reshape(4, 5)
    assert not unaligned.flags.aligned
    with pytest.raises(ValueError) as ei:
        add45(ok, ok, unaligned)
    assert str(ei.value) == "argument 'arg2' (memref<4x5xf64>): array data is not aligned for dtype float64; pass arg2.copy()"
    with pytest.raises(TypeError, match="expected a numpy.ndarray, got float"):
        add45(1.0, ok, ok)


def test_argument_count_errors(add45):
    ok = np.zeros((4, 5))
    with pytest.raises(TypeError) as ei:
        add45(ok, ok)
    assert str(ei.value) == "add() missing 1 required positional argument: 'arg2'"
    with pytest.raises(TypeError) as ei:
        add45(ok)
    assert str(ei.value) == "add() missing 2 required positional arguments: 'arg1' and 'arg2'"
    with pytest.raises(TypeError) as ei:
        add45(ok, ok, ok, ok)
    assert str(ei.value) == "add() takes 3 positional arguments but 4 were given"
    with pytest.raises(TypeError) as ei:
        add45(ok, ok, ok, bogus=ok)
    assert str(ei.value) == "add() got an unexpected keyword argument 'bogus'"
    with pytest.raises(TypeError) as ei:
        add45(ok, ok, ok, arg0=ok)
    assert str(ei.value) == "add() got multiple values for argument 'arg0'"


def test_scalar_errors(scalar_engine):
    e = scalar_engine
    addi = make_callable(e, "addi32", [ScalarArg("a", np.int32), ScalarArg("b", np.int32)], [ScalarArg("r", np.int32)])
    with pytest.raises(TypeError) as ei:
        addi(1.5, 2)
    assert str(ei.value) == "argument 'a' (i32): expected an int, got float"
    with pytest.raises(TypeError) as ei:
        addi(1, "2")
    assert str(ei.value) == "argument 'b' (i32): expected an int, got str"
    with pytest.raises(TypeError, match=r"argument 'a' \(i32\): expected an int, got numpy.float64"):
        addi(np.float64(1), 2)
    with pytest.raises(ValueError) as ei:
        addi(2**31, 0)
    assert str(ei.value) == "argument 'a' (i32): 2147483648 is out of range for i32 [-2147483648, 2147483647]"
    with pytest.raises(ValueError) as ei:
        addi(0, np.int64(-(2**31) - 1))
    assert str(ei.value) == "argument 'b' (i32): -2147483649 is out of range for i32 [-2147483648, 2147483647]"
    with pytest.raises(TypeError):
        addi(np.zeros(()), 1)  # 0-d arrays are not scalars

    idx = make_callable(e, "twice_index", [ScalarArg("n", "index")], [ScalarArg("r", "index")])
    with pytest.raises(ValueError) as ei:
        idx(2**63)
    assert str(ei.value) == "argument 'n' (index): 9223372036854775808 is out of range for index [-9223372036854775808, 9223372036854775807]"
    with pytest.raises(ValueError, match=r"out of range for i8 \[-128, 127\]"):
        make_callable(e, "neg_i8", [ScalarArg("a", np.int8)], [ScalarArg("r", np.int8)])(128)
    with pytest.raises(ValueError, match=r"out of range for i16 \[-32768, 32767\]"):
        make_callable(e, "neg_i16", [ScalarArg("a", np.int16)], [ScalarArg("r", np.int16)])(-32769)

    f32 = make_callable(e, "axpb_f32", [ScalarArg(n, np.float32) for n in "axb"], [ScalarArg("r", np.float32)])
    with pytest.raises(TypeError) as ei:
        f32(1.0, None, 2.0)
    assert str(ei.value) == "argument 'x' (f32): expected a real number (int or float), got NoneType"
    with pytest.raises(TypeError, match="got complex"):
        f32(1.0, 1j, 2.0)
    # an int past the largest double was Python's OverflowError
    with pytest.raises(ValueError, match=r"argument 'x' \(f32\): an integer of 1329 bits is "
                                         r"out of range for f32"):
        f32(1.0, 10**400, 2.0)

    neg = make_callable(e, "not_i1", [ScalarArg("a", bool)], [ScalarArg("r", bool)])
    with pytest.raises(ValueError) as ei:
        neg(2)
    assert str(ei.value) == "argument 'a' (i1): 2 is out of range for i1 (expected 0/1 or a bool)"
    with pytest.raises(TypeError) as ei:
        neg(1.0)
    assert str(ei.value) == "argument 'a' (i1): expected a bool, got float"


# ---------------------------------------------------------------------------
# runtime.py: printing (expected text produced by mlir-runner-22)
# ---------------------------------------------------------------------------

# Exact mlir-runner-22 output of printMemrefF64 on memref<2x3xf64> filled with
# 1.0 (the base address differs from run to run).
MLIR_2X3_ONES = (
    "Unranked Memref base@ = {addr} rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data = \n"
    "[[1,   1,   1], \n"
    " [1,   1,   1]]\n"
)


def _sizes(shape):
    arr = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    return arr, ctypes.addressof(arr)


def test_print_memref_f64_2d(print_engine, capsys):
    p = make_callable(print_engine, "print23", [MemRefArg("a", (2, 3), F64)])
    a = np.ones((2, 3))
    print("before")
    p(a)
    print("after")
    out = capsys.readouterr().out
    assert out == "before\n" + MLIR_2X3_ONES.format(addr=hex(a.ctypes.data)) + "after\n"


def test_print_memref_ranks_and_types(print_engine, capsys):
    eng = print_engine
    def run(fn, arr):
        sizes = np.array(arr.shape or (0,), dtype=np.int64)
        strides = np.array([s // arr.itemsize for s in arr.strides] or (0,), dtype=np.int64)
        sig = [MemRefArg("a", arr.shape, arr.dtype), ScalarArg("rank", "index"), MemRefArg("sizes", sizes.shape, np.int64),
               MemRefArg("strides", strides.shape, np.int64)]
        make_callable(eng, fn, sig)(arr, arr.ndim, sizes, strides)
        return capsys.readouterr().out.replace(hex(arr.ctypes.data), "0xADDR")

    hdr = "Unranked Memref base@ = 0xADDR rank = {r} offset = 0 sizes = [{s}] strides = [{t}] data = \n"
    # 1-D f32: two blanks after each comma
    a = np.array([2049, 0.5, 1e-7, -3.25, np.nan, -np.nan, np.inf, -np.inf, -0.0, 1e20, 123456789.0, 0.1], np.float32)
    assert run("print_f32", a) == hdr.format(r=1, s="12", t="1") + (
        "[2049,  0.5,  1e-07,  -3.25,  nan,  -nan,  inf,  -inf,  -0,  1e+20,  1.23457e+08,  0.1]\n"
    )
    # 3-D f64: four blanks in the innermost dimension, newline + 2 blanks between rows
    a = np.arange(24.0).reshape(2, 3, 4) - 5.5
    assert run("print_f64", a) == hdr.format(r=3, s="2, 3, 4", t="12, 4, 1") + (
        "[[[-5.5,    -4.5,    -3.5,    -2.5], \n"
        "  [-1.5,    -0.5,    0.5,    1.5], \n"
        "  [2.5,    3.5,    4.5,    5.5]], \n"
        " [[6.5,    7.5,    8.5,    9.5], \n"
        "  [10.5,    11.5,    12.5,    13.5], \n"
        "  [14.5,    15.5,    16.5,    17.5]]]\n"
    )
    # size-1 dimensions
    a = np.ones((3, 1))
    assert run("print_f64", a) == hdr.format(r=2, s="3, 1", t="1, 1") + "[[1], \n [1], \n [1]]\n"
    a = np.array([[7.0]])
    assert run("print_f64", a) == hdr.format(r=2, s="1, 1", t="1, 1") + "[[7]]\n"
    # rank 0
    a = np.array(3.5)
    assert run("print_f64", a) == hdr.format(r=0, s="", t="") + "[3.5]\n"
    # integers
    a = np.array([[1, -2, 2**31 - 1], [-(2**31), 0, 42]], np.int32)
    assert run("print_i32", a) == hdr.format(r=2, s="2, 3", t="3, 1") + (
        "[[1,   -2,   2147483647], \n [-2147483648,   0,   42]]\n"
    )
    a = np.array([2**63 - 1, -(2**63), 0], np.int64)
    assert run("print_i64", a) == hdr.format(r=1, s="3", t="1") + "[9223372036854775807,  -9223372036854775808,  0]\n"
    # f64 formatting extremes
    a = np.array([1e-300, 5e-324, 1.7976931348623157e308, 123456789.0, 1e-5, 1e-4, 1234567.0])
    assert run("print_f64", a).endswith(
        "[1e-300,  4.94066e-324,  1.79769e+308,  1.23457e+08,  1e-05,  0.0001,  1.23457e+06]\n"
    )


def test_vector_print_helpers(print_engine, capsys):
    vprint = make_callable(print_engine, "vprint", [MemRefArg("v", (4,), F64)])
    vprint(np.array([1.0, 2.0, 3.0, 4.0]))
    assert capsys.readouterr().out == "( 1, 2, 3, 4 )\n1.5\n"
    vprint(np.array([2049.0, 0.1, 1e20, -0.0]))
    assert capsys.readouterr().out == "( 2049, 0.1, 1e+20, -0 )\n1.5\n"
    vprint(np.array([np.nan, -np.nan, np.inf, -np.inf]))
    assert capsys.readouterr().out == "( nan, -nan, inf, -inf )\n1.5\n"
    scalars = make_callable(
        print_engine, "scalars", [ScalarArg("f", np.float32), ScalarArg("i", np.int64), ScalarArg("u", np.int64)]
    )
    scalars(1e-7, -(2**63), -1)
    assert capsys.readouterr().out == "1e-07, -9223372036854775808, 18446744073709551615\nhello\n"


def test_rtclock(print_engine):
    clock = make_callable(print_engine, "clock", [], [ScalarArg("t", F64)])
    t0 = time.time()
    t = clock()
    assert abs(t - t0) < 5.0
    assert clock() >= t


def test_runtime_symbols_registry():
    syms = runtime.runtime_symbols()
    for name in [
        "polyopt_print_memref_f64",
        "polyopt_print_memref_f32",
        "polyopt_print_memref_i32",
        "polyopt_print_memref_i64",
        "polyopt_print_f64",
        "polyopt_print_f32",
        "polyopt_print_i64",
        "polyopt_print_u64",
        "polyopt_print_open",
        "polyopt_print_close",
        "polyopt_print_comma",
        "polyopt_print_newline",
        "polyopt_rtclock",
    ]:
        assert syms[name] > 0
    assert runtime.runtime_symbols() == syms  # stable addresses
    runtime.register_runtime_symbols()
    runtime.register_runtime_symbols()  # idempotent
    import llvmlite.binding as llvm

    assert llvm.address_of_symbol("polyopt_print_f64") == syms["polyopt_print_f64"]


def test_print_large_memref_is_fast(print_engine, capsys):
    a = np.random.default_rng(0).random((2048, 2048))
    p = make_callable(
        print_engine, "print_f64", [MemRefArg("a", (2048, 2048), F64), ScalarArg("r", "index"), MemRefArg("s", (2,), np.int64),
                                    MemRefArg("t", (2,), np.int64)]
    )
    sizes = np.array(a.shape, dtype=np.int64)
    strides = np.array([2048, 1], dtype=np.int64)
    t0 = time.perf_counter()
    p(a, 2, sizes, strides)
    elapsed = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert elapsed < 5.0, elapsed
    lines = out.split("\n")
    assert len(lines) == 1 + 2048 + 1 and lines[-1] == ""
    first = lines[1]
    assert first.startswith("[[" + "%g" % a[0, 0] + ",   " + "%g" % a[0, 1] + ",   ")
    assert lines[2048].endswith("%g" % a[-1, -1] + "]]")


# ---------------------------------------------------------------------------
# Live comparison with mlir-runner-22
# ---------------------------------------------------------------------------


def _mlir_literal(v, kind):
    if kind in ("f64", "f32"):
        if not math.isfinite(v):
            if kind == "f64":
                return "0x%016X" % int(np.array(v, np.float64).view(np.uint64))
            return "0x%08X" % int(np.array(v, np.float32).view(np.uint32))
        return "%.17e" % float(v)
    return str(int(v))


def _mlir_dense(a, kind):
    if a.ndim == 0:
        return _mlir_literal(a[()], kind)
    return "[" + ", ".join(_mlir_dense(x, kind) for x in a) + "]"


_MLIR_PRINT_FN = {
    "f64": "printMemrefF64",
    "f32": "printMemrefF32",
    "i64": "printMemrefI64",
    "i32": "printMemrefI32",
    "index": "printMemrefInd",
}


def _mask(text):
    return re.sub(r"base@ = (0x[0-9a-f]+|0)", "base@ = 0xADDR", text)


def test_matches_mlir_runner():
    memrefs = [
        (np.ones((2, 3)), "f64"),
        (np.arange(5.0), "f64"),
        (np.arange(24.0).reshape(2, 3, 4) - 5.5, "f64"),
        (np.arange(12.0).reshape(2, 1, 3, 2), "f64"),
        (np.ones((1, 1, 2)), "f64"),
        (np.array(3.5), "f64"),
        (np.array([2049, 0.5, 1e-7, -3.25, np.nan, -np.nan, np.inf, -np.inf, -0.0, 1e20, 123456789.0, 0.1], np.float32), "f32"),
        (np.array([1e-300, 5e-324, 1.7976931348623157e308, 1e-5, 1e-4, 1234567.0, 0.3333333333]), "f64"),
        (np.array([[1, -2, 2**31 - 1], [-(2**31), 0, 42]], np.int32), "i32"),
        (np.array([2**63 - 1, -(2**63), 0], np.int64), "i64"),
        (np.array([[3, 2**63 - 1]], np.uint64), "index"),
    ]
    vectors = [
        (np.array([1.0, 2.0, 3.0, 4.0]), "f64"),
        (np.array([2049.0, 0.1, 1e20, -0.0, np.nan, -np.nan, np.inf, -np.inf, 123456789.0, 1e-5]), "f64"),
        (np.array([2049.0, 0.1, 1e-7, -3.25, 16777217.0, 3.4e38], np.float32), "f32"),
        (np.array([1, -2, 2**63 - 1, -(2**63)], np.int64), "i64"),
        (np.array([1.5]), "f64"),
    ]
    lines, body = [], []
    for k, (a, kind) in enumerate(memrefs):
        ty = "memref<" + "".join(f"{s}x" for s in a.shape) + kind + ">"
        lines.append(f'memref.global "private" constant @g{k} : {ty} = dense<{_mlir_dense(a, kind)}>')
        body.append(f"  %m{k} = memref.get_global @g{k} : {ty}")
        body.append(f"  %u{k} = memref.cast %m{k} : {ty} to memref<*x{kind}>")
        body.append(f"  func.call @{_MLIR_PRINT_FN[kind]}(%u{k}) : (memref<*x{kind}>) -> ()")
    for k, (v, kind) in enumerate(vectors):
        vty = f"vector<{v.size}x{kind}>"
        body.append(f"  %v{k} = arith.constant dense<{_mlir_dense(v, kind)}> : {vty}")
        body.append(f"  vector.print %v{k} : {vty}")
    body.append("  %s = arith.constant 1.5 : f64")
    body.append("  vector.print %s : f64")
    for kind, fn in _MLIR_PRINT_FN.items():
        lines.append(f"func.func private @{fn}(memref<*x{kind}>)")
    src = "\n".join(lines) + "\nfunc.func @main() {\n" + "\n".join(body) + "\n  return\n}\n"
    passes = [
        "--convert-vector-to-scf",
        "--convert-vector-to-llvm",
        "--convert-scf-to-cf",
        "--finalize-memref-to-llvm",
        "--convert-func-to-llvm",
        "--convert-arith-to-llvm",
        "--convert-cf-to-llvm",
        "--reconcile-unrealized-casts",
    ]
    expected = lower_and_run(src, passes, timeout=60)

    # Our output: memrefs through the registered callbacks, vectors through the
    # vector.print helpers in the order MLIR's lowering calls them.
    syms = runtime.runtime_symbols()
    memref_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    void_t = ctypes.CFUNCTYPE(None)
    scalar_t = {
        "f64": ctypes.CFUNCTYPE(None, ctypes.c_double),
        "f32": ctypes.CFUNCTYPE(None, ctypes.c_float),
        "i64": ctypes.CFUNCTYPE(None, ctypes.c_int64),
    }
    call = lambda name, *args, proto=void_t: proto(syms[name])(*args)
    import io
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for a, kind in memrefs:
            keep, addr = _sizes(a.shape)
            keep2, saddr = _sizes([s // a.itemsize for s in a.strides])
            call(f"polyopt_print_memref_{kind}", a.ctypes.data, a.ndim, addr, saddr, 0, proto=memref_t)
        for v, kind in vectors:
            call("polyopt_print_open")
            for i, x in enumerate(v.tolist()):
                call(f"polyopt_print_{kind}", x, proto=scalar_t[kind])
                if i + 1 < v.size:
                    call("polyopt_print_comma")
            call("polyopt_print_close")
            call("polyopt_print_newline")
        call("polyopt_print_f64", 1.5, proto=scalar_t["f64"])
        call("polyopt_print_newline")
    ours = buf.getvalue()
    assert _mask(ours) == _mask(expected)
    # and the verified literal for the 2x3 case
    assert _mask(expected).startswith(MLIR_2X3_ONES.format(addr="0xADDR"))


def test_the_fast_call_path_reads_every_kind_of_array_where_it_starts(add45, tmp_path):
    # the data pointer is read from the array object (numpy's PyArrayObject layout): views
    # that start inside another array, subclasses and memory maps must pass their own start
    from polyopt.codegen import jit
    assert jit._DATA_POINTER is not None and add45._fast is not None
    big = np.arange(60, dtype=F64).reshape(12, 5)
    a, b = big[3:7], big[7:11]                       # row slices: contiguous, offset starts
    out = np.memmap(tmp_path / "c.bin", dtype=F64, mode="w+", shape=(4, 5))
    add45(a, b, out)
    assert np.array_equal(np.asarray(out), big[3:7] + big[7:11])
    class Tagged(np.ndarray):
        pass
    m = np.ones((4, 5)).view(Tagged)
    c = np.zeros((4, 5))
    add45(m, a, c)
    assert np.array_equal(c, 1 + big[3:7])
    # keywords and the generic path agree with the positional fast path
    d = np.zeros((4, 5))
    add45(arg0=a, arg1=b, arg2=d)
    assert np.array_equal(d, np.asarray(out))
