"""The lowering driver's state: the module being lowered (:class:`ModuleLowering`), one
function's lowering (:class:`FunctionLowering`), the numpy signatures of the result, and the
registry of op handlers that the ``lower_<dialect>`` modules fill (:func:`handles`)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from polyopt.affine.affine_expr import AffineMap
from polyopt.affine.attributes import StringAttr
from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import TERMINATOR_OPS, Block, Operation, Value
from polyopt.affine.types import (
    AMXTileType,
    StridedLayout,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    Type,
    UnrankedMemRefType,
    VectorType,
)
from polyopt.codegen import microkernels
from polyopt.codegen.buffer_cache import CACHED_MIN_BYTES, BufferCache
from polyopt.codegen.index_forms import DivByZero, IndexFormLowering, Lin, Range
from polyopt.codegen.jit import JITEngine, MemRefArg, ScalarArg, make_callable
from polyopt.codegen.llvm_helpers import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    PTR,
    VOID,
    FnAttrs,
    Unsupported,
    i64,
    index_space,
    int_const,
    opaque_alloca,
    llvm_str,
)
from polyopt.codegen.memref_access import Mem, MemRefAccessLowering
from polyopt.codegen.runtime import runtime_symbols
from polyopt.codegen.target import Target, create_target_machine
from polyopt.memref_layout.layout import (linearize, needs_descriptor,
                                          physical_shape, strided_form)

#: Alignment (bytes) of ``memref.alloc`` buffers without an ``alignment`` attribute.
DEFAULT_ALLOC_ALIGNMENT = 64
#: ``memref.alloca`` buffers larger than this are heap-allocated at function entry.
DEFAULT_MAX_STACK_BYTES = 1 << 20


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
    symbol: Optional[str] = None    # the LLVM symbol, when it is not ``name``

    def make_callable(self, engine: JITEngine):
        """A Python callable running this function of ``engine`` on numpy arrays/scalars."""
        if self.numpy_error is not None:
            return _NumpyUnsupported(self.name, self.numpy_error)
        return make_callable(engine, self.symbol or self.name, self.args, self.results)


@dataclass(frozen=True)
class LoweredModule:
    """LLVM IR text of a lowered module and the numpy signature of each defined function."""

    llvm_ir: str
    signatures: dict = field(default_factory=dict)
    #: whether the code runs AMX tile instructions (``amx.*`` lowered for a CPU with AMX):
    #: the process must ask Linux for the tile state before calling it
    uses_amx: bool = False

    def jit(self, target: Optional[Target] = None, opt_level: int = 3) -> JITEngine:
        """Optimise and JIT-compile the module (see :class:`~polyopt.codegen.jit.JITEngine`)."""
        return JITEngine(self.llvm_ir, target, opt_level, uses_amx=self.uses_amx)

    def callables(self, engine: JITEngine) -> dict:
        """``{name: callable}`` for every defined function
        (see :meth:`FunctionSignature.make_callable`)."""
        return {name: sig.make_callable(engine) for name, sig in self.signatures.items()}


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
    "printF16": ("polyopt_print_f16", ("i16",), (I16,)),
    "printBF16": ("polyopt_print_bf16", ("i16",), (I16,)),
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


#: LLVM's widest integer type (``IntegerType::MAX_INT_BITS``); MLIR allows up to 2**24 - 1.
_LLVM_MAX_INT_BITS = 1 << 23


def _measured_tuning(target: Target) -> str:
    """LLVM tuning features this CPU's measurements call for (``,+prefer-no-gather`` where
    gathers are slower than loads, :meth:`~polyopt.codegen.description.TargetDescription.
    slow_gathers`); nothing for a named target, which was not measured."""
    from polyopt.codegen.description import host_description
    from polyopt.codegen.target import is_detected_host
    if not is_detected_host(target):
        return ""
    return host_description().llvm_tuning()


class ModuleLowering:
    def __init__(self, module: Operation, target: Target, noalias: bool, max_stack_bytes: int,
                 threads: int = 1):
        self.module = module
        self.threads = threads          # team size of parallel regions (1: sequential loops)
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
            self.fn_attr_strings.append(f'"target-cpu"={llvm_str(target.cpu)}')
        if target.features:
            self.fn_attr_strings.append(
                f'"target-features"={llvm_str(target.features + _measured_tuning(target))}')
        self.callees: dict[str, _Callee] = {}
        self._globals = 0
        self.memref_globals: dict[str, ir.GlobalVariable] = {}
        self._linearize_cache: dict = {}
        self._abi_cache: dict[str, tuple[int, int]] = {}
        self.buffers = BufferCache(self.llmod, self.checked_alloc, self.runtime("free"))
        self.uses_amx = False           # set by lower_amx when it emits AMX instructions

    # -- types -------------------------------------------------------------------------------

    def scalar_type(self, t: Type) -> ir.Type:
        if isinstance(t, IndexType):
            return I64
        if isinstance(t, IntegerType):
            if not 0 < t.width <= _LLVM_MAX_INT_BITS:   # i0 and wider than LLVM's limit
                raise Unsupported(f"type '{t}' is not supported by the LLVM lowering (integer "
                                  f"widths from 1 to {_LLVM_MAX_INT_BITS})")
            return ir.IntType(t.width)
        if isinstance(t, FloatType):
            if t.width == 64:
                return F64
            if t.width == 32:
                return F32
            if t.width == 16:
                return BF16 if t.brain else F16
            raise Unsupported(f"'{t}' is not supported by the LLVM lowering")
        raise Unsupported(f"type '{t}' is not supported by the LLVM lowering")

    def type(self, t: Type) -> ir.Type:
        dialect_type = TYPE_HANDLERS.get(type(t))
        if dialect_type is not None:
            return dialect_type(self, t)
        if isinstance(t, VectorType):
            if not t.shape:     # a 0-D vector is a vector of one element, as in MLIR's lowering
                return ir.VectorType(self.scalar_type(t.element_type), 1)
            if any(d <= 0 for d in t.shape):
                raise Unsupported(f"vector type '{t}' is not supported")
            ty: ir.Type = ir.VectorType(self.scalar_type(t.element_type), t.shape[-1])
            for d in reversed(t.shape[:-1]):
                ty = ir.ArrayType(ty, d)
            return ty
        if isinstance(t, MemRefType) and needs_descriptor(t):
            return self.descriptor_type(t)
        if isinstance(t, (MemRefType, UnrankedMemRefType)):
            return PTR
        return self.scalar_type(t)

    def descriptor_type(self, t: MemRefType) -> ir.LiteralStructType:
        """A memref with ``?`` as one LLVM value: ``{ptr, offset, [rank x size], [rank x
        stride]}`` (MLIR's descriptor without its allocated pointer)."""
        return ir.LiteralStructType([PTR, I64, ir.ArrayType(I64, t.rank),
                                     ir.ArrayType(I64, t.rank)])

    def abi_param_types(self, t: Type) -> list[ir.Type]:
        """The parameters one argument of type ``t`` takes: a memref with ``?`` is expanded
        into ``ptr, offset, sizes..., strides...`` (MLIR's expanded descriptor minus the
        allocated pointer); everything else is one parameter."""
        if isinstance(t, MemRefType) and needs_descriptor(t):
            return [PTR, I64] + [I64] * (2 * t.rank)
        return [self.type(t)]

    def mem_type(self, t: Type) -> ir.Type:
        """In-memory type of a memref element (``i1`` is stored as a byte, as numpy does)."""
        if isinstance(t, IntegerType) and t.width == 1:
            return I8
        if isinstance(t, IntegerType) and t.width not in (8, 16, 32, 64):
            raise Unsupported(f"memref element type '{t}' is not supported")
        if isinstance(t, (MemRefType, UnrankedMemRefType)):
            raise Unsupported("memrefs of memrefs are not supported")
        return self.type(t)

    def abi_size(self, ty: ir.Type) -> int:
        return self._abi(ty)[0]

    def abi_align(self, ty: ir.Type) -> int:
        return self._abi(ty)[1]

    def _abi(self, ty: ir.Type) -> tuple[int, int]:
        """(size, alignment) of ``ty`` for the target, cached by its text: llvmlite asks LLVM
        by parsing a module holding a global of the type, 90 us a time (a fully unrolled tile
        of 4000 loads and stores spent 0.7 s there)."""
        key = str(ty)
        found = self._abi_cache.get(key)
        if found is None:
            found = self._abi_cache[key] = (ty.get_abi_size(self.td),
                                            ty.get_abi_alignment(self.td))
        return found

    def linearize(self, t: MemRefType, loc) -> AffineMap:
        m = self._linearize_cache.get(t)
        if m is None:
            try:
                m = linearize(t, loc)
            except OverflowError:   # a stride or offset beyond int64 (MLIR's index type)
                raise CodegenError(f"the layout of {t} has strides or offsets beyond 64 bits",
                                   loc) from None
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
        if any(isinstance(t, AMXTileType) for t in ft.inputs + ft.results):
            # LLVM allows x86_amx in no signature; refused on every target alike
            raise Unsupported("'!amx.tile' values cannot be function arguments or results "
                              "(store the tile to a memref)")
        params = [p for t in ft.inputs for p in self.abi_param_types(t)]
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
            "polyopt_print_f16": (VOID, [I16]), "polyopt_print_bf16": (VOID, [I16]),
            "polyopt_print_i64": (VOID, [I64]), "polyopt_print_u64": (VOID, [I64]),
            "polyopt_print_open": (VOID, []), "polyopt_print_close": (VOID, []),
            "polyopt_print_comma": (VOID, []), "polyopt_print_newline": (VOID, []),
            "polyopt_print_string": (VOID, [PTR]), "polyopt_rtclock": (F64, []),
            "polyopt_assert_fail": (VOID, [PTR]), "polyopt_alloc_fail": (VOID, [I64]),
            "aligned_alloc": (PTR, [I64, I64]), "free": (VOID, [PTR]),
        }
        if name.startswith("polyopt_print_memref_"):
            ret, params = VOID, [PTR, I64, PTR, PTR, I64]
        else:
            ret, params = sigs[name]
        return self.get_function(name, ir.FunctionType(ret, params))

    def checked_alloc(self) -> ir.Function:
        """``aligned_alloc`` that does not return NULL: on failure it calls the runtime's
        ``polyopt_alloc_fail`` (the message, status 1), where the code would have written
        through the null pointer and crashed.  Always inlined where it is called, so that LLVM
        still sees ``aligned_alloc``'s fresh, unaliased block."""
        fn = self.llmod.globals.get("__polyopt_aligned_alloc")
        if fn is not None:
            return fn
        fn = ir.Function(self.llmod, ir.FunctionType(PTR, [I64, I64]),
                         "__polyopt_aligned_alloc")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        align, size = fn.args
        entry, fail, ok = (fn.append_basic_block(n) for n in ("entry", "fail", "ok"))
        b = ir.IRBuilder(entry)
        ptr = b.call(self.runtime("aligned_alloc"), [align, size])
        b.cbranch(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), fail, ok)
        b.position_at_end(fail)
        b.call(self.runtime("polyopt_alloc_fail"), [size])
        b.unreachable()
        b.position_at_end(ok)
        b.ret(ptr)
        return fn

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
        from ..affine.dialects.scf_forall import forall_to_parallel
        forall_to_parallel(self.module)       # (in place, as --scf-forall-to-parallel)
        # the functions of nested modules too, into one LLVM module (their names must differ)
        funcs = []
        modules = [self.module]
        while modules:
            for op in modules.pop(0).regions[0].blocks[0].ops:
                if op.name == "builtin.module":
                    modules.append(op)
                    continue
                if op.name in MODULE_HANDLERS:
                    MODULE_HANDLERS[op.name](self, op)
                    continue
                if op.name != "func.func":
                    raise CodegenError(f"cannot lower '{op.name}' at module level (only "
                                       f"'func.func', 'builtin.module' and "
                                       f"{', '.join(sorted(MODULE_HANDLERS))} are supported)",
                                       op.loc)
                if any(f.sym_name == op.sym_name for f in funcs):
                    raise CodegenError(f"function @{op.sym_name} is defined in two modules; "
                                       "polyopt lowers nested modules into one LLVM module, "
                                       "where the names must differ", op.loc)
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
                    FunctionLowering(self, f, self.callees[f.sym_name].llfn).run()
                    signatures[f.sym_name] = self._signature(f)
                except Unsupported as exc:  # raised outside any op (e.g. argument types)
                    raise CodegenError(f"function @{f.sym_name}: {exc}", f.loc) from None
        self.buffers.finish()
        return LoweredModule(str(self.llmod), signatures, self.uses_amx)

    def _check_static_types(self, f, types) -> None:
        """Memrefs with ``?`` are descriptors, except under a layout map that is not strided."""
        for t in types:
            if isinstance(t, MemRefType) and needs_descriptor(t) and strided_form(t) is None:
                raise CodegenError(f"function @{f.sym_name}: '{t}': dynamic sizes under a "
                                   "layout map that is not strided are not supported", f.loc)

    def _definition(self, f) -> _Callee:
        ft = f.function_type
        self._check_static_types(f, ft.inputs + ft.results)
        for t in ft.inputs + ft.results:
            if isinstance(t, UnrankedMemRefType):
                raise CodegenError(f"function @{f.sym_name}: unranked memref arguments/results "
                                   "are only supported for the runtime's print functions", f.loc)
        try:
            fnty = self.abi_function_type(ft, f.loc)
        except Unsupported as exc:
            raise CodegenError(f"function @{f.sym_name}: {exc}", f.loc) from None
        symbol = f.sym_name
        if _c_symbol_exists(symbol):
            # `@erf` defined here is not libm's erf, which math.erf calls (a call to itself
            # that never ended), and LLVM treats a function with a C library name as that
            # function; the definition takes another name, the calls and Python use it
            symbol = f"{symbol}.polyopt"
        if symbol in self.llmod.globals:
            raise CodegenError(f"function @{f.sym_name} clashes with a symbol of the lowering",
                               f.loc)
        fn = ir.Function(self.llmod, fnty, symbol)
        fn.attributes = FnAttrs(self.fn_attr_strings)
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
        except Unsupported as exc:
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
        want = microkernels.wrapper_param_kinds(kernel)

        def matches(t, w) -> bool:
            if w == "index":
                return isinstance(t, IndexType)
            if w == kernel.dtype:
                return str(t) == w
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
        attrs = FnAttrs(self.fn_attr_strings)
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
                form = strided_form(t)
                if needs_descriptor(t):
                    if vshape:
                        problems.append(f"argument #{i} is a memref of vectors with '?' ('{t}')")
                        continue
                    identity = t.layout is None or not isinstance(t.layout, StridedLayout)
                    args.append(MemRefArg(name, shape, dtype, descriptor=True,
                                          strides=None if identity else form[0],
                                          offset=form[1]))
                    continue
                phys = tuple(physical_shape(t, f.loc)) + vshape
                view = form if isinstance(t.layout, StridedLayout) and not vshape else None
                args.append(MemRefArg(name, shape, dtype,
                                      physical_shape=None if phys == shape else phys,
                                      strides=None if view is None or phys == shape else view[0],
                                      offset=0 if view is None else view[1]))
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
                                 "; ".join(problems) if problems else None,
                                 self.callees[f.sym_name].llfn.name)


