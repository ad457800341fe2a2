"""Runtime support functions callable from JIT-compiled polyopt code.

The functions below are implemented in Python as ``ctypes`` callbacks and are
made visible to LLVM's JIT linker with ``llvm.add_symbol(name, address)``;
:func:`register_runtime_symbols` does that (idempotently) and
:class:`polyopt.codegen.jit.JITEngine` calls it before creating an engine.
All output goes through Python's *current* ``sys.stdout`` (looked up on every
call), so it is captured by pytest's ``capsys``, by ``contextlib.redirect_stdout``
and by the CLI, and it interleaves correctly with Python ``print`` calls.

LLVM-level signatures (opaque pointers)::

    ; printMemref* equivalents: element [i0, ...] is at data + offset + sum(ik * strides[k])
    ; (in elements); sizes and strides point to `rank` i64 values each.
    declare void @polyopt_print_memref_f64(ptr %data, i64 %rank, ptr %sizes, ptr %strides, i64 %offset)
    (and _f32, _i64, _i32, _index with the same parameters)

    declare double @polyopt_rtclock()         ; seconds since the epoch

    ; vector.print support (CRunnerUtils' printF64, printOpen, ...)
    declare void @polyopt_print_f64(double)
    declare void @polyopt_print_f32(float)
    declare void @polyopt_print_f16(i16)      ; printF16/printBF16: the bits, printed as %g
    declare void @polyopt_print_bf16(i16)
    declare void @polyopt_print_i64(i64)
    declare void @polyopt_print_u64(i64)      ; printed as unsigned
    declare void @polyopt_print_open()        ; "( "
    declare void @polyopt_print_close()       ; " )"
    declare void @polyopt_print_comma()       ; ", "
    declare void @polyopt_print_newline()     ; "\\n"
    declare void @polyopt_print_string(ptr)   ; NUL-terminated C string
    declare void @polyopt_assert_fail(ptr)    ; cf.assert failed: the message (C string)
    declare void @polyopt_alloc_fail(i64)     ; aligned_alloc returned NULL: the size; exits

(The lowering maps MLIR's ``printMemrefF64``, the paper-era
``print_memref_2d_f64`` alias, ``rtclock``, ``printF64``... onto these.)

Output formats (verified against ``mlir-runner-22`` with
``libmlir_runner_utils.so``/``libmlir_c_runner_utils.so``)
---------------------------------------------------------------------------
``printMemrefF64`` on a ``memref<2x3xf64>`` filled with 1.0 prints::

    Unranked Memref base@ = 0x55d0c8a2b2c0 rank = 2 offset = 0 sizes = [2, 3] strides = [3, 1] data = 
    [[1,   1,   1], 
     [1,   1,   1]]

(note the trailing blanks after ``data =`` and after ``],``).  The element
separator is ``","`` + (``"\\n"`` unless innermost) + ``rank - d + 1`` blanks
at nesting depth ``d`` (1-based from the outside): two blanks after the comma
in 1-D (``[2049,  0.5,  1e-07,  -3.25]``), three in the innermost dimension of
2-D, four in the innermost of 3-D, and so on.  A dimension of size 1 prints as
``[x]``; a rank-0 memref prints ``sizes = [] strides = []`` and ``[x]``.  A
dimension of size 0 prints ``[]`` (MLIR itself reads out of bounds there).
Elements are printed like C++ ``std::ostream << value``: ``%g`` (6
significant digits) for f32/f64 (``2049``, ``0.1``, ``1e-07``,
``1.23457e+08``, ``-0``, ``nan``, ``-nan`` for a NaN with the sign bit set,
``inf``, ``-inf``), decimal for integers; ``index`` elements print unsigned.

``vector.print`` output is built from the scalar helpers: ``%g`` for
f32/f64 (glibc's ``printf``, also ``-nan``), ``%ld``/``%lu`` for i64/u64, so
``vector.print %v : vector<4xf64>`` is ``( 1, 2, 3, 4 )\\n`` and
``vector.print %s : f64`` with 1.5 is ``1.5\\n``.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time

import llvmlite.binding as llvm
import numpy as np

from polyopt.affine import float_format
from polyopt.codegen.libcalls import register_libcalls

__all__ = [
    "format_memref",
    "format_scalar",
    "print_memref",
    "runtime_symbols",
    "register_runtime_symbols",
]


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

_FLOAT_KINDS = ("f64", "f32")
_ELEMENT_DTYPES = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "index": np.dtype(np.uint64),
}


def format_scalar(value: float | int, kind: str = "f64") -> str:
    """Format one element like MLIR's runtime does (``%g`` or decimal)."""
    if kind in _FLOAT_KINDS:
        value = float(value)
        if value != value:  # NaN: glibc prints the sign bit
            return "-nan" if math.copysign(1.0, value) < 0 else "nan"
        return "%g" % value
    return "%d" % int(value)


