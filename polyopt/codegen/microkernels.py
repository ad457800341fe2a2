"""The BLIS micro-kernels ``--hopt-blis`` calls, and the LLVM wrapper around them ("outer
compiler, inner library", paper section 2.12).

BLIS counterpart: the native ``gemm`` micro-kernel of a context (``bli_cntx_get_l3_nat_ukr_dt``)
called by the macro-kernel ``bli_gemm_ker_var2``, which also handles edge tiles: the kernel
writes a full ``MR x NR`` tile into a temporary ``ct`` with beta = 0 and ``xpbys_mxn`` adds
its valid ``m x n`` part to C.  :func:`define_wrapper` emits that logic as an LLVM function.

The kernels are the hand-written ones of the PyPI package ``blis`` (cython-blis), whose
extension module ``blis/cy*.so`` embeds BLIS 0.7.0 and exports them.  Their interface (BLIS
0.7, ``dim_t``/``inc_t`` are ``int64_t``)::

    void ukr(dim_t k, T* alpha, T* a, T* b, T* beta, T* c, inc_t rs_c, inc_t cs_c,
             auxinfo_t* data, cntx_t* cntx);

computes ``C := beta*C + alpha * A_panel * B_panel`` on the full ``MR x NR`` tile, with
``a[kk*MR + r]``, ``b[kk*NR + c]`` and ``c[r*rs_c + c*cs_c]``; C is not read when beta is 0.
The panel the kernel loads with aligned vector moves (B for haswell, A for skx) must be
aligned to :attr:`MicroKernel.alignment`; the other one is only broadcast.  The kernels load
that panel's first vectors even when ``k == 0``.  ``data`` is only read for prefetching
(``a_next`` at byte 8, ``b_next`` at byte 16; these three kernels do not read it, nor ``cntx``,
but both get valid memory).

Orientation: the haswell kernels vectorize along NR, which runs along C's rows as in polyopt;
the skx kernel vectorizes along its MR, so polyopt calls it *swapped* (kernel rows = our
columns), passing our B panel as its A and our A panel as its B.

    kernel = lookup("bli_dgemm_haswell_asm_6x8")
    load_microkernel(kernel)          # its address; the JIT now resolves the symbol
    define_wrapper(llmod, "polyopt_blis_bli_dgemm_haswell_asm_6x8", kernel)
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import re
import struct
import threading
from dataclasses import dataclass
from typing import Optional

import llvmlite.binding as llvm
from llvmlite import ir

from polyopt.affine.dialects.func import BLIS_KERNEL_ATTR
from polyopt.codegen.target import Target, host_target

__all__ = [
    "MicroKernel",
    "MicroKernelError",
    "REGISTRY",
    "describe_kernel",
    "exported_kernels",
    "lookup",
    "why_no_kernel",
    "missing_features",
    "default_kernel",
    "blis_library_path",
    "load_microkernel",
    "define_wrapper",
    "WRAPPER_ATTR",
    "WRAPPER_PARAMS",
    "wrapper_param_kinds",
]


class MicroKernelError(Exception):
    """A micro-kernel cannot be used here (no blis package, CPU without its instructions...)."""


@dataclass(frozen=True)
class MicroKernel:
    """A BLIS micro-kernel: its symbol, element type, its own ``mr x nr`` register tile,
    whether polyopt calls it swapped (see the module docstring), the CPU features it needs
    (names as in LLVM's feature string, e.g. ``("avx2", "fma")``) and the alignment in bytes
    of its packed panels."""

    symbol: str
    dtype: str
    mr: int
    nr: int
    swapped: bool
    requires: tuple
    alignment: int

    @property
    def m_r(self) -> int:
        """Rows of C per tile, in polyopt's orientation."""
        return self.nr if self.swapped else self.mr

    @property
    def n_r(self) -> int:
        """Columns of C per tile, in polyopt's orientation."""
        return self.mr if self.swapped else self.nr


# What the kernels' names do not say, per BLIS configuration (sub-architecture): the CPU
# features its instructions need and its vector width.  knl's kernels use AVX-512ER/PF
# (Xeon Phi only); bulldozer's and piledriver's use FMA4.  A configuration not listed here is
# not used: polyopt cannot know what it needs.
_ARCH = {
    "skx": (("avx512f",), 512),
    "knl": (("avx512f", "avx512er", "avx512pf"), 512),
    "haswell": (("avx2", "fma"), 256),
    "zen": (("avx2", "fma"), 256),
    "sandybridge": (("avx",), 256),
    "bulldozer": (("avx", "fma4"), 256),
    "piledriver": (("avx", "fma4"), 128),
    "penryn": (("ssse3",), 128),
}
_KERNEL_NAME = re.compile(r"bli_([sd])gemm_([a-z0-9]+)_(?:asm|int)_(\d+)x(\d+)((?:_[a-z0-9]+)*)")


def describe_kernel(symbol: str) -> Optional[MicroKernel]:
    """The :class:`MicroKernel` a BLIS 0.7 gemm micro-kernel's name describes, e.g.
    ``bli_sgemm_skx_asm_32x12_l2``: element type, ``mr x nr``, the configuration's features
    and vector width (:data:`_ARCH`); the orientation from which of ``mr``/``nr`` is a whole
    number of vectors (the kernel loads that panel with vector moves, aligned to a vector,
    and broadcasts the other).  None for other names, configurations polyopt does not know,
    and tiles where both or neither are whole vectors (the orientation is not certain)."""
    match = _KERNEL_NAME.fullmatch(symbol)
    if match is None or match.group(2) not in _ARCH:
        return None
    letter, arch, mr, nr = match.group(1), match.group(2), int(match.group(3)), \
        int(match.group(4))
    requires, bits = _ARCH[arch]
    lanes = bits // (64 if letter == "d" else 32)
    along_mr, along_nr = mr % lanes == 0, nr % lanes == 0
    if along_mr == along_nr:
        return None
    return MicroKernel(symbol, "f64" if letter == "d" else "f32", mr, nr, swapped=along_mr,
                       requires=requires, alignment=bits // 8)


def _rank(kernel: MicroKernel) -> tuple:
    """Sort key, best first: the widest vectors, then the largest register tile (the most
    FMAs per loaded element), then vectors along C's rows (our orientation), then the name."""
    bits = kernel.alignment * 8
    return (-bits, -kernel.mr * kernel.nr, kernel.swapped, kernel.symbol)


def _elf_function_symbols(path: str) -> Optional[list]:
    """Names of the functions an ELF64 little-endian shared object exports (``.dynsym``,
    defined, ``STT_FUNC``), what ``nm -D --defined-only`` lists; None if not such a file."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize)
                        for i in range(shnum)]
            dynsym = next((sh for sh in sections if sh[1] == 11), None)   # SHT_DYNSYM
            if dynsym is None:
                return []
            strtab = sections[dynsym[6]]
            f.seek(strtab[4])
            strings = f.read(strtab[5])
            f.seek(dynsym[4])
            symbols = f.read(dynsym[5])
    except (OSError, struct.error, IndexError):
        return None
    names = []
    for off in range(0, len(symbols) - 23, 24):
        st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", symbols, off)
        if st_shndx != 0 and st_info & 0xF == 2:
            end = strings.find(b"\0", st_name)
            names.append(strings[st_name:end].decode("ascii", "replace"))
    return names


# the kernels BLIS 0.7 has, for platforms whose libraries are not ELF (probed by name)
_PROBED = ("bli_dgemm_skx_asm_16x14", "bli_dgemm_skx_asm_16x12_l2", "bli_sgemm_skx_asm_32x12_l2",
           "bli_dgemm_haswell_asm_6x8", "bli_dgemm_haswell_asm_8x6",
           "bli_sgemm_haswell_asm_6x16", "bli_sgemm_haswell_asm_16x6")


@functools.lru_cache(maxsize=None)
def _exported(path: Optional[str]) -> tuple:
    if path is None:
        return ()
    names = _elf_function_symbols(path)
    if names is None:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            return ()
        names = [n for n in _PROBED if hasattr(lib, n)]
    kernels = [k for k in map(describe_kernel, sorted(set(names))) if k is not None]
    return tuple(sorted(kernels, key=_rank))


def exported_kernels() -> tuple:
    """The gemm micro-kernels the installed ``blis`` package exports (read from its extension
    module's dynamic symbol table at run time) that polyopt can describe, best first (see
    :func:`_rank`); ``()`` without the package."""
    try:
        path = blis_library_path()
    except MicroKernelError:
        return ()
    return _exported(path)


def __getattr__(name: str):
    # REGISTRY: the exported kernels, computed when first asked for (it reads the library)
    if name == "REGISTRY":
        return exported_kernels()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_INSTALL_HINT = "pip install 'blis>=0.7' or pip install 'polyopt[blis]'"


def lookup(symbol: str) -> Optional[MicroKernel]:
    """The kernel named ``symbol`` if the installed blis exports it (without the package:
    whatever the name describes, so that using it says to install blis), or None."""
    kernels = exported_kernels()
    if not kernels:
        try:
            if blis_library_path() is None:
                return describe_kernel(symbol)
        except MicroKernelError:
            return describe_kernel(symbol)
    return next((k for k in kernels if k.symbol == symbol), None)


def _features(target: Target) -> set:
    enabled = {f[1:] for f in target.features.split(",") if f.startswith("+")}
    for name in ("fma", "avx2", "avx512f"):
        if getattr(target, f"has_{name}", False):
            enabled.add(name)
    return enabled


def missing_features(kernel: MicroKernel, target: Optional[Target] = None) -> tuple:
    """The features ``kernel`` needs that ``target`` (default: the host) lacks."""
    have = _features(target if target is not None else host_target())
    return tuple(f for f in kernel.requires if f not in have)


def default_kernel(dtype: str, target: Optional[Target] = None) -> Optional[MicroKernel]:
    """The best exported kernel for ``dtype`` (``"f64"``/``"f32"``) that ``target`` (default:
    the host) runs, from its features: skx kernels on AVX-512F CPUs, haswell ones on AVX2+FMA;
    None if none runs (see :func:`why_no_kernel`)."""
    return next((k for k in exported_kernels()
                 if k.dtype == dtype and not missing_features(k, target)), None)


def why_no_kernel(dtype: str, target: Optional[Target] = None) -> str:
    """Why :func:`default_kernel` found nothing, as a clause: the blis package is missing,
    exports no kernel for ``dtype``, or what the kernels need that the CPU lacks."""
    try:
        path = blis_library_path()
    except MicroKernelError as e:
        return str(e)
    if path is None:
        return f"BLIS mode needs the Python package 'blis' ({_INSTALL_HINT})"
    kernels = [k for k in exported_kernels() if k.dtype == dtype]
    if not kernels:
        return f"the installed blis package exports no {dtype} gemm micro-kernel polyopt knows"
    t = target if target is not None else host_target()
    groups: dict = {}   # missing features -> kernels, best first
    for k in kernels:
        groups.setdefault(missing_features(k, t), []).append(k.symbol)
    lacks = "; ".join(f"{', '.join(names)} need{'s' if len(names) == 1 else ''} "
                      f"{' and '.join(missing)}" for missing, names in groups.items())
    return f"no {dtype} micro-kernel runs on this CPU ({t.cpu or 'generic'}): {lacks}"


def blis_library_path() -> Optional[str]:
    """Path of the extension module of the installed ``blis`` package that exports the
    kernels (``blis/cy*.so``; blis's Python code is not imported), None if blis is not
    installed.  Raises :class:`MicroKernelError` for an install without that module."""
    try:
        spec = importlib.util.find_spec("blis")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    # cy is the module blis/__init__.py imports: if Python imports blis later, dlopen hands
    # back this same copy of BLIS
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "cy" + suffix)
            if os.path.isfile(path):
                return path
    raise MicroKernelError(f"the 'blis' package in {list(spec.submodule_search_locations)} has "
                           f"no extension module cy*.so; reinstall it ({_INSTALL_HINT})")


_load_lock = threading.Lock()
_loaded: dict = {}  # library path -> the BLIS version it embeds


def _embedded_version(path: str) -> str:
    fn = ctypes.CDLL(path).bli_info_get_version_str  # the library already loaded: same handle
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    return fn().decode()


def load_microkernel(kernel: MicroKernel, target: Optional[Target] = None) -> int:
    """Make ``kernel`` callable from JIT-compiled code and return its address.

    Checks that ``target`` (default: the host) has the kernel's instructions, loads the blis
    extension module into the process for llvmlite once (``load_library_permanently``, after
    which ``llvm.address_of_symbol`` and the JIT resolve the symbol) and checks that it embeds
    BLIS 0.7, whose micro-kernel interface the wrapper uses.  Raises :class:`MicroKernelError`
    with what to do otherwise.
    """
    host = host_target()
    target = target if target is not None else host
    missing = missing_features(kernel, target)
    if missing:
        where = "this host" if target == host else "the target"
        raise MicroKernelError(f"{kernel.symbol} needs a CPU with {' and '.join(kernel.requires)}"
                               f"; {where} ({target.cpu or 'generic'}) lacks "
                               f"{' and '.join(missing)}")
    path = blis_library_path()
    if path is None:
        raise MicroKernelError(f"the BLIS micro-kernel {kernel.symbol} needs the Python package "
                               f"'blis' ({_INSTALL_HINT})")
    with _load_lock:
        version = _loaded.get(path)
        if version is None:
            try:
                llvm.load_library_permanently(path)
                version = _embedded_version(path)
            except (RuntimeError, OSError, AttributeError) as exc:
                raise MicroKernelError(f"cannot load the BLIS library {path}: {exc}") from None
            _loaded[path] = version
    if not version.startswith("0.7."):
        raise MicroKernelError(f"{path} embeds BLIS {version}, but polyopt calls the "
                               f"micro-kernels through the BLIS 0.7 interface; install a "
                               f"release of the 'blis' package that embeds BLIS 0.7")
    address = llvm.address_of_symbol(kernel.symbol)
    if address is None:
        raise MicroKernelError(f"{path} (BLIS {version}) does not export {kernel.symbol}")
    return address


# ---------------------------------------------------------------------------------------------
# The LLVM wrapper

_I1, _I8, _I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
_PTR, _VOID = ir.PointerType(), ir.VoidType()
_ELEM = {"f64": ir.DoubleType(), "f32": ir.FloatType()}

#: The attribute of a ``func.func private`` declaration that the lowering defines as the wrapper
#: of the kernel it names (see :mod:`polyopt.schedules.microkernel_call`).
WRAPPER_ATTR = BLIS_KERNEL_ATTR
#: Parameter names of the wrapper; memrefs are ``ptr`` (their base), ``alpha`` is a scalar of
#: the kernel's element type, the rest ``i64`` (``index``).
WRAPPER_PARAMS = ("A", "a_off", "B", "b_off", "C", "c_off", "rs_c", "cs_c", "k", "m", "n",
                  "a_next_off", "b_next_off", "alpha")


def wrapper_param_kinds(kernel: MicroKernel) -> list:
    """The MLIR type of each of :data:`WRAPPER_PARAMS` for ``kernel``, as text
    (``memref<...xf64>`` for any statically shaped memref of the kernel's element type)."""
    memref = f"memref<...x{kernel.dtype}>"
    return [memref if p in ("A", "B", "C") else kernel.dtype if p == "alpha" else "index"
            for p in WRAPPER_PARAMS]


def _wrapper_type(elem: ir.Type) -> ir.FunctionType:
    return ir.FunctionType(_VOID, [_PTR if p in ("A", "B", "C") else elem if p == "alpha"
                                   else _I64 for p in WRAPPER_PARAMS])

_UKR_TYPE = ir.FunctionType(_VOID, [_I64, _PTR, _PTR, _PTR, _PTR, _PTR, _I64, _I64, _PTR, _PTR])
_AUXINFO_BYTES = 128  # more than BLIS 0.7's auxinfo_t
_AUX_A_NEXT, _AUX_B_NEXT = 8, 16  # byte offsets of a_next and b_next
_CNTX_BYTES = 4096


def _module_function(llmod: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    existing = llmod.globals.get(name)
    if existing is None:
        return ir.Function(llmod, fnty, name)
    if not isinstance(existing, ir.Function) or existing.ftype != fnty or \
            not existing.is_declaration:
        raise MicroKernelError(f"the module already has a '@{name}' that is not the declaration "
                               f"'{fnty}'")
    return existing


def _module_global(llmod: ir.Module, name: str, value: ir.Constant, constant: bool,
                   align: int) -> ir.GlobalVariable:
    gv = llmod.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(llmod, value.type, name)
        gv.linkage = "private"
        gv.global_constant = constant
        gv.unnamed_addr = constant
        gv.initializer = value
        gv.align = align
    return gv


def define_wrapper(llmod: ir.Module, name: str, kernel: MicroKernel) -> ir.Function:
    """Define in ``llmod`` the ``nounwind`` function ``name`` that runs one register tile on
    ``kernel`` (declared in ``llmod`` as an external function):

        void name(ptr A, i64 a_off, ptr B, i64 b_off, ptr C, i64 c_off, i64 rs_c, i64 cs_c,
                  i64 k, i64 m, i64 n, i64 a_next_off, i64 b_next_off, T alpha)

    For ``r < m, c < n``: ``C[c_off + r*rs_c + c*cs_c] += alpha * sum_{kk<k} A[a_off + kk*M_R
    + r] * B[b_off + kk*N_R + c]`` (element offsets; ``M_R x N_R`` = ``kernel.m_r x
    kernel.n_r``; ``T`` the kernel's element type).

    Preconditions (not checked at run time): ``m <= M_R``, ``n <= N_R``; the panels hold full
    ``M_R``/``N_R`` lanes per ``kk``, zero-padded beyond ``m``/``n``; the panel the kernel loads
    with vector moves (our B for the registered kernels) is ``kernel.alignment``-aligned.
    ``A + a_next_off`` and ``B + b_next_off`` are the next tile's panels (prefetch hints).

    A full tile is one kernel call with ``alpha`` and beta = 1 on C; a partial one goes through
    a 64-byte aligned stack tile with ``alpha`` and beta = 0, whose ``m x n`` part is then added
    to C
    (``bli_gemm_ker_var2``'s edge case).  ``k <= 0``, ``m <= 0`` or ``n <= 0`` do nothing.
    """
    elem = _ELEM.get(kernel.dtype)
    if elem is None:
        raise MicroKernelError(f"{kernel.symbol}: unsupported element type {kernel.dtype}")
    if name in llmod.globals or name == kernel.symbol:
        raise MicroKernelError(f"cannot define the wrapper '@{name}': the module already has "
                               "a symbol of that name")
    ukr = _module_function(llmod, kernel.symbol, _UKR_TYPE)
    ukr.attributes.add("nounwind")
    suffix = kernel.dtype
    one = _module_global(llmod, f"__polyopt_blis_one.{suffix}", ir.Constant(elem, 1.0), True,
                         8)
    zero = _module_global(llmod, f"__polyopt_blis_zero.{suffix}", ir.Constant(elem, 0.0), True,
                          8)
    # kernels take a non-const cntx_t*: a writable (if never written) zero block
    cntx = _module_global(llmod, "__polyopt_blis_cntx",
                          ir.Constant(ir.ArrayType(_I8, _CNTX_BYTES), None), False, 64)
    memset = _module_function(llmod, "llvm.memset.p0.i64",
                              ir.FunctionType(_VOID, [_PTR, _I8, _I64, _I1]))

    fn = ir.Function(llmod, _wrapper_type(elem), name)
    fn.attributes.add("nounwind")
    for arg, pname in zip(fn.args, WRAPPER_PARAMS):
        arg.name = pname
    A, a_off, B, b_off, C, c_off, rs_c, cs_c, k, m, n, a_next_off, b_next_off, alpha = fn.args
    m_r, n_r = kernel.m_r, kernel.n_r

    entry = fn.append_basic_block("entry")
    run = fn.append_basic_block("run")
    full_bb = fn.append_basic_block("full")
    part_bb = fn.append_basic_block("partial")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    tile = b.alloca(ir.ArrayType(elem, m_r * n_r), name="tile")
    tile.align = 64
    tile.type = _PTR
    aux = b.alloca(ir.ArrayType(_I8, _AUXINFO_BYTES), name="auxinfo")
    aux.align = 16
    aux.type = _PTR
    alpha_slot = b.alloca(elem, name="alpha.slot")  # the kernel takes its scalars by pointer
    alpha_slot.type = _PTR
    b.store(alpha, alpha_slot)
    zero64 = ir.Constant(_I64, 0)
    empty = b.or_(b.or_(b.icmp_signed("<=", k, zero64), b.icmp_signed("<=", m, zero64)),
                  b.icmp_signed("<=", n, zero64))
    b.cbranch(empty, done, run)

    b.position_at_end(run)
    a = b.gep(A, [a_off], source_etype=elem, name="a")
    bp = b.gep(B, [b_off], source_etype=elem, name="b")
    c = b.gep(C, [c_off], source_etype=elem, name="c")
    a_next = b.gep(A, [a_next_off], source_etype=elem, name="a.next")
    b_next = b.gep(B, [b_next_off], source_etype=elem, name="b.next")
    if kernel.swapped:
        ka, kb, ka_next, kb_next, krs, kcs = bp, a, b_next, a_next, cs_c, rs_c
    else:
        ka, kb, ka_next, kb_next, krs, kcs = a, bp, a_next, b_next, rs_c, cs_c
    b.call(memset, [aux, ir.Constant(_I8, 0), ir.Constant(_I64, _AUXINFO_BYTES),
                    ir.Constant(_I1, 0)])
    b.store(ka_next, b.gep(aux, [ir.Constant(_I64, _AUX_A_NEXT)], source_etype=_I8))
    b.store(kb_next, b.gep(aux, [ir.Constant(_I64, _AUX_B_NEXT)], source_etype=_I8))
    is_full = b.and_(b.icmp_signed("==", m, ir.Constant(_I64, m_r)),
                     b.icmp_signed("==", n, ir.Constant(_I64, n_r)))
    b.cbranch(is_full, full_bb, part_bb)

    b.position_at_end(full_bb)
    b.call(ukr, [k, alpha_slot, ka, kb, one, c, krs, kcs, aux, cntx])
    b.branch(done)

    # the stack tile is row-major in our orientation: unit stride along the kernel's vectors
    b.position_at_end(part_bb)
    t_rs, t_cs = ir.Constant(_I64, n_r), ir.Constant(_I64, 1)
    b.call(ukr, [k, alpha_slot, ka, kb, zero, tile] + ([t_cs, t_rs] if kernel.swapped else [t_rs, t_cs])
           + [aux, cntx])
    _emit_add_tile(fn, b, tile, n_r, c, rs_c, cs_c, m, n, elem)
    b.branch(done)

    b.position_at_end(done)
    b.ret_void()
    return fn


def _emit_add_tile(fn: ir.Function, b: ir.IRBuilder, tile, n_r: int, c, rs_c, cs_c, m, n,
                   elem: ir.Type) -> None:
    """``for r < m: for col < n: c[r*rs_c + col*cs_c] += tile[r*n_r + col]`` (m, n >= 1)."""
    one = ir.Constant(_I64, 1)
    pre = b.block
    rows = fn.append_basic_block("add.row")
    cols = fn.append_basic_block("add.col")
    row_end = fn.append_basic_block("add.row.end")
    exit_ = fn.append_basic_block("add.exit")
    b.branch(rows)
    b.position_at_end(rows)
    r = b.phi(_I64, "r")
    r.add_incoming(ir.Constant(_I64, 0), pre)
    c_row = b.gep(c, [b.mul(r, rs_c)], source_etype=elem)
    t_row = b.gep(tile, [b.mul(r, ir.Constant(_I64, n_r))], source_etype=elem, inbounds=True)
    b.branch(cols)
    b.position_at_end(cols)
    col = b.phi(_I64, "col")
    col.add_incoming(ir.Constant(_I64, 0), rows)
    pc = b.gep(c_row, [b.mul(col, cs_c)], source_etype=elem)
    pt = b.gep(t_row, [col], source_etype=elem, inbounds=True)
    b.store(b.fadd(b.load(pc, typ=elem), b.load(pt, typ=elem)), pc)
    col_next = b.add(col, one, flags=("nuw", "nsw"))
    col.add_incoming(col_next, cols)
    b.cbranch(b.icmp_signed("<", col_next, n), cols, row_end)
    b.position_at_end(row_end)
    r_next = b.add(r, one, flags=("nuw", "nsw"))
    r.add_incoming(r_next, row_end)
    b.cbranch(b.icmp_signed("<", r_next, m), rows, exit_)
    b.position_at_end(exit_)