def _numpy_dtype_name(t: Type) -> Optional[str]:
    if isinstance(t, IndexType):
        return "index"
    if isinstance(t, IntegerType) and t.width in (1, 8, 16, 32, 64):
        return f"i{t.width}"
    if isinstance(t, FloatType) and t.width in (16, 32, 64):
        return str(t)
    return None


# ---------------------------------------------------------------------------------------------


#: Ops that end a block; the op owning the region lowers them (a ``yield`` hands its operands
#: to the parent op, ``func.return`` returns).
TERMINATORS = set(TERMINATOR_OPS)


class FunctionLowering(IndexFormLowering, MemRefAccessLowering):
    def __init__(self, ml: ModuleLowering, func, llfn: ir.Function):
        self.ml = ml
        self.func = func
        self.fn = llfn
        self.values: dict[Value, Any] = {}       # MLIR value -> ir.Value or Mem
        self.forms: dict[Value, Lin] = {}       # index values with a known affine form
        self.leaf_values: dict[int, ir.Value] = {}
        self.leaf_ranges: dict[int, Range] = {}
        self.heap_buffers: list[ir.Value] = []  # big allocas, freed at every return
        self.buffer_slots: dict[int, ir.GlobalVariable] = {}   # id(block) -> its cache slot
        self.in_parallel = False                # inside an OpenMP region: nested ones run in order
        self.op: Optional[Operation] = None

    # -- entry -----------------------------------------------------------------------------

    def run(self) -> None:
        f = self.func
        region = f.regions[0]
        self.entry = self.fn.append_basic_block("entry")
        body = self.fn.append_basic_block("body")
        self.entry_builder = ir.IRBuilder(self.entry)
        self.b = ir.IRBuilder(body)
        ft = f.function_type
        block = region.blocks[0]
        params = iter(self.fn.args)
        for i, (arg, t) in enumerate(zip(block.args, ft.inputs)):
            llarg = next(params)
            llarg.name = f"arg{i}"
            if isinstance(t, MemRefType) and needs_descriptor(t):
                fields = [next(params) for _ in range(1 + 2 * t.rank)]
                for k, v in enumerate(fields):
                    v.name = f"arg{i}.{'offset' if k == 0 else 'size' if k <= t.rank else 'stride'}"
                self.values[arg] = self.descriptor_mem(llarg, t, fields[1:1 + t.rank],
                                                       fields[1 + t.rank:], fields[0])
            elif isinstance(t, MemRefType):
                self.values[arg] = Mem(llarg, t, self.ml.scalar_align(t))
            else:
                self.values[arg] = llarg
        self.out_ptrs = list(params) if len(ft.results) > 1 else []
        for i, p in enumerate(self.out_ptrs):
            p.name = f"out{i}"
        if len(region.blocks) > 1:
            from polyopt.codegen.lower_cf import lower_blocks
            lower_blocks(self, region, body, lambda t: self.with_op(t, self.lower_return))
        else:
            term = self.lower_ops(block)
            if term is None or term.name != "func.return":
                raise CodegenError(f"function @{f.sym_name} must end with 'func.return'", f.loc)
            self.with_op(term, self.lower_return)
        self.entry_builder.branch(body)

    # -- value access --------------------------------------------------------------------------

    def get(self, v: Value) -> ir.Value:
        """The LLVM value of ``v``: a memref is its pointer, or its descriptor struct when its
        type has a ``?`` (:meth:`ModuleLowering.descriptor_type`)."""
        x = self.values.get(v)
        if x is None:
            raise CodegenError(f"value used before its definition while lowering "
                               f"'{self.op.name if self.op else '?'}'",
                               self.op.loc if self.op else None)
        if isinstance(x, Mem):
            return self.pack_descriptor(x) if x.has_descriptor else x.ptr
        return x

    def descriptor_mem(self, ptr: ir.Value, t: MemRefType, sizes, strides, offset,
                       align: Optional[int] = None) -> Mem:
        """A memref with a descriptor; the static sizes, strides and offset of ``t`` replace
        the given ones (they are constants the code can fold)."""
        form = strided_form(t)
        if form is None:
            raise Unsupported(f"'{t}': dynamic sizes under a layout map that is not strided "
                              "are not supported")
        static_strides, static_offset = form
        sizes = tuple(s if d is None else d for s, d in zip(sizes, t.shape))
        for s in sizes:
            if isinstance(s, ir.Value):
                self.leaf_ranges.setdefault(id(s), (0, None))
        strides = tuple(s if d is None else d for s, d in zip(strides, static_strides))
        offset = offset if static_offset is None else static_offset
        return Mem(ptr, t, self.ml.scalar_align(t) if align is None else align, sizes, strides,
                   offset)

    def i64_array(self, values: Sequence) -> ir.Value:
        """A pointer to ``values`` (ints or ``i64`` values) in memory: a constant global when
        they are all constants, else a stack slot filled here."""
        values = list(values) or [0]
        if all(isinstance(v, int) for v in values):
            return self.ml.global_constant(ir.Constant(ir.ArrayType(I64, len(values)),
                                                       [i64(v) for v in values]), "i64s")
        ty = ir.ArrayType(I64, len(values))
        slot = opaque_alloca(self.entry_builder, ty)
        for k, v in enumerate(values):
            ptr = self.b.gep(slot, [i64(0), ir.Constant(I32, k)], source_etype=ty)
            self.b.store(v if isinstance(v, ir.Value) else i64(v), ptr)
        return slot

    def emit_loops(self, bounds: Sequence, body: Callable, name: str = "loop") -> None:
        """``for i0 in [0, bounds[0]) ... body([i0, ...] as linear forms)``; a bound is an
        ``int`` or an ``i64`` value."""
        b = self.b
        ivs: list = []

        def level(k):
            if k == len(bounds):
                body(ivs)
                return
            bound = bounds[k]
            pre = b.block
            header = self.fn.append_basic_block(f"{name}.header")
            bodyb = self.fn.append_basic_block(f"{name}.body")
            exit_ = self.fn.append_basic_block(f"{name}.exit")
            b.branch(header)
            b.position_at_end(header)
            iv = b.phi(I64)
            limit = bound if isinstance(bound, ir.Value) else i64(bound)
            b.cbranch(b.icmp_signed("<", iv, limit), bodyb, exit_)
            b.position_at_end(bodyb)
            form = self.leaf(iv)
            self.leaf_ranges[id(iv)] = (0, bound - 1 if isinstance(bound, int) else None)
            ivs.append(form)
            level(k + 1)
            ivs.pop()
            nxt = b.add(iv, i64(1), flags=("nuw", "nsw"))
            latch = b.block
            b.branch(header)
            iv.add_incoming(i64(0), pre)
            iv.add_incoming(nxt, latch)
            b.position_at_end(exit_)
        level(0)

    def pack_descriptor(self, m: Mem) -> ir.Value:
        """The descriptor struct of ``m`` (what flows through phis, selects and returns)."""
        b = self.b
        agg = ir.Constant(self.ml.descriptor_type(m.type), ir.Undefined)
        agg = b.insert_value(agg, m.ptr, 0)
        fields = m.descriptor_values()
        agg = b.insert_value(agg, fields[0], 1)
        rank = m.type.rank
        for k in range(rank):
            agg = b.insert_value(agg, fields[1 + k], [2, k])
            agg = b.insert_value(agg, fields[1 + rank + k], [3, k])
        return agg

    def unpack_descriptor(self, agg: ir.Value, t: MemRefType) -> Mem:
        b = self.b
        rank = t.rank
        return self.descriptor_mem(b.extract_value(agg, 0), t,
                                   [b.extract_value(agg, [2, k]) for k in range(rank)],
                                   [b.extract_value(agg, [3, k]) for k in range(rank)],
                                   b.extract_value(agg, 1))

    def call_args(self, values: Sequence[Value]) -> list[ir.Value]:
        """The ABI arguments for ``values``: memrefs with ``?`` expanded into their fields."""
        out: list[ir.Value] = []
        for v in values:
            x = self.values.get(v)
            if isinstance(x, Mem) and x.has_descriptor:
                out.append(x.ptr)
                out.extend(x.descriptor_values())
            else:
                out.append(self.get(v))
        return out

    def mem(self, v: Value) -> Mem:
        x = self.values.get(v)
        if not isinstance(x, Mem):
            raise CodegenError(f"'{self.op.name}': expected a memref operand",
                               self.op.loc if self.op else None)
        return x

    def bind(self, v: Value, x) -> None:
        self.values[v] = x

    def bind_llvm(self, v: Value, llv: ir.Value) -> None:
        """Bind an LLVM value of MLIR type ``v.type`` (wrapping memref pointers)."""
        t = v.type
        if isinstance(t, MemRefType):
            if needs_descriptor(t):
                self.values[v] = self.unpack_descriptor(llv, t)
            else:
                self.values[v] = Mem(llv, t, self.ml.scalar_align(t))
        elif isinstance(t, UnrankedMemRefType):
            raise CodegenError(f"'{self.op.name}': unranked memref values can only come from "
                               "'memref.cast'", self.op.loc)
        else:
            self.values[v] = llv

    def bind_phis(self, values: Sequence[Value], phis: Sequence[ir.Value]) -> None:
        """Bind ``values`` (block arguments, carried values, results) to ``phis``, which must
        be every phi of their block: binding a memref with a descriptor unpacks it with
        ``extractvalue``s at the builder, and LLVM wants all the phis of a block before its
        first other instruction."""
        for v, phi in zip(values, phis):
            self.bind_llvm(v, phi)

    def join(self, values: Sequence[Value], merge: ir.Block,
             arms: Sequence[tuple[Sequence[ir.Value], ir.Block]]) -> None:
        """At the start of ``merge``, where the ``arms`` (values, end block) meet, bind each of
        ``values`` to the phi of what the arms give for it (:meth:`bind_phis`)."""
        self.b.position_at_end(merge)
        phis = []
        for k in range(len(values)):
            phi = self.b.phi(arms[0][0][k].type)
            for vals, end in arms:
                phi.add_incoming(vals[k], end)
            phis.append(phi)
        self.bind_phis(values, phis)

    # -- op dispatch ---------------------------------------------------------------------------

    def with_op(self, op: Operation, fn: Callable, *args):
        saved = self.op
        self.op = op
        try:
            return fn(op, *args)
        except Unsupported as exc:
            raise CodegenError(f"'{op.name}': {exc}", op.loc) from None
        except DivByZero:
            raise CodegenError(f"'{op.name}': division by zero in an affine expression",
                               op.loc) from None
        finally:
            self.op = saved

    def lower_ops(self, block: Block) -> Optional[Operation]:
        """Lower every op of ``block`` but its terminator, which is returned."""
        ops = block.ops
        term = ops[-1] if ops and ops[-1].name in TERMINATORS else None
        for op in ops:
            if op is term:
                break
            handler = HANDLERS.get(op.name)
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

    # -- n-D vector helpers ----------------------------------------------------------------

    def map_nd(self, t: Type, fn: Callable, *vals, result_type: Optional[Type] = None):
        """Apply ``fn`` to the 1-D rows of n-D vector operands (non-aggregate operands, e.g. a
        scalar select condition, are passed through); ``result_type`` defaults to ``t``."""
        rt = result_type if result_type is not None else t
        if not isinstance(t, VectorType) or len(t.shape) <= 1:
            return fn(*vals)
        agg = ir.Constant(self.ml.type(rt), ir.Undefined)
        for pos in index_space(t.shape[:-1]):
            rows = [self.b.extract_value(v, list(pos)) if isinstance(v.type, ir.ArrayType) else v
                    for v in vals]
            agg = self.b.insert_value(agg, fn(*rows), list(pos))
        return agg

    def splat(self, scalar: ir.Value, n: int) -> ir.Value:
        vty = ir.VectorType(scalar.type, n)
        if isinstance(scalar, ir.Constant):
            return ir.Constant(vty, [scalar] * n)
        v = self.b.insert_element(ir.Constant(vty, ir.Undefined), scalar, int_const(I32, 0))
        return self.b.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, n), [0] * n))

    def broadcast(self, v: ir.Value, src: Type, dst_shape: tuple, elem: Type) -> ir.Value:
        if isinstance(src, VectorType) and not src.shape:     # 0-D: its one element
            v, src = self.b.extract_element(v, int_const(I32, 0)), elem
        if not dst_shape:
            return self.splat(v, 1)
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
            x = self.b.extract_element(v, int_const(I32, 0))
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
        for pos in index_space(outer):
            agg = self.b.insert_value(agg, v, list(pos))
        return agg

    # -- allocation --------------------------------------------------------------------------

    def heap_alloc(self, builder: ir.IRBuilder, nbytes, align: int) -> ir.Value:
        """``aligned_alloc(align, bytes rounded up to align)`` (at least ``align`` bytes);
        ``nbytes`` is an ``int`` or an ``i64`` value.  A static size of at least
        :data:`~polyopt.codegen.buffer_cache.CACHED_MIN_BYTES` takes the block its site cached
        in an earlier call (:mod:`~polyopt.codegen.buffer_cache`); give it back with
        :meth:`heap_free`."""
        if isinstance(nbytes, int):
            rounded = max(align, -(-nbytes // align) * align)
            if rounded >= CACHED_MIN_BYTES:
                slot = self.ml.buffers.new_slot()
                ptr = self.ml.buffers.alloc(builder, slot, align, rounded)
                self.buffer_slots[id(ptr)] = slot
                return ptr
            size = i64(rounded)
        else:
            rounded = builder.and_(builder.add(nbytes, i64(align - 1)), i64(-align))
            size = builder.call(self.ml.intrinsic("llvm.umax.i64", I64, [I64, I64]),
                                [rounded, i64(align)])
        return builder.call(self.ml.checked_alloc(), [i64(align), size])

    def heap_free(self, builder: ir.IRBuilder, ptr: ir.Value) -> None:
        """Free a block of :meth:`heap_alloc` (back to its site's slot when it has one)."""
        slot = self.buffer_slots.get(id(ptr))
        if slot is not None:
            self.ml.buffers.free(builder, slot, ptr)
        else:
            builder.call(self.ml.runtime("free"), [ptr])

    # -- return ------------------------------------------------------------------------------

    def lower_return(self, op: Operation) -> None:
        b = self.b
        for p in self.heap_buffers:
            self.heap_free(b, p)
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


# ---------------------------------------------------------------------------------------------
# Op handlers: handler(lowering, op)

HANDLERS: dict[str, Callable] = {}
#: LLVM types of dialect types, ``handler(module lowering, type) -> ir.Type`` by the type's
#: class (``!amx.tile``: :mod:`lower_amx`).
TYPE_HANDLERS: dict[type, Callable] = {}
#: Ops at module level other than functions: ``handler(module lowering, op)``.
MODULE_HANDLERS: dict[str, Callable] = {}


def handles(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def handles_module_op(*names):
    """Register a handler for ops that live at module level (``memref.global``)."""
    def deco(fn):
        for n in names:
            MODULE_HANDLERS[n] = fn
        return fn
    return deco