def _nested_template(shape: tuple[int, ...], placeholder: str) -> str:
    """printf-style template reproducing MLIR's MemRefDataPrinter layout."""
    rank = len(shape)
    if rank == 0:
        return "[" + placeholder + "]"
    inner = placeholder
    # Build from the innermost dimension outwards.  At nesting depth
    # ``depth`` (1 = outermost) the separator is ", " + ("\n" if not
    # innermost) + (depth) spaces; in MLIR's terms rank - dim + 1 spaces.
    for depth in range(rank, 0, -1):
        n = shape[depth - 1]
        dim = rank - depth + 1  # number of dimensions remaining (MLIR's dim)
        if n == 0:
            inner = "[]"
            continue
        sep = ", " + ("\n" if dim > 1 else "") + " " * depth
        inner = "[" + sep.join([inner] * n) + "]"
    return inner


def format_memref(array: np.ndarray, address: int = 0, kind: str | None = None,
                  strides: tuple | None = None, offset: int = 0) -> str:
    """Return exactly what MLIR's ``printMemref*`` prints for ``array``.

    ``strides`` and ``offset`` are the descriptor's, shown in the header (default: those of
    a C-contiguous memref, offset 0); ``address`` is shown in the ``base@`` field (``0x...``
    like C++ prints a ``void *``, ``0`` for null).  ``kind`` is one of ``f64``,
    ``f32``, ``i64``, ``i32``, ``index`` (default: from the dtype).
    """
    array = np.asarray(array)
    if kind is None:
        kind = {
            np.dtype(np.float64): "f64",
            np.dtype(np.float32): "f32",
            np.dtype(np.int64): "i64",
            np.dtype(np.int32): "i32",
            np.dtype(np.uint64): "index",
        }.get(array.dtype)
        if kind is None:
            raise TypeError(f"cannot print memref of dtype {array.dtype}")
    shape = tuple(int(s) for s in array.shape)
    rank = len(shape)
    if strides is None:
        strides = []
        acc = 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides.reverse()
    base = hex(address) if address else "0"
    header = (
        f"Unranked Memref base@ = {base} rank = {rank} offset = {offset} "
        f"sizes = [{', '.join(map(str, shape))}] "
        f"strides = [{', '.join(map(str, strides))}] data = \n"
    )
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.size == 0:
        return header + _nested_template(shape, "") + "\n"
    if kind in _FLOAT_KINDS:
        values = flat.astype(np.float64, copy=False)
        nan_mask = np.isnan(values)
        if nan_mask.any() and np.signbit(values[nan_mask]).any():
            # Rare slow path: Python's %g drops the sign of NaN, C keeps it.
            items = tuple(format_scalar(v, kind) for v in values.tolist())
            template = _nested_template(shape, "%s")
        else:
            items = tuple(values.tolist())
            template = _nested_template(shape, "%g")
    else:
        items = tuple(flat.tolist())
        template = _nested_template(shape, "%d")
    return header + (template % items) + "\n"


def _write(text: str) -> None:
    sys.stdout.write(text)


def print_memref(array: np.ndarray, address: int = 0, kind: str | None = None) -> None:
    """Print :func:`format_memref` output to ``sys.stdout`` (and flush, like
    ``std::endl`` does in MLIR's implementation)."""
    out = sys.stdout
    out.write(format_memref(array, address, kind))
    try:
        out.flush()
    except (AttributeError, ValueError, OSError):
        pass


# ---------------------------------------------------------------------------
# ctypes callbacks
# ---------------------------------------------------------------------------

_PRINT_MEMREF_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_int64)


