"""The compiler-rt / libgcc routines LLVM's code generator calls, made resolvable by the JIT.

MCJIT jumps to address 0 for a symbol it cannot resolve, and the code generator emits calls
that no IR declares (so :mod:`polyopt.codegen.jit` cannot check them):

* 128-bit integer division and remainder (``__divti3``...), float <-> 128-bit integer
  conversions (``__fixsfti``...) and ``llvm.powi`` (``__powisf2``): taken from
  ``libgcc_s.so.1`` when the process does not export them (:data:`LIBGCC`);
* the ``half``/``bfloat`` conversions below, defined here.

On x86-64 LLVM lowers ``fptrunc double to half`` to a call of ``__truncdfhf2``, ``fptrunc
double to bfloat`` to ``__truncdfbf2`` (and ``float`` to ``bfloat`` to ``__truncsfbf2`` without
AVX512-BF16, ``half`` to/from ``float`` to ``__extendhfsf2``/``__truncsfhf2`` without F16C).
GCC 12's libgcc has no bfloat routines.  :func:`register_libcalls` defines the missing ones:
compiler-rt's algorithms (``fp_trunc_impl.inc``,
``fp_extend_impl.inc``: round to nearest even, NaN payloads kept, quieted), written in LLVM IR
with integer operations only, compiled once for the host.
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from polyopt.affine import float_format as ff

_LLVM_TYPE = {ff.F16: ir.HalfType(), ff.F32: ir.FloatType(), ff.F64: ir.DoubleType()}

# name -> (source format, destination format)
BUILTINS = {
    "__truncdfhf2": (ff.F64, ff.F16),
    "__truncsfhf2": (ff.F32, ff.F16),
    "__truncdfbf2": (ff.F64, ff.BF16),
    "__truncsfbf2": (ff.F32, ff.BF16),
    "__extendhfsf2": (ff.F16, ff.F32),
}

# taken from libgcc_s when the process lacks them
LIBGCC = ("__divti3", "__udivti3", "__modti3", "__umodti3", "__fixsfti", "__fixdfti",
          "__fixunssfti", "__fixunsdfti", "__fixhfti", "__fixunshfti", "__powisf2", "__powidf2")

_lock = threading.Lock()
_engine = None      # keeps the compiled code alive
_libgcc = None


def _llvm_type(fmt: ff.Format) -> ir.Type:
    if fmt == ff.BF16:
        from polyopt.codegen.llvm_helpers import BF16
        return BF16
    return _LLVM_TYPE[fmt]


def _define_trunc(module: ir.Module, name: str, src: ff.Format, dst: ff.Format) -> None:
    """compiler-rt's ``__truncXfYf2``: ``src`` bits to ``dst`` bits, rounding to nearest even."""
    S, D = ir.IntType(src.width), ir.IntType(dst.width)
    fn = ir.Function(module, ir.FunctionType(_llvm_type(dst), [_llvm_type(src)]), name)
    fn.linkage = "external"
    b = ir.IRBuilder(fn.append_basic_block())

    def c(v):
        return ir.Constant(S, v & ((1 << src.width) - 1))

    sig_diff = src.mant_bits - dst.mant_bits
    src_inf = ((1 << src.exp_bits) - 1) << src.mant_bits
    dst_inf_exp = (1 << dst.exp_bits) - 1
    underflow = (src.bias + 1 - dst.bias) << src.mant_bits
    overflow = (src.bias + dst_inf_exp - dst.bias) << src.mant_bits
    round_mask = (1 << sig_diff) - 1
    halfway = 1 << (sig_diff - 1)
    src_qnan = 1 << (src.mant_bits - 1)
    dst_qnan = 1 << (dst.mant_bits - 1)

    a = b.bitcast(fn.args[0], S)
    a_abs = b.and_(a, c((1 << (src.width - 1)) - 1))
    sign = b.and_(a, c(1 << (src.width - 1)))

    def rounded(value, round_bits):
        """``value`` plus one if ``round_bits`` is above half, or half and ``value`` odd."""
        above = b.icmp_unsigned(">", round_bits, c(halfway))
        tie = b.icmp_unsigned("==", round_bits, c(halfway))
        inc = b.select(above, c(1), b.select(tie, b.and_(value, c(1)), c(0)))
        return b.add(value, inc)

    # normal range of the destination
    normal = b.sub(b.lshr(a_abs, c(sig_diff)), c((src.bias - dst.bias) << dst.mant_bits))
    normal = rounded(normal, b.and_(a_abs, c(round_mask)))
    # NaN: quiet, payload's top bits
    nan = b.or_(c((dst_inf_exp << dst.mant_bits) | dst_qnan),
                b.and_(b.lshr(b.and_(a_abs, c(src_qnan - 1)), c(sig_diff)), c(dst_qnan - 1)))
    inf = c(dst_inf_exp << dst.mant_bits)
    # subnormal (or zero) in the destination; a subnormal source (possible when both formats
    # have the same exponent range, f32 -> bf16) has exponent 1 and no implicit bit
    a_exp = b.lshr(a_abs, c(src.mant_bits))
    src_sub = b.icmp_unsigned("==", a_exp, c(0))
    shift = b.sub(c(src.bias - dst.bias + 1), b.select(src_sub, c(1), a_exp))
    significand = b.or_(b.and_(a, c((1 << src.mant_bits) - 1)),
                        b.select(src_sub, c(0), c(1 << src.mant_bits)))
    too_far = b.icmp_unsigned(">", shift, c(src.mant_bits))
    sh = b.select(too_far, c(0), shift)     # the arm is computed for every input: keep in range
    no_shift = b.icmp_unsigned("==", sh, c(0))
    lost = b.shl(significand, b.select(no_shift, c(0), b.sub(c(src.width), sh)))
    sticky = b.zext(b.and_(b.icmp_unsigned("!=", lost, c(0)), b.not_(no_shift)), S)
    denorm = b.or_(b.lshr(significand, sh), sticky)
    sub = rounded(b.lshr(denorm, c(sig_diff)), b.and_(denorm, c(round_mask)))
    sub = b.select(too_far, c(0), sub)

    in_range = b.icmp_unsigned("<", b.sub(a_abs, c(underflow)), b.sub(a_abs, c(overflow)))
    is_nan = b.icmp_unsigned(">", a_abs, c(src_inf))
    is_big = b.icmp_unsigned(">=", a_abs, c(overflow))
    result = b.select(in_range, normal, b.select(is_nan, nan, b.select(is_big, inf, sub)))
    result = b.or_(result, b.lshr(sign, c(src.width - dst.width)))
    b.ret(b.bitcast(b.trunc(result, D), _llvm_type(dst)))


