"""What the CPU says about itself: signature, feature flags, caches, core count.

Facts, never names: the model name and LLVM's CPU name are recorded for the reader, but a
hypervisor may report an Intel Xeon with AMX as family 6 model 167, which LLVM calls
``rocketlake`` (a desktop part without AMX).  Everything polyopt decides comes from the flags
(LLVM's ``get_host_cpu_features()``, which also checks that the OS saves the AVX-512 and AMX
state, and ``/proc/cpuinfo``), the caches in sysfs and what :mod:`.microbench` measures.

The readers take text or file trees so that recorded machines can be parsed in tests:

    facts = parse_facts(cpuinfo_text, cache_entries, llvm_cpu="znver4",
                        llvm_features="+avx2,+fma,...", logical_cpus=2)

:func:`host_facts` reads this machine (``/proc/cpuinfo``,
``/sys/devices/system/cpu/cpu0/cache/index*/``, llvmlite) once per process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

__all__ = ["CacheLevel", "CpuFacts", "parse_cpuinfo", "read_sysfs_caches", "parse_caches",
           "parse_facts", "host_facts", "cpuinfo_flag_to_llvm", "FEATURE_GROUPS"]

SYSFS_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"
_SYSFS_FILES = ("level", "type", "size", "ways_of_associativity", "coherency_line_size",
                "number_of_sets", "shared_cpu_list")

#: Feature groups ``polyopt target`` prints, LLVM names (only those the CPU has are shown).
FEATURE_GROUPS = (
    ("SSE", ("sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2")),
    ("AVX", ("avx", "avx2", "fma", "f16c", "avxvnni", "avxvnniint8", "avxifma",
             "avxneconvert")),
    ("AVX-512", ("avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl", "avx512ifma",
                 "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
                 "avx512vpopcntdq", "avx512bf16", "avx512fp16", "avx512vp2intersect",
                 "avx512er", "avx512pf")),
    ("AMX", ("amx-tile", "amx-bf16", "amx-int8", "amx-fp16", "amx-complex")),
    ("NEON/SVE", ("neon", "sve", "sve2", "dotprod", "bf16", "i8mm", "fullfp16")),
)


def cpuinfo_flag_to_llvm(flag: str) -> str:
    """The LLVM feature name of a ``/proc/cpuinfo`` flag: ``avx512_bf16`` -> ``avx512bf16``,
    ``amx_tile`` -> ``amx-tile``, ``avx_vnni`` -> ``avxvnni``, ``sse4_1`` -> ``sse4.1``,
    ``pni`` -> ``sse3``; other flags unchanged."""
    if flag == "pni":
        return "sse3"
    if flag.startswith("sse4_"):
        return flag.replace("_", ".")
    if flag.startswith("amx_"):
        return flag.replace("_", "-")
    if flag.startswith("avx"):
        return flag.replace("_", "")
    return flag


@dataclass(frozen=True)
class CacheLevel:
    """One cache of cpu0 as sysfs describes it; ``shared_by``: how many logical CPUs share it
    (1: private to the core)."""

    level: int
    kind: str                 # "Data", "Instruction" or "Unified"
    size_bytes: int
    ways: Optional[int] = None
    line_bytes: Optional[int] = None
    sets: Optional[int] = None
    shared_by: int = 1

    @property
    def holds_data(self) -> bool:
        return self.kind != "Instruction"

    def describe(self) -> str:
        size = (f"{self.size_bytes // 2**20} MiB" if self.size_bytes >= 2**20 and
                self.size_bytes % 2**20 == 0 else f"{self.size_bytes // 1024} KiB")
        name = f"L{self.level}{'d' if self.kind == 'Data' else 'i' if self.kind == 'Instruction' else ''}"
        ways = f", {self.ways}-way" if self.ways else ""
        line = f", {self.line_bytes} B lines" if self.line_bytes else ""
        share = "private" if self.shared_by <= 1 else f"shared by {self.shared_by} CPUs"
        return f"{name} {size}{ways}{line}, {share}"


@dataclass(frozen=True)
class CpuFacts:
    """The CPU's signature, flags and caches.  ``features`` (LLVM names) is what decisions use:
    LLVM's host features when it reports them, else the ``/proc/cpuinfo`` flags translated."""

    arch: str
    vendor: str = ""
    family: Optional[int] = None
    model: Optional[int] = None
    stepping: Optional[int] = None
    model_name: str = ""
    cpuinfo_flags: frozenset = frozenset()
    llvm_cpu: str = ""
    llvm_features: frozenset = frozenset()      # enabled ("+x") features of LLVM's string
    caches: tuple = ()
    logical_cpus: int = 1
    features: frozenset = field(default=frozenset())

    def __post_init__(self):
        if not self.features:
            chosen = self.llvm_features or frozenset(
                cpuinfo_flag_to_llvm(f) for f in self.cpuinfo_flags)
            object.__setattr__(self, "features", frozenset(chosen))

    def has(self, *names: str) -> bool:
        return all(n in self.features for n in names)

    def missing(self, names: Iterable[str]) -> tuple:
        return tuple(n for n in names if n not in self.features)

    def cache(self, level: int) -> Optional[CacheLevel]:
        """The data (or unified) cache of ``level``, None if sysfs does not list one."""
        return next((c for c in self.caches if c.level == level and c.holds_data), None)

    @property
    def is_x86(self) -> bool:
        return self.arch in ("x86_64", "amd64", "i386", "i686", "x86")

    @property
    def vector_isa(self) -> str:
        """The widest vector ISA the features give: ``AVX-512``, ``AVX2+FMA``, ``AVX``,
        ``SSE2``, ``NEON``, or ``scalar``."""
        if self.has("avx512f"):
            return "AVX-512"
        if self.has("avx2", "fma"):
            return "AVX2+FMA"
        if self.has("avx2"):
            return "AVX2"
        if self.has("avx"):
            return "AVX"
        if self.is_x86:
            return "SSE2"
        if self.arch in ("aarch64", "arm64"):
            return "NEON"
        return "scalar"

    @property
    def signature(self) -> str:
        """What identifies the measurements of this CPU: vendor, family, model, stepping, and
        a hash of the model name, the features and LLVM's CPU name (a different hypervisor
        mask or LLVM release gets new measurements)."""
        digest = hashlib.sha256(" ".join([self.model_name, self.llvm_cpu] +
                                          sorted(self.features)).encode()).hexdigest()[:12]
        parts = [self.arch, self.vendor or "unknown", f"f{self.family}", f"m{self.model}",
                 f"s{self.stepping}", digest]
        return "-".join(re.sub(r"[^A-Za-z0-9_.]", "_", str(p)) for p in parts)

    def grouped_features(self) -> list:
        """``[(group, [features the CPU has])]`` for :data:`FEATURE_GROUPS`, empty groups
        left out."""
        return [(g, [n for n in names if n in self.features]) for g, names in FEATURE_GROUPS
                if any(n in self.features for n in names)]

    def to_json(self) -> dict:
        return {"arch": self.arch, "vendor": self.vendor, "family": self.family,
                "model": self.model, "stepping": self.stepping, "model_name": self.model_name,
                "llvm_cpu": self.llvm_cpu, "signature": self.signature,
                "logical_cpus": self.logical_cpus, "vector_isa": self.vector_isa,
                "features": sorted(self.features),
                "feature_groups": {g: names for g, names in self.grouped_features()},
                "cpuinfo_flags": sorted(self.cpuinfo_flags),
                "caches": [{"level": c.level, "type": c.kind, "size_bytes": c.size_bytes,
                            "ways": c.ways, "line_bytes": c.line_bytes, "sets": c.sets,
                            "shared_by": c.shared_by} for c in self.caches]}


