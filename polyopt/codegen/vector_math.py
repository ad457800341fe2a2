"""Math functions on vector rows through glibc's vector math library, libmvec, where the op
allows approximate functions (``fastmath<afn>`` or ``fastmath<fast>``).

Without a vector library, LLVM turns ``llvm.exp.v16f32`` into sixteen calls of libm's scalar
``expf``: a loop of ``math.exp`` on vectors runs at scalar speed (``mlir-opt``'s
``--convert-math-to-llvm`` output does the same).  LLVM's counterpart is ``-vector-library=
LIBMVEC`` (clang's ``-fveclib=libmvec``); MLIR's is ``--math-polynomial-approximation``.  Here
the choice is the op's: a row of an op with ``afn`` calls libmvec's variant for the target's
widest vectors (``_ZGVeN16v_expf``: AVX-512, 16 floats; ``_ZGVdN8v_expf``: AVX2;
``_ZGVbN4v_expf``: SSE), in pieces of that width (the last one padded with ones).  Measured
against an f64 reference on 2^20 points (AVX-512 variants): ``expf`` within 2.6 ulp (numpy's
own ``exp`` 2.3), ``tanhf`` 1.4, ``logf`` 3.8, ``erff`` 4.0; glibc documents at most 4 ulp.
An op without ``afn``, a scalar, a target other than x86-64, or a process without libmvec keeps
the exact lowering of :mod:`polyopt.codegen.lower_math`.
"""

from __future__ import annotations

import ctypes.util
import re
import threading
from typing import Optional

from llvmlite import ir

from polyopt.codegen.llvm_helpers import F32, I32, int_const

#: math op -> (libm's name of the double function, operands); libmvec has each for f32 and f64
LIBMVEC = {
    "math.acos": ("acos", 1), "math.acosh": ("acosh", 1), "math.asin": ("asin", 1),
    "math.asinh": ("asinh", 1), "math.atan": ("atan", 1), "math.atanh": ("atanh", 1),
    "math.cbrt": ("cbrt", 1), "math.cos": ("cos", 1), "math.cosh": ("cosh", 1),
    "math.erf": ("erf", 1), "math.erfc": ("erfc", 1), "math.exp": ("exp", 1),
    "math.exp2": ("exp2", 1), "math.expm1": ("expm1", 1), "math.log": ("log", 1),
    "math.log10": ("log10", 1), "math.log1p": ("log1p", 1), "math.log2": ("log2", 1),
    "math.sin": ("sin", 1), "math.sinh": ("sinh", 1), "math.tan": ("tan", 1),
    "math.tanh": ("tanh", 1), "math.atan2": ("atan2", 2), "math.powf": ("pow", 2),
}
#: the x86-64 vector function ABI's ISA letters, widest first: (letter, vector bits)
_ISAS = (("e", 512), ("d", 256), ("b", 128))

_lock = threading.Lock()
_loaded: Optional[bool] = None


def libmvec_loaded() -> bool:
    """Load libmvec into the process for the JIT (once); False where there is none."""
    global _loaded
    with _lock:
        if _loaded is None:
            from llvmlite import binding as llvm
            path = ctypes.util.find_library("mvec")
            try:
                if path is None:
                    raise OSError("no libmvec")
                llvm.load_library_permanently(path)
                _loaded = True
            except (OSError, RuntimeError):
                _loaded = False
        return _loaded


def approximates(flags: tuple) -> bool:
    """Do the op's fast-math flags allow approximate functions?"""
    return "afn" in flags or "fast" in flags


def _symbol(letter: str, lanes: int, base: str, arity: int, f32: bool) -> str:
    return f"_ZGV{letter}N{lanes}{'v' * arity}_{base}{'f' if f32 else ''}"