def _make_memref_printer(kind: str):
    dtype = _ELEMENT_DTYPES[kind]

    def _print(data, rank, sizes, strides, offset):
        rank = int(rank)
        if rank < 0:
            raise ValueError(f"polyopt_print_memref_{kind}: negative rank {rank}")
        if rank:
            shape = tuple((ctypes.c_int64 * rank).from_address(sizes))
            steps = tuple((ctypes.c_int64 * rank).from_address(strides))
        else:
            shape = steps = ()
        count = 1
        for s in shape:
            count *= s
        if count > 0 and data:
            # the elements the view reaches, from its lowest to its highest address
            lo = offset + sum(st * (n - 1) for st, n in zip(steps, shape) if st < 0)
            hi = offset + sum(st * (n - 1) for st, n in zip(steps, shape) if st > 0)
            buf = (ctypes.c_char * ((hi - lo + 1) * dtype.itemsize)).from_address(
                data + lo * dtype.itemsize)
            flat = np.frombuffer(buf, dtype=dtype, count=hi - lo + 1)
            array = np.lib.stride_tricks.as_strided(
                flat[offset - lo:], shape=shape, strides=[st * dtype.itemsize for st in steps])
        else:
            array = np.zeros(shape, dtype=dtype)
        out = sys.stdout
        out.write(format_memref(array, data or 0, kind, list(steps), int(offset)))
        try:
            out.flush()
        except (AttributeError, ValueError, OSError):
            pass

    return _print


def _print_f64(x):
    _write(format_scalar(x, "f64"))


def _print_f32(x):
    _write(format_scalar(x, "f32"))


def _print_f16(bits):
    _write(format_scalar(float_format.from_bits(bits, float_format.F16), "f32"))


def _print_bf16(bits):
    _write(format_scalar(float_format.from_bits(bits, float_format.BF16), "f32"))


def _print_i64(x):
    _write("%d" % x)


def _print_u64(x):
    _write("%d" % (x & 0xFFFFFFFFFFFFFFFF))


def _print_open():
    _write("( ")


def _print_close():
    _write(" )")


def _print_comma():
    _write(", ")


def _print_newline():
    _write("\n")


def _print_string(ptr):
    if ptr:
        _write(ctypes.string_at(ptr).decode("utf-8", errors="replace"))


def _rtclock():
    return time.time()




class _ThreadFailures(threading.local):
    """Each thread's pending ``cf.assert`` messages.  The class attribute is the default a
    thread sees before its first failure: read through ``getattr`` with a default, a missing
    attribute raised and swallowed an AttributeError on every call of every function that
    can fail an assert (0.5 of the 0.9 microseconds a 1x1 ``?x?`` matmul call took)."""

    messages: list[str] | None = None


_failures = _ThreadFailures()
# failures on threads Python did not start (the OpenMP team's workers): the Python call that
# forked the team takes them
_foreign_failures: list[str] = []
_foreign_lock = threading.Lock()


def _assert_fail(ptr):
    """``cf.assert`` whose condition is false: remember the message for the Python call that
    is running the code (:func:`take_assert_failures`)."""
    message = ctypes.string_at(ptr).decode("utf-8", errors="replace") if ptr else "assertion"
    if isinstance(threading.current_thread(), threading._DummyThread):
        with _foreign_lock:
            _foreign_failures.append(message)
        return
    pending = _failures.messages
    if pending is None:
        pending = _failures.messages = []
    pending.append(message)


def _alloc_fail(nbytes):
    """``aligned_alloc`` returned NULL for a ``memref.alloc``: the code cannot go on (it would
    write through the null pointer), and no exception crosses native frames, so the process
    ends with the message and status 1 rather than a segmentation fault.  (Static sizes past
    the machine's memory are compile-time errors, :func:`polyopt.codegen.lower_memref`.)"""
    sys.stdout.flush()
    print(f"polyopt: error: out of memory: an allocation of {nbytes} bytes failed "
          f"(aligned_alloc returned NULL)", file=sys.stderr, flush=True)
    os._exit(1)


def take_assert_failures() -> list[str]:
    """The messages of the ``cf.assert`` failures since the last call, in this thread (and
    in the OpenMP workers of its parallel regions)."""
    pending = _failures.messages or []
    if pending:
        _failures.messages = None
    if _foreign_failures:
        with _foreign_lock:
            pending = pending + _foreign_failures
            _foreign_failures.clear()
    return pending


_VOID_T = ctypes.CFUNCTYPE(None)