def parse_cpuinfo(text: str) -> dict:
    """The first processor's ``vendor_id``, ``cpu family``, ``model``, ``stepping``, ``model
    name`` and ``flags`` (x86) or ``Features`` (ARM) of ``/proc/cpuinfo`` text, as
    ``{"vendor", "family", "model", "stepping", "model_name", "flags"}``."""
    out = {"vendor": "", "family": None, "model": None, "stepping": None, "model_name": "",
           "flags": frozenset()}
    first = text.strip().split("\n\n", 1)[0] if text.strip() else ""
    for line in first.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key in ("vendor_id", "cpu implementer") and not out["vendor"]:
            out["vendor"] = value
        elif key == "cpu family":
            out["family"] = _int(value)
        elif key in ("model", "cpu part") and out["model"] is None:
            out["model"] = _int(value)
        elif key in ("stepping", "cpu revision") and out["stepping"] is None:
            out["stepping"] = _int(value)
        elif key == "model name":
            out["model_name"] = value
        elif key in ("flags", "features"):
            out["flags"] = frozenset(value.split())
    return out


def _int(text: str) -> Optional[int]:
    try:
        return int(text, 0)
    except ValueError:
        return None


def read_sysfs_caches(cache_dir: str = SYSFS_CACHE_DIR) -> list:
    """``[{file: text}]`` of each ``index*`` folder of ``cache_dir`` (missing files left out;
    an unreadable folder gives ``[]``)."""
    try:
        names = sorted(n for n in os.listdir(cache_dir) if n.startswith("index"))
    except OSError:
        return []
    entries = []
    for name in names:
        entry = {}
        for f in _SYSFS_FILES:
            try:
                with open(os.path.join(cache_dir, name, f)) as fh:
                    entry[f] = fh.read().strip()
            except OSError:
                pass
        entries.append(entry)
    return entries


