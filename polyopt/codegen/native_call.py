"""A native Python entry point for a JIT-compiled function: a ``METH_FASTCALL`` builtin,
itself JIT-compiled, that checks its ndarray arguments by reading numpy's ``PyArrayObject``
fields and calls the kernel with the GIL released.  The CPython counterpart is what Cython or
numba's ``@cfunc`` wrappers compile; ctypes does the same work in Python objects.

Why: ``f(A, B, C)`` through ctypes cost about 1.9 us for three arrays (0.8 us to check and
convert them in Python, 0.5 us in ctypes' own call), where numpy's 16x16 matmul plus the add
of ``C +=`` takes 1.4 us: every matmul below 48^3 was slower than numpy for the calls alone.

The entry handles the common case only: every argument a memref with the identity layout (a
static shape, or ``?`` sizes passed as MLIR's descriptor of a row-major array) and the
canonical object of a dtype the argument takes (an i8 memref: int8 or uint8; bf16:
``ml_dtypes.bfloat16`` or uint16), no results.  Anything else -- another
dtype object, a wrong shape, a view that is not C-contiguous, aligned and writeable, a
subclass of ndarray, the wrong number of arguments -- returns ``NotImplemented`` without
touching anything, and the caller takes the general path, which accepts what it accepts and
says what is wrong with the rest.

The ``PyArrayObject`` layout (numpy's public ``PyArrayObject_fields``: after the object
header, ``data``, ``nd``, ``dimensions``, ``strides``, ``base``, ``descr``, ``flags``) is
checked at import on probe arrays; when it does not match, no native entry is made.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence

import numpy as np

# byte offsets in PyArrayObject_fields on a 64-bit CPython
_DATA, _ND, _DIMS, _DESCR, _FLAGS = 16, 24, 32, 56, 64
_OB_TYPE = 8
# NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE (numpy's ``carray``)
_CARRAY = 0x0001 | 0x0100 | 0x0400
METH_FASTCALL = 0x0080


def _layout_ok() -> bool:
    """Whether the offsets above read what numpy reports, on arrays of several kinds."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    i64, i32 = ctypes.c_int64.from_address, ctypes.c_int32.from_address
    probes = [np.zeros((3, 5)), np.ones(7, np.float32)[1:], np.zeros((4, 4))[1:, ::2],
              np.empty(0), np.zeros(()), np.arange(6, dtype=np.int8).reshape(2, 3)]
    probes[1].flags.writeable = False
    try:
        for a in probes:
            base = id(a)
            if (i64(base + _DATA).value != a.ctypes.data or i32(base + _ND).value != a.ndim
                    or i64(base + _DESCR).value != id(a.dtype)
                    or i64(base + _OB_TYPE).value != id(type(a))):
                return False
            dims = i64(base + _DIMS).value
            if a.ndim and [i64(dims + 8 * d).value for d in range(a.ndim)] != list(a.shape):
                return False
            carray = (i32(base + _FLAGS).value & _CARRAY) == _CARRAY
            if carray != bool(a.flags.carray):
                return False
    except (ValueError, OSError):   # pragma: no cover - an unusual build
        return False
    return True