def _define_extend(module: ir.Module, name: str, src: ff.Format, dst: ff.Format) -> None:
    """compiler-rt's ``__extendXfYf2``: exact (NaNs quieted)."""
    S, D = ir.IntType(src.width), ir.IntType(dst.width)
    fn = ir.Function(module, ir.FunctionType(_llvm_type(dst), [_llvm_type(src)]), name)
    b = ir.IRBuilder(fn.append_basic_block())

    def cs(v):
        return ir.Constant(S, v)

    def cd(v):
        return ir.Constant(D, v)

    sig_diff = dst.mant_bits - src.mant_bits
    min_normal = 1 << src.mant_bits
    src_inf = ((1 << src.exp_bits) - 1) << src.mant_bits
    dst_inf_exp = (1 << dst.exp_bits) - 1
    a = b.bitcast(fn.args[0], S)
    a_abs = b.and_(a, cs((1 << (src.width - 1)) - 1))
    sign = b.and_(a, cs(1 << (src.width - 1)))
    wide = b.zext(a_abs, D)
    normal = b.add(b.shl(wide, cd(sig_diff)), cd((dst.bias - src.bias) << dst.mant_bits))
    special = b.or_(cd(dst_inf_exp << dst.mant_bits),
                    b.shl(b.zext(b.and_(a_abs, cs(min_normal - 1)), D), cd(sig_diff)))
    # a NaN comes out quiet, as the hardware conversions (vcvtph2ps) make it
    is_nan = b.icmp_unsigned(">", a_abs, cs(src_inf))
    special = b.or_(special, b.select(is_nan, cd(1 << (dst.mant_bits - 1)), cd(0)))
    ctlz = ir.Function(module, ir.FunctionType(S, [S, ir.IntType(1)]), f"llvm.ctlz.i{src.width}")
    scale = b.sub(b.call(ctlz, [a_abs, ir.Constant(ir.IntType(1), 0)]),
                  cs(src.width - 1 - src.mant_bits))
    scale_d = b.zext(scale, D)
    sub = b.xor(b.shl(wide, b.add(cd(sig_diff), scale_d)), cd(1 << dst.mant_bits))
    sub = b.or_(sub, b.shl(b.sub(cd(dst.bias - src.bias + 1), scale_d), cd(dst.mant_bits)))
    is_normal = b.icmp_unsigned("<", b.sub(a_abs, cs(min_normal)), cs(src_inf - min_normal))
    is_special = b.icmp_unsigned(">=", a_abs, cs(src_inf))
    is_zero = b.icmp_unsigned("==", a_abs, cs(0))
    result = b.select(is_normal, normal,
                      b.select(is_special, special, b.select(is_zero, cd(0), sub)))
    result = b.or_(result, b.shl(b.zext(sign, D), cd(dst.width - src.width)))
    b.ret(b.bitcast(result, _llvm_type(dst)))


def builtins_module(names) -> str:
    """LLVM IR defining the builtins ``names``."""
    module = ir.Module(name="polyopt_float_builtins")
    for name in names:
        src, dst = BUILTINS[name]
        (_define_trunc if src.width > dst.width else _define_extend)(module, name, src, dst)
    return str(module)


def register_libcalls() -> None:
    """Make (once) every routine of :data:`LIBGCC` and :data:`BUILTINS` resolvable by the JIT:
    from the process, else from libgcc_s, else (the conversions) compiled here."""
    global _engine, _libgcc
    with _lock:
        if _engine is not None:
            return
        try:
            _libgcc = ctypes.CDLL("libgcc_s.so.1")
        except OSError:
            _libgcc = None
        for name in LIBGCC:
            if not process_has(name) and _libgcc is not None and hasattr(_libgcc, name):
                llvm.add_symbol(name, ctypes.cast(getattr(_libgcc, name), ctypes.c_void_p).value)
        missing = [n for n in BUILTINS if not process_has(n)]
        if not missing:
            _engine = False
            return
        from polyopt.codegen.target import ensure_llvm_initialized, host_target, new_target_machine
        ensure_llvm_initialized()
        target = host_target()
        mod = llvm.parse_assembly(builtins_module(missing))
        mod.verify()
        mod.triple = target.triple
        engine = llvm.create_mcjit_compiler(mod, new_target_machine(target, 2))
        engine.finalize_object()
        for name in missing:
            llvm.add_symbol(name, engine.get_function_address(name))
        _engine = engine


def available(name: str) -> bool:
    """Can the JIT call ``name`` (after :func:`register_libcalls`)?"""
    register_libcalls()
    return process_has(name)


def process_has(name: str) -> bool:
    """Is ``name`` a symbol of the running process (or already known to the JIT)?"""
    if llvm.address_of_symbol(name) is not None:
        return True
    return hasattr(ctypes.CDLL(None), name)