def _size(text: str) -> Optional[int]:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text or "", re.IGNORECASE)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2).upper()]


def _cpu_count(cpu_list: str) -> int:
    """Number of CPUs in a sysfs list such as ``0-3,8``."""
    count = 0
    for part in (cpu_list or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            count += int(hi) - int(lo) + 1 if hi else 1
        except ValueError:
            return 1
    return max(1, count)


def parse_caches(entries: Iterable[dict]) -> tuple:
    """:class:`CacheLevel` s from :func:`read_sysfs_caches` entries, by level (entries
    without a level, type or size are skipped; ways of 0, which sysfs gives for fully
    associative caches or hidden values, become None)."""
    caches = []
    for e in entries:
        level, size = _int(e.get("level", "")), _size(e.get("size", ""))
        kind = e.get("type", "")
        if level is None or not size or not kind:
            continue
        ways = _int(e.get("ways_of_associativity", "")) or None
        caches.append(CacheLevel(level, kind, size, ways,
                                 _int(e.get("coherency_line_size", "")) or None,
                                 _int(e.get("number_of_sets", "")) or None,
                                 _cpu_count(e.get("shared_cpu_list", ""))))
    return tuple(sorted(caches, key=lambda c: (c.level, c.kind != "Data")))


def parse_facts(cpuinfo_text: str, cache_entries: Iterable[dict], *, llvm_cpu: str = "",
                llvm_features: str = "", logical_cpus: int = 1,
                arch: str = "x86_64") -> CpuFacts:
    """:class:`CpuFacts` from recorded text: ``/proc/cpuinfo``, sysfs cache entries, LLVM's
    CPU name and feature string (``+avx2,-avx512f,...``)."""
    info = parse_cpuinfo(cpuinfo_text)
    enabled = frozenset(f[1:] for f in llvm_features.split(",") if f.startswith("+"))
    return CpuFacts(arch=arch, vendor=info["vendor"], family=info["family"],
                    model=info["model"], stepping=info["stepping"],
                    model_name=info["model_name"], cpuinfo_flags=info["flags"],
                    llvm_cpu=llvm_cpu, llvm_features=enabled,
                    caches=parse_caches(cache_entries), logical_cpus=max(1, logical_cpus))


@functools.lru_cache(maxsize=None)
def host_facts() -> CpuFacts:
    """This machine's facts (read once per process)."""
    import llvmlite.binding as llvm

    from .target import ensure_llvm_initialized
    ensure_llvm_initialized()
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    except OSError:
        cpuinfo = ""
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        features = ""
    arch = llvm.get_process_triple().split("-", 1)[0] or platform.machine()
    return parse_facts(cpuinfo, read_sysfs_caches(), llvm_cpu=llvm.get_host_cpu_name(),
                       llvm_features=features, logical_cpus=os.cpu_count() or 1, arch=arch)