LAYOUT_OK = _layout_ok()


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def _api_address(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


def entry_ir(arrays: Sequence[tuple[tuple, Sequence[int], bool]]) -> str:
    """LLVM IR of ``@entry(self, args, nargs)``: ``arrays`` is (shape, addresses of the
    canonical dtype objects it takes, passed as a descriptor) per argument; ``None`` in a shape is a
    ``?`` (any extent), and a descriptor argument is passed as MLIR's memref descriptor of a
    row-major array (pointer, offset 0, sizes, strides).  The kernel called is the one whose
    address is stored in the global ``@kernel``, so that every function of a signature has
    the same entry (compiled once: :data:`_OBJECTS`)."""
    consts = {
        "ndarray": id(np.ndarray), "none": id(None), "notimpl": id(NotImplemented),
        "save": _api_address("PyEval_SaveThread"),
        "restore": _api_address("PyEval_RestoreThread"),
        "incref": _api_address("Py_IncRef"),
    }

    def ptr(name: str) -> str:
        return f"inttoptr (i64 {consts[name]} to ptr)"

    lines = ["@kernel = global ptr null",
             "define ptr @entry(ptr %self, ptr %args, i64 %nargs) {",
             "entry:",
             f"  %n_ok = icmp eq i64 %nargs, {len(arrays)}",
             f"  br i1 %n_ok, label %arg0, label %fallback"]
    data = []
    for i, (shape, descrs, descriptor) in enumerate(arrays):
        nxt = f"arg{i + 1}" if i + 1 < len(arrays) else "call"
        lines += [f"arg{i}:",
                  f"  %o{i}.p = getelementptr ptr, ptr %args, i64 {i}",
                  f"  %o{i} = load ptr, ptr %o{i}.p",
                  f"  %ty{i}.p = getelementptr i8, ptr %o{i}, i64 {_OB_TYPE}",
                  f"  %ty{i} = load i64, ptr %ty{i}.p",
                  f"  %de{i}.p = getelementptr i8, ptr %o{i}, i64 {_DESCR}",
                  f"  %fl{i}.p = getelementptr i8, ptr %o{i}, i64 {_FLAGS}",
                  f"  %nd{i}.p = getelementptr i8, ptr %o{i}, i64 {_ND}",
                  f"  %is{i} = icmp eq i64 %ty{i}, {consts['ndarray']}",
                  f"  br i1 %is{i}, label %fields{i}, label %fallback",
                  f"fields{i}:",
                  f"  %de{i} = load i64, ptr %de{i}.p",
                  f"  %fl{i} = load i32, ptr %fl{i}.p",
                  f"  %nd{i} = load i32, ptr %nd{i}.p",
                  *_one_of(f"%de{i}", descrs),
                  f"  %fl{i}.m = and i32 %fl{i}, {_CARRAY}",
                  f"  %fl{i}.ok = icmp eq i32 %fl{i}.m, {_CARRAY}",
                  f"  %nd{i}.ok = icmp eq i32 %nd{i}, {len(shape)}",
                  f"  %ok{i}.a = and i1 %de{i}.ok, %fl{i}.ok",
                  f"  %ok{i} = and i1 %ok{i}.a, %nd{i}.ok",
                  f"  br i1 %ok{i}, label %dims{i}, label %fallback",
                  f"dims{i}:",
                  f"  %dimsp{i}.p = getelementptr i8, ptr %o{i}, i64 {_DIMS}",
                  f"  %dimsp{i} = load ptr, ptr %dimsp{i}.p"]
        ok = "true"
        for d, extent in enumerate(shape):
            lines += [f"  %d{i}.{d}.p = getelementptr i64, ptr %dimsp{i}, i64 {d}",
                      f"  %d{i}.{d} = load i64, ptr %d{i}.{d}.p"]
            if extent is not None:
                lines += [f"  %d{i}.{d}.ok = icmp eq i64 %d{i}.{d}, {extent}",
                          f"  %s{i}.{d} = and i1 {ok}, %d{i}.{d}.ok"]
                ok = f"%s{i}.{d}"
        lines += [f"  %data{i}.p = getelementptr i8, ptr %o{i}, i64 {_DATA}",
                  f"  %data{i} = load ptr, ptr %data{i}.p"]
        data.append(f"ptr %data{i}")
        if descriptor:   # offset, sizes, row-major strides
            strides = ["1"]
            for d in range(len(shape) - 1, 0, -1):
                lines.append(f"  %st{i}.{d - 1} = mul i64 {strides[0]}, %d{i}.{d}")
                strides.insert(0, f"%st{i}.{d - 1}")
            data += ["i64 0"] + [f"i64 %d{i}.{d}" for d in range(len(shape))] + \
                [f"i64 {st}" for st in strides]
        lines.append(f"  br i1 {ok}, label %{nxt}, label %fallback")
    kernel_type = f"void ({', '.join(v.split()[0] for v in data)})"
    lines += ["call:",
              "  %kernel = load ptr, ptr @kernel",
              f"  %state = call ptr {ptr('save')}()",
              f"  call {kernel_type} %kernel({', '.join(data)})",
              f"  call void {ptr('restore')}(ptr %state)",
              f"  call void {ptr('incref')}(ptr {ptr('none')})",
              f"  ret ptr {ptr('none')}",
              "fallback:",
              f"  call void {ptr('incref')}(ptr {ptr('notimpl')})",
              f"  ret ptr {ptr('notimpl')}",
              "}"]
    return "\n".join(lines) + "\n"


def _one_of(value: str, constants: Sequence[int]) -> list[str]:
    """Lines computing ``{value}.ok``: the i64 ``value`` is one of ``constants``."""
    lines, ok = [], "false"
    for k, c in enumerate(constants):
        lines += [f"  {value}.eq{k} = icmp eq i64 {value}, {c}",
                  f"  {value}.any{k} = or i1 {ok}, {value}.eq{k}"]
        ok = f"{value}.any{k}"
    return lines + [f"  {value}.ok = or i1 {ok}, false"]


#: the machine code of the entries made so far, by their IR: an entry for a signature met
#: before loads it instead of generating it again (8 ms)
_OBJECTS: dict[str, bytes] = {}


class NativeEntry:
    """The builtin function object (``self.function``) and what keeps it alive: its machine
    code's engine and its method definition."""

    def __init__(self, name: str, kernel_address: int,
                 arrays: Sequence[tuple[tuple, Sequence[Any], bool]]):
        import llvmlite.binding as llvm

        from .target import host_target, new_target_machine
        # the descrs compared with, kept alive
        self._dtypes = [[np.dtype(d) for d in dtypes] for _, dtypes, _ in arrays]
        ir_text = entry_ir([(tuple(shape), [id(d) for d in dtypes], descriptor)
                            for (shape, _, descriptor), dtypes in zip(arrays, self._dtypes)])
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        self._engine = llvm.create_mcjit_compiler(mod, new_target_machine(host_target(), 2))
        obj = _OBJECTS.get(ir_text)
        made: list[bytes] = []
        if obj is None:
            self._engine.set_object_cache(lambda _, code: made.append(code), None)
        else:
            self._engine.set_object_cache(None, lambda _: obj)
        self._engine.finalize_object()
        if made:
            if len(_OBJECTS) >= 256:
                _OBJECTS.clear()
            _OBJECTS[ir_text] = made[0]
        ctypes.c_void_p.from_address(
            self._engine.get_global_value_address("kernel")).value = kernel_address
        self._name = name.encode()
        self._def = _MethodDef(self._name, self._engine.get_function_address("entry"),
                               METH_FASTCALL, None)
        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.function = new(ctypes.addressof(self._def), None, None)


def native_entry(name: str, kernel_address: int, args: Sequence[Any],
                 has_results: bool) -> Optional[NativeEntry]:
    """The native entry of a function whose ``args`` (``jit.MemRefArg``/``ScalarArg``) it can
    take, else None."""
    from .jit import MemRefArg, _accepted_dtypes
    if not LAYOUT_OK or has_results or not args:
        return None
    arrays = []
    for a in args:
        # row-major arrays only: static shapes, or '?' sizes with the identity layout
        if not (isinstance(a, MemRefArg) and a.physical_shape is None and a.strides is None
                and not (a.descriptor and a.offset not in (0, None))
                and (a.descriptor or all(s is not None for s in a.shape))):
            return None
        arrays.append((a.shape, _accepted_dtypes(a)[0], a.descriptor))
    return NativeEntry(name, kernel_address, arrays)
