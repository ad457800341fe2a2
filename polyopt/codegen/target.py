"""Description of the machine that polyopt compiles for (normally: this host).

A :class:`Target` bundles everything the rest of the compiler needs to know
about the code-generation target:

* what LLVM needs to emit code: the target ``triple``, the ``cpu`` name (as
  reported by ``llvm.get_host_cpu_name()``, e.g. ``znver3``) and the
  ``features`` string (``llvm.get_host_cpu_features()``, e.g.
  ``+avx2,+fma,...``), so that the generated code really uses AVX2/FMA/AVX-512
  when the host has them;
* what the polyhedral cost model and the tiler need: the SIMD register width
  (``vector_bits``), the number of architectural vector registers and the
  sizes of the data caches in bytes (read from
  ``/sys/devices/system/cpu/cpu0/cache/index*/`` on Linux, with fallbacks).

Use :func:`host_target` (cached) to obtain the description of the machine we
are running on, and :func:`create_target_machine` (cached) to obtain an
llvmlite ``TargetMachine`` configured for a :class:`Target`.

:func:`ensure_llvm_initialized` performs the one-time llvmlite initialisation
(native target, asm printer and asm parser).  ``llvm.initialize()`` is only
needed by old llvmlite releases; llvmlite 0.50 raises a RuntimeError from it
("initialization is now handled automatically"), which is ignored.

Note: a ``TargetMachine`` handed to an MCJIT execution engine becomes owned by
that engine, so the cached machine returned by :func:`create_target_machine`
must never be passed to ``create_mcjit_compiler``; use
:func:`new_target_machine` for that.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from dataclasses import dataclass, field

import llvmlite.binding as llvm

__all__ = [
    "Target",
    "host_target",
    "compiling_for",
    "is_detected_host",
    "create_target_machine",
    "new_target_machine",
    "ensure_llvm_initialized",
    "read_cache_sizes",
]


_init_lock = threading.Lock()
_initialized = False


def ensure_llvm_initialized() -> None:
    """Initialise llvmlite's native target, asm printer and asm parser once."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if _initialized:
            return
        try:
            # Needed by old llvmlite; recent releases (0.50 here) raise a
            # RuntimeError saying initialisation is now automatic.
            llvm.initialize()
        except RuntimeError:
            pass
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _initialized = True


# Fallback cache sizes (bytes) used when sysfs is not available.
_FALLBACK_L1D = 32 * 1024
_FALLBACK_L2 = 512 * 1024
_FALLBACK_L3 = 8 * 1024 * 1024

