"""Short micro-benchmarks of the core, measured once per CPU and cached.

What is measured (x86 only; each loop is inline assembly in an LLVM function JIT-compiled with
llvmlite, so that the exact instructions run, with no compiler in between):

* the core clock: a chain of dependent ``addq %rcx, %rax`` (a register-register add, its
  second operand loaded from memory, the chain carried from one call of the body to the next
  through an LLVM value).  A register-register add takes one cycle on every x86-64 core, so ns
  per add is ns per cycle, at the clock the core runs at now (turbo included; the TSC's
  nominal rate is not the core's).  Not ``addq $1, %rax``: Intel's cores since Golden Cove
  (Alder Lake P-cores, Sapphire/Emerald Rapids, Raptor Cove) fold a 64-bit add, sub, inc or
  dec of a small immediate into the register renamer (``rax -> pr1 + 1``), which then runs a
  dependent chain of them at up to 5 a cycle (Andreas Abel, uops.info, 2021; Tavian Barnes,
  "The Alder Lake anomaly, explained", 2025); that clock read 7-18 GHz on an Emerald Rapids
  Xeon, and every per-cycle figure below came out 3-7x off (FMA latency 12 cycles, 0.66
  FMAs a cycle).  The renamer folds immediates only, not an add of two registers.  A chain
  of dependent ``imulq %rcx, %rax`` (3 cycles on Intel's cores since Nehalem and on every
  Zen, up to 6 on older AMD cores) checks it: :func:`_plausible` rejects a clock under which
  an imul does not take 2.5-6.5 cycles;
* vector FMA throughput: ``vfmadd231p[ds]`` on 12 (256-bit) or 24 (512-bit) independent
  accumulators, more than latency x throughput on any known core; reported as GFLOPS, FMAs
  per ns and FMAs per cycle (FMAs/ns x ns/cycle);
* vector FMA latency: one chain of dependent FMAs, in cycles;
* with AVX-512, the throughput of FMAs whose third operand is a broadcast memory operand
  (``{1to8}``/``{1to16}``: the column form's inner instruction);
* L1 load throughput (vector loads of a 2 KiB buffer, 64-byte aligned) and broadcast-load
  throughput (``vbroadcasts[ds]``), per cycle;
* L2 load bandwidth: vector loads sweeping a buffer four times the L1d (a power of two, at
  most half of L2), in bytes per cycle: what a register tile that streams one operand's
  micro-panels from L2 (the GEPB order of the BLIS schedule) can draw;
* with AVX2, the throughput of ``vgatherqpd`` (four f64 from four cache lines of L1), in
  gathers per cycle: whether LLVM's vectorizers should gather at all on this core.

Widths and types: 256 and 512 bits (only those the CPU has), f64 and f32.  Each loop runs
about a millisecond, best of 5 (the best is the least disturbed by the other processes of a
shared machine), the five runs of each loop spread over the whole measurement (one run of
every loop, five times over); all of it takes well under a second.

The result is cached as JSON in ``$XDG_CACHE_HOME/polyopt/`` (default ``~/.cache/polyopt/``)
under the CPU's signature (:attr:`CpuFacts.signature <polyopt.codegen.cpu_facts.CpuFacts>`:
vendor, family, model, stepping, a hash of the flags) and reused by later runs.
``POLYOPT_NO_MICROBENCH=1``, a cache folder that cannot be created or written, a CPU whose
instructions are not measured here (not x86, no FMA) or implausible numbers give
:func:`defaults`, derived from the flags, with the reason in ``source``.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

from .cpu_facts import CpuFacts

__all__ = ["Measurements", "FmaRate", "defaults", "measure", "cache_path",
           "host_measurements", "MICROBENCH_VERSION"]

#: Bumped when what is measured changes: older cache files are then ignored.
MICROBENCH_VERSION = 4     # 4: the clock from add reg, reg (immediates fold on Golden Cove)

_THROUGHPUT_ACCUMULATORS = {256: 12, 512: 24}
_REPS = 5
_TARGET_SECONDS = 0.001


@dataclass(frozen=True)
class FmaRate:
    """One FMA width and type: throughput and latency."""

    bits: int
    dtype: str
    gflops: float
    fmas_per_ns: float
    fmas_per_cycle: Optional[float]
    latency_cycles: Optional[float]
    latency_ns: float


@dataclass(frozen=True)
class Measurements:
    """What :func:`measure` found (or :func:`defaults` assumed: ``measured`` False).
    ``fma`` maps ``"f64x512"`` etc. to :class:`FmaRate`; the per-cycle dicts map the width in
    bits (as a string, for JSON) to instructions per cycle.  ``imul_cycles``: a dependent
    ``imul`` in cycles of the clock (3 on current cores): the clock's check."""

    source: str
    measured: bool
    clock_ghz: Optional[float] = None
    imul_cycles: Optional[float] = None
    fma: dict = field(default_factory=dict)
    fma_bcast_per_cycle: dict = field(default_factory=dict)
    loads_per_cycle: dict = field(default_factory=dict)
    broadcasts_per_cycle: dict = field(default_factory=dict)
    l2_bytes_per_cycle: dict = field(default_factory=dict)
    gathers_per_cycle: dict = field(default_factory=dict)
    seconds: float = 0.0

    def rate(self, dtype: str, bits: int) -> Optional[FmaRate]:
        return self.fma.get(f"{dtype}x{bits}")

    def to_json(self) -> dict:
        out = asdict(self)
        out["fma"] = {k: asdict(v) for k, v in self.fma.items()}
        return out

    @classmethod
    def from_json(cls, data: dict, source: str) -> "Measurements":
        fma = {k: FmaRate(**v) for k, v in data.get("fma", {}).items()}
        return cls(source=source, measured=bool(data.get("measured")),
                   clock_ghz=data.get("clock_ghz"), imul_cycles=data.get("imul_cycles"),
                   fma=fma,
                   fma_bcast_per_cycle=data.get("fma_bcast_per_cycle", {}),
                   loads_per_cycle=data.get("loads_per_cycle", {}),
                   broadcasts_per_cycle=data.get("broadcasts_per_cycle", {}),
                   l2_bytes_per_cycle=data.get("l2_bytes_per_cycle", {}),
                   gathers_per_cycle=data.get("gathers_per_cycle", {}),
                   seconds=data.get("seconds", 0.0))


