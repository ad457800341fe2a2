"""Lowering of polyopt's IR (func/arith/math/memref/vector/affine/linalg.fill) to LLVM IR.

One pass over the module does what MLIR's ``lower-affine`` and ``convert-{func,arith,math,
memref,vector}-to-llvm`` do, emitting textual LLVM IR with :mod:`llvmlite.ir` (opaque
pointers).  :func:`lower_module` returns the IR and, per function, the
:class:`FunctionSignature` that :mod:`polyopt.codegen.jit` needs to call it on numpy arrays::

    lowered = lower_module(parse(text))            # LoweredModule(llvm_ir, signatures)
    engine = lowered.jit()                         # JITEngine (O3, host CPU)
    matmul = lowered.signatures["matmul"].make_callable(engine)
    matmul(A, B, C)

ABI (the one documented in :mod:`polyopt.codegen.jit`, used for internal calls too): a memref
is ONE ``ptr`` to element 0 of its (physical) buffer; scalars by value (``index`` -> ``i64``);
0 results -> ``void``, 1 result -> that type, N >= 2 results -> ``void`` and N trailing
out-pointers (an ``i1`` result is stored as one byte).

What the lowering does
----------------------
* ``affine.for`` -> a canonical loop: ``iv = max(lb results)``; ``while iv < min(ub results)``;
  the induction variable and the ``iter_args`` are header phis.  ``affine.if`` -> the
  conjunction of its constraints, then/else blocks, results through phis.
* Affine expressions (bounds, ``affine.apply/min/max``, subscripts) are flattened into linear
  forms ``sum(coeff * term) + const`` before emission, after composing the access map with the
  memref's layout linearization (:func:`polyopt.memref_layout.layout.linearize`); constants
  fold, ``floordiv``/``mod`` by ``c`` drop the terms whose coefficient is a multiple of ``c``,
  and value ranges of loop IVs (from constant-ish bounds) fold ``floordiv``/``mod`` that are
  constant over the loop and select cheap unsigned forms for non-negative operands.
  Otherwise ``floordiv``/``ceildiv``/``mod`` use MLIR's exact signed expansions (``ashr``/``and``
  for powers of two); non-constant divisors use the general signed floor/ceil formulas.
  Index arithmetic carries ``nsw``; address GEPs are ``inbounds``.
* Memory: ``memref.alloc`` -> ``aligned_alloc(align, round_up(bytes, align))`` (alignment: the
  op's, default 64), ``memref.dealloc`` -> ``free``; ``memref.alloca`` -> an ``alloca`` hoisted
  to the entry block (alignment >= 64; buffers above ``max_stack_bytes`` go to the heap,
  allocated at entry and freed at every return).  Loads and stores use the alignment the
  base pointer and the offset prove (element alignment at least).  ``memref.cast`` and
  ``memref.collapse_shape`` are views: the same pointer with the new type.
* Vectors: 1-D vectors are LLVM vectors; n-D vectors are (nested) LLVM arrays of 1-D
  vectors; elementwise ops, broadcast, fma, print, loads/stores work row by row (rows of an
  n-D vector access are consecutive indices of the memref dimensions before the last).
* Float arithmetic carries the fast-math flag ``contract`` (so ``mulf`` + ``addf`` become FMAs)
  plus whatever ``fastmath<...>`` the op asks for.
* Calls to ``printMemref{F64,F32,I64,I32,Ind}`` (unranked operand from ``memref.cast``), the
  paper's ``print_memref_2d_{f64,f32}``, ``rtclock`` and CRunnerUtils' ``print{F64,...}`` go to the
  runtime (:mod:`polyopt.codegen.runtime`); other declarations are C symbols of the process.

Not handled (``CodegenError`` at the op): dynamic dimensions, ``hop.*``/``linalg.matmul``/
``linalg.conv_*`` (expand them first), f16/bf16, multi-block functions, unknown ops.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from polyopt.affine.affine_expr import (AffineBinaryExpr, AffineConstantExpr, AffineDimExpr,
                                        AffineExpr, AffineExprKind, AffineMap, AffineSymbolExpr)
from polyopt.affine.attributes import FloatAttr, IntegerAttr, StringAttr
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Block, Operation, Value
from polyopt.affine.types import (FloatType, FunctionType, IndexType, IntegerType, MemRefType,
                                  Type, UnrankedMemRefType, VectorType)
from polyopt.codegen import microkernels
from polyopt.codegen.jit import JITEngine, MemRefArg, ScalarArg, make_callable
from polyopt.codegen.runtime import runtime_symbols
from polyopt.codegen.target import Target, create_target_machine, host_target
from polyopt.memref_layout.layout import (DYNAMIC_DIMS_MESSAGE, is_identity_layout, linearize,
                                          physical_shape, physical_size)

__all__ = [
    "FunctionSignature",
    "LoweredModule",
    "lower_module",
    "DEFAULT_ALLOC_ALIGNMENT",
    "DEFAULT_MAX_STACK_BYTES",
]

#: Alignment (bytes) of ``memref.alloc`` buffers without an ``alignment`` attribute.
DEFAULT_ALLOC_ALIGNMENT = 64
#: ``memref.alloca`` buffers larger than this are heap-allocated at function entry.
DEFAULT_MAX_STACK_BYTES = 1 << 20

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

_NSW = ("nsw",)

# ---------------------------------------------------------------------------------------------
# Public results


class _NumpyUnsupported:
    """A callable standing in for a function that numpy cannot call (raises TypeError)."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason

    def __call__(self, *args, **kwargs):
        raise TypeError(f"function @{self.name} cannot be called from Python: {self.reason}")

    def __repr__(self) -> str:
        return f"<uncallable @{self.name}: {self.reason}>"


@dataclass(frozen=True)
class FunctionSignature:
    """The numpy calling convention of one lowered function.

    ``args`` are :class:`~polyopt.codegen.jit.MemRefArg` (a memref with a non-identity layout
    takes the C-contiguous *physical* buffer: ``MemRefArg.physical_shape``; a memref of
    vectors ``memref<NxMxvector<4xf64>>`` takes an ``(N, M, 4)`` float64 array) or
    :class:`~polyopt.codegen.jit.ScalarArg`; ``results`` are ScalarArg.  ``numpy_error`` says
    why the function cannot be called from Python (memref or vector results/arguments...);
    :meth:`make_callable` then returns a callable that raises ``TypeError`` with that reason.
    """

    name: str
    args: list = field(default_factory=list)
    results: list = field(default_factory=list)
    numpy_error: Optional[str] = None

    def make_callable(self, engine: JITEngine):
        """A Python callable running this function of ``engine`` on numpy arrays/scalars."""
        if self.numpy_error is not None:
            return _NumpyUnsupported(self.name, self.numpy_error)
        return make_callable(engine, self.name, self.args, self.results)


@dataclass(frozen=True)
class LoweredModule:
    """LLVM IR text of a lowered module and the numpy signature of each defined function."""

    llvm_ir: str
    signatures: dict = field(default_factory=dict)

    def jit(self, target: Optional[Target] = None, opt_level: int = 3) -> JITEngine:
        """Optimise and JIT-compile the module (see :class:`~polyopt.codegen.jit.JITEngine`)."""
        return JITEngine(self.llvm_ir, target, opt_level)

    def callables(self, engine: JITEngine) -> dict:
        """``{name: callable}`` for every defined function
        (see :meth:`FunctionSignature.make_callable`)."""
        return {name: sig.make_callable(engine) for name, sig in self.signatures.items()}


def lower_module(module: Operation, target: Optional[Target] = None, *,
                 noalias_memref_args: bool = False,
                 max_stack_bytes: int = DEFAULT_MAX_STACK_BYTES) -> LoweredModule:
    """Lower ``module`` (a ``builtin.module`` of ``func.func`` ops) to LLVM IR for ``target``.

    Args:
        module: a verified module whose high-level ops (``hop.*``, ``linalg.matmul``) have
            been expanded into affine loop nests.
        target: the code-generation target (default: the host); its CPU and features are put
            on every function (``"target-cpu"``/``"target-features"``) so that the JIT uses
            AVX2/FMA, and its data layout gives element sizes.
        noalias_memref_args: mark memref pointer arguments ``noalias`` (only valid if no call
            passes the same buffer twice; off by default).
        max_stack_bytes: ``memref.alloca`` buffers above this size are heap-allocated.

    Returns a :class:`LoweredModule`.  Raises :class:`CodegenError` (with the location of the
    offending op) for anything that cannot be lowered.

    Example: ``affine.for %i = 0 to 10 { ... }`` becomes::

        br label %for.header
      for.header:
        %iv = phi i64 [ 0, %entry ], [ %iv.next, %for.body ]
        %c = icmp slt i64 %iv, 10
        br i1 %c, label %for.body, label %for.exit
    """
    if target is None:
        target = host_target()
    if module.name != "builtin.module":
        raise CodegenError(f"expected a 'builtin.module', got '{module.name}'", module.loc)
    return _ModuleLowering(module, target, noalias_memref_args, max_stack_bytes).run()


# ---------------------------------------------------------------------------------------------
# Helpers


class _Unsupported(Exception):
    """Raised by type/attribute helpers; turned into a CodegenError naming the current op."""