_SYSFS_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def _parse_size(text: str) -> int | None:
    """Parse a sysfs cache size such as ``48K``, ``1024K``, ``32M``."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text, re.IGNORECASE)
    if not m:
        return None
    value = int(m.group(1))
    unit = m.group(2).upper()
    return value * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[unit]


def read_cache_sizes(cache_dir: str = _SYSFS_CACHE_DIR) -> tuple[int, int, int]:
    """Return ``(l1d, l2, l3)`` cache sizes in bytes.

    Reads ``cache_dir/index*/{level,type,size}``; any level that cannot be
    determined falls back to 32 KiB / 512 KiB / 8 MiB respectively.
    """
    found: dict[int, int] = {}
    try:
        entries = sorted(os.listdir(cache_dir))
    except OSError:
        entries = []
    for entry in entries:
        if not entry.startswith("index"):
            continue
        path = os.path.join(cache_dir, entry)
        try:
            with open(os.path.join(path, "level")) as f:
                level = int(f.read().strip())
            with open(os.path.join(path, "type")) as f:
                ctype = f.read().strip()
            with open(os.path.join(path, "size")) as f:
                size = _parse_size(f.read())
        except (OSError, ValueError):
            continue
        if size is None or size <= 0 or ctype == "Instruction":
            continue
        # Keep the first data/unified cache found for each level.
        found.setdefault(level, size)
    return (
        found.get(1, _FALLBACK_L1D),
        found.get(2, _FALLBACK_L2),
        found.get(3, _FALLBACK_L3),
    )


@dataclass(frozen=True)
class Target:
    """A code-generation target.

    Attributes:
        triple: LLVM target triple, e.g. ``x86_64-unknown-linux-gnu``.
        cpu: LLVM CPU name, e.g. ``znver3`` (``""`` means generic).
        features: LLVM feature string, e.g. ``+avx2,+fma,-avx512f,...``.
        vector_bits: width of the widest usable SIMD register (512 with
            AVX-512F, 256 with AVX2/AVX, 128 otherwise).
        num_vector_registers: architectural vector registers (32 with
            AVX-512 or on AArch64, 16 on x86-64 otherwise).
        l1d_cache_bytes, l2_cache_bytes, l3_cache_bytes: data cache sizes.
        has_fma, has_avx2, has_avx512f: convenience feature flags.
    """

    triple: str
    cpu: str
    features: str = field(repr=False)
    vector_bits: int
    num_vector_registers: int
    l1d_cache_bytes: int
    l2_cache_bytes: int
    l3_cache_bytes: int
    has_fma: bool
    has_avx2: bool
    has_avx512f: bool = False

    def vector_width(self, dtype_bits: int) -> int:
        """Number of lanes of a ``dtype_bits``-wide element in one vector
        register (at least 1).  ``vector_width(64) == 4`` on AVX2."""
        if dtype_bits <= 0:
            raise ValueError(f"dtype_bits must be positive, got {dtype_bits}")
        return max(1, self.vector_bits // dtype_bits)

    @property
    def data_layout(self) -> str:
        """LLVM data layout string of this target."""
        return str(create_target_machine(self).target_data)

    @classmethod
    def from_features(
        cls,
        triple: str,
        cpu: str,
        features: str,
        cache_sizes: tuple[int, int, int] | None = None,
    ) -> "Target":
        """Build a Target from an LLVM triple/cpu/feature string."""
        enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
        has_avx512f = "avx512f" in enabled
        has_avx2 = "avx2" in enabled
        has_avx = "avx" in enabled
        has_fma = "fma" in enabled
        arch = triple.split("-", 1)[0]
        is_x86 = arch in ("x86_64", "i386", "i686", "x86")
        if has_avx512f:
            vector_bits, nregs = 512, 32
        elif has_avx2 or has_avx:
            vector_bits, nregs = 256, 16
        elif is_x86:
            vector_bits, nregs = 128, 16 if arch == "x86_64" else 8
        elif arch in ("aarch64", "arm64"):
            vector_bits, nregs = 128, 32
            has_fma = True  # NEON always has fused multiply-add.
        else:
            vector_bits, nregs = 128, 16
        l1d, l2, l3 = cache_sizes if cache_sizes is not None else read_cache_sizes()
        return cls(
            triple=triple,
            cpu=cpu,
            features=features,
            vector_bits=vector_bits,
            num_vector_registers=nregs,
            l1d_cache_bytes=l1d,
            l2_cache_bytes=l2,
            l3_cache_bytes=l3,
            has_fma=has_fma,
            has_avx2=has_avx2,
            has_avx512f=has_avx512f,
        )


_overrides: list = []


def host_target() -> Target:
    """The :class:`Target` describing the machine we are running on (cached), or the one
    :func:`compiling_for` put in its place."""
    if _overrides:
        return _overrides[-1]
    return _detected_host_target()


@contextlib.contextmanager
def compiling_for(target: Target):
    """Within the ``with`` block, :func:`host_target` is ``target``: the passes choose vector
    widths and tiles for it, the JIT compiles for it (the code runs only if this CPU has its
    features) and :func:`polyopt.pipeline.machine_model` describes it from its features
    alone.  For tests and tools that generate code for CPUs other than this one, e.g.
    ``Target.from_features("x86_64-unknown-linux-gnu", "sapphirerapids", "+avx512f,...")``."""
    _overrides.append(target)
    try:
        yield target
    finally:
        _overrides.pop()


def is_detected_host(target: Target) -> bool:
    """Whether ``target`` is this machine as detected (not a named target)."""
    return target == _detected_host_target()


@functools.lru_cache(maxsize=None)
def _detected_host_target() -> Target:
    ensure_llvm_initialized()
    triple = llvm.get_process_triple()
    cpu = llvm.get_host_cpu_name()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # some platforms cannot report host features
        features = ""
    return Target.from_features(triple, cpu, features)


def new_target_machine(target: Target, opt_level: int = 3) -> "llvm.TargetMachine":
    """Create a fresh (uncached) llvmlite TargetMachine for ``target``.

    Uses the default relocation model and the ``jitdefault`` code model, i.e.
    code that MCJIT can load anywhere in the address space.  Use this for
    anything that takes ownership of the machine (MCJIT engines).
    """
    ensure_llvm_initialized()
    if not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level must be in 0..3, got {opt_level}")
    llvm_target = llvm.Target.from_triple(target.triple)
    return llvm_target.create_target_machine(
        cpu=target.cpu,
        features=target.features,
        opt=opt_level,
        reloc="default",
        codemodel="jitdefault",
        jit=True,
    )


@functools.lru_cache(maxsize=None)
def create_target_machine(target: Target, opt_level: int = 3) -> "llvm.TargetMachine":
    """Cached llvmlite TargetMachine for ``target`` (see :func:`new_target_machine`).

    The returned object is shared: do not hand it to an execution engine.
    """
    return new_target_machine(target, opt_level)