# (name, CFUNCTYPE prototype, python implementation)
_RUNTIME_SPECS = [
    ("polyopt_print_memref_f64", _PRINT_MEMREF_T, _make_memref_printer("f64")),
    ("polyopt_print_memref_f32", _PRINT_MEMREF_T, _make_memref_printer("f32")),
    ("polyopt_print_memref_i64", _PRINT_MEMREF_T, _make_memref_printer("i64")),
    ("polyopt_print_memref_i32", _PRINT_MEMREF_T, _make_memref_printer("i32")),
    ("polyopt_print_memref_index", _PRINT_MEMREF_T, _make_memref_printer("index")),
    ("polyopt_rtclock", ctypes.CFUNCTYPE(ctypes.c_double), _rtclock),
    ("polyopt_print_f64", ctypes.CFUNCTYPE(None, ctypes.c_double), _print_f64),
    ("polyopt_print_f32", ctypes.CFUNCTYPE(None, ctypes.c_float), _print_f32),
    ("polyopt_print_f16", ctypes.CFUNCTYPE(None, ctypes.c_uint16), _print_f16),
    ("polyopt_print_bf16", ctypes.CFUNCTYPE(None, ctypes.c_uint16), _print_bf16),
    ("polyopt_print_i64", ctypes.CFUNCTYPE(None, ctypes.c_int64), _print_i64),
    ("polyopt_print_u64", ctypes.CFUNCTYPE(None, ctypes.c_uint64), _print_u64),
    ("polyopt_print_open", _VOID_T, _print_open),
    ("polyopt_print_close", _VOID_T, _print_close),
    ("polyopt_print_comma", _VOID_T, _print_comma),
    ("polyopt_print_newline", _VOID_T, _print_newline),
    ("polyopt_print_string", ctypes.CFUNCTYPE(None, ctypes.c_void_p), _print_string),
    ("polyopt_assert_fail", ctypes.CFUNCTYPE(None, ctypes.c_void_p), _assert_fail),
    ("polyopt_alloc_fail", ctypes.CFUNCTYPE(None, ctypes.c_uint64), _alloc_fail),
]



def _powi(a, b, one):
    # compiler-rt's __powidf2 / __powisf2 algorithm (binary exponentiation);
    # ``one`` fixes the arithmetic precision (float or numpy.float32).
    a = one * a
    recip = b < 0
    r = one
    while True:
        if b & 1:
            r = r * a
        b = int(b / 2)  # C division truncates towards zero
        if b == 0:
            break
        a = a * a
    return float(one / r if recip else r)


def _powidf2(a, b):
    return _powi(a, b, 1.0)


def _powisf2(a, b):
    return _powi(np.float32(a), b, np.float32(1.0))


# compiler-rt builtins that LLVM's code generator may call (e.g. for
# llvm.powi) but that the Python process does not necessarily export; MCJIT
# aborts the process on an unresolved symbol, so slow fallbacks are
# registered for the missing ones.
_BUILTIN_FALLBACKS = [
    ("__powidf2", ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_int32), _powidf2),
    ("__powisf2", ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int32), _powisf2),
]

# The CFUNCTYPE objects must stay alive for as long as JIT code may call
# them: keep them in a module-level dict forever.
_CALLBACKS: dict[str, object] = {}
_SYMBOLS: dict[str, int] = {}
_lock = threading.Lock()
_registered = False


def runtime_symbols() -> dict[str, int]:
    """Map each runtime symbol name to the address of its implementation."""
    with _lock:
        if not _SYMBOLS:
            for name, proto, impl in _RUNTIME_SPECS:
                cb = proto(impl)
                _CALLBACKS[name] = cb
                _SYMBOLS[name] = ctypes.cast(cb, ctypes.c_void_p).value
        return dict(_SYMBOLS)


def register_runtime_symbols() -> None:
    """Make the runtime symbols resolvable by LLVM's JIT (idempotent).

    Must run before an execution engine that references them is created.
    """
    global _registered
    if _registered:
        return
    symbols = runtime_symbols()
    with _lock:
        if _registered:
            return
        for name, address in symbols.items():
            llvm.add_symbol(name, address)
        register_libcalls()
        process = ctypes.CDLL(None)
        for name, proto, impl in _BUILTIN_FALLBACKS:
            if llvm.address_of_symbol(name) is None and not hasattr(process, name):
                cb = proto(impl)
                _CALLBACKS[name] = cb
                llvm.add_symbol(name, ctypes.cast(cb, ctypes.c_void_p).value)
        _registered = True