def defaults(reason: str) -> Measurements:
    """No measurement: the description falls back on values derived from the flags."""
    return Measurements(source=f"defaults ({reason})", measured=False)


# -- the loops ----------------------------------------------------------------------------------

def _widths(facts: CpuFacts) -> list:
    """Vector widths to measure: 256 with AVX (FMAs need FMA too), 512 with AVX-512F."""
    out = []
    if facts.has("avx"):
        out.append(256)
    if facts.has("avx512f"):
        out.append(512)
    return out


def _reg(bits: int, i: int) -> str:
    return f"%{'zmm' if bits == 512 else 'ymm'}{i}"


def _loop_fn(name: str, body: list, prologue: list, clobbers: list) -> str:
    """``void name(i64 n, ptr p)``: the prologue once, then ``n`` times the body (inline
    assembly, AT&T syntax, ``$0`` is ``p``), then ``vzeroupper``."""
    def asm(lines):
        return "\\0A\\09".join(lines)
    clob = ",".join(["~{memory}", "~{dirflag}", "~{fpsr}", "~{flags}"] +
                    [f"~{{{c}}}" for c in clobbers])
    pro = (f'  call void asm sideeffect "{asm(prologue)}", "r,{clob}"(ptr %p)\n'
           if prologue else "")
    return f"""
define void @{name}(i64 %n, ptr %p) {{
entry:
{pro}  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  call void asm sideeffect "{asm(body)}", "r,{clob}"(ptr %p)
  %i1 = add i64 %i, 1
  %done = icmp sge i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  call void asm sideeffect "vzeroupper", "~{{dirflag}},~{{fpsr}},~{{flags}}"()
  ret void
}}
"""


#: Dependent integer instructions per call of the clock's body (and of the imul check's).
_CHAIN = 200


