"""The target description: the CPU's facts (:mod:`.cpu_facts`), what the micro-benchmarks
measured (:mod:`.microbench`) and what follows from them for the schedule model
(:meth:`TargetDescription.machine_fields`, the fields of
:class:`~polyopt.schedules.blis_schedule.MachineModel`).  ``polyopt target`` prints it; every
benchmark prints :meth:`TargetDescription.summary_line`.

Derived values (all from facts or measurements, never from the CPU's name):

* ``fma_per_cycle``: vector FMAs at the widest width issued per cycle, measured FMAs/ns x
  ns/cycle (the cycle from a chain of dependent register-register adds: Golden Cove and later
  fold an add of an immediate at rename, :mod:`.microbench`), rounded to a quarter;
* ``fma_latency``: cycles from one FMA to a dependent one, measured (rounded); latency x
  throughput is the number of independent accumulators the register tile needs;
* ``full_width_fma``: the FLOP rate of 512-bit FMAs is at least :data:`FULL_WIDTH_RATIO`
  (1.8) times that of 256-bit ones (Zen 4 issues a 512-bit FMA as two 256-bit halves: 1.0x;
  Zen 5 and Intel's server cores: 2.0x); true for a CPU whose widest vectors are 256 bits;
* ``embedded_broadcast``: AVX-512F (FMAs take a ``{1toN}`` broadcast memory operand);
* ``l2_bytes_per_cycle``: what vector loads streaming from L2 draw, measured (0.0 unknown);
* ``slow_gathers``: a 256-bit f64 gather brings its four elements more slowly than four loads
  would (gathered elements per cycle below vector loads per cycle, both measured; Zen 4: 0.8
  against 2).  The code generator then sets LLVM's ``prefer-no-gather`` tuning: where LLVM's
  SLP vectorizer packed the rows of jammed dot products with gathers, PolyBench LARGE ran
  1.4x-2.7x slower on Zen 4 (mvt 6.9 -> 2.6 ms, gemver 7.9 -> 3.2, atax 3.8 -> 2.6,
  syrk 180 -> 131);
* ways, line size, cache sizes: sysfs; ``features``: LLVM's names of the CPU's features.

Without measurements (``POLYOPT_NO_MICROBENCH``, a named target that is not this host) the
core values are MachineModel's defaults.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional

from .cpu_facts import CacheLevel, CpuFacts, host_facts
from .microbench import Measurements, defaults, host_measurements
from .target import Target, is_detected_host

__all__ = ["TargetDescription", "host_description", "describe_target", "target_from_facts",
           "FULL_WIDTH_RATIO"]

#: 512-bit FMAs count as full width when their FLOP rate is at least this multiple of the
#: 256-bit FMAs' (2.0 ideally; 1.8 leaves room for noise).
FULL_WIDTH_RATIO = 1.8

# MachineModel's defaults for what is neither in sysfs nor measured
_DEFAULT_WAYS = {1: 8, 2: 16}
_DEFAULT_LINE = 64
_DEFAULT_FMA_LATENCY = 4
_DEFAULT_FMA_PER_CYCLE = 2.0


@dataclass(frozen=True)
class TargetDescription:
    """Facts + measurements + the code-generation target they belong to."""

    target: Target
    facts: CpuFacts
    measurements: Measurements

    # -- derived ----------------------------------------------------------------------------
    def _widest_rate(self):
        m = self.measurements
        return m.rate("f64", self.target.vector_bits) if m.measured else None

    def full_width_ratio(self) -> Optional[float]:
        """FLOP rate of 512-bit FMAs over 256-bit ones (f64), None if not measured both."""
        m = self.measurements
        wide, half = m.rate("f64", 512), m.rate("f64", 256)
        if not (m.measured and wide and half and half.gflops > 0):
            return None
        return wide.gflops / half.gflops

    def full_width_fma(self) -> bool:
        ratio = self.full_width_ratio()
        if self.target.vector_bits < 512 or ratio is None:
            return True
        return ratio >= FULL_WIDTH_RATIO

    def fma_latency(self) -> int:
        r = self._widest_rate()
        if r is None or r.latency_cycles is None:
            return _DEFAULT_FMA_LATENCY
        return max(1, int(round(r.latency_cycles)))

    def fma_per_cycle(self) -> float:
        r = self._widest_rate()
        if r is None or r.fmas_per_cycle is None:
            return _DEFAULT_FMA_PER_CYCLE
        return max(0.25, round(r.fmas_per_cycle * 4) / 4)

    def l2_bytes_per_cycle(self) -> float:
        """Bytes per cycle vector loads draw from L2 at the widest width (0.0: not measured)."""
        m = self.measurements
        return float(m.l2_bytes_per_cycle.get(str(self.target.vector_bits), 0.0)) \
            if m.measured else 0.0

    def gathered_elements_per_cycle(self) -> Optional[float]:
        m = self.measurements
        g = m.gathers_per_cycle.get("256") if m.measured else None
        return 4 * g if g else None

    def slow_gathers(self) -> bool:
        """Whether a gather is slower than the loads it replaces (False when not measured:
        LLVM's own cost model then decides)."""
        per_cycle = self.gathered_elements_per_cycle()
        loads = self.measurements.loads_per_cycle.get("256")
        return per_cycle is not None and loads is not None and per_cycle < loads

    def llvm_tuning(self) -> str:
        """LLVM tuning features the measurements call for (``+prefer-no-gather``), as a
        feature-string suffix (empty when none)."""
        return ",+prefer-no-gather" if self.slow_gathers() else ""

    def accumulators_needed(self) -> int:
        """Independent FMA chains that hide the latency: latency x throughput."""
        return max(1, math.ceil(self.fma_latency() * self.fma_per_cycle()))

    def _cache(self, level: int) -> Optional[CacheLevel]:
        return self.facts.cache(level)

    def machine_fields(self) -> dict:
        """Keyword arguments of :class:`~polyopt.schedules.blis_schedule.MachineModel`."""
        t = self.target
        l1, l2 = self._cache(1), self._cache(2)
        return dict(vector_bits=t.vector_bits, num_vector_registers=t.num_vector_registers,
                    l1d_bytes=t.l1d_cache_bytes, l2_bytes=t.l2_cache_bytes,
                    l3_bytes=t.l3_cache_bytes,
                    l1d_ways=(l1.ways if l1 and l1.ways else _DEFAULT_WAYS[1]),
                    l2_ways=(l2.ways if l2 and l2.ways else _DEFAULT_WAYS[2]),
                    line_bytes=(l1.line_bytes if l1 and l1.line_bytes else _DEFAULT_LINE),
                    fma_latency=self.fma_latency(), fma_per_cycle=self.fma_per_cycle(),
                    full_width_fma=self.full_width_fma(),
                    embedded_broadcast=self.facts.has("avx512f"),
                    l2_bytes_per_cycle=self.l2_bytes_per_cycle(),
                    features=frozenset(self.facts.features))

    def peak_gflops(self, dtype: str) -> Optional[float]:
        """The micro-benchmark's FMA peak at the widest width (None if not measured)."""
        m = self.measurements
        r = m.rate(dtype, self.target.vector_bits) if m.measured else None
        return r.gflops if r else None

    # -- printing ---------------------------------------------------------------------------
    def summary_line(self) -> str:
        """One line for the top of a benchmark report: CPU, vector ISA, caches, peak."""
        f, t = self.facts, self.target
        caches = ", ".join(
            f"L{c.level}{'d' if c.kind == 'Data' else ''} {_size(c.size_bytes)}"
            + (f" {c.ways}-way" if c.ways else "") for c in f.caches if c.holds_data)
        fma = ""
        if self.measurements.measured and t.vector_bits >= 256:
            fma = (f", {t.vector_bits}-bit FMAs {self.fma_per_cycle():g}/cycle"
                   + ("" if t.vector_bits < 512 else
                      " (full width)" if self.full_width_fma() else " (two halves)"))
        peak = ""
        p64, p32 = self.peak_gflops("f64"), self.peak_gflops("f32")
        if p64 and p32:
            peak = f"; FMA peak {p64:.1f} f64 / {p32:.1f} f32 GFLOPS"
        name = f.model_name or "unknown CPU"
        return (f"machine: {name} (LLVM: {f.llvm_cpu or 'generic'}; names not trusted); "
                f"{f.vector_isa}, {t.num_vector_registers} vector registers{fma}; "
                f"{caches or 'caches unknown'}{peak}")

    def render(self) -> str:
        f, t, m = self.facts, self.target, self.measurements
        out = ["CPU (as reported; polyopt decides nothing from these names):"]
        sig = ", ".join(x for x in (
            f.vendor, f"family {f.family}" if f.family is not None else "",
            f"model {f.model}" if f.model is not None else "",
            f"stepping {f.stepping}" if f.stepping is not None else "") if x)
        out.append(f"  {f.model_name or 'unknown'} ({sig or 'no signature'}); LLVM's CPU "
                   f"name: {f.llvm_cpu or 'generic'}")
        out.append(f"  {t.triple}, {f.logical_cpus} logical CPU(s); signature "
                   f"{f.signature}")
        out.append("Features (LLVM's host features, which the code generator and the model "
                   "use):")
        out.append(f"  vector ISA: {f.vector_isa}: {t.vector_bits}-bit vectors, "
                   f"{t.num_vector_registers} vector registers")
        for group, names in f.grouped_features():
            out.append(f"  {group + ':':9} {' '.join(names)}")
        if not f.has("amx-tile"):
            out.append("  AMX:      none")
        only_cpuinfo = sorted({n for n in f.cpuinfo_flags if n.startswith(("avx", "amx"))}
                              - {_from_llvm(n) for n in f.features})
        if f.llvm_features and only_cpuinfo:
            out.append(f"  in /proc/cpuinfo but not enabled for LLVM: {' '.join(only_cpuinfo)}")
        out.append("Caches (sysfs, cpu0):")
        out += [f"  {c.describe()}" for c in f.caches] or ["  none listed"]
        out.append(f"Micro-benchmarks: {m.source}")
        if m.measured:
            imul = (f"; a dependent imul {m.imul_cycles:g} cycles"
                    if m.imul_cycles is not None else "")
            out.append(f"  core clock {m.clock_ghz:.2f} GHz (chain of dependent add reg, reg, "
                       f"1 cycle each{imul})")
            out.append("  FMA           GFLOPS  FMAs/ns  FMAs/cycle  latency (cycles)")
            for key, r in sorted(m.fma.items(), key=lambda kv: (kv[1].bits, kv[1].dtype)):
                out.append(f"  {r.dtype} {r.bits:>3}-bit {r.gflops:8.1f}  {r.fmas_per_ns:7.2f}"
                           f"  {r.fmas_per_cycle:10.2f}  {r.latency_cycles:8.2f}")
            ratio = self.full_width_ratio()
            if ratio is not None:
                out.append(f"  512-bit / 256-bit FMA FLOP rate: {ratio:.2f}x -> "
                           + ("full width" if ratio >= FULL_WIDTH_RATIO else
                              "512-bit FMAs issue as two 256-bit halves"))
            if m.loads_per_cycle:
                out.append("  L1 vector loads/cycle: " + ", ".join(
                    f"{b}-bit {v:g}" for b, v in sorted(m.loads_per_cycle.items())))
            if m.broadcasts_per_cycle:
                out.append("  broadcast loads/cycle: " + ", ".join(
                    f"{k} {v:g}" for k, v in m.broadcasts_per_cycle.items()))
            if m.fma_bcast_per_cycle:
                out.append("  FMAs with a {1toN} memory operand/cycle: " + ", ".join(
                    f"{k} {v:g}" for k, v in m.fma_bcast_per_cycle.items()))
            if m.l2_bytes_per_cycle:
                out.append("  L2 loads, bytes/cycle: " + ", ".join(
                    f"{b}-bit {v:g}" for b, v in sorted(m.l2_bytes_per_cycle.items())))
            if m.gathers_per_cycle:
                out.append(f"  256-bit f64 gathers/cycle: {m.gathers_per_cycle['256']:g} "
                           f"({self.gathered_elements_per_cycle():g} elements) -> "
                           + ("slower than loads: LLVM told prefer-no-gather"
                              if self.slow_gathers() else "LLVM may gather"))
            out.append(f"  (measured in {m.seconds:.2f} s)")
        out.append("Machine model (schedules/blis_schedule.py MachineModel):")
        fields = self.machine_fields()
        feats = fields.pop("features")
        line = "  "
        for name, value in fields.items():
            item = f"{name}={value}  "
            if len(line) + len(item) > 96:
                out.append(line.rstrip())
                line = "  "
            line += item
        out.append(line.rstrip())
        out.append(f"  features: {len(feats)} (see above); accumulators to hide the FMA "
                   f"latency: {self.accumulators_needed()}")
        return "\n".join(out)

    def to_json(self) -> dict:
        fields = self.machine_fields()
        fields["features"] = sorted(fields["features"])
        t = self.target
        return {"cpu": self.facts.to_json(),
                "target": {"triple": t.triple, "llvm_cpu": t.cpu, "vector_bits": t.vector_bits,
                           "vector_registers": t.num_vector_registers},
                "measurements": self.measurements.to_json(),
                "full_width_ratio": self.full_width_ratio(),
                "accumulators_needed": self.accumulators_needed(),
                "machine_model": fields, "summary": self.summary_line()}


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n // 1024} KiB"


def _from_llvm(name: str) -> str:
    """The /proc/cpuinfo spelling of an LLVM feature, for the comparison in render()."""
    from .cpu_facts import cpuinfo_flag_to_llvm
    return next((f for f in _CPUINFO_AVX if cpuinfo_flag_to_llvm(f) == name), name)


_CPUINFO_AVX = ("avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512_vbmi2", "avx512_bitalg",
                "avx512_vpopcntdq", "avx512_vp2intersect", "avx_vnni", "amx_tile", "amx_bf16",
                "amx_int8", "amx_fp16", "amx_complex", "avx_vnni_int8", "avx_ifma",
                "avx_ne_convert")


@functools.lru_cache(maxsize=None)
def _host_description() -> TargetDescription:
    facts = host_facts()
    return TargetDescription(_detected(), facts, host_measurements(facts))


def _detected() -> Target:
    from .target import _detected_host_target
    return _detected_host_target()


def host_description(remeasure: bool = False) -> TargetDescription:
    """This machine's description: measured once per process at most (then the cache)."""
    if remeasure:
        facts = host_facts()
        desc = TargetDescription(_detected(), facts, host_measurements(facts, remeasure=True))
        _host_description.cache_clear()
        return desc
    return _host_description()


def target_from_facts(facts: CpuFacts, triple: str = "x86_64-unknown-linux-gnu") -> Target:
    """The code-generation target of a (recorded) CPU: its LLVM name and features, its caches."""
    sizes = tuple((facts.cache(level).size_bytes if facts.cache(level) else fallback)
                  for level, fallback in ((1, 32 * 1024), (2, 512 * 1024), (3, 8 * 2**20)))
    return Target.from_features(triple, facts.llvm_cpu,
                                ",".join("+" + f for f in sorted(facts.features)), sizes)


def describe_target(target: Target, facts: Optional[CpuFacts] = None,
                    measurements: Optional[Measurements] = None) -> TargetDescription:
    """The description of ``target``: this host's when ``target`` is the host, else one
    built from the target's features and cache sizes, without measurements (the CPU cannot
    be measured from here), or from the ``facts`` and ``measurements`` given (a recorded
    machine)."""
    if facts is None:
        if is_detected_host(target):
            return host_description()
        enabled = frozenset(x[1:] for x in target.features.split(",") if x.startswith("+"))
        caches = tuple(CacheLevel(level, "Data" if level == 1 else "Unified", size)
                       for level, size in ((1, target.l1d_cache_bytes),
                                           (2, target.l2_cache_bytes),
                                           (3, target.l3_cache_bytes)))
        facts = CpuFacts(arch=target.triple.split("-", 1)[0], llvm_cpu=target.cpu,
                         llvm_features=enabled, caches=caches)
        return TargetDescription(target, facts, defaults("a named target, not this host"))
    return TargetDescription(target, facts,
                             measurements or defaults("a recorded machine, no measurements"))
