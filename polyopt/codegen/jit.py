"""JIT compilation of polyopt's LLVM IR and calling it on numpy arrays.

Pipeline
--------
1. :func:`optimize_module` parses textual LLVM IR (opaque pointers), verifies
   it, stamps the target triple and data layout of a
   :class:`~polyopt.codegen.target.Target` (the host by default) on it and
   runs LLVM's standard ``O<n>`` pipeline with the *new* pass manager, with
   loop vectorisation, SLP vectorisation, interleaving and unrolling enabled
   and the host CPU/features (AVX2, FMA, AVX-512...) known to the passes.
2. :class:`JITEngine` wraps an MCJIT execution engine over that optimised
   module.  It registers the runtime helpers of
   :mod:`polyopt.codegen.runtime` first, refuses (with
   :class:`JITCompileError`) modules that reference external symbols that
   cannot be resolved (LLVM would abort the whole process), and exposes
   ``function_address``, ``asm()`` and ``llvm_ir_optimized()``.  The optimized IR and
   machine code of recent modules are kept (:data:`COMPILED`): the same IR compiled again
   loads them into a new engine instead of optimizing and generating code anew.
3. :func:`make_callable` turns a JIT-compiled function into a Python callable
   that takes numpy arrays and Python scalars, checks every argument and
   converts the results back.  The callable keeps its engine alive.  A function
   whose arguments are all row-major memrefs (static, or ``?`` sizes) and that
   returns nothing also gets a native entry (:mod:`polyopt.codegen.native_call`)
   that checks and calls in machine code: 0.7 us for a 16x16 matmul where the
   ctypes path took 2.2 us.

Note on FMA: the target machine uses LLVM's default ("standard") FP
contraction, so ``fmul`` + ``fadd`` are fused into ``vfmadd`` only when both
carry the ``contract`` fast-math flag (or when ``llvm.fmuladd.*`` is used).

ABI
---
The lowering emits, for ``func.func @f(<args>) -> (<results>)``, an LLVM
function ``@f`` with C calling convention and these parameters, in order:

* each ``memref<...xT>`` argument: ONE ``ptr`` to the first element of a
  C-contiguous (row-major, offset 0) buffer.  The shape is static and known
  to the generated code (a ``None`` in :class:`MemRefArg.shape` only relaxes
  the Python-side check; the generated code must then learn the size from
  another argument).  Element layout in memory is numpy's: ``i1`` elements
  are one byte (0/1), ``index`` elements are ``i64``.
* each scalar argument by value: ``i1`` as ``i1``, ``i8``/``i16``/``i32``/
  ``i64`` as themselves, ``index`` as ``i64``, ``f32`` as ``float``, ``f64``
  as ``double``.
* results:
    - no result: the function returns ``void``;
    - one result: the function returns it directly (same scalar types);
    - N >= 2 results: the function returns ``void`` and takes N trailing
      ``ptr`` out-parameters (after all the arguments), one per result in
      order; the callee stores result ``i`` (same scalar type; ``i1`` as one
      byte) through out-pointer ``i``.

Example: ``(memref<3x5xf64>, memref<3x5xf64>, i32, index) -> (f64, i1)`` is
``define void @f(ptr %A, ptr %B, i32 %n, i64 %m, ptr %out0, ptr %out1)``.

Python side: memref arguments must be ``numpy.ndarray`` objects of exactly
the declared dtype and shape that are C-contiguous, aligned and writeable
(they are passed by reference: the callee may write into them).

A memref with a non-identity layout (``MemRefArg.physical_shape`` given)
takes its *physical* buffer: the pointer is element 0 of the buffer the
layout indexes (offset 0 of a ``strided<..., offset: o>`` layout, not
element ``o``).  Any C-contiguous, aligned, writeable array of the right
dtype whose total size is at least the physical size is accepted, whatever
its shape, and read as that flat buffer:

* ``memref<30x40xf64, strided<[80, 1]>>`` (physical size 29*80 + 40 = 2360):
  a ``(30, 80)`` array (rows with a leading dimension of 80), or ``(2360,)``;
* ``memref<30x20xf64, (d0, d1) -> (d1, d0)>`` (physical shape ``(20, 30)``):
  the ``(20, 30)`` array, i.e. ``A.T.copy()`` for the logical ``A``;
* ``memref<64x256xf64, (d0, d1) -> (d0 floordiv 4, d1, d0 mod 4)>``: a
  ``(16, 256, 4)`` array.

A smaller array is a ``ValueError`` that states both sizes (the callee would
read or write past its end).  An array of exactly the *logical* shape, when
that differs from the physical one, is refused too: it is almost always the
logical matrix passed by mistake (``A`` instead of ``A.T.copy()`` for a
transposed layout), which would silently be read in the wrong order.  Memrefs
with the identity layout (normalized ones included: ``memref<2360xf64>``)
keep taking exactly their shape.

Scalars may be Python ``int``/``float``/``bool`` or numpy scalars; integers are checked
against the signed range of their width.  The callable returns ``None``,
the single result, or a tuple of results (``bool`` for ``i1``, ``int`` for
integers/``index``, ``float`` for floats).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import llvmlite.binding as llvm
import numpy as np

from polyopt.codegen.amx_permission import request_amx_permission
from polyopt.codegen.buffer_cache import RELEASE_SYMBOL
from polyopt.codegen.runtime import (register_runtime_symbols, runtime_symbols,
                                     take_assert_failures)
from polyopt.codegen.target import (
    Target,
    create_target_machine,
    ensure_llvm_initialized,
    host_target,
    new_target_machine,
)

__all__ = [
    "AssertionFailure",
    "JITCompileError",
    "optimize_module",
    "JITEngine",
    "MemRefArg",
    "ScalarArg",
    "JITFunction",
    "make_callable",
]


class JITCompileError(RuntimeError):
    """LLVM IR could not be parsed, verified, optimised or linked."""


# ---------------------------------------------------------------------------
# Optimisation and JIT engine
# ---------------------------------------------------------------------------


def _parse_and_verify(llvm_ir: str) -> "llvm.ModuleRef":
    ensure_llvm_initialized()
    try:
        mod = llvm.parse_assembly(llvm_ir)
    except RuntimeError as exc:
        raise JITCompileError(f"invalid LLVM IR: {exc}") from None
    try:
        mod.verify()
    except RuntimeError as exc:
        raise JITCompileError(f"LLVM IR failed verification: {exc}") from None
    return mod


def optimize_module(
    llvm_ir: str, target: Target | None = None, opt_level: int = 3,
    llvm_vectorize: bool = True,
) -> "llvm.ModuleRef":
    """Parse, verify and optimise ``llvm_ir`` for ``target`` (host by default).

    Sets the module's triple and data layout to the target's and runs the
    new-pass-manager ``O<opt_level>`` pipeline (``opt_level`` in 0..3) with
    loop/SLP vectorisation, interleaving and unrolling enabled (for
    ``opt_level >= 2``; ``llvm_vectorize=False`` turns LLVM's own loop and SLP
    vectorizers off, to see what polyopt's vectorization adds).  Returns the
    optimised (verified) module.
    """
    if target is None:
        target = host_target()
    if not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level must be in 0..3, got {opt_level}")
    mod = _parse_and_verify(llvm_ir)
    tm = create_target_machine(target, opt_level)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    vectorize = opt_level >= 2 and llvm_vectorize
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize
    pto.loop_interleaving = vectorize
    pto.loop_unrolling = opt_level >= 1
    pb = llvm.create_pass_builder(tm, pto)
    try:
        mpm = pb.getModulePassManager()
        try:
            mpm.run(mod, pb)
        finally:
            mpm.close()
    finally:
        pb.close()
        pto.close()
    from .vector_math import call_libmvec_in_vectorized_loops, has_approximate_scalar_math
    if vectorize and has_approximate_scalar_math(llvm_ir):
        optimized = str(mod)
        rewritten = call_libmvec_in_vectorized_loops(optimized, target)
        if rewritten != optimized:
            mod = _parse_and_verify(rewritten)
    try:
        mod.verify()
    except RuntimeError as exc:  # pragma: no cover - would be an LLVM bug
        raise JITCompileError(f"optimised module failed verification: {exc}") from None
    return mod


_process_handle: ctypes.CDLL | None = None


def _symbol_resolvable(name: str) -> bool:
    """Can MCJIT resolve ``name``?  It searches symbols added with
    ``llvm.add_symbol`` and (MCJIT loads the process permanently when an
    engine is created) everything exported by the running process; before
    the first engine exists ``llvm.address_of_symbol`` only knows the former,
    so the process is also searched with ``dlsym`` through ctypes."""
    global _process_handle
    if llvm.address_of_symbol(name) is not None:
        return True
    if _process_handle is None:
        _process_handle = ctypes.CDLL(None)
    try:
        getattr(_process_handle, name)
    except AttributeError:
        return False
    return True


def _unresolved_symbols(mod: "llvm.ModuleRef") -> list[str]:
    """External declarations of ``mod`` that the JIT linker cannot resolve
    (MCJIT would abort the whole process on them)."""
    runtime = runtime_symbols()
    missing = []
    for fn in mod.functions:
        if not fn.is_declaration:
            continue
        name = fn.name
        if name.startswith("llvm.") or name in runtime:
            continue
        if not _symbol_resolvable(name):
            missing.append(name)
    for gv in mod.global_variables:
        if gv.is_declaration and not _symbol_resolvable(gv.name):
            missing.append(gv.name)
    return missing


class _CompiledCache:
    """The optimized IR and the machine code (MCJIT's object file) of the modules compiled
    last, by what determines them: the IR given, the target, the optimization level and
    whether LLVM vectorizes.  LLVM's O3 and code generation are deterministic, and they are
    most of a compilation's time; the same module is often compiled again in one process
    (the same kernel under flags whose passes leave it unchanged, a benchmark's repeats).
    A hit gives a new engine all the same -- its own globals, buffers and lifetime -- that
    loads the kept object file (MCJIT's ObjectCache) instead of generating it.  Least
    recently used entries go beyond ``max_entries`` or ``max_bytes``."""

    def __init__(self, max_entries: int = 128, max_bytes: int = 256 << 20):
        from collections import OrderedDict
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: "OrderedDict[tuple, tuple[str, bytes]]" = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Optional[tuple[str, bytes]]:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple, optimized_ir: str, obj: bytes) -> None:
        size = len(key[0]) + len(optimized_ir) + len(obj)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(key[0]) + len(old[0]) + len(old[1])
            self._entries[key] = (optimized_ir, obj)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                k, (text, code) = self._entries.popitem(last=False)
                self._bytes -= len(k[0]) + len(text) + len(code)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


#: every :class:`JITEngine`'s (``COMPILED.clear()`` empties it)
COMPILED = _CompiledCache()


def _release_buffers(engine, address: int) -> None:
    """Call the module's :data:`~polyopt.codegen.buffer_cache.RELEASE_SYMBOL` (``engine``,
    passed only to keep the machine code alive until then)."""
    ctypes.CFUNCTYPE(None)(address)()


class JITEngine:
    """An MCJIT execution engine over one optimised LLVM module.

    ``JITEngine(llvm_ir, target=None, opt_level=3, llvm_vectorize=True)``
    optimises ``llvm_ir`` with :func:`optimize_module`, registers the runtime symbols and compiles
    the result to host machine code.  Callables made with
    :func:`make_callable` hold a reference to their engine, so the machine
    code lives as long as any of them does.  ``uses_amx``: the code runs AMX tile
    instructions, so making a callable first asks Linux for the tile state
    (:func:`~polyopt.codegen.amx_permission.request_amx_permission`).  IR compiled before
    (same text, target and options) takes its optimized IR and object file from
    :data:`COMPILED`; the engine is a new one all the same.
    """

    def __init__(self, llvm_ir: str, target: Target | None = None, opt_level: int = 3,
                 llvm_vectorize: bool = True, uses_amx: bool = False):
        self.target = target if target is not None else host_target()
        self.opt_level = opt_level
        self.uses_amx = uses_amx
        register_runtime_symbols()
        key = (llvm_ir, self.target, opt_level, llvm_vectorize)
        cached = COMPILED.get(key)
        if cached is None:
            mod = optimize_module(llvm_ir, self.target, opt_level, llvm_vectorize)
            self._ir_optimized = str(mod)
        else:
            self._ir_optimized, obj = cached
            mod = _parse_and_verify(self._ir_optimized)
        self._may_fail = "polyopt_assert_fail" in self._ir_optimized
        self._asm: str | None = None
        self._asm_lock = threading.Lock()
        # Record function signatures ("ret (params...)") of the definitions.
        self._signatures: dict[str, str] = {
            fn.name: str(fn.global_value_type)
            for fn in mod.functions
            if not fn.is_declaration
        }
        missing = _unresolved_symbols(mod)
        if missing:
            raise JITCompileError(
                "module references undefined external symbol(s): "
                + ", ".join(sorted(missing))
            )
        tm = new_target_machine(self.target, opt_level)  # owned by the engine
        try:
            self._engine = llvm.create_mcjit_compiler(mod, tm)
        except RuntimeError as exc:
            raise JITCompileError(f"cannot create JIT engine: {exc}") from None
        made: list[bytes] = []
        if cached is None:
            self._engine.set_object_cache(lambda _, code: made.append(code), None)
        else:
            self._engine.set_object_cache(None, lambda _: obj)
        self._engine.finalize_object()
        if made:
            COMPILED.put(key, self._ir_optimized, made[0])
        self._engine.run_static_constructors()
        self._addresses: dict[str, int] = {}
        if RELEASE_SYMBOL in self._signatures:
            # the buffers the module's functions cached between calls, freed with the engine
            self._release_buffers = weakref.finalize(
                self, _release_buffers, self._engine,
                self._engine.get_function_address(RELEASE_SYMBOL))

    # -- introspection -----------------------------------------------------

    @property
    def may_fail_assertions(self) -> bool:
        """Whether the module calls the runtime's ``cf.assert`` failure hook."""
        return self._may_fail

    @property
    def function_names(self) -> list[str]:
        """Names of the functions defined in the module."""
        return list(self._signatures)

    def function_signature(self, name: str) -> str:
        """LLVM type of function ``name``, e.g. ``"i32 (ptr, double)"``."""
        try:
            return self._signatures[name]
        except KeyError:
            raise KeyError(f"no function named {name!r} in the JIT module") from None

    def function_address(self, name: str) -> int:
        """Address of the machine code of function ``name`` (KeyError if the
        module does not define it)."""
        addr = self._addresses.get(name)
        if addr is None:
            self.function_signature(name)  # raises KeyError if undefined
            addr = self._engine.get_function_address(name)
            if not addr:
                raise KeyError(f"function {name!r} has no address in the JIT engine")
            self._addresses[name] = addr
        return addr

    def llvm_ir_optimized(self) -> str:
        """Textual LLVM IR of the optimised module (what was JIT-compiled)."""
        return self._ir_optimized

    def asm(self) -> str:
        """Host assembly of the optimised module (computed once, cached)."""
        with self._asm_lock:
            if self._asm is None:
                mod = llvm.parse_assembly(self._ir_optimized)
                tm = create_target_machine(self.target, self.opt_level)
                self._asm = tm.emit_assembly(mod)
            return self._asm

    def get_callable(
        self,
        func_name: str,
        args: Sequence["MemRefArg | ScalarArg"],
        results: Sequence["ScalarArg"] = (),
    ) -> "JITFunction":
        """Shorthand for ``make_callable(self, func_name, args, results)``."""
        return make_callable(self, func_name, args, results)


# ---------------------------------------------------------------------------
# Calling convention
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _ElemType:
    mlir: str  # MLIR spelling: f64, i32, index, i1...
    dtype: np.dtype  # numpy dtype of a value / memref element
    llvm: str  # LLVM scalar type when passed by value
    ctype: Any  # ctypes type used to pass it by value (None: not passable from Python)
    ret_ctype: Any  # ctypes type used to read it back (return / out-ptr)
    kind: str  # "float", "int", "bool"
    bits: int
    scalar: Any = None  # numpy scalar type a result is returned as


def _bfloat16_dtype():
    """``ml_dtypes.bfloat16`` when that package is installed, else None."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


_ELEM_TYPES: dict[str, _ElemType] = {
    t.mlir: t
    for t in [
        _ElemType("f64", np.dtype(np.float64), "double", ctypes.c_double, ctypes.c_double, "float", 64, np.float64),
        _ElemType("f32", np.dtype(np.float32), "float", ctypes.c_float, ctypes.c_float, "float", 32, np.float32),
        # half/bfloat travel in vector registers in the C ABI, which ctypes cannot do:
        # f16/bf16 scalars are not passed from Python (a 0-d memref is)
        _ElemType("f16", np.dtype(np.float16), "half", None, None, "float", 16, np.float16),
        _ElemType("bf16", np.dtype(np.uint16), "bfloat", None, None, "float", 16, None),
        _ElemType("i64", np.dtype(np.int64), "i64", ctypes.c_int64, ctypes.c_int64, "int", 64, np.int64),
        _ElemType("index", np.dtype(np.int64), "i64", ctypes.c_int64, ctypes.c_int64, "int", 64, np.int64),
        _ElemType("i32", np.dtype(np.int32), "i32", ctypes.c_int32, ctypes.c_int32, "int", 32, np.int32),
        _ElemType("i16", np.dtype(np.int16), "i16", ctypes.c_int16, ctypes.c_int16, "int", 16, np.int16),
        _ElemType("i8", np.dtype(np.int8), "i8", ctypes.c_int8, ctypes.c_int8, "int", 8, np.int8),
        # i1 results are read back as a byte and masked: LLVM does not
        # guarantee the upper bits of a returned i1.
        _ElemType("i1", np.dtype(np.bool_), "i1", ctypes.c_bool, ctypes.c_uint8, "bool", 1, np.bool_),
    ]
}

_DTYPE_TO_MLIR = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.bool_): "i1",
}


def _elem_type(spec: Any) -> _ElemType:
    """Resolve a dtype spec: numpy dtype-like, ``bool``, or an MLIR element
    type name (``f64``, ``i32``, ``index``, ``i1``, ``bf16``...)."""
    if isinstance(spec, str) and spec in _ELEM_TYPES:
        return _ELEM_TYPES[spec]
    if spec is bool:
        return _ELEM_TYPES["i1"]
    try:
        dt = np.dtype(spec)
    except TypeError:
        raise TypeError(f"unsupported dtype {spec!r}") from None
    mlir = _DTYPE_TO_MLIR.get(dt)
    if mlir is None and dt == _bfloat16_dtype():
        mlir = "bf16"
    if mlir is None:
        raise TypeError(
            f"unsupported dtype {dt}; expected one of int8, int16, int32, "
            "int64, bool, float16, float32, float64, bfloat16 or 'index'"
        )
    return _ELEM_TYPES[mlir]


@dataclass(frozen=True)
class MemRefArg:
    """A ``memref<shape x dtype>`` argument, passed as a numpy array.

    ``dtype`` may be a numpy dtype-like (``np.float64``, ``"float32"``,
    ``bool``...) or an MLIR element type name (``"f64"``, ``"i1"``,
    ``"index"``, ``"bf16"``); it is normalised to a numpy dtype (``index`` -> int64,
    remembered in ``is_index``; ``bf16`` -> uint16 bits, ``ml_dtypes.bfloat16`` arrays
    are accepted too).  A ``None`` entry in ``shape`` is a ``?``: any extent.

    The layout decides which arrays are accepted (see the module docstring, ABI):

    * ``strides=None`` (the identity layout): a C-contiguous array;
    * ``physical_shape`` (a static layout that is not the identity): the physical buffer,
      or, when ``strides`` is also given (a static ``strided<...>`` layout), a view of the
      logical shape whose element strides are exactly those;
    * ``descriptor=True`` (a ``?`` in the shape or the layout): the array's own sizes and
      strides are passed; ``strides`` gives the static element strides the layout fixes
      (``None`` entries: any stride), ``offset`` the static offset (``None``: ``?``).
    """

    name: str
    shape: tuple
    dtype: Any
    is_index: bool = field(default=False, compare=False)
    physical_shape: Any = field(default=None, compare=False)
    strides: Any = field(default=None, compare=False)
    offset: Any = field(default=0, compare=False)
    descriptor: bool = field(default=False, compare=False)
    element: str = field(default="", compare=False)

    def __post_init__(self):
        et = _elem_type(self.dtype)
        object.__setattr__(self, "element", "index" if self.is_index else et.mlir)
        object.__setattr__(self, "dtype", et.dtype)
        object.__setattr__(self, "is_index", et.mlir == "index" or self.is_index)
        shape = tuple(None if s is None else int(s) for s in self.shape)
        if any(s is not None and s < 0 for s in shape):
            raise ValueError(f"memref {self.name!r}: negative extent in shape {shape}")
        object.__setattr__(self, "shape", shape)
        if self.physical_shape is not None:
            object.__setattr__(self, "physical_shape", tuple(int(s) for s in self.physical_shape))
        if self.strides is not None:
            object.__setattr__(self, "strides",
                               tuple(None if s is None else int(s) for s in self.strides))

    @property
    def element_mlir_type(self) -> str:
        return self.element

    @property
    def mlir_type(self) -> str:
        dims = "".join(("?" if s is None else str(s)) + "x" for s in self.shape)
        layout = ""
        if self.strides is not None:
            strides = ", ".join("?" if s is None else str(s) for s in self.strides)
            offset = "" if self.offset == 0 else \
                f", offset: {'?' if self.offset is None else self.offset}"
            layout = f", strided<[{strides}]{offset}>"
        return f"memref<{dims}{self.element_mlir_type}{layout}>"

    @property
    def num_params(self) -> int:
        """How many C parameters the argument takes (a descriptor: ptr, offset, sizes,
        strides)."""
        return 2 + 2 * len(self.shape) if self.descriptor else 1


@dataclass(frozen=True)
class ScalarArg:
    """A scalar argument or result: ``dtype`` in int8/16/32/64, bool (i1),
    float32, float64 or ``"index"`` (int64), or an MLIR name (``"f64"``...)."""

    name: str
    dtype: Any
    is_index: bool = field(default=False, compare=False)
    element: str = field(default="", compare=False)

    def __post_init__(self):
        et = _elem_type(self.dtype)
        object.__setattr__(self, "element", "index" if self.is_index else et.mlir)
        object.__setattr__(self, "dtype", et.dtype)
        object.__setattr__(self, "is_index", et.mlir == "index" or self.is_index)

    @property
    def mlir_type(self) -> str:
        return self.element

    @property
    def _elem(self) -> _ElemType:
        return _ELEM_TYPES[self.mlir_type]


def _type_name(value: Any) -> str:
    t = type(value)
    if t.__module__ in ("builtins", None):
        return t.__qualname__
    if t.__module__ == "numpy":
        return f"numpy.{t.__qualname__}"
    return f"{t.__module__}.{t.__qualname__}"


def _accepted_dtypes(arg: MemRefArg) -> tuple[tuple, str]:
    """The numpy dtypes an argument takes, and how to name them in a message."""
    if arg.element == "bf16":
        bf16 = _bfloat16_dtype()
        if bf16 is None:
            return (np.dtype(np.uint16),), ("uint16 (bf16 bits; ml_dtypes is not installed, so "
                                            "ml_dtypes.bfloat16 arrays are not known)")
        return (bf16, np.dtype(np.uint16)), "ml_dtypes.bfloat16 or uint16 (bf16 bits)"
    if arg.element in ("i8", "i16", "i32", "i64"):
        # MLIR's integers are signless: the ops say how the bits are read (extui, divui,
        # hop.matmul's a_unsigned), so a uint8 array is an i8 memref as much as an int8 one
        unsigned = np.dtype(f"uint{arg.element[1:]}")
        return (arg.dtype, unsigned), f"{arg.dtype} or {unsigned}"
    return (arg.dtype,), str(arg.dtype)


def _check_array(value: Any, label: str, dtypes: tuple, dtype_name: str) -> None:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{label}: expected a numpy.ndarray, got {_type_name(value)}")
    if value.dtype not in dtypes:
        raise TypeError(f"{label}: expected dtype {dtype_name}, got {value.dtype}")


def _check_writeable_aligned(value: np.ndarray, label: str, name: str, dtype_name: str) -> None:
    flags = value.flags
    if not flags.writeable:
        raise ValueError(
            f"{label}: array is not writeable (read-only); pass a "
            f"writeable array, e.g. {name}.copy()"
        )
    if not flags.aligned:
        raise ValueError(
            f"{label}: array data is not aligned for dtype {dtype_name}; "
            f"pass {name}.copy()"
        )


def _element_strides(value: np.ndarray, label: str) -> tuple:
    itemsize = value.itemsize
    if any(s % itemsize for s in value.strides):
        raise ValueError(f"{label}: array strides {value.strides} are not multiples of the "
                         f"element size ({itemsize} bytes)")
    return tuple(s // itemsize for s in value.strides)


def _strides_mismatch(want: tuple, got: tuple, shape: tuple) -> Any:
    """The first dimension whose static stride the array does not have (extents <= 1 have
    any stride, and an empty array, which nothing reads, has any strides), or None."""
    if 0 in shape:
        return None
    for k, (w, g, n) in enumerate(zip(want, got, shape)):
        if w is not None and w != g and n > 1:
            return k
    return None


#: where an ndarray's data pointer sits in its object (bytes from ``id(array)``)
_DATA_OFFSET = 2 * ctypes.sizeof(ctypes.c_void_p)


def _data_pointer_reader() -> Optional[Callable[[Any], int]]:
    """The fastest way to read an ndarray's data pointer: numpy's public ``PyArrayObject``
    layout puts it right after the object header (``ob_refcnt``, ``ob_type``), so reading the
    word at ``id(array) + 16`` costs 0.15 us where ``array.ctypes.data`` costs 1 us and
    ``ctypes.c_char.from_buffer`` 0.55 us.  Checked here on arrays of several kinds; None
    (use ``from_buffer``) when the check fails."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    at = ctypes.c_void_p.from_address
    offset = _DATA_OFFSET

    def read(value: Any) -> int:
        return at(id(value) + offset).value

    probes = [np.zeros((3, 5)), np.ones(7, np.float32)[1:], np.zeros((4, 4))[1:, :],
              np.empty(0), np.arange(6, dtype=np.int8).reshape(2, 3)]
    try:
        if all(read(a) == a.ctypes.data for a in probes):
            return read
    except (ValueError, OSError):   # pragma: no cover - a Python without that layout
        pass
    return None   # pragma: no cover


_DATA_POINTER = _data_pointer_reader()


def _memref_converter(arg: MemRefArg) -> Callable[[Any], Any]:
    if arg.descriptor:
        return _descriptor_converter(arg)
    label = f"argument {arg.name!r} ({arg.mlir_type})"
    dtypes, dtype_name = _accepted_dtypes(arg)
    want_shape = arg.shape
    if arg.physical_shape is not None:  # the array holds the physical buffer
        label = f"argument {arg.name!r} ({arg.mlir_type}, physical buffer {arg.physical_shape})"
        want_shape = arg.physical_shape
    ndim = len(want_shape)
    wildcard = any(s is None for s in want_shape)
    shape_str = "(" + ", ".join("?" if s is None else str(s) for s in want_shape) + ("," if ndim == 1 else "") + ")"
    from_buffer = ctypes.c_char.from_buffer
    addressof = ctypes.addressof
    ndarray = np.ndarray
    view_strides = arg.strides if arg.physical_shape is not None else None
    raw_bits = np.uint16 if arg.element == "bf16" else None

    def shape_ok(shape: tuple) -> bool:
        if shape == want_shape:
            return True
        if not wildcard or len(shape) != ndim:
            return False
        return all(w is None or w == s for w, s in zip(want_shape, shape))

    def view_address(value: np.ndarray) -> Any:
        """A view of the logical shape with the layout's strides: the address its buffer
        would start at (element [0, ...] minus the layout's offset), else None."""
        if view_strides is None or value.shape != arg.shape:
            return None
        strides = _element_strides(value, label)
        if _strides_mismatch(view_strides, strides, value.shape) is not None:
            return None
        _check_writeable_aligned(value, label, arg.name, dtype_name)
        return value.ctypes.data - (arg.offset or 0) * value.itemsize

    if arg.physical_shape is not None:
        need = 1
        for extent in arg.physical_shape:
            need *= extent
        logical = arg.shape if arg.shape != arg.physical_shape else None

        def shape_check(value: Any) -> None:
            if value.size < need:
                raise ValueError(
                    f"{label}: buffer too small: the layout needs {need} elements, got an "
                    f"array of {value.size} elements (shape {value.shape})"
                )
            if value.shape == logical:
                raise ValueError(
                    f"{label}: got an array of the logical shape {value.shape}; this "
                    f"argument takes the physical buffer, of shape {shape_str} (e.g. "
                    f"numpy.ascontiguousarray(A.T) for a transposed layout)"
                    + (", or a view of the logical shape with element strides "
                       f"{view_strides}" if view_strides is not None else "")
                )
    else:

        def shape_check(value: Any) -> None:
            if value.shape != want_shape and not shape_ok(value.shape):
                raise ValueError(f"{label}: expected shape {shape_str}, got {value.shape}")

    first_dtype = dtypes[0]
    data_pointer = _DATA_POINTER

    def convert(value: Any) -> int:
        if not isinstance(value, ndarray):
            raise TypeError(f"{label}: expected a numpy.ndarray, got {_type_name(value)}")
        dtype = value.dtype
        if dtype is not first_dtype and dtype not in dtypes:
            raise TypeError(f"{label}: expected dtype {dtype_name}, got {value.dtype}")
        if view_strides is not None and not value.flags.c_contiguous:
            address = view_address(value)
            if address is not None:
                return address
        shape_check(value)
        flags = value.flags
        if not flags.carray:  # C-contiguous, aligned and writeable
            if not flags.c_contiguous:
                raise ValueError(
                    f"{label}: array is not C-contiguous; pass "
                    f"numpy.ascontiguousarray({arg.name}) instead"
                )
            _check_writeable_aligned(value, label, arg.name, dtype_name)
        if data_pointer is not None:
            return data_pointer(value)
        if value.nbytes:
            if raw_bits is not None:  # ml_dtypes.bfloat16: no buffer-protocol format
                value = value.view(raw_bits)
            return addressof(from_buffer(value))
        return value.ctypes.data

    if view_strides is not None or arg.physical_shape is not None or data_pointer is None:
        return convert

    # the common case, a row-major array of a static shape, checked inline: a call of a
    # function of three such arguments took 3.6 us, numpy's 32x32 matmul 2.3 us
    at = ctypes.c_void_p.from_address
    offset = _DATA_OFFSET

    def convert_row_major(value: Any) -> int:
        if value.__class__ is not ndarray and not isinstance(value, ndarray):
            raise TypeError(f"{label}: expected a numpy.ndarray, got {_type_name(value)}")
        dtype = value.dtype
        if dtype is not first_dtype and dtype not in dtypes:
            raise TypeError(f"{label}: expected dtype {dtype_name}, got {value.dtype}")
        if value.shape != want_shape and not shape_ok(value.shape):
            raise ValueError(f"{label}: expected shape {shape_str}, got {value.shape}")
        if not value.flags.carray:
            return convert(value)          # says what is wrong, or passes an empty array
        return at(id(value) + offset).value

    return convert_row_major


def _descriptor_converter(arg: MemRefArg) -> Callable[[Any], tuple]:
    """A memref type with ``?``: (pointer, offset, sizes..., strides...) of the array."""
    label = f"argument {arg.name!r} ({arg.mlir_type})"
    dtypes, dtype_name = _accepted_dtypes(arg)
    ndim = len(arg.shape)
    shape_str = "(" + ", ".join("?" if s is None else str(s) for s in arg.shape) + \
        ("," if ndim == 1 else "") + ")"
    static_offset = arg.offset

    def convert(value: Any) -> tuple:
        _check_array(value, label, dtypes, dtype_name)
        shape = value.shape
        if len(shape) != ndim or any(w is not None and w != s for w, s in zip(arg.shape, shape)):
            raise ValueError(f"{label}: expected shape {shape_str}, got {shape}")
        _check_writeable_aligned(value, label, arg.name, dtype_name)
        if arg.strides is None:  # identity layout: the data must be row-major
            if not value.flags.c_contiguous:
                raise ValueError(
                    f"{label}: array is not C-contiguous, and this memref type has the "
                    f"identity (row-major) layout; pass numpy.ascontiguousarray({arg.name}), or "
                    f"declare the argument with a strided layout (e.g. strided<[{', '.join('?' * ndim)}], "
                    f"offset: ?>) to take views without a copy"
                )
            strides = []
            acc = 1
            for extent in reversed(shape):
                strides.append(acc)
                acc *= extent
            strides.reverse()
        else:
            strides = _element_strides(value, label)
            k = _strides_mismatch(arg.strides, strides, shape)
            if k is not None:
                raise ValueError(
                    f"{label}: the layout fixes the stride of dimension {k} to "
                    f"{arg.strides[k]} elements, the array's is {strides[k]}; pass a copy "
                    f"(numpy.ascontiguousarray({arg.name})) or a view with that stride"
                )
        address = value.ctypes.data
        if static_offset:
            address -= static_offset * value.itemsize
        return (address, static_offset or 0, *shape, *strides)

    return convert


_INT_TYPES = (int, np.integer)
_BOOL_TYPES = (bool, np.bool_)


def _scalar_converter(arg: ScalarArg) -> Callable[[Any], Any]:
    et = arg._elem
    label = f"argument {arg.name!r} ({arg.mlir_type})"
    if et.kind == "bool":

        def convert(value: Any) -> bool:
            if value is True or value is False:
                return value
            if isinstance(value, np.bool_):
                return bool(value)
            if isinstance(value, _INT_TYPES):
                if value in (0, 1):
                    return bool(value)
                raise ValueError(f"{label}: {value} is out of range for i1 (expected 0/1 or a bool)")
            raise TypeError(f"{label}: expected a bool, got {_type_name(value)}")

        return convert

    if et.kind == "int":
        lo = -(1 << (et.bits - 1))
        hi = (1 << (et.bits - 1)) - 1

        def convert(value: Any) -> int:
            if type(value) is int:
                if lo <= value <= hi:
                    return value
            elif isinstance(value, _INT_TYPES) or isinstance(value, np.bool_):
                value = int(value)
                if lo <= value <= hi:
                    return value
            else:
                raise TypeError(f"{label}: expected an int, got {_type_name(value)}")
            raise ValueError(f"{label}: {value} is out of range for {arg.mlir_type} [{lo}, {hi}]")

        return convert

    # float
    def convert(value: Any) -> float:
        if type(value) is float:
            return value
        if isinstance(value, (float, int, np.floating, np.integer, np.bool_)):
            try:
                return float(value)
            except OverflowError:       # an int past the largest double
                raise ValueError(f"{label}: an integer of {int(value).bit_length()} bits is "
                                 f"out of range for {arg.mlir_type}") from None
        raise TypeError(f"{label}: expected a real number (int or float), got {_type_name(value)}")

    return convert


def _result_reader(res: ScalarArg) -> Callable[[Any], Any]:
    """Results come back as numpy scalars of their type (``numpy.float32`` for ``f32``,
    ``numpy.int64`` for ``index``, ``numpy.bool_`` for ``i1``)."""
    et = res._elem
    scalar = et.scalar
    if et.kind == "bool":
        return lambda v: scalar(v & 1)
    return scalar


def _param_types(a: "MemRefArg | ScalarArg") -> list[str]:
    if isinstance(a, MemRefArg):
        return ["ptr"] + ["i64"] * (a.num_params - 1)
    return [a._elem.llvm]


def _expected_signature(args: Sequence, results: Sequence[ScalarArg]) -> str:
    params = [p for a in args for p in _param_types(a)]
    if len(results) == 0:
        ret = "void"
    elif len(results) == 1:
        ret = results[0]._elem.llvm
    else:
        ret = "void"
        params += ["ptr"] * len(results)
    return f"{ret} ({', '.join(params)})"


class JITFunction:
    """A Python callable around one JIT-compiled function (see module ABI).

    Attributes: ``name``, ``args``, ``results``, ``engine``, ``address``.
    Positional and keyword (by argument name) calls are supported.
    """

    def __init__(
        self,
        engine: JITEngine,
        func_name: str,
        args: Sequence[MemRefArg | ScalarArg],
        results: Sequence[ScalarArg] = (),
    ):
        args = list(args)
        results = list(results)
        self.name = func_name
        self.args = tuple(args)
        self.results = tuple(results)
        for a in args:
            if not isinstance(a, (MemRefArg, ScalarArg)):
                raise TypeError(f"arguments must be MemRefArg or ScalarArg, got {a!r}")
        for r in results:
            if not isinstance(r, ScalarArg):
                raise TypeError(f"results must be ScalarArg, got {r!r}")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate argument names in {names}")
        actual = engine.function_signature(func_name)
        expected = _expected_signature(args, results)
        if actual != expected:
            raise TypeError(
                f"function {func_name!r} has LLVM type '{actual}' but the "
                f"declared arguments/results require '{expected}'"
            )
        self.engine = engine  # keeps the machine code alive
        self.address = engine.function_address(func_name)
        if engine.uses_amx:   # without it the first tile instruction kills the process
            request_amx_permission()
        self._arg_names = tuple(names)
        self._nargs = len(args)
        for a in list(args) + list(results):
            if isinstance(a, ScalarArg) and a._elem.ctype is None:
                raise TypeError(f"{a.name}: {a.mlir_type} scalars cannot be passed to or returned "
                                "from Python (ctypes has no half-precision type); use a 0-d "
                                f"memref<{a.mlir_type}> instead")
        self._converters = tuple(
            _memref_converter(a) if isinstance(a, MemRefArg) else _scalar_converter(a) for a in args
        )
        self._expands = tuple(isinstance(a, MemRefArg) and a.descriptor for a in args)
        argtypes = []
        for a in args:
            if isinstance(a, MemRefArg):
                argtypes += [ctypes.c_void_p] + [ctypes.c_int64] * (a.num_params - 1)
            else:
                argtypes.append(a._elem.ctype)
        self._out_types: tuple = ()
        if len(results) == 0:
            restype = None
        elif len(results) == 1:
            restype = results[0]._elem.ret_ctype
        else:
            restype = None
            self._out_types = tuple(r._elem.ret_ctype for r in results)
            argtypes += [ctypes.POINTER(t) for t in self._out_types]
        self._readers = tuple(_result_reader(r) for r in results)
        self._cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(self.address)
        self._nresults = len(results)
        # only a module with cf.assert records failures (0.5 us per call saved elsewhere)
        self._checks_asserts = engine.may_fail_assertions
        self._fast = self._positional_call()
        # the common case checked and called in native code (polyopt.codegen.native_call)
        from polyopt.codegen.native_call import native_entry
        entry = native_entry(func_name, self.address, args, bool(results))
        self._native_entry = entry          # keeps its machine code alive
        self._native = entry.function if entry is not None else None

    def __repr__(self) -> str:
        sig = ", ".join(
            f"{a.name}: {a.mlir_type}" for a in self.args
        )
        res = ", ".join(r.mlir_type for r in self.results)
        return f"<JITFunction {self.name}({sig}) -> ({res})>"

    def _bind_keywords(self, args: tuple, kwargs: dict) -> tuple:
        values: list[Any] = list(args) + [_MISSING] * (self._nargs - len(args))
        for key, val in kwargs.items():
            try:
                i = self._arg_names.index(key)
            except ValueError:
                raise TypeError(f"{self.name}() got an unexpected keyword argument {key!r}") from None
            if values[i] is not _MISSING:
                raise TypeError(f"{self.name}() got multiple values for argument {key!r}")
            values[i] = val
        missing = [n for n, v in zip(self._arg_names, values) if v is _MISSING]
        if missing:
            raise TypeError(_missing_message(self.name, missing))
        return tuple(values)

    def _positional_call(self) -> Optional[Callable]:
        """A function of exactly the positional arguments that converts each one and calls
        the machine code, for the common case (no descriptors, no result or one): it saves
        the generic path's loop over converters."""
        if any(self._expands) or self._nresults > 1 or self._nargs > 64:
            return None
        names = [f"a{k}" for k in range(self._nargs)]
        env = {f"c{k}": conv for k, conv in enumerate(self._converters)}
        env.update(cfunc=self._cfunc, check=_raise_assert_failures, name=self.name,
                   read=self._readers[0] if self._nresults else None)
        call = f"cfunc({', '.join(f'c{k}({n})' for k, n in enumerate(names))})"
        lines = [f"def call({', '.join(names)}):", f"    ret = {call}"]
        if self._checks_asserts:
            lines.append("    check(name)")
        lines.append("    return read(ret)" if self._nresults else "    return None")
        exec("\n".join(lines), env)
        return env["call"]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        native = self._native
        if native is not None and not kwargs and native(*args) is None:
            if self._checks_asserts:
                _raise_assert_failures(self.name)
            return None
        if not kwargs and len(args) == self._nargs and self._fast is not None:
            return self._fast(*args)
        if kwargs or len(args) != self._nargs:
            if len(args) > self._nargs:
                n = self._nargs
                raise TypeError(
                    f"{self.name}() takes {n} positional argument{'' if n == 1 else 's'} "
                    f"but {len(args)} {'was' if len(args) == 1 else 'were'} given"
                )
            args = self._bind_keywords(args, kwargs)
        if True in self._expands:
            cargs = []
            for conv, v, expands in zip(self._converters, args, self._expands):
                if expands:
                    cargs.extend(conv(v))
                else:
                    cargs.append(conv(v))
        else:
            cargs = [conv(v) for conv, v in zip(self._converters, args)]
        nres = self._nresults
        if nres <= 1:
            ret = self._cfunc(*cargs)
            if self._checks_asserts:
                _raise_assert_failures(self.name)
            if nres == 0:
                return None
            return self._readers[0](ret)
        outs = [t() for t in self._out_types]
        cargs.extend(ctypes.byref(o) for o in outs)
        self._cfunc(*cargs)
        if self._checks_asserts:
            _raise_assert_failures(self.name)
        return tuple(read(o.value) for read, o in zip(self._readers, outs))


class AssertionFailure(RuntimeError):
    """A ``cf.assert`` failed while the called function ran; ``messages`` holds every failure
    (``FILE:LINE:COL: error: message`` of each op), the exception's text the first one."""

    def __init__(self, messages: list[str]):
        more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
        super().__init__(messages[0] + more)
        self.messages = messages


def _raise_assert_failures(name: str) -> None:
    failures = take_assert_failures()
    if failures:
        raise AssertionFailure(failures)


class _Missing:
    def __repr__(self) -> str:  # pragma: no cover
        return "<missing>"


_MISSING = _Missing()


def _missing_message(fname: str, missing: list[str]) -> str:
    quoted = [repr(m) for m in missing]
    if len(quoted) == 1:
        names = quoted[0]
    else:
        names = ", ".join(quoted[:-1]) + " and " + quoted[-1]
    plural = "" if len(missing) == 1 else "s"
    return f"{fname}() missing {len(missing)} required positional argument{plural}: {names}"


def make_callable(
    engine: JITEngine,
    func_name: str,
    args: Sequence[MemRefArg | ScalarArg],
    results: Sequence[ScalarArg] = (),
) -> JITFunction:
    """Wrap JIT function ``func_name`` of ``engine`` as a Python callable.

    ``args`` describe the parameters in order, ``results`` the scalar results;
    the LLVM function must follow the module-level ABI (checked against its
    LLVM type: TypeError on mismatch).  The returned :class:`JITFunction`
    validates each call's arguments and returns ``None``, the single result,
    or a tuple of results.
    """
    return JITFunction(engine, func_name, args, results)