def _chain_fn(name: str, instruction: str) -> str:
    """``void name(i64 n, ptr p)``: ``n`` times :data:`_CHAIN` copies of ``instruction``
    (``$0`` the chain's register, ``$2`` a register holding the i64 at ``p``), each one
    depending on the one before.  The chain goes through an LLVM value (a tied operand and a
    phi) from one call of the body to the next, so no two calls overlap in the out-of-order
    window, however the register allocator treats the asm; the operand comes from memory, so
    the renamer cannot know its value."""
    body = "\\0A\\09".join([instruction] * _CHAIN)
    return f"""
define void @{name}(i64 %n, ptr %p) {{
entry:
  %y = load i64, ptr %p
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %x = phi i64 [ 0, %entry ], [ %x1, %loop ]
  %x1 = call i64 asm sideeffect "{body}", "=r,0,r,~{{dirflag}},~{{fpsr}},~{{flags}}"(i64 %x, i64 %y)
  %i1 = add i64 %i, 1
  %done = icmp sge i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""


def _vector_clobbers(count: int) -> list:
    return [f"xmm{i}" for i in range(count)]


def l2_sweep_bytes(facts: CpuFacts) -> int:
    """The buffer the L2 bandwidth loop sweeps: four times the L1d, rounded up to a power of
    two, at most half of L2 (64 KiB when the caches are not known)."""
    l1, l2 = facts.cache(1), facts.cache(2)
    size = 1 << max(16, (4 * l1.size_bytes - 1).bit_length()) if l1 else 1 << 16
    if l2:
        size = min(size, 1 << max(12, (l2.size_bytes // 2).bit_length() - 1))
    return size


def _kernels(facts: CpuFacts) -> dict:
    """name -> (LLVM IR, instructions per call of the body)."""
    # not ``addq $1``: Golden Cove and later fold immediate adds at rename (module docstring)
    kernels = {"clock": (_chain_fn("clock", "addq $2, $0"), _CHAIN),
               "imul": (_chain_fn("imul", "imulq $2, $0"), _CHAIN)}
    sweep = l2_sweep_bytes(facts)
    for bits in _widths(facts):
        nregs = 32 if bits == 512 else 16
        zero = ([f"vpxord {_reg(512, i)}, {_reg(512, i)}, {_reg(512, i)}" for i in range(32)]
                if bits == 512 else [f"vxorps {_reg(256, i)}, {_reg(256, i)}, {_reg(256, i)}"
                                     for i in range(16)])
        clob = _vector_clobbers(nregs)
        vec_bytes = bits // 8
        for dtype, sfx, bsfx, elem in (("f64", "pd", "sd", 8), ("f32", "ps", "ss", 4)):
            if facts.has("fma"):
                acc = _THROUGHPUT_ACCUMULATORS[bits]
                s1, s2 = _reg(bits, nregs - 2), _reg(bits, nregs - 1)
                body = [f"vfmadd231{sfx} {s1}, {s2}, {_reg(bits, i)}" for i in range(acc)] * 4
                kernels[f"fma_{dtype}x{bits}"] = (_loop_fn(f"fma_{dtype}x{bits}", body, zero,
                                                           clob), len(body))
                body = [f"vfmadd231{sfx} {s1}, {s2}, {_reg(bits, 0)}"] * 48
                kernels[f"lat_{dtype}x{bits}"] = (_loop_fn(f"lat_{dtype}x{bits}", body, zero,
                                                           clob), len(body))
                if bits == 512:
                    lanes = bits // (8 * elem)
                    body = [f"vfmadd231{sfx} {elem * i}($0){{1to{lanes}}}, {s2}, "
                            f"{_reg(bits, i)}" for i in range(acc)] * 4
                    kernels[f"fmabc_{dtype}x{bits}"] = (
                        _loop_fn(f"fmabc_{dtype}x{bits}", body, zero, clob), len(body))
            body = [f"vbroadcast{bsfx} {elem * i}($0), {_reg(bits, i % 16)}"
                    for i in range(32)]
            kernels[f"bcast_{dtype}x{bits}"] = (_loop_fn(f"bcast_{dtype}x{bits}", body, zero,
                                                         clob), len(body))
        mov = "vmovups"
        body = [f"{mov} {vec_bytes * (i % 32)}($0), {_reg(bits, i % 16)}" for i in range(32)]
        kernels[f"load_x{bits}"] = (_loop_fn(f"load_x{bits}", body, zero, clob), len(body))
        # the same loads sweeping the L2-sized buffer once per call of the body
        body = [f"{mov} {vec_bytes * i}($0,%rcx), {_reg(bits, i % 16)}" for i in range(32)]
        body = ["xorl %ecx, %ecx", "1:"] + body + [f"addq $${32 * vec_bytes}, %rcx",
                                                    f"cmpq $${sweep}, %rcx", "jb 1b"]
        kernels[f"l2load_x{bits}"] = (_loop_fn(f"l2load_x{bits}", body, zero, clob + ["rcx"]),
                                      sweep // vec_bytes)
    if facts.has("avx2"):
        kernels["gather_x256"] = (_loop_fn("gather_x256", *_gather_loop()), _GATHERS)
    return kernels


_GATHERS = 7


def _gather_loop() -> tuple:
    """AVX2's ``vgatherqpd``: four f64 from four cache lines of the L1 buffer (indices 0, 8,
    16, 24 written by the prologue), :data:`_GATHERS` independent ones per body, each mask
    set again (the instruction clears it)."""
    prologue = [f"movq $${8 * i}, {8 * i}($0)" for i in range(4)] + \
               ["vmovdqu 0($0), %ymm15"]
    body = []
    for i in range(_GATHERS):
        mask = f"%ymm{_GATHERS + i}"
        body += [f"vpcmpeqq {mask}, {mask}, {mask}",
                 f"vgatherqpd {mask}, ($0,%ymm15,8), %ymm{i}"]
    return body, prologue, _vector_clobbers(16)


def _calls_per_run(fn, addr: int) -> int:
    """Calls of the body that take about :data:`_TARGET_SECONDS`."""
    n = 16
    while True:
        start = time.perf_counter()
        fn(n, addr)
        dt = time.perf_counter() - start
        if dt >= _TARGET_SECONDS / 4 or n >= 1 << 24:
            break
        n *= 4
    return max(1, int(n * _TARGET_SECONDS / max(dt, 1e-9)))


def _time_per_instruction(loops: dict, addr: int) -> dict:
    """name -> seconds per instruction of the body, for ``loops`` (name -> (function,
    instructions per call of the body)): each run about a millisecond, the best of
    :data:`_REPS`.  The runs go round the loops rather than one loop's runs in a row, so that
    a stretch of contention on a shared core (or a change of clock) that spoils one run of
    the clock's chain spoils one run of each loop, not all five of the clock's: every
    per-cycle figure divides by the clock."""
    calls = {name: _calls_per_run(fn, addr) for name, (fn, _) in loops.items()}
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(_REPS):
        for name, (fn, _) in loops.items():
            start = time.perf_counter()
            fn(calls[name], addr)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: best[name] / (calls[name] * per_call)
            for name, (_, per_call) in loops.items()}


def measure(facts: CpuFacts, target=None) -> Measurements:
    """Run the loops on this CPU (``facts`` must be the host's).  Returns :func:`defaults`
    when the CPU is not x86 or has no AVX."""
    if not facts.is_x86:
        return defaults(f"no micro-benchmarks for {facts.arch}")
    if not _widths(facts):
        return defaults("no AVX: nothing vector-wide to measure")
    from .jit import JITEngine
    from .target import _detected_host_target
    started = time.perf_counter()
    kernels = _kernels(facts)
    engine = JITEngine("\n".join(ir for ir, _ in kernels.values()),
                       target if target is not None else _detected_host_target())
    sweep = l2_sweep_bytes(facts)
    raw = ctypes.create_string_buffer(max(2048, sweep) + 64 * 4)
    addr = (ctypes.addressof(raw) + 63) // 64 * 64
    proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)
    per_instr = _time_per_instruction(
        {name: (proto(engine.function_address(name)), count)
         for name, (_, count) in kernels.items()}, addr)
    cycle_ns = per_instr.pop("clock") * 1e9
    imul_cycles = round(per_instr.pop("imul") * 1e9 / cycle_ns, 2)
    fma = {}
    for key in [k[4:] for k in per_instr if k.startswith("fma_")]:
        dtype, bits = key.split("x")
        bits = int(bits)
        lanes = bits // (64 if dtype == "f64" else 32)
        per_ns = 1e-9 / per_instr[f"fma_{key}"]
        lat_ns = per_instr[f"lat_{key}"] * 1e9
        fma[key] = FmaRate(bits, dtype, gflops=round(per_ns * 2 * lanes, 2),
                           fmas_per_ns=round(per_ns, 3),
                           fmas_per_cycle=round(per_ns * cycle_ns, 2),
                           latency_cycles=round(lat_ns / cycle_ns, 2),
                           latency_ns=round(lat_ns, 3))

    def per_cycle(prefix):
        return {k[len(prefix):]: round(cycle_ns / (per_instr[k] * 1e9), 2)
                for k in per_instr if k.startswith(prefix)}
    l2 = {bits: round(v * int(bits) // 8, 1) for bits, v in per_cycle("l2load_x").items()}
    return Measurements(source="measured", measured=True, clock_ghz=round(1 / cycle_ns, 3),
                        imul_cycles=imul_cycles, fma=fma, fma_bcast_per_cycle=per_cycle("fmabc_"),
                        loads_per_cycle=per_cycle("load_x"), l2_bytes_per_cycle=l2,
                        broadcasts_per_cycle=per_cycle("bcast_"),
                        gathers_per_cycle=per_cycle("gather_x"),
                        seconds=round(time.perf_counter() - started, 3))


def _plausible(m: Measurements) -> Optional[str]:
    """Why the numbers cannot be right (a process took the core mid-loop), or None."""
    if m.clock_ghz is None or not 0.3 <= m.clock_ghz <= 8:
        return f"clock {m.clock_ghz} GHz"
    if m.imul_cycles is None or not 2.5 <= m.imul_cycles <= 6.5:
        return (f"clock {m.clock_ghz} GHz: a dependent imul took {m.imul_cycles} of its cycles "
                f"(3 on current cores), so the add chain did not run one add a cycle")
    for key, r in m.fma.items():
        if not 0.2 <= (r.fmas_per_cycle or 0) <= 4.5:
            return f"{key}: {r.fmas_per_cycle} FMAs/cycle"
        if not 1.5 <= (r.latency_cycles or 0) <= 16:
            return f"{key}: FMA latency {r.latency_cycles} cycles"
    return None


# -- the cache ----------------------------------------------------------------------------------

def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "polyopt")


def cache_path(facts: CpuFacts) -> str:
    return os.path.join(cache_dir(), f"target-{facts.signature}.json")


def _read_cache(facts: CpuFacts) -> Optional[Measurements]:
    path = cache_path(facts)
    try:
        with open(path) as f:
            data = json.load(f)
        if data.get("version") != MICROBENCH_VERSION or data.get("signature") != \
                facts.signature:
            return None
        cached = Measurements.from_json(data["measurements"], f"cached in {path}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not our cache's shape
        return None
    if cached.measured and not (isinstance(cached.clock_ghz, (int, float))
                                and cached.clock_ghz > 0 and cached.fma):
        return None                      # edited or truncated: measure again
    return cached


def _writable_cache_dir() -> Optional[str]:
    folder = cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _write_cache(facts: CpuFacts, m: Measurements) -> bool:
    path = cache_path(facts)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".target-",
                                   suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": MICROBENCH_VERSION, "signature": facts.signature,
                       "cpu": facts.model_name, "llvm_cpu": facts.llvm_cpu,
                       "measurements": m.to_json()}, f, indent=2)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


_lock = threading.Lock()
_memo: dict = {}


def host_measurements(facts: CpuFacts, remeasure: bool = False) -> Measurements:
    """This CPU's measurements: from the cache when it has them, else measured (once per
    process) and cached; :func:`defaults` when ``POLYOPT_NO_MICROBENCH`` is set (not
    ``0``), when the cache folder cannot be written (each process would pay the loops again)
    or when the numbers are implausible twice.  ``remeasure`` measures whatever the cache
    holds and stores the result when it can."""
    if os.environ.get("POLYOPT_NO_MICROBENCH", "") not in ("", "0") and not remeasure:
        return defaults("POLYOPT_NO_MICROBENCH is set")
    with _lock:
        key = facts.signature
        if not remeasure and key in _memo:
            return _memo[key]
        result = None if remeasure else _read_cache(facts)
        if result is None:
            writable = _writable_cache_dir()
            if writable is None and not remeasure:
                result = defaults(f"cache folder {cache_dir()} cannot be written")
            else:
                result = measure(facts)
                why = _plausible(result) if result.measured else None
                if why:
                    result = measure(facts)
                    why = _plausible(result)
                    if why:
                        result = defaults(f"implausible measurement: {why}")
                if result.measured:
                    if writable and _write_cache(facts, result):
                        result = Measurements.from_json(
                            result.to_json(), f"measured now, cached in {cache_path(facts)}")
                    else:
                        result = Measurements.from_json(
                            result.to_json(), "measured now (not cached: the cache folder "
                                              "cannot be written)")
        _memo[key] = result
        return result