def _wrap_int(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if bits > 1 and v >> (bits - 1) else v


def _int_const(ty: ir.IntType, v: int) -> ir.Constant:
    if ty.width == 1:
        return ir.Constant(ty, 1 if v & 1 else 0)
    return ir.Constant(ty, _wrap_int(int(v), ty.width))


def _i64(v: int) -> ir.Constant:
    return _int_const(I64, v)


def _is_pow2(c: int) -> bool:
    return c > 0 and c & (c - 1) == 0


def _lowbit(v: int) -> int:
    return v & -v


def _attr_int(attr) -> Optional[int]:
    return attr.value if isinstance(attr, IntegerAttr) else None


def _fastmath_flags(op: Operation) -> tuple:
    """LLVM fast-math flags for a float op: ``contract`` plus the op's ``fastmath<...>``."""
    flags = {"contract"}
    fm = op.attributes.get("fastmath")
    if fm is not None:
        text = str(fm)
        if "<" in text:
            for f in text[text.index("<") + 1:text.rindex(">")].split(","):
                f = f.strip()
                if f == "fast":
                    flags.add("fast")
                elif f in ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"):
                    flags.add(f)
    return tuple(sorted(flags))


class _FnAttrs(ir.FunctionAttributes):
    """Function attributes plus ``"target-cpu"``/``"target-features"`` string attributes."""

    def __init__(self, extra: Sequence[str]):
        super().__init__()
        self._extra = list(extra)

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + self._extra


def _llvm_str(s: str) -> str:
    return '"' + s.replace("\\", "\\5C").replace('"', "\\22") + '"'


# ---------------------------------------------------------------------------------------------
# Linear forms of affine expressions


class _Lin:
    """``sum(coeff * term) + const`` over i64; terms are leaves (``("v", id)``) or opaque
    non-linear sub-expressions (``("fdiv"|"cdiv"|"mod"|"mul", lhs _Lin, rhs _Lin)``)."""

    __slots__ = ("terms", "const", "_hash")

    def __init__(self, terms: Optional[dict] = None, const: int = 0):
        self.terms = {k: c for k, c in (terms or {}).items() if c != 0}
        self.const = const
        self._hash = hash((frozenset(self.terms.items()), const))

    @staticmethod
    def constant(c: int) -> "_Lin":
        return _Lin(None, c)

    @staticmethod
    def term(key) -> "_Lin":
        return _Lin({key: 1}, 0)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __eq__(self, other):
        return isinstance(other, _Lin) and self.const == other.const and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def add(self, other: "_Lin") -> "_Lin":
        terms = dict(self.terms)
        for k, c in other.terms.items():
            terms[k] = terms.get(k, 0) + c
        return _Lin(terms, self.const + other.const)

    def scale(self, k: int) -> "_Lin":
        if k == 0:
            return _Lin.constant(0)
        return _Lin({t: c * k for t, c in self.terms.items()}, self.const * k)

    def divisor(self) -> int:
        """gcd of all coefficients and the constant (0 for the zero form)."""
        g = abs(self.const)
        for c in self.terms.values():
            g = math.gcd(g, abs(c))
        return g


_Range = tuple  # (lo | None, hi | None), inclusive


def _range_scale(r: _Range, c: int) -> _Range:
    lo, hi = r
    if c >= 0:
        return (None if lo is None else lo * c, None if hi is None else hi * c)
    return (None if hi is None else hi * c, None if lo is None else lo * c)


class _DivByZero(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Memref values


@dataclass
class _Mem:
    """A memref SSA value: base pointer, static (ranked) type and the proven base alignment."""

    ptr: ir.Value
    type: MemRefType
    align: int


# Declarations that map onto the runtime.
_PRINT_MEMREF = {
    "printMemrefF64": "f64", "printMemrefF32": "f32", "printMemrefI64": "i64",
    "printMemrefI32": "i32", "printMemrefInd": "index",
    "print_memref_f64": "f64", "print_memref_f32": "f32",
    "print_memref_2d_f64": "f64", "print_memref_2d_f32": "f32",
}
_RUNTIME_SCALAR = {  # CRunnerUtils name -> (runtime symbol, MLIR input types, LLVM param types)
    "printF64": ("polyopt_print_f64", ("f64",), (F64,)),
    "printF32": ("polyopt_print_f32", ("f32",), (F32,)),
    "printI64": ("polyopt_print_i64", ("i64",), (I64,)),
    "printU64": ("polyopt_print_u64", ("i64",), (I64,)),
    "printOpen": ("polyopt_print_open", (), ()),
    "printClose": ("polyopt_print_close", (), ()),
    "printComma": ("polyopt_print_comma", (), ()),
    "printNewline": ("polyopt_print_newline", (), ()),
}
_MUST_EXPAND = ("hop.matmul", "hop.conv2d", "linalg.matmul", "linalg.conv_2d_nhwc_hwcf",
                "linalg.conv_1d_nwc_wcf", "linalg.depthwise_conv_2d_nhwc_hwc", "linalg.conv_2d")

_process_lib: Optional[ctypes.CDLL] = None


def _c_symbol_exists(name: str) -> bool:
    """Can the JIT resolve ``name`` (registered with llvmlite, or exported by the process)?"""
    global _process_lib
    if name in runtime_symbols():
        return True
    if llvm.address_of_symbol(name) is not None:
        return True
    if _process_lib is None:
        _process_lib = ctypes.CDLL(None)
    try:
        getattr(_process_lib, name)
    except AttributeError:
        return False
    return True


@dataclass
class _Callee:
    kind: str                   # defined | extern | print_memref | rtclock | runtime
    func: Any                   # FuncOp
    llfn: Optional[ir.Function] = None
    print_kind: Optional[str] = None


# ---------------------------------------------------------------------------------------------
# Module lowering


class _ModuleLowering:
    def __init__(self, module: Operation, target: Target, noalias: bool, max_stack_bytes: int):
        self.module = module
        self.target = target
        self.noalias = noalias
        self.max_stack_bytes = max_stack_bytes
        self.tm = create_target_machine(target)
        self.td = self.tm.target_data
        self.llmod = ir.Module(name="polyopt")
        self.llmod.triple = target.triple
        self.llmod.data_layout = str(self.td)
        self.fn_attr_strings = []
        if target.cpu:
            self.fn_attr_strings.append(f'"target-cpu"={_llvm_str(target.cpu)}')
        if target.features:
            self.fn_attr_strings.append(f'"target-features"={_llvm_str(target.features)}')
        self.callees: dict[str, _Callee] = {}
        self._globals = 0
        self._linearize_cache: dict = {}

    # -- types -------------------------------------------------------------------------------

    def scalar_type(self, t: Type) -> ir.Type:
        if isinstance(t, IndexType):
            return I64
        if isinstance(t, IntegerType):
            return ir.IntType(t.width)
        if isinstance(t, FloatType):
            if t.width == 64:
                return F64
            if t.width == 32:
                return F32
            raise _Unsupported(f"f{t.width} is not supported by the LLVM lowering (use f32 or f64)")
        raise _Unsupported(f"type '{t}' is not supported by the LLVM lowering")

    def type(self, t: Type) -> ir.Type:
        if isinstance(t, VectorType):
            if not t.shape or any(d <= 0 for d in t.shape):
                raise _Unsupported(f"vector type '{t}' is not supported")
            ty: ir.Type = ir.VectorType(self.scalar_type(t.element_type), t.shape[-1])
            for d in reversed(t.shape[:-1]):
                ty = ir.ArrayType(ty, d)
            return ty
        if isinstance(t, (MemRefType, UnrankedMemRefType)):
            return PTR
        return self.scalar_type(t)

    def mem_type(self, t: Type) -> ir.Type:
        """In-memory type of a memref element (``i1`` is stored as a byte, as numpy does)."""
        if isinstance(t, IntegerType) and t.width == 1:
            return I8
        if isinstance(t, IntegerType) and t.width not in (8, 16, 32, 64):
            raise _Unsupported(f"memref element type '{t}' is not supported")
        if isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise _Unsupported("memrefs of memrefs are not supported")
        return self.type(t)

    def abi_size(self, ty: ir.Type) -> int:
        return ty.get_abi_size(self.td)

    def abi_align(self, ty: ir.Type) -> int:
        return ty.get_abi_alignment(self.td)

    def linearize(self, t: MemRefType, loc) -> AffineMap:
        m = self._linearize_cache.get(t)
        if m is None:
            m = linearize(t, loc)
            self._linearize_cache[t] = m
        return m

    def scalar_align(self, t: MemRefType) -> int:
        """Alignment guaranteed for a memref's buffer by the element type alone."""
        et = t.element_type
        if isinstance(et, VectorType):
            et = et.element_type
        return self.abi_align(self.mem_type(et))

    # -- function types (ABI) ----------------------------------------------------------------

    def abi_function_type(self, ft: FunctionType, loc) -> ir.FunctionType:
        params = [self.type(t) for t in ft.inputs]
        if len(ft.results) == 0:
            ret = VOID
        elif len(ft.results) == 1:
            ret = self.type(ft.results[0])
        else:
            ret = VOID
            params += [PTR] * len(ft.results)
        return ir.FunctionType(ret, params)

    def get_function(self, name: str, fnty: ir.FunctionType, loc=None) -> ir.Function:
        existing = self.llmod.globals.get(name)
        if existing is not None:
            if not isinstance(existing, ir.Function) or existing.ftype != fnty:
                raise CodegenError(f"function '@{name}' is needed by the lowering with LLVM type "
                                   f"'{fnty}' but the module declares it differently", loc)
            return existing
        return ir.Function(self.llmod, fnty, name)

    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        return self.get_function(name, ir.FunctionType(ret, list(args)))

    def runtime(self, name: str) -> ir.Function:
        sigs = {
            "polyopt_print_f64": (VOID, [F64]), "polyopt_print_f32": (VOID, [F32]),
            "polyopt_print_i64": (VOID, [I64]), "polyopt_print_u64": (VOID, [I64]),
            "polyopt_print_open": (VOID, []), "polyopt_print_close": (VOID, []),
            "polyopt_print_comma": (VOID, []), "polyopt_print_newline": (VOID, []),
            "polyopt_print_string": (VOID, [PTR]), "polyopt_rtclock": (F64, []),
            "aligned_alloc": (PTR, [I64, I64]), "free": (VOID, [PTR]),
        }
        if name.startswith("polyopt_print_memref_"):
            ret, params = VOID, [PTR, I64, PTR]
        else:
            ret, params = sigs[name]
        return self.get_function(name, ir.FunctionType(ret, params))

    def global_constant(self, value: ir.Constant, prefix: str) -> ir.GlobalVariable:
        self._globals += 1
        gv = ir.GlobalVariable(self.llmod, value.type, f"__polyopt_{prefix}.{self._globals}")
        gv.global_constant = True
        gv.linkage = "private"
        gv.unnamed_addr = True
        gv.initializer = value
        return gv

    def c_string(self, text: str) -> ir.GlobalVariable:
        data = bytearray(text.encode("utf-8")) + b"\0"
        return self.global_constant(ir.Constant(ir.ArrayType(I8, len(data)), data), "str")

    # -- driver --------------------------------------------------------------------------------

    def run(self) -> LoweredModule:
        funcs = []
        for op in self.module.regions[0].blocks[0].ops:
            if op.name != "func.func":
                raise CodegenError(f"cannot lower '{op.name}' at module level (only 'func.func' "
                                   "is supported)", op.loc)
            funcs.append(op)
        # pass 1: declare every function so that calls can refer to any of them
        for f in funcs:
            if f.is_declaration:
                self.callees[f.sym_name] = self._declaration(f)
            else:
                self.callees[f.sym_name] = self._definition(f)
        # pass 2: bodies
        signatures = {}
        for f in funcs:
            if not f.is_declaration:
                try:
                    _FunctionLowering(self, f, self.callees[f.sym_name].llfn).run()
                    signatures[f.sym_name] = self._signature(f)
                except _Unsupported as exc:  # raised outside any op (e.g. argument types)
                    raise CodegenError(f"function @{f.sym_name}: {exc}", f.loc) from None
        return LoweredModule(str(self.llmod), signatures)

    def _check_static_types(self, f, types) -> None:
        for t in types:
            if isinstance(t, MemRefType) and not t.has_static_shape:
                raise CodegenError(DYNAMIC_DIMS_MESSAGE, f.loc)

    def _definition(self, f) -> _Callee:
        ft = f.function_type
        self._check_static_types(f, ft.inputs + ft.results)
        for t in ft.inputs + ft.results:
            if isinstance(t, UnrankedMemRefType):
                raise CodegenError(f"function @{f.sym_name}: unranked memref arguments/results "
                                   "are only supported for the runtime's print functions", f.loc)
        try:
            fnty = self.abi_function_type(ft, f.loc)
        except _Unsupported as exc:
            raise CodegenError(f"function @{f.sym_name}: {exc}", f.loc) from None
        if f.sym_name in self.llmod.globals:
            raise CodegenError(f"function @{f.sym_name} clashes with a symbol of the lowering",
                               f.loc)
        fn = ir.Function(self.llmod, fnty, f.sym_name)
        fn.attributes = _FnAttrs(self.fn_attr_strings)
        fn.attributes.add("nounwind")
        if self.noalias:
            for i, t in enumerate(ft.inputs):
                if isinstance(t, MemRefType):
                    fn.args[i].add_attribute("noalias")
        return _Callee("defined", f, fn)

    def _declaration(self, f) -> _Callee:
        name = f.sym_name
        ft = f.function_type
        if microkernels.WRAPPER_ATTR in f.attributes:
            return self._microkernel_wrapper(f)
        if name in _PRINT_MEMREF:
            kind = _PRINT_MEMREF[name]
            ok = len(ft.inputs) == 1 and not ft.results and \
                isinstance(ft.inputs[0], (MemRefType, UnrankedMemRefType)) and \
                str(ft.inputs[0].element_type) == kind
            if not ok:
                raise CodegenError(f"runtime function @{name} must be declared as "
                                   f"(memref<*x{kind}>) -> () (got {ft})", f.loc)
            self._check_static_types(f, ft.inputs)
            return _Callee("print_memref", f, self.runtime(f"polyopt_print_memref_{kind}"),
                           print_kind=kind)
        if name == "rtclock":
            if ft.inputs or [str(t) for t in ft.results] != ["f64"]:
                raise CodegenError(f"runtime function @rtclock must be declared as () -> f64 "
                                   f"(got {ft})", f.loc)
            return _Callee("rtclock", f, self.runtime("polyopt_rtclock"))
        if name in _RUNTIME_SCALAR:
            sym, ins, _ = _RUNTIME_SCALAR[name]
            if tuple(str(t) for t in ft.inputs) != ins or ft.results:
                raise CodegenError(f"runtime function @{name} must be declared as "
                                   f"({', '.join(ins)}) -> () (got {ft})", f.loc)
            return _Callee("runtime", f, self.runtime(sym))
        # a C symbol of the process (or a polyopt runtime symbol)
        if not _c_symbol_exists(name):
            raise CodegenError(f"undefined external function '@{name}' (declare only polyopt "
                               "runtime functions or C symbols)", f.loc)
        self._check_static_types(f, ft.inputs + ft.results)
        for t in ft.inputs + ft.results:
            if isinstance(t, UnrankedMemRefType):
                raise CodegenError(f"external function @{name}: unranked memrefs cannot be "
                                   "passed to C functions", f.loc)
        try:
            fnty = self.abi_function_type(ft, f.loc)
        except _Unsupported as exc:
            raise CodegenError(f"external function @{name}: {exc}", f.loc) from None
        return _Callee("extern", f, self.get_function(name, fnty, f.loc))

    def _microkernel_wrapper(self, f) -> _Callee:
        """``func.func private @w(...) attributes {polyopt.blis_kernel = "<symbol>"}``: define
        ``@w`` around the BLIS micro-kernel (:func:`microkernels.define_wrapper`)."""
        name = f.sym_name
        attr = f.attributes[microkernels.WRAPPER_ATTR]
        if not isinstance(attr, StringAttr):
            raise CodegenError(f"@{name}: '{microkernels.WRAPPER_ATTR}' must be a string (the "
                               f"micro-kernel's symbol), got {attr}", f.loc)
        kernel = microkernels.lookup(attr.value)
        if kernel is None:
            known = ", ".join(k.symbol for k in microkernels.REGISTRY)
            raise CodegenError(f"@{name}: unknown BLIS micro-kernel '{attr.value}' (known: "
                               f"{known})", f.loc)
        ft = f.function_type
        memref = f"memref<...x{kernel.dtype}>"
        want = [memref if p in ("A", "B", "C") else "index" for p in microkernels.WRAPPER_PARAMS]

        def matches(t, w) -> bool:
            if w == "index":
                return isinstance(t, IndexType)
            return isinstance(t, MemRefType) and t.has_static_shape and \
                str(t.element_type) == kernel.dtype
        if ft.results or len(ft.inputs) != len(want) or \
                not all(matches(t, w) for t, w in zip(ft.inputs, want)):
            raise CodegenError(f"the wrapper @{name} of {kernel.symbol} must have the type "
                               f"({', '.join(want)}) -> () (arguments "
                               f"{', '.join(microkernels.WRAPPER_PARAMS)}; statically shaped "
                               f"memrefs), got {ft}", f.loc)
        clash = next((op for op in self.module.regions[0].blocks[0].ops
                      if op.name == "func.func" and op.sym_name == kernel.symbol), None)
        if clash is not None:
            raise CodegenError(f"@{kernel.symbol} is the symbol of the BLIS micro-kernel that "
                               f"@{name} calls; no function of the module may have that name",
                               clash.loc)
        try:
            microkernels.load_microkernel(kernel, self.target)
            fn = microkernels.define_wrapper(self.llmod, name, kernel)
        except microkernels.MicroKernelError as exc:
            raise CodegenError(f"@{name}: {exc}", f.loc) from None
        attrs = _FnAttrs(self.fn_attr_strings)
        attrs.add("nounwind")
        fn.attributes = attrs
        return _Callee("defined", f, fn)

    # -- numpy signatures ---------------------------------------------------------------------

    def _signature(self, f) -> FunctionSignature:
        ft = f.function_type
        args: list = []
        results: list = []
        problems: list[str] = []
        for i, t in enumerate(ft.inputs):
            name = f"arg{i}"
            if isinstance(t, MemRefType):
                et = t.element_type
                vshape: tuple = ()
                if isinstance(et, VectorType):
                    vshape = tuple(et.shape)
                    packed = self.abi_size(self.mem_type(et)) == \
                        et.num_elements * self.abi_size(self.mem_type(et.element_type))
                    if not packed:
                        problems.append(f"argument #{i} has padded vector elements ('{t}')")
                        continue
                    et = et.element_type
                dtype = _numpy_dtype_name(et)
                if dtype is None:
                    problems.append(f"argument #{i} has unsupported element type '{et}'")
                    continue
                shape = tuple(t.shape) + vshape
                phys = tuple(physical_shape(t, f.loc)) + vshape
                args.append(MemRefArg(name, shape, dtype,
                                      physical_shape=None if phys == shape else phys))
            else:
                dtype = _numpy_dtype_name(t)
                if dtype is None:
                    problems.append(f"argument #{i} has type '{t}'")
                    continue
                args.append(ScalarArg(name, dtype))
        for i, t in enumerate(ft.results):
            dtype = _numpy_dtype_name(t)
            if dtype is None:
                kind = "a memref" if isinstance(t, MemRefType) else f"type '{t}'"
                problems.append(f"result #{i} is {kind}, which cannot be returned to numpy")
                continue
            results.append(ScalarArg(f"result{i}", dtype))
        return FunctionSignature(f.sym_name, args, results,
                                 "; ".join(problems) if problems else None)


def _numpy_dtype_name(t: Type) -> Optional[str]:
    if isinstance(t, IndexType):
        return "index"
    if isinstance(t, IntegerType) and t.width in (1, 8, 16, 32, 64):
        return f"i{t.width}"
    if isinstance(t, FloatType) and t.width in (32, 64):
        return f"f{t.width}"
    return None


# ---------------------------------------------------------------------------------------------
# Function lowering


class _FunctionLowering:
    def __init__(self, ml: _ModuleLowering, func, llfn: ir.Function):
        self.ml = ml
        self.func = func
        self.fn = llfn
        self.values: dict[Value, Any] = {}       # MLIR value -> ir.Value or _Mem
        self.forms: dict[Value, _Lin] = {}       # index values with a known affine form
        self.leaf_values: dict[int, ir.Value] = {}
        self.leaf_ranges: dict[int, _Range] = {}
        self.heap_buffers: list[ir.Value] = []  # big allocas, freed at every return
        self.op: Optional[Operation] = None

    # -- entry -----------------------------------------------------------------------------

    def run(self) -> None:
        f = self.func
        region = f.regions[0]
        if len(region.blocks) != 1:
            raise CodegenError(f"function @{f.sym_name} has {len(region.blocks)} blocks; "
                               "multi-block functions are not supported", f.loc)
        self.entry = self.fn.append_basic_block("entry")
        body = self.fn.append_basic_block("body")
        self.entry_builder = ir.IRBuilder(self.entry)
        self.b = ir.IRBuilder(body)
        ft = f.function_type
        block = region.blocks[0]
        for i, (arg, t) in enumerate(zip(block.args, ft.inputs)):
            llarg = self.fn.args[i]
            llarg.name = f"arg{i}"
            if isinstance(t, MemRefType):
                self.values[arg] = _Mem(llarg, t, self.ml.scalar_align(t))
            else:
                self.values[arg] = llarg
        self.out_ptrs = list(self.fn.args[len(ft.inputs):]) if len(ft.results) > 1 else []
        for i, p in enumerate(self.out_ptrs):
            p.name = f"out{i}"
        term = self.lower_ops(block)
        if term is None or term.name != "func.return":
            raise CodegenError(f"function @{f.sym_name} must end with 'func.return'", f.loc)
        self.with_op(term, self.lower_return)
        self.entry_builder.branch(body)

    # -- value access --------------------------------------------------------------------------

    def get(self, v: Value) -> ir.Value:
        x = self.values.get(v)
        if x is None:
            raise CodegenError(f"value used before its definition while lowering "
                               f"'{self.op.name if self.op else '?'}'",
                               self.op.loc if self.op else None)
        return x.ptr if isinstance(x, _Mem) else x

    def mem(self, v: Value) -> _Mem:
        x = self.values.get(v)
        if not isinstance(x, _Mem):
            raise CodegenError(f"'{self.op.name}': expected a memref operand",
                               self.op.loc if self.op else None)
        return x

    def bind(self, v: Value, x) -> None:
        self.values[v] = x

    def bind_llvm(self, v: Value, llv: ir.Value) -> None:
        """Bind an LLVM value of MLIR type ``v.type`` (wrapping memref pointers)."""
        t = v.type
        if isinstance(t, MemRefType):
            if not t.has_static_shape:
                raise CodegenError(DYNAMIC_DIMS_MESSAGE, self.op.loc)
            self.values[v] = _Mem(llv, t, self.ml.scalar_align(t))
        elif isinstance(t, UnrankedMemRefType):
            raise CodegenError(f"'{self.op.name}': unranked memref values can only come from "
                               "'memref.cast'", self.op.loc)
        else:
            self.values[v] = llv

    # -- op dispatch ---------------------------------------------------------------------------

    def with_op(self, op: Operation, fn: Callable, *args):
        saved = self.op
        self.op = op
        try:
            return fn(op, *args)
        except _Unsupported as exc:
            raise CodegenError(f"'{op.name}': {exc}", op.loc) from None
        except _DivByZero:
            raise CodegenError(f"'{op.name}': division by zero in an affine expression",
                               op.loc) from None
        finally:
            self.op = saved

    def lower_ops(self, block: Block) -> Optional[Operation]:
        """Lower every op of ``block`` but its terminator, which is returned."""
        ops = block.ops
        term = ops[-1] if ops and ops[-1].name in ("func.return", "affine.yield") else None
        for op in ops:
            if op is term:
                break
            handler = _HANDLERS.get(op.name)
            if handler is None:
                if op.name in _MUST_EXPAND:
                    raise CodegenError(f"'{op.name}' must be expanded before lowering", op.loc)
                raise CodegenError(f"cannot lower '{op.name}' to LLVM IR (unsupported operation)",
                                   op.loc)
            self.with_op(op, lambda o, h=handler: h(self, o))
        return term

    def lower_region_block(self, block: Block) -> list:
        """Lower a single-block region body; returns its ``affine.yield`` operand values."""
        term = self.lower_ops(block)
        if term is None:
            return []
        return [self.get(v) for v in term.operands]

    # -- affine forms ---------------------------------------------------------------------------

    def leaf(self, llv: ir.Value) -> _Lin:
        if isinstance(llv, ir.Constant) and isinstance(llv.constant, int):
            return _Lin.constant(llv.constant)
        self.leaf_values[id(llv)] = llv
        return _Lin.term(("v", id(llv)))

    def form_of(self, v: Value) -> _Lin:
        f = self.forms.get(v)
        if f is not None:
            return f
        return self.leaf(self.get(v))

    def flatten(self, e: AffineExpr, dims: Sequence[_Lin], syms: Sequence[_Lin]) -> _Lin:
        if isinstance(e, AffineConstantExpr):
            return _Lin.constant(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymbolExpr):
            return syms[e.position]
        assert isinstance(e, AffineBinaryExpr)
        a = self.flatten(e.lhs, dims, syms)
        b = self.flatten(e.rhs, dims, syms)
        k = e.kind
        if k is AffineExprKind.ADD:
            return a.add(b)
        if k is AffineExprKind.MUL:
            return self.lin_mul(a, b)
        if k is AffineExprKind.FLOORDIV:
            return self.lin_floordiv(a, b)
        if k is AffineExprKind.CEILDIV:
            return self.lin_ceildiv(a, b)
        return self.lin_mod(a, b)

    def map_forms(self, amap: AffineMap, operands: Sequence[Value]) -> list[_Lin]:
        forms = [self.form_of(v) for v in operands]
        dims, syms = forms[:amap.num_dims], forms[amap.num_dims:]
        return [self.flatten(r, dims, syms) for r in amap.results]

    def lin_mul(self, a: _Lin, b: _Lin) -> _Lin:
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
        return _Lin.term(("mul", a, b))

    def _split(self, a: _Lin, c: int) -> tuple[_Lin, _Lin]:
        """``a = c * q + r`` with the terms whose coefficient is a multiple of ``c`` in ``q``
        and the constant remainder in [0, c)."""
        q_terms, r_terms = {}, {}
        for k, coeff in a.terms.items():
            if coeff % c == 0:
                q_terms[k] = coeff // c
            else:
                r_terms[k] = coeff
        qc, rc = divmod(a.const, c)
        return _Lin(q_terms, qc), _Lin(r_terms, rc)

    def lin_floordiv(self, a: _Lin, b: _Lin) -> _Lin:
        if not b.is_const:
            return _Lin.term(("fdiv", a, b))
        c = b.const
        if c == 0:
            raise _DivByZero
        if c < 0:
            return self.lin_floordiv(a.scale(-1), _Lin.constant(-c))
        if a.is_const:
            return _Lin.constant(a.const // c)
        if c == 1:
            return a
        q, r = self._split(a, c)
        if r.is_const:
            return q  # r.const in [0, c)
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return q.add(_Lin.constant(lo // c))
        return q.add(_Lin.term(("fdiv", r, _Lin.constant(c))))

    def lin_ceildiv(self, a: _Lin, b: _Lin) -> _Lin:
        if not b.is_const:
            return _Lin.term(("cdiv", a, b))
        c = b.const
        if c == 0:
            raise _DivByZero
        if c < 0:
            return self.lin_ceildiv(a.scale(-1), _Lin.constant(-c))
        if a.is_const:
            return _Lin.constant(-((-a.const) // c))
        if c == 1:
            return a
        q, r = self._split(a, c)
        if r.is_const:
            return q.add(_Lin.constant(1 if r.const > 0 else 0))
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and -((-lo) // c) == -((-hi) // c):
            return q.add(_Lin.constant(-((-lo) // c)))
        return q.add(_Lin.term(("cdiv", r, _Lin.constant(c))))

    def lin_mod(self, a: _Lin, b: _Lin) -> _Lin:
        if not b.is_const:
            return _Lin.term(("mod", a, b))
        c = b.const
        if c == 0:
            raise _DivByZero
        if c < 0:  # a - c * floor(a / c), the result lies in (c, 0]
            return a.add(self.lin_floordiv(a, b).scale(-c))
        if a.is_const:
            return _Lin.constant(a.const % c)
        if c == 1:
            return _Lin.constant(0)
        _, r = self._split(a, c)
        if r.is_const:
            return r
        lo, hi = self.lin_range(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return r.add(_Lin.constant(-(lo // c) * c))
        return _Lin.term(("mod", r, _Lin.constant(c)))

    def lin_range(self, a: _Lin) -> _Range:
        lo = hi = a.const
        for key, c in a.terms.items():
            tlo, thi = _range_scale(self.key_range(key), c)
            lo = None if lo is None or tlo is None else lo + tlo
            hi = None if hi is None or thi is None else hi + thi
            if lo is None and hi is None:
                break
        return lo, hi

    def key_range(self, key) -> _Range:
        tag = key[0]
        if tag == "v":
            return self.leaf_ranges.get(key[1], (None, None))
        a, b = key[1], key[2]
        if tag == "mul":
            (alo, ahi), (blo, bhi) = self.lin_range(a), self.lin_range(b)
            if None in (alo, ahi, blo, bhi):
                return None, None
            corners = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return min(corners), max(corners)
        if not (b.is_const and b.const > 0):
            return None, None
        c = b.const
        lo, hi = self.lin_range(a)
        if tag == "fdiv":
            return (None if lo is None else lo // c, None if hi is None else hi // c)
        if tag == "cdiv":
            return (None if lo is None else -((-lo) // c), None if hi is None else -((-hi) // c))
        if lo is not None and hi is not None and lo // c == hi // c:
            return lo % c, hi % c
        return 0, c - 1

    def emit_lin(self, a: _Lin, cache: Optional[dict] = None) -> ir.Value:
        if cache is None:
            cache = {}
        hit = cache.get(a)
        if hit is not None:
            return hit
        b = self.b
        acc = None
        # positive coefficients first, so that the sum starts without a negation
        for key, c in sorted(a.terms.items(), key=lambda kc: kc[1] < 0):
            v = cache.get(key)
            if v is None:
                v = self.emit_key(key, cache)
                cache[key] = v
            if acc is not None and c < 0:
                acc = b.sub(acc, v if c == -1 else b.mul(v, _i64(-c), flags=_NSW), flags=_NSW)
                continue
            t = v if c == 1 else b.mul(v, _i64(c), flags=_NSW)
            acc = t if acc is None else b.add(acc, t, flags=_NSW)
        if acc is None:
            result = _i64(a.const)
        elif a.const:
            result = b.add(acc, _i64(a.const), flags=_NSW)
        else:
            result = acc
        cache[a] = result
        return result

    def emit_key(self, key, cache: dict) -> ir.Value:
        tag = key[0]
        if tag == "v":
            return self.leaf_values[key[1]]
        b = self.b
        a, d = key[1], key[2]
        va = self.emit_lin(a, cache)
        if tag == "mul":
            return b.mul(va, self.emit_lin(d, cache), flags=_NSW)
        if d.is_const and d.const > 0:
            c = d.const
            lo, _ = self.lin_range(a)
            nonneg = lo is not None and lo >= 0
            k = c.bit_length() - 1
            if tag == "fdiv":
                if _is_pow2(c):
                    return (b.lshr if nonneg else b.ashr)(va, _i64(k))
                if nonneg:
                    return b.udiv(va, _i64(c))
                return _floordiv_positive(b, va, _i64(c))
            if tag == "cdiv":
                if nonneg:
                    biased = b.add(va, _i64(c - 1), flags=("nuw", "nsw"))
                    return b.lshr(biased, _i64(k)) if _is_pow2(c) else b.udiv(biased, _i64(c))
                if _is_pow2(c):
                    return b.sub(_i64(0), b.ashr(b.sub(_i64(0), va), _i64(k)))
                return _ceildiv_positive(b, va, _i64(c))
            # mod
            if _is_pow2(c):
                return b.and_(va, _i64(c - 1))
            if nonneg:
                return b.urem(va, _i64(c))
            return _mod_positive(b, va, _i64(c))
        vd = self.emit_lin(d, cache)
        if tag == "fdiv":
            return _floordiv_signed(b, va, vd)
        if tag == "cdiv":
            return _ceildiv_signed(b, va, vd)
        return _mod_signed(b, va, vd)

    def emit_expr_values(self, amap: AffineMap, operands: Sequence[Value]) -> list[ir.Value]:
        cache: dict = {}
        return [self.emit_lin(f, cache) for f in self.map_forms(amap, operands)]

    def combine_bound(self, forms: list[_Lin], is_max: bool) -> tuple[ir.Value, _Range]:
        """max (lower bounds) or min (upper bounds) of the forms, with its range."""
        # drop forms that are provably dominated by a constant one
        consts = [f.const for f in forms if f.is_const]
        ranges = [self.lin_range(f) for f in forms]
        if consts:
            best = max(consts) if is_max else min(consts)
            keep = []
            for f, (lo, hi) in zip(forms, ranges):
                if f.is_const:
                    continue
                if is_max and hi is not None and hi <= best:
                    continue
                if not is_max and lo is not None and lo >= best:
                    continue
                keep.append(f)
            forms = keep + [_Lin.constant(best)]
            ranges = [self.lin_range(f) for f in forms]
        cache: dict = {}
        vals = [self.emit_lin(f, cache) for f in forms]
        result = vals[0]
        name = "llvm.smax.i64" if is_max else "llvm.smin.i64"
        for v in vals[1:]:
            result = self.b.call(self.ml.intrinsic(name, I64, [I64, I64]), [result, v])
        los = [lo for lo, _ in ranges]
        his = [hi for _, hi in ranges]
        if is_max:
            known = [x for x in los if x is not None]
            rlo = max(known) if known else None
            rhi = None if None in his else max(his)
        else:
            known = [x for x in his if x is not None]
            rhi = min(known) if known else None
            rlo = None if None in los else min(los)
        return result, (rlo, rhi)

    # -- memory addressing ------------------------------------------------------------------

    def address(self, mem: _Mem, subscripts: Sequence[_Lin], access_ty: ir.Type,
                inbounds: bool = True) -> tuple[ir.Value, int]:
        """Pointer to the element at logical ``subscripts`` and the alignment it is known to
        have for an access of type ``access_ty``."""
        lin = self.ml.linearize(mem.type, self.op.loc)
        if len(subscripts) != mem.type.rank:
            raise CodegenError(f"'{self.op.name}': {len(subscripts)} subscripts for a memref of "
                               f"rank {mem.type.rank}", self.op.loc)
        off = self.flatten(lin.results[0], list(subscripts), [])
        elem_ty = self.ml.mem_type(mem.type.element_type)
        esize = self.ml.abi_size(elem_ty)
        g = off.divisor() * esize
        align = mem.align if g == 0 else min(mem.align, _lowbit(g))
        align = max(1, min(align, self.ml.abi_align(access_ty)))
        if off.is_const and off.const == 0:
            return mem.ptr, align
        offset = self.emit_lin(off)
        return self.b.gep(mem.ptr, [offset], inbounds=inbounds, source_etype=elem_ty), align

    def load_elem(self, mem: _Mem, subs: Sequence[_Lin]) -> ir.Value:
        et = mem.type.element_type
        mty = self.ml.mem_type(et)
        ptr, align = self.address(mem, subs, mty)
        v = self.b.load(ptr, typ=mty, align=align)
        if isinstance(et, IntegerType) and et.width == 1:
            v = self.b.trunc(v, I1)
        return v

    def store_elem(self, value: ir.Value, mem: _Mem, subs: Sequence[_Lin]) -> None:
        et = mem.type.element_type
        mty = self.ml.mem_type(et)
        ptr, align = self.address(mem, subs, mty)
        if isinstance(et, IntegerType) and et.width == 1:
            value = self.b.zext(value, I8)
        self.b.store(value, ptr, align=align)

    def vector_rows(self, mem: _Mem, subs: Sequence[_Lin], vt: VectorType):
        """(row position, pointer, alignment, row type) for a vector access of type ``vt``."""
        mt = mem.type
        if isinstance(mt.element_type, VectorType):
            if mt.element_type != vt:
                raise _Unsupported(f"vector type '{vt}' does not match the memref element type "
                                   f"'{mt.element_type}'")
            ty = self.ml.mem_type(vt)
            ptr, align = self.address(mem, subs, ty)
            return [((), ptr, align, ty)]
        if vt.element_type != mt.element_type:
            raise _Unsupported(f"vector element type '{vt.element_type}' does not match the "
                               f"memref element type '{mt.element_type}'")
        if isinstance(vt.element_type, IntegerType) and vt.element_type.width == 1:
            raise _Unsupported("vector loads/stores of i1 memrefs are not supported")
        m = len(vt.shape)
        if m > mt.rank:
            raise _Unsupported(f"a {m}-D vector access needs a memref of rank >= {m}")
        row_ty = ir.VectorType(self.ml.scalar_type(vt.element_type), vt.shape[-1])
        rows = []
        n = mt.rank
        for pos in _index_space(vt.shape[:-1]):
            s = list(subs)
            for i, r in enumerate(pos):
                if r:
                    s[n - m + i] = s[n - m + i].add(_Lin.constant(r))
            ptr, align = self.address(mem, s, row_ty)
            rows.append((pos, ptr, align, row_ty))
        return rows

    def load_vector(self, mem: _Mem, subs: Sequence[_Lin], vt: VectorType) -> ir.Value:
        rows = self.vector_rows(mem, subs, vt)
        if len(rows) == 1 and not rows[0][0]:
            _, ptr, align, ty = rows[0]
            return self.b.load(ptr, typ=ty, align=align)
        agg = ir.Constant(self.ml.type(vt), ir.Undefined)
        for pos, ptr, align, ty in rows:
            row = self.b.load(ptr, typ=ty, align=align)
            agg = self.b.insert_value(agg, row, list(pos))
        return agg

    def store_vector(self, value: ir.Value, mem: _Mem, subs: Sequence[_Lin],
                     vt: VectorType) -> None:
        rows = self.vector_rows(mem, subs, vt)
        if len(rows) == 1 and not rows[0][0]:
            _, ptr, align, _ = rows[0]
            self.b.store(value, ptr, align=align)
            return
        for pos, ptr, align, _ in rows:
            self.b.store(self.b.extract_value(value, list(pos)), ptr, align=align)

    # -- n-D vector helpers ----------------------------------------------------------------

    def map_nd(self, t: Type, fn: Callable, *vals, result_type: Optional[Type] = None):
        """Apply ``fn`` to the 1-D rows of n-D vector operands (non-aggregate operands, e.g. a
        scalar select condition, are passed through); ``result_type`` defaults to ``t``."""
        rt = result_type if result_type is not None else t
        if not isinstance(t, VectorType) or len(t.shape) <= 1:
            return fn(*vals)
        agg = ir.Constant(self.ml.type(rt), ir.Undefined)
        for pos in _index_space(t.shape[:-1]):
            rows = [self.b.extract_value(v, list(pos)) if isinstance(v.type, ir.ArrayType) else v
                    for v in vals]
            agg = self.b.insert_value(agg, fn(*rows), list(pos))
        return agg

    def splat(self, scalar: ir.Value, n: int) -> ir.Value:
        vty = ir.VectorType(scalar.type, n)
        if isinstance(scalar, ir.Constant):
            return ir.Constant(vty, [scalar] * n)
        v = self.b.insert_element(ir.Constant(vty, ir.Undefined), scalar, _int_const(I32, 0))
        return self.b.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, n), [0] * n))

    def broadcast(self, v: ir.Value, src: Type, dst_shape: tuple, elem: Type) -> ir.Value:
        if not isinstance(src, VectorType):
            row = self.splat(v, dst_shape[-1])
            return self.replicate(row, dst_shape[:-1], ir.VectorType(row.type.element,
                                                                     dst_shape[-1]))
        sshape = tuple(src.shape)
        if sshape == dst_shape:
            return v
        if len(sshape) < len(dst_shape):
            inner = self.broadcast(v, src, dst_shape[1:], elem)
            return self.replicate(inner, dst_shape[:1], inner.type)
        # same rank
        if len(dst_shape) == 1:  # vector<1xT> -> vector<NxT>
            x = self.b.extract_element(v, _int_const(I32, 0))
            return self.splat(x, dst_shape[0])
        sub_src = VectorType(sshape[1:], elem)
        if sshape[0] == 1:
            inner = self.broadcast(self.b.extract_value(v, [0]), sub_src, dst_shape[1:], elem)
            return self.replicate(inner, dst_shape[:1], inner.type)
        agg = ir.Constant(self.ml.type(VectorType(dst_shape, elem)), ir.Undefined)
        for i in range(dst_shape[0]):
            row = self.broadcast(self.b.extract_value(v, [i]), sub_src, dst_shape[1:], elem)
            agg = self.b.insert_value(agg, row, [i])
        return agg

    def replicate(self, v: ir.Value, outer: tuple, inner_ty: ir.Type) -> ir.Value:
        """An aggregate of shape ``outer`` whose every element is ``v``."""
        if not outer:
            return v
        ty = inner_ty
        for d in reversed(outer):
            ty = ir.ArrayType(ty, d)
        agg = ir.Constant(ty, ir.Undefined)
        for pos in _index_space(outer):
            agg = self.b.insert_value(agg, v, list(pos))
        return agg

    # -- allocation --------------------------------------------------------------------------

    def heap_alloc(self, builder: ir.IRBuilder, nbytes: int, align: int) -> ir.Value:
        size = max(align, -(-nbytes // align) * align)
        return builder.call(self.ml.runtime("aligned_alloc"), [_i64(align), _i64(size)])

    # -- return ------------------------------------------------------------------------------

    def lower_return(self, op: Operation) -> None:
        b = self.b
        for p in self.heap_buffers:
            b.call(self.ml.runtime("free"), [p])
        vals = [self.get(v) for v in op.operands]
        ft = self.func.function_type
        if len(vals) != len(ft.results):
            raise CodegenError("'func.return' operand count does not match the function type",
                               op.loc)
        if not vals:
            b.ret_void()
        elif len(vals) == 1:
            b.ret(vals[0])
        else:
            for v, p, t in zip(vals, self.out_ptrs, ft.results):
                if isinstance(t, IntegerType) and t.width == 1:
                    v = b.zext(v, I8)
                b.store(v, p)
            b.ret_void()


def _opaque_alloca(builder: ir.IRBuilder, ty: ir.Type) -> ir.Value:
    """``alloca ty`` typed as an opaque ``ptr`` (llvmlite types allocas as typed pointers)."""
    a = builder.alloca(ty)
    a.type = PTR
    return a


def _index_space(shape: Sequence[int]):
    """All index tuples of ``shape`` in row-major order (``()`` once for an empty shape)."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in _index_space(shape[1:]):
            yield (i,) + rest


# ---------------------------------------------------------------------------------------------
# Integer division expansions (MLIR lower-affine / arith semantics)


def _floordiv_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """floor(a / c) for c > 0 (MLIR's lower-affine expansion)."""
    zero = ir.Constant(a.type, 0)
    m1 = ir.Constant(a.type, -1)
    negative = b.icmp_signed("<", a, zero)
    dividend = b.select(negative, b.sub(m1, a), a)
    q = b.sdiv(dividend, c)
    return b.select(negative, b.sub(m1, q), q)


def _ceildiv_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """ceil(a / c) for c > 0 (MLIR's lower-affine expansion)."""
    zero = ir.Constant(a.type, 0)
    one = ir.Constant(a.type, 1)
    nonpos = b.icmp_signed("<=", a, zero)
    dividend = b.select(nonpos, b.sub(zero, a), b.sub(a, one))
    q = b.sdiv(dividend, c)
    return b.select(nonpos, b.sub(zero, q), b.add(q, one))


def _mod_positive(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    """a mod c in [0, c) for c > 0."""
    r = b.srem(a, c)
    neg = b.icmp_signed("<", r, ir.Constant(a.type, 0))
    return b.select(neg, b.add(r, c), r)


def _signs_differ_and_inexact(b: ir.IRBuilder, r: ir.Value, d: ir.Value) -> ir.Value:
    """``r != 0 and sign(r) != sign(d)``: the truncated quotient must be decremented."""
    zero = _zero_like(r.type)
    nonzero = b.icmp_signed("!=", r, zero)
    differ = b.icmp_signed("<", b.xor(r, d), zero)
    return b.and_(nonzero, differ)


def _zero_like(t: ir.Type) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, 0)] * t.count)
    return ir.Constant(t, 0)


def _floordiv_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """floor(a / d) for any non-zero d (scalars or vectors)."""
    q = b.sdiv(a, d)
    r = b.srem(a, d)
    adjust = _signs_differ_and_inexact(b, r, d)
    return b.sub(q, b.zext(adjust, a.type))


def _ceildiv_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """ceil(a / d) for any non-zero d."""
    q = b.sdiv(a, d)
    r = b.srem(a, d)
    zero = _zero_like(a.type)
    nonzero = b.icmp_signed("!=", r, zero)
    same = b.icmp_signed(">=", b.xor(r, d), zero)
    return b.add(q, b.zext(b.and_(nonzero, same), a.type))


def _mod_signed(b: ir.IRBuilder, a: ir.Value, d: ir.Value) -> ir.Value:
    """a - d * floor(a / d) for any non-zero d."""
    r = b.srem(a, d)
    adjust = _signs_differ_and_inexact(b, r, d)
    return b.add(r, b.select(adjust, d, _zero_like(a.type)))


# ---------------------------------------------------------------------------------------------
# Op handlers: handler(lowering, op)

_HANDLERS: dict[str, Callable] = {}


def _handles(*names):
    def deco(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn
    return deco


# -- func ------------------------------------------------------------------------------------


@_handles("func.call")
def _lower_call(L: _FunctionLowering, op: Operation) -> None:
    name = op.attributes["callee"].name
    callee = L.ml.callees.get(name)
    if callee is None:
        raise CodegenError(f"call to unknown function '@{name}'", op.loc)
    b = L.b
    if callee.kind == "print_memref":
        src = op.operands[0]
        mem = L.mem(src)
        t = mem.type
        if not _is_row_major(t):
            raise CodegenError(f"'{op.name}' @{name}: printing a memref with a non-identity "
                               f"layout ('{t}') is not supported", op.loc)
        sizes = ir.Constant(ir.ArrayType(I64, max(1, t.rank)), [_i64(d) for d in t.shape] or
                            [_i64(0)])
        gv = L.ml.global_constant(sizes, "sizes")
        b.call(callee.llfn, [mem.ptr, _i64(t.rank), gv])
        return
    if callee.kind == "rtclock":
        L.bind(op.results[0], b.call(callee.llfn, []))
        return
    if callee.kind == "runtime":
        b.call(callee.llfn, [L.get(v) for v in op.operands])
        return
    ft = callee.func.function_type
    args = [L.get(v) for v in op.operands]
    results = op.results
    if len(results) <= 1:
        r = b.call(callee.llfn, args)
        if results:
            L.bind_llvm(results[0], r)
        return
    slots = []
    for t in ft.results:
        ty = I8 if isinstance(t, IntegerType) and t.width == 1 else L.ml.type(t)
        slot = _opaque_alloca(L.entry_builder, ty)
        slots.append((slot, ty, t))
    b.call(callee.llfn, args + [s for s, _, _ in slots])
    for res, (slot, ty, t) in zip(results, slots):
        v = b.load(slot, typ=ty)
        if ty is I8 and not (isinstance(t, IntegerType) and t.width == 8):
            v = b.trunc(v, I1)
        L.bind_llvm(res, v)


def _is_row_major(t: MemRefType) -> bool:
    return is_identity_layout(t)


# -- arith -----------------------------------------------------------------------------------


def _constant_value(L: _FunctionLowering, attr, t: Type) -> ir.Constant:
    ml = L.ml
    if isinstance(t, VectorType):
        values = getattr(attr, "values", None)
        if values is None:
            raise _Unsupported(f"unsupported vector constant '{attr}'")
        et = ml.scalar_type(t.element_type)
        elems = [_scalar_constant(et, v) for v in values]
        if len(elems) == 1:
            elems = elems * t.num_elements
        if len(elems) != t.num_elements:
            raise _Unsupported(f"dense constant has {len(elems)} elements, '{t}' needs "
                               f"{t.num_elements}")
        n = t.shape[-1]
        rows = [ir.Constant(ir.VectorType(et, n), elems[i:i + n]) for i in range(0, len(elems), n)]

        def nest(shape, rows):
            if len(shape) == 1:
                return rows.pop(0)
            parts = [nest(shape[1:], rows) for _ in range(shape[0])]
            return ir.Constant(ir.ArrayType(parts[0].type, shape[0]), parts)
        return nest(tuple(t.shape), rows)
    et = ml.scalar_type(t)
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return _scalar_constant(et, attr.value)
    raise _Unsupported(f"unsupported constant value '{attr}'")


def _scalar_constant(ty: ir.Type, v) -> ir.Constant:
    if isinstance(ty, ir.IntType):
        return _int_const(ty, int(v))
    return ir.Constant(ty, float(v))


@_handles("arith.constant")
def _lower_constant(L: _FunctionLowering, op: Operation) -> None:
    res = op.results[0]
    c = _constant_value(L, op.attributes["value"], res.type)
    L.bind(res, c)
    if isinstance(res.type, IndexType):
        L.forms[res] = _Lin.constant(c.constant)


_INT_BINOPS = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv",
    "arith.divui": "udiv", "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_",
    "arith.ori": "or_", "arith.xori": "xor", "arith.shli": "shl", "arith.shrsi": "ashr",
    "arith.shrui": "lshr",
}
_INT_MINMAX = {"arith.maxsi": "smax", "arith.minsi": "smin", "arith.maxui": "umax",
               "arith.minui": "umin"}
_FLOAT_BINOPS = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul",
                 "arith.divf": "fdiv", "arith.remf": "frem"}
_FLOAT_MINMAX = {"arith.maximumf": "maximum", "arith.minimumf": "minimum",
                 "arith.maxnumf": "maxnum", "arith.minnumf": "minnum"}


def _intrinsic_suffix(ty: ir.Type) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_intrinsic_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    raise _Unsupported(f"no intrinsic for LLVM type {ty}")


def _call_intrinsic(L: _FunctionLowering, base: str, args: Sequence[ir.Value],
                    flags=()) -> ir.Value:
    ty = args[0].type
    fn = L.ml.intrinsic(f"llvm.{base}.{_intrinsic_suffix(ty)}", ty, [a.type for a in args])
    return L.b.call(fn, list(args), fastmath=flags)


def _check_float(t: Type) -> None:
    et = t.element_type if isinstance(t, VectorType) else t
    if not isinstance(et, FloatType) or et.width not in (32, 64):
        raise _Unsupported(f"type '{t}' is not supported by the LLVM lowering (use f32 or f64)")


@_handles(*_INT_BINOPS, *_INT_MINMAX, "arith.floordivsi", "arith.ceildivsi")
def _lower_int_binary(L: _FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    L.ml.type(t)
    a, c = (L.get(v) for v in op.operands)
    name = op.name
    b = L.b

    def row(x, y):
        if name in _INT_BINOPS:
            return getattr(b, _INT_BINOPS[name])(x, y)
        if name in _INT_MINMAX:
            return _call_intrinsic(L, _INT_MINMAX[name], [x, y])
        if name == "arith.floordivsi":
            return _floordiv_signed(b, x, y)
        return _ceildiv_signed(b, x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@_handles(*_FLOAT_BINOPS, *_FLOAT_MINMAX)
def _lower_float_binary(L: _FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    _check_float(t)
    a, c = (L.get(v) for v in op.operands)
    flags = _fastmath_flags(op)
    name = op.name
    b = L.b

    def row(x, y):
        if name in _FLOAT_BINOPS:
            return getattr(b, _FLOAT_BINOPS[name])(x, y, flags=flags)
        return _call_intrinsic(L, _FLOAT_MINMAX[name], [x, y])
    L.bind(op.results[0], L.map_nd(t, row, a, c))


@_handles("arith.negf")
def _lower_negf(L: _FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    _check_float(t)
    flags = _fastmath_flags(op)
    L.bind(op.results[0], L.map_nd(t, lambda x: L.b.fneg(x, flags=flags), L.get(op.operands[0])))


_ICMP = {"eq": ("s", "=="), "ne": ("s", "!="), "slt": ("s", "<"), "sle": ("s", "<="),
         "sgt": ("s", ">"), "sge": ("s", ">="), "ult": ("u", "<"), "ule": ("u", "<="),
         "ugt": ("u", ">"), "uge": ("u", ">=")}


@_handles("arith.cmpi", "arith.cmpf")
def _lower_cmp(L: _FunctionLowering, op: Operation) -> None:
    t = op.operands[0].type
    pred = op.predicate
    a, c = (L.get(v) for v in op.operands)
    b = L.b
    if op.name == "arith.cmpf":
        _check_float(t)
        flags = tuple(f for f in _fastmath_flags(op) if f != "contract")

        def row(x, y):
            return b.fcmp_ordered(pred, x, y, flags=flags)
    else:
        L.ml.type(t)
        sign, cmp = _ICMP[pred]

        def row(x, y):
            return (b.icmp_signed if sign == "s" else b.icmp_unsigned)(cmp, x, y)
    L.bind(op.results[0], L.map_nd(t, row, a, c, result_type=op.results[0].type))


@_handles("arith.select")
def _lower_select(L: _FunctionLowering, op: Operation) -> None:
    cond, x, y = (L.get(v) for v in op.operands)
    t = op.results[0].type
    if isinstance(t, MemRefType):
        mx, my = L.mem(op.operands[1]), L.mem(op.operands[2])
        L.bind(op.results[0], _Mem(L.b.select(cond, mx.ptr, my.ptr), t, min(mx.align, my.align)))
        return
    L.ml.type(t)
    if isinstance(t, VectorType) and not isinstance(op.operands[0].type, VectorType):
        L.bind(op.results[0], L.b.select(cond, x, y))  # one i1 selects the whole vector
        return
    L.bind(op.results[0], L.map_nd(t, lambda c, p, q: L.b.select(c, p, q), cond, x, y))


_CASTS = {"arith.sitofp": "sitofp", "arith.uitofp": "uitofp", "arith.fptosi": "fptosi",
          "arith.fptoui": "fptoui", "arith.extf": "fpext", "arith.truncf": "fptrunc",
          "arith.extsi": "sext", "arith.extui": "zext", "arith.trunci": "trunc"}


@_handles(*_CASTS, "arith.index_cast", "arith.index_castui", "arith.bitcast")
def _lower_cast(L: _FunctionLowering, op: Operation) -> None:
    src_t, dst_t = op.operands[0].type, op.results[0].type
    for t in (src_t, dst_t):
        if isinstance(t.element_type if isinstance(t, VectorType) else t, FloatType):
            _check_float(t)
    dst_ty = L.ml.type(dst_t)
    row_ty = dst_ty
    while isinstance(row_ty, ir.ArrayType):
        row_ty = row_ty.element
    v = L.get(op.operands[0])
    b = L.b
    name = op.name

    def row(x):
        if name in _CASTS:
            return getattr(b, _CASTS[name])(x, row_ty)
        if name == "arith.bitcast":
            return b.bitcast(x, row_ty)
        sw = x.type.element.width if isinstance(x.type, ir.VectorType) else x.type.width
        dw = row_ty.element.width if isinstance(row_ty, ir.VectorType) else row_ty.width
        if sw == dw:
            return x
        if sw > dw:
            return b.trunc(x, row_ty)
        return (b.zext if name == "arith.index_castui" else b.sext)(x, row_ty)
    L.bind(op.results[0], L.map_nd(src_t, row, v, result_type=dst_t))


# -- math / vector -----------------------------------------------------------------------------


@_handles("math.fma", "vector.fma")
def _lower_fma(L: _FunctionLowering, op: Operation) -> None:
    t = op.results[0].type
    _check_float(t)
    x, y, z = (L.get(v) for v in op.operands)
    flags = tuple(f for f in _fastmath_flags(op) if f != "contract")
    L.bind(op.results[0], L.map_nd(t, lambda a, b_, c: _call_intrinsic(L, "fma", [a, b_, c],
                                                                       flags), x, y, z))


@_handles("vector.broadcast")
def _lower_broadcast(L: _FunctionLowering, op: Operation) -> None:
    src = op.operands[0]
    dst_t = op.results[0].type
    L.ml.type(dst_t)
    L.bind(op.results[0], L.broadcast(L.get(src), src.type, tuple(dst_t.shape),
                                      dst_t.element_type))


_REDUCE = {  # kind -> (int intrinsic, float intrinsic, combining op for the accumulator)
    "add": ("vector.reduce.add", "vector.reduce.fadd", None),
    "mul": ("vector.reduce.mul", "vector.reduce.fmul", None),
    "minui": ("vector.reduce.umin", None, "umin"), "minsi": ("vector.reduce.smin", None, "smin"),
    "maxui": ("vector.reduce.umax", None, "umax"), "maxsi": ("vector.reduce.smax", None, "smax"),
    "and": ("vector.reduce.and", None, "and"), "or": ("vector.reduce.or", None, "or"),
    "xor": ("vector.reduce.xor", None, "xor"),
    "minnumf": (None, "vector.reduce.fmin", "minnum"),
    "maxnumf": (None, "vector.reduce.fmax", "maxnum"),
    "minimumf": (None, "vector.reduce.fminimum", "minimum"),
    "maximumf": (None, "vector.reduce.fmaximum", "maximum"),
}


@_handles("vector.reduction")
def _lower_reduction(L: _FunctionLowering, op: Operation) -> None:
    kind = op.kind
    vec = op.operands[0]
    acc = op.operands[1] if len(op.operands) > 1 else None
    vt = vec.type
    if not isinstance(vt, VectorType) or len(vt.shape) != 1:
        raise _Unsupported(f"only 1-D vector reductions are supported, got '{vt}'")
    rt = op.results[0].type
    is_float = isinstance(rt, FloatType)
    if is_float:
        _check_float(rt)
    ety = L.ml.scalar_type(rt)
    v = L.get(vec)
    b = L.b
    entry = _REDUCE.get(kind)
    if entry is None or entry[1 if is_float else 0] is None:
        raise _Unsupported(f"reduction kind '{kind}' on '{rt}' is not supported")
    iname, fname, combine = entry
    suffix = _intrinsic_suffix(v.type)
    fm = tuple(f for f in _fastmath_flags(op) if f != "contract")
    if is_float and kind in ("add", "mul"):
        start = L.get(acc) if acc is not None else ir.Constant(ety, 0.0 if kind == "add" else 1.0)
        fn = L.ml.intrinsic(f"llvm.{fname}.{suffix}", ety, [ety, v.type])
        L.bind(op.results[0], b.call(fn, [start, v], fastmath=fm))
        return
    fn = L.ml.intrinsic(f"llvm.{fname if is_float else iname}.{suffix}", ety, [v.type])
    r = b.call(fn, [v], fastmath=fm)
    if acc is not None:
        a = L.get(acc)
        if kind == "add":
            r = b.add(r, a)
        elif kind == "mul":
            r = b.mul(r, a)
        elif combine in ("and", "or", "xor"):
            r = {"and": b.and_, "or": b.or_, "xor": b.xor}[combine](r, a)
        else:
            r = _call_intrinsic(L, combine, [r, a])
    L.bind(op.results[0], r)


def _print_scalar(L: _FunctionLowering, v: ir.Value, t: Type) -> None:
    ml, b = L.ml, L.b
    if isinstance(t, FloatType):
        _check_float(t)
        b.call(ml.runtime("polyopt_print_f64" if t.width == 64 else "polyopt_print_f32"), [v])
    elif isinstance(t, IndexType):
        b.call(ml.runtime("polyopt_print_u64"), [v])
    elif isinstance(t, IntegerType):
        if t.width > 64:
            raise _Unsupported(f"printing '{t}' is not supported")
        if t.width < 64:
            v = (b.zext if t.width == 1 else b.sext)(v, I64)
        b.call(ml.runtime("polyopt_print_i64"), [v])
    else:
        raise _Unsupported(f"printing '{t}' is not supported")


def _print_vector(L: _FunctionLowering, v: ir.Value, t: VectorType) -> None:
    b, ml = L.b, L.ml
    b.call(ml.runtime("polyopt_print_open"), [])
    for i in range(t.shape[0]):
        if i:
            b.call(ml.runtime("polyopt_print_comma"), [])
        if len(t.shape) == 1:
            _print_scalar(L, b.extract_element(v, _int_const(I32, i)), t.element_type)
        else:
            _print_vector(L, b.extract_value(v, [i]), VectorType(t.shape[1:], t.element_type))
    b.call(ml.runtime("polyopt_print_close"), [])


@_handles("vector.print")
def _lower_print(L: _FunctionLowering, op: Operation) -> None:
    ml, b = L.ml, L.b
    src = op.operands[0] if op.operands else None
    if src is not None:
        t = src.type
        if isinstance(t, VectorType):
            ml.type(t)
            _print_vector(L, L.get(src), t)
        else:
            _print_scalar(L, L.get(src), t)
    string = getattr(op, "string", None)
    if string is not None:  # MLIR 22 prints a string literal without any punctuation
        b.call(ml.runtime("polyopt_print_string"), [ml.c_string(string)])
        return
    punct = getattr(op, "punctuation", "newline")
    helper = {"newline": "polyopt_print_newline", "comma": "polyopt_print_comma",
              "open": "polyopt_print_open", "close": "polyopt_print_close"}.get(punct)
    if helper is not None:
        b.call(ml.runtime(helper), [])


@_handles("vector.load", "vector.store")
def _lower_vector_memop(L: _FunctionLowering, op: Operation) -> None:
    if op.name == "vector.load":
        mem = L.mem(op.operands[0])
        subs = [L.form_of(v) for v in op.operands[1:]]
        vt = op.results[0].type
        L.ml.type(vt)
        L.bind(op.results[0], L.load_vector(mem, subs, vt))
    else:
        value = op.operands[0]
        mem = L.mem(op.operands[1])
        subs = [L.form_of(v) for v in op.operands[2:]]
        L.ml.type(value.type)
        L.store_vector(L.get(value), mem, subs, value.type)


# -- affine --------------------------------------------------------------------------------------


@_handles("affine.for")
def _lower_for(L: _FunctionLowering, op: Operation) -> None:
    b = L.b
    lb, lb_range = L.combine_bound(L.map_forms(op.lower_map, op.lower_operands), True)
    ub, ub_range = L.combine_bound(L.map_forms(op.upper_map, op.upper_operands), False)
    step = int(op.step)
    if step <= 0:
        raise CodegenError(f"'affine.for' step must be positive, got {step}", op.loc)
    inits = [L.get(v) for v in op.inits]
    iter_args = list(op.region_iter_args)
    pre = b.block
    header = L.fn.append_basic_block("for.header")
    body = L.fn.append_basic_block("for.body")
    exit_ = L.fn.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(I64, "iv")
    phis = [b.phi(init.type) for init in inits]
    b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)
    b.position_at_end(body)
    L.bind(op.induction_var, iv)
    L.leaf_values[id(iv)] = iv
    hi = None if ub_range[1] is None else ub_range[1] - 1
    L.leaf_ranges[id(iv)] = (lb_range[0], hi)
    for arg, phi, init in zip(iter_args, phis, inits):
        if isinstance(arg.type, MemRefType):
            L.bind(arg, _Mem(phi, arg.type, L.ml.scalar_align(arg.type)))
        else:
            L.bind(arg, phi)
    yielded = L.lower_region_block(op.body)
    nxt = b.add(iv, _i64(step), name="iv.next", flags=_NSW)
    latch = b.block
    b.branch(header)
    iv.add_incoming(lb, pre)
    iv.add_incoming(nxt, latch)
    for phi, init, y in zip(phis, inits, yielded):
        phi.add_incoming(init, pre)
        phi.add_incoming(y, latch)
    b.position_at_end(exit_)
    for res, phi in zip(op.results, phis):
        L.bind_llvm(res, phi)


@_handles("affine.if")
def _lower_if(L: _FunctionLowering, op: Operation) -> None:
    b = L.b
    cset = op.condition
    forms = L.map_forms(AffineMap(cset.num_dims, cset.num_symbols, cset.constraints),
                        op.cond_operands)
    known = True
    conds = []
    cache: dict = {}
    for f, eq in zip(forms, cset.eq_flags):
        lo, hi = L.lin_range(f)
        if eq:
            if lo is not None and hi is not None and lo == hi == 0:
                continue
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                known = False
                conds = []
                break
            conds.append(b.icmp_signed("==", L.emit_lin(f, cache), _i64(0)))
        else:
            if lo is not None and lo >= 0:
                continue
            if hi is not None and hi < 0:
                known = False
                conds = []
                break
            conds.append(b.icmp_signed(">=", L.emit_lin(f, cache), _i64(0)))
    has_else = op.has_else
    if not conds:  # statically known
        if known:
            vals = L.lower_region_block(op.then_block)
        elif has_else:
            vals = L.lower_region_block(op.else_block)
        else:
            vals = []
        for res, v in zip(op.results, vals):
            L.bind_llvm(res, v)
        return
    cond = conds[0]
    for c in conds[1:]:
        cond = b.and_(cond, c)
    then_bb = L.fn.append_basic_block("if.then")
    else_bb = L.fn.append_basic_block("if.else") if has_else else None
    merge = L.fn.append_basic_block("if.end")
    b.cbranch(cond, then_bb, else_bb if else_bb is not None else merge)
    b.position_at_end(then_bb)
    then_vals = L.lower_region_block(op.then_block)
    then_end = b.block
    b.branch(merge)
    else_vals, else_end = [], None
    if else_bb is not None:
        b.position_at_end(else_bb)
        else_vals = L.lower_region_block(op.else_block)
        else_end = b.block
        b.branch(merge)
    b.position_at_end(merge)
    for i, res in enumerate(op.results):
        phi = b.phi(then_vals[i].type)
        phi.add_incoming(then_vals[i], then_end)
        phi.add_incoming(else_vals[i], else_end)
        L.bind_llvm(res, phi)


@_handles("affine.apply")
def _lower_apply(L: _FunctionLowering, op: Operation) -> None:
    form = L.map_forms(op.map, op.map_operands)[0]
    L.bind(op.results[0], L.emit_lin(form))
    L.forms[op.results[0]] = form


@_handles("affine.min", "affine.max")
def _lower_minmax(L: _FunctionLowering, op: Operation) -> None:
    v, _ = L.combine_bound(L.map_forms(op.map, op.map_operands), op.name == "affine.max")
    L.bind(op.results[0], v)


@_handles("affine.load", "affine.store", "affine.vector_load", "affine.vector_store")
def _lower_affine_memop(L: _FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.memref)
    subs = L.map_forms(op.map, op.map_operands)
    if op.name == "affine.load":
        L.bind(op.results[0], L.load_elem(mem, subs))
    elif op.name == "affine.store":
        L.store_elem(L.get(op.value), mem, subs)
    elif op.name == "affine.vector_load":
        vt = op.results[0].type
        L.ml.type(vt)
        L.bind(op.results[0], L.load_vector(mem, subs, vt))
    else:
        vt = op.value.type
        L.ml.type(vt)
        L.store_vector(L.get(op.value), mem, subs, vt)


@_handles("affine.prefetch")
def _lower_affine_prefetch(L: _FunctionLowering, op: Operation) -> None:
    # as MLIR's PrefetchOp lowering: llvm.prefetch(ptr, rw, locality, cache type); the address
    # may lie outside the memref (a prefetch does not fault), so the GEP is not inbounds
    mem = L.mem(op.memref)
    subs = L.map_forms(op.map, op.map_operands)
    ptr, _ = L.address(mem, subs, L.ml.mem_type(op.memref.type.element_type), inbounds=False)
    fn = L.ml.intrinsic("llvm.prefetch.p0", VOID, [ptr.type, I32, I32, I32])
    L.b.call(fn, [ptr, ir.Constant(I32, int(op.is_write)), ir.Constant(I32, op.locality),
                  ir.Constant(I32, int(op.is_data_cache))])


# -- memref --------------------------------------------------------------------------------------


def _alloc_info(L: _FunctionLowering, op: Operation, default_align: int):
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        raise _Unsupported(f"result type '{t}' is not a ranked memref")
    if not t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    if op.operands:
        raise CodegenError(f"'{op.name}': layout symbol operands are not supported", op.loc)
    elem_ty = L.ml.mem_type(t.element_type)
    n = physical_size(t, op.loc)
    align = _attr_int(op.attributes.get("alignment")) or default_align
    align = max(align, L.ml.abi_align(elem_ty))
    if not _is_pow2(align):
        raise CodegenError(f"'{op.name}': alignment must be a power of two, got {align}", op.loc)
    return t, elem_ty, n, align


@_handles("memref.alloc")
def _lower_alloc(L: _FunctionLowering, op: Operation) -> None:
    t, elem_ty, n, align = _alloc_info(L, op, DEFAULT_ALLOC_ALIGNMENT)
    ptr = L.heap_alloc(L.b, n * L.ml.abi_size(elem_ty), align)
    L.bind(op.results[0], _Mem(ptr, t, align))


@_handles("memref.alloca")
def _lower_alloca(L: _FunctionLowering, op: Operation) -> None:
    t, elem_ty, n, align = _alloc_info(L, op, 64)
    nbytes = n * L.ml.abi_size(elem_ty)
    if nbytes > L.ml.max_stack_bytes:
        ptr = L.heap_alloc(L.entry_builder, nbytes, align)
        L.heap_buffers.append(ptr)
    else:
        ptr = _opaque_alloca(L.entry_builder, ir.ArrayType(elem_ty, max(1, n)))
        ptr.align = align
    L.bind(op.results[0], _Mem(ptr, t, align))


@_handles("memref.dealloc")
def _lower_dealloc(L: _FunctionLowering, op: Operation) -> None:
    L.b.call(L.ml.runtime("free"), [L.mem(op.operands[0]).ptr])


@_handles("memref.load")
def _lower_memref_load(L: _FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.operands[0])
    L.bind(op.results[0], L.load_elem(mem, [L.form_of(v) for v in op.operands[1:]]))


@_handles("memref.store")
def _lower_memref_store(L: _FunctionLowering, op: Operation) -> None:
    mem = L.mem(op.operands[1])
    L.store_elem(L.get(op.operands[0]), mem, [L.form_of(v) for v in op.operands[2:]])


@_handles("memref.cast")
def _lower_memref_cast(L: _FunctionLowering, op: Operation) -> None:
    src = L.mem(op.operands[0])
    dst_t = op.results[0].type
    if isinstance(dst_t, UnrankedMemRefType):
        L.bind(op.results[0], _Mem(src.ptr, src.type, src.align))  # remember the static type
        return
    if not isinstance(dst_t, MemRefType) or not dst_t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    if linearize(dst_t, op.loc) != L.ml.linearize(src.type, op.loc) or \
            dst_t.element_type != src.type.element_type:
        raise CodegenError(f"'memref.cast' from '{src.type}' to '{dst_t}' changes the data "
                           "layout, which is not supported", op.loc)
    L.bind(op.results[0], _Mem(src.ptr, dst_t, src.align))


@_handles("memref.collapse_shape")
def _lower_memref_collapse_shape(L: _FunctionLowering, op: Operation) -> None:
    """A view: the same pointer with the collapsed type.  The verifier proved that the
    collapsed dims are contiguous, so the result's layout gives every element the flat offset
    it has in the source (row-major within each group; a strided source keeps its offset)."""
    src = L.mem(op.operands[0])
    dst_t = op.results[0].type
    if not isinstance(dst_t, MemRefType) or not dst_t.has_static_shape:
        raise CodegenError(DYNAMIC_DIMS_MESSAGE, op.loc)
    L.bind(op.results[0], _Mem(src.ptr, dst_t, src.align))


# -- linalg ----------------------------------------------------------------------------------------


@_handles("linalg.fill")
def _lower_fill(L: _FunctionLowering, op: Operation) -> None:
    value = L.get(op.operands[0])
    out = op.operands[1]
    if not isinstance(out.type, MemRefType):
        raise _Unsupported("only memref outputs are supported (bufferize tensors first)")
    mem = L.mem(out)
    t = mem.type
    if any(d == 0 for d in t.shape):
        return
    if _is_row_major(t) or t.rank == 0:
        # one flat loop over the buffer
        flat = MemRefType((max(1, t.num_elements),), t.element_type)
        target = _Mem(mem.ptr, flat, mem.align)
        _emit_loop_nest(L, (flat.shape[0],), lambda ivs: L.store_elem(value, target, ivs))
    else:
        _emit_loop_nest(L, tuple(t.shape), lambda ivs: L.store_elem(value, mem, ivs))


def _emit_loop_nest(L: _FunctionLowering, shape: tuple, body: Callable) -> None:
    """``for i0 in [0, shape[0]) ... body([i0, ...] as linear forms)``."""
    b = L.b
    ivs: list = []

    def level(k):
        if k == len(shape):
            body(ivs)
            return
        pre = b.block
        header = L.fn.append_basic_block("fill.header")
        bodyb = L.fn.append_basic_block("fill.body")
        exit_ = L.fn.append_basic_block("fill.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64)
        b.cbranch(b.icmp_signed("<", iv, _i64(shape[k])), bodyb, exit_)
        b.position_at_end(bodyb)
        form = L.leaf(iv)
        L.leaf_ranges[id(iv)] = (0, shape[k] - 1)
        ivs.append(form)
        level(k + 1)
        ivs.pop()
        nxt = b.add(iv, _i64(1), flags=("nuw", "nsw"))
        latch = b.block
        b.branch(header)
        iv.add_incoming(_i64(0), pre)
        iv.add_incoming(nxt, latch)
        b.position_at_end(exit_)
    level(0)