def _widths(target, bits: int) -> list[tuple[str, int]]:
    """(ISA letter, lanes) of the variants ``target`` can call, widest first."""
    out = []
    for letter, vbits in _ISAS:
        if vbits == 512 and not target.has_avx512f or vbits == 256 and not target.has_avx2:
            continue
        out.append((letter, vbits // bits))
    return out


def vector_call(L, op_name: str, args: list[ir.Value], flags: tuple) -> Optional[ir.Value]:
    """libmvec's ``op_name`` on the vector rows ``args`` (f32 or f64), or None where this
    module does not apply (see the module docstring)."""
    entry = LIBMVEC.get(op_name)
    ty = args[0].type
    if entry is None or not approximates(flags) or not isinstance(ty, ir.VectorType):
        return None
    target = L.ml.target
    if not target.triple.startswith("x86_64") or ty.element not in (F32, ir.DoubleType()):
        return None
    if not libmvec_loaded():
        return None
    base, arity = entry
    f32 = ty.element == F32
    widths = _widths(target, 32 if f32 else 64)
    b = L.b
    ones = ir.Constant(ty, [ir.Constant(ty.element, 1.0)] * ty.count)
    pieces, start = [], 0
    while start < ty.count:
        left = ty.count - start
        fitting = [w for w in widths if w[1] >= left]
        letter, lanes = fitting[-1] if fitting else widths[0]
        take = min(lanes, left)
        vt = ir.VectorType(ty.element, lanes)
        if take == lanes == ty.count:
            chunk = list(args)
        else:       # lanes start..start+take of each operand, then ones
            mask = ir.Constant(ir.VectorType(I32, lanes),
                               [start + i if i < take else ty.count for i in range(lanes)])
            chunk = [b.shuffle_vector(a, ones, mask) for a in args]
        fn = L.ml.get_function(_symbol(letter, lanes, base, arity, f32),
                               ir.FunctionType(vt, [vt] * arity), L.op.loc)
        pieces.append((b.call(fn, chunk, fastmath=flags), take))
        start += take
    return _join(b, pieces, ty)


def _join(b: ir.IRBuilder, pieces: list[tuple[ir.Value, int]], ty: ir.VectorType) -> ir.Value:
    """The rows of ``pieces`` (value, lanes used) laid end to end as one ``ty``."""
    if len(pieces) == 1 and pieces[0][0].type == ty:
        return pieces[0][0]
    out = ir.Constant(ty, ir.Undefined)
    pos = 0
    for value, take in pieces:
        for i in range(take):
            out = b.insert_element(out, b.extract_element(value, int_const(I32, i)),
                                   int_const(I32, pos))
            pos += 1
    return out


# ---------------------------------------------------------------------------------------------
# the loops LLVM vectorizes


#: LLVM intrinsics (``llvm.exp.f32``...) the lowering emits for the functions libmvec has
_INTRINSICS = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
               "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh",
               "tanh": "tanh", "asin": "asin", "acos": "acos", "atan": "atan", "pow": "pow",
               "atan2": "atan2"}
_BINARY = {"pow", "atan2"}
_SCALAR_CALL = re.compile(r"call (?:[a-z]+ )*(?:afn|fast) [^\n]*@\"?llvm\.(?:"
                          + "|".join(_INTRINSICS) + r")\.f(?:32|64)\"?\(")
_VECTOR_CALL = re.compile(r"call ((?:[a-z]+ )*)<(\d+) x (float|double)> @\"?llvm\.("
                          + "|".join(_INTRINSICS) + r")\.v\d+f(?:32|64)\"?\(")


def has_approximate_scalar_math(llvm_ir: str) -> bool:
    """Does ``llvm_ir`` call a math intrinsic on scalars with ``afn`` (which LLVM's loop
    vectorizer may widen, see :func:`call_libmvec_in_vectorized_loops`)?"""
    return _SCALAR_CALL.search(llvm_ir) is not None


def call_libmvec_in_vectorized_loops(llvm_ir: str, target) -> str:
    """The optimized module's vector math intrinsics with ``afn`` (or ``fast``), the ones
    LLVM's loop vectorizer made of scalar calls, as calls of libmvec's variant of exactly
    their width (LLVM's ``ReplaceWithVeclib`` under ``-vector-library=LIBMVEC``, for the
    calls that allow approximate functions only); the others are left, to be split into
    scalar calls as before."""
    if not target.triple.startswith("x86_64") or not libmvec_loaded():
        return llvm_ir
    declared: dict[str, str] = {}

    def swap(m: re.Match) -> str:
        flags, lanes, elem, base = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if "afn" not in flags.split() and "fast" not in flags.split():
            return m.group(0)
        f32 = elem == "float"
        letters = [letter for letter, n in _widths(target, 32 if f32 else 64) if n == lanes]
        if not letters:
            return m.group(0)
        arity = 2 if base in _BINARY else 1
        name = _symbol(letters[0], lanes, _INTRINSICS[base], arity, f32)
        vt = f"<{lanes} x {elem}>"
        if f"@{name}(" not in llvm_ir and f'@"{name}"(' not in llvm_ir:
            declared[name] = f"declare {vt} @{name}({', '.join([vt] * arity)})"
        return f"call {flags}{vt} @{name}("
    out = _VECTOR_CALL.sub(swap, llvm_ir)
    return out + "".join(f"\n{d}\n" for d in declared.values())
