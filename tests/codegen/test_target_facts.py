"""The target description: facts read from recorded machines (Zen 3, Zen 4, Zen 5, the Intel
AMX host), the MachineModel derived from them, and this host's micro-benchmarks and cache."""

import dataclasses
import json
import os

import pytest

import cpu_fixtures
import polyopt
from polyopt.codegen import microbench
from polyopt.codegen.cpu_facts import (CpuFacts, cpuinfo_flag_to_llvm, host_facts,
                                       parse_caches, parse_cpuinfo, parse_facts)
from polyopt.codegen.description import (describe_target, host_description,
                                         target_from_facts)
from polyopt.codegen.microbench import Measurements
from polyopt.codegen.target import host_target
from polyopt.codegen.to_llvm import lower_module
from polyopt.pipeline import machine_model
from polyopt.schedules.blis_schedule import MachineModel

RECORDED = {"zen3": cpu_fixtures.ZEN3, "zen4": cpu_fixtures.ZEN4, "zen5": cpu_fixtures.ZEN5,
            "intel_amx": cpu_fixtures.INTEL_AMX}


def _facts(rec: dict) -> CpuFacts:
    return parse_facts(rec["cpuinfo"], rec["caches"], llvm_cpu=rec["llvm_cpu"],
                       llvm_features=rec["llvm_features"], logical_cpus=2)


def _model(rec: dict, measured: bool = True) -> MachineModel:
    facts = _facts(rec)
    m = Measurements.from_json(rec["measurements"], "recorded") if measured else None
    return MachineModel(**describe_target(target_from_facts(facts), facts, m).machine_fields())


def test_cpuinfo_flags_take_llvm_names():
    assert [cpuinfo_flag_to_llvm(f) for f in ("avx512_bf16", "avx512_fp16", "amx_tile",
                                               "amx_int8", "avx_vnni", "sse4_1", "pni", "fma",
                                               "avx512vl")] == \
        ["avx512bf16", "avx512fp16", "amx-tile", "amx-int8", "avxvnni", "sse4.1", "sse3", "fma",
         "avx512vl"]


def test_cpuinfo_signature_of_the_first_processor():
    info = parse_cpuinfo(cpu_fixtures.INTEL_AMX["cpuinfo"])
    assert (info["vendor"], info["family"], info["model"], info["stepping"]) == \
        ("GenuineIntel", 6, 167, 1)
    assert "amx_tile" in info["flags"] and info["model_name"] == "Intel Xeon Processor"
    assert parse_cpuinfo("") == {"vendor": "", "family": None, "model": None, "stepping": None,
                                 "model_name": "", "flags": frozenset()}


def test_caches_from_sysfs_entries():
    caches = parse_caches(cpu_fixtures.INTEL_AMX["caches"] + [{"level": "4"}, {}])
    assert [(c.level, c.kind, c.size_bytes, c.ways, c.line_bytes, c.shared_by)
            for c in caches] == [(1, "Data", 48 * 1024, 12, 64, 1),
                                 (1, "Instruction", 32 * 1024, 8, 64, 1),
                                 (2, "Unified", 2 * 2**20, 16, 64, 1),
                                 (3, "Unified", 504 * 2**20, 16, 64, 2)]
    odd = parse_caches([{"level": "2", "type": "Unified", "size": "1024K",
                         "ways_of_associativity": "0", "shared_cpu_list": "0-3,8"}])
    assert odd[0].ways is None and odd[0].shared_by == 5


@pytest.mark.parametrize("name, isa, l1_ways, has, lacks", [
    ("zen3", "AVX2+FMA", 8, ("avx2", "fma"), ("avx512f", "amx-tile")),
    ("zen4", "AVX-512", 8, ("avx512f", "avx512bf16", "avx512vnni"), ("avx512fp16", "amx-tile")),
    ("zen5", "AVX-512", 12, ("avx512f", "avx512bf16", "avxvnni"), ("avx512fp16", "amx-tile")),
    ("intel_amx", "AVX-512", 12, ("avx512f", "avx512fp16", "amx-tile", "amx-bf16", "amx-int8"),
     ()),
])
def test_recorded_facts(name, isa, l1_ways, has, lacks):
    facts = _facts(RECORDED[name])
    assert facts.vector_isa == isa
    assert facts.has(*has), facts.missing(has)
    assert not any(facts.has(f) for f in lacks)
    assert facts.cache(1).ways == l1_ways and facts.cache(1).kind == "Data"
    assert facts.cache(3).shared_by == 2


def test_signatures_differ_by_cpu_and_flags():
    sigs = {name: _facts(rec).signature for name, rec in RECORDED.items()}
    assert len(set(sigs.values())) == len(sigs)
    assert sigs["intel_amx"].startswith("x86_64-GenuineIntel-f6-m167-s1-")
    zen4 = _facts(cpu_fixtures.ZEN4)
    masked = dataclasses.replace(zen4, llvm_features=zen4.llvm_features - {"avx512f"},
                                 features=frozenset())
    assert masked.signature != zen4.signature


@pytest.mark.parametrize("name, fields", [
    # AVX2: 16 ymm, no embedded broadcast, its widest FMAs are its full width
    ("zen3", dict(vector_bits=256, num_vector_registers=16, l1d_bytes=32 * 1024,
                  l2_bytes=512 * 1024, l1d_ways=8, l2_ways=8, line_bytes=64, fma_latency=4,
                  fma_per_cycle=2.0, full_width_fma=True, embedded_broadcast=False)),
    # Zen 4: 512-bit FMAs as two 256-bit halves (measured 1.0x the 256-bit FLOP rate)
    ("zen4", dict(vector_bits=512, num_vector_registers=32, l1d_bytes=32 * 1024,
                  l2_bytes=2**20, l1d_ways=8, l2_ways=8, fma_latency=4, fma_per_cycle=1.0,
                  full_width_fma=False, embedded_broadcast=True)),
    ("zen5", dict(vector_bits=512, num_vector_registers=32, l1d_bytes=48 * 1024,
                  l2_bytes=2**20, l1d_ways=12, l2_ways=16, fma_latency=4, fma_per_cycle=2.0,
                  full_width_fma=True, embedded_broadcast=True)),
    ("intel_amx", dict(vector_bits=512, num_vector_registers=32, l1d_bytes=48 * 1024,
                       l2_bytes=2 * 2**20, l3_bytes=504 * 2**20, l1d_ways=12, l2_ways=16,
                       fma_latency=4, fma_per_cycle=2.0, full_width_fma=True,
                       embedded_broadcast=True)),
])
def test_machine_model_of_recorded_cpus(name, fields):
    model = _model(RECORDED[name])
    got = {k: getattr(model, k) for k in fields}
    assert got == fields
    assert model.features == _facts(RECORDED[name]).features


def test_the_name_decides_nothing():
    """The Intel host reported as rocketlake, renamed as anything: the same model."""
    rec = dict(cpu_fixtures.INTEL_AMX)
    base = _model(rec)
    for cpu, name in (("znver4", "AMD EPYC"), ("", ""), ("haswell", "Some CPU")):
        renamed = dict(rec, llvm_cpu=cpu,
                       cpuinfo=rec["cpuinfo"].replace("Intel Xeon Processor", name))
        assert _model(renamed) == base


def test_without_measurements_the_defaults_stand():
    model = _model(cpu_fixtures.ZEN4, measured=False)
    default = MachineModel()
    assert (model.fma_latency, model.fma_per_cycle, model.full_width_fma) == \
        (default.fma_latency, default.fma_per_cycle, default.full_width_fma)
    assert model.l1d_ways == 8 and model.embedded_broadcast


def test_named_target_is_described_from_its_features():
    from polyopt.codegen.target import Target
    t = Target.from_features("x86_64-unknown-linux-gnu", "haswell", "+avx,+avx2,+fma,-avx512f",
                             (32 * 1024, 256 * 1024, 8 * 2**20))
    model = machine_model(t)
    assert (model.vector_bits, model.num_vector_registers, model.embedded_broadcast,
            model.l2_bytes) == (256, 16, False, 256 * 1024)
    assert "avx2" in model.features and "avx512f" not in model.features


# -- this host ----------------------------------------------------------------------------------

def test_host_facts_agree_with_the_code_generator():
    facts, t = host_facts(), host_target()
    assert facts.has("avx512f") == t.has_avx512f and facts.has("avx2") == t.has_avx2
    assert facts.llvm_cpu == t.cpu
    model = machine_model()
    assert model.features == facts.features
    assert model.embedded_broadcast == facts.has("avx512f")
    if facts.cache(1) and facts.cache(1).ways:
        assert model.l1d_ways == facts.cache(1).ways


def _needs_fma():
    facts = host_facts()
    if not facts.is_x86:
        pytest.skip(f"the micro-benchmarks are x86 assembly; this CPU is {facts.arch}")
    if not facts.has("fma"):
        pytest.skip("the FMA micro-benchmarks need FMA, which this CPU lacks")
    return facts


def test_microbenchmarks_measure_this_core():
    facts = _needs_fma()
    m = microbench.measure(facts)
    assert m.measured and m.seconds < 2.0
    assert 0.3 < m.clock_ghz < 8
    # the clock's check: a dependent imul takes 3 cycles on every current x86-64 core
    assert 2.5 <= m.imul_cycles <= 6.5, m
    widths = [256] + ([512] if facts.has("avx512f") else [])
    for bits in widths:
        for dtype in ("f64", "f32"):
            r = m.rate(dtype, bits)
            assert 0.4 <= r.fmas_per_cycle <= 4.5, r
            assert 2 <= r.latency_cycles <= 8, r
        # f32 FMAs do twice the FLOPs of f64 ones at the same rate (within noise)
        assert 1.5 < m.rate("f32", bits).gflops / m.rate("f64", bits).gflops < 2.6
    if 512 in widths:
        ratio = m.rate("f64", 512).gflops / m.rate("f64", 256).gflops
        assert 0.6 < ratio < 2.6
        assert set(m.fma_bcast_per_cycle) == {"f64x512", "f32x512"}
    assert set(m.loads_per_cycle) == {str(b) for b in widths}
    # L2 feeds at least 8 and at most 256 bytes a cycle (a line every 8 cycles .. 4 lines)
    assert set(m.l2_bytes_per_cycle) == {str(b) for b in widths}
    assert all(8 <= v <= 256 for v in m.l2_bytes_per_cycle.values()), m.l2_bytes_per_cycle
    # a 4-element gather: at least one every 20 cycles, at most two a cycle
    assert set(m.gathers_per_cycle) == {"256"}
    assert 0.05 <= m.gathers_per_cycle["256"] <= 2, m.gathers_per_cycle


def test_the_clock_chain_is_not_folded_at_rename():
    """Golden Cove and later (Emerald Rapids here) fold ``addq $1, %rax`` into the renamer and
    run a dependent chain of them at up to 5 a cycle: the clock read 7-18 GHz and the FMA
    latency 12 cycles.  The clock is a chain of register-register adds, carried from one call
    of the body to the next; a clock under which a dependent imul is not about 3 cycles is
    refused."""
    import re
    ir, count = microbench._kernels(_facts(cpu_fixtures.INTEL_AMX))["clock"]
    body = re.search(r'asm sideeffect "([^"]*)", "=r,0,r', ir).group(1).split("\\0A\\09")
    assert len(body) == count and set(body) == {"addq $2, $0"}
    assert "phi i64 [ 0, %entry ], [ %x1, %loop ]" in ir
    m = Measurements.from_json(cpu_fixtures.ZEN4["measurements"], "recorded")
    assert microbench._plausible(dataclasses.replace(m, imul_cycles=3.0)) is None
    # the Xeon's folded clock: 6.94 GHz, an imul 7.6 of its "cycles"
    folded = dataclasses.replace(m, clock_ghz=6.94, imul_cycles=7.6)
    assert "a dependent imul took 7.6 of its cycles" in microbench._plausible(folded)
    assert "imul" in microbench._plausible(dataclasses.replace(m, imul_cycles=None))


def test_l2_sweep_exceeds_l1_and_fits_half_of_l2():
    from polyopt.codegen.cpu_facts import CacheLevel, CpuFacts
    def facts(l1, l2):
        return CpuFacts(arch="x86_64", caches=(CacheLevel(1, "Data", l1),
                                               CacheLevel(2, "Unified", l2)))
    assert microbench.l2_sweep_bytes(facts(32 << 10, 1 << 20)) == 128 << 10     # Zen 4
    assert microbench.l2_sweep_bytes(facts(48 << 10, 2 << 20)) == 256 << 10     # the Xeon
    assert microbench.l2_sweep_bytes(facts(32 << 10, 256 << 10)) == 128 << 10   # small L2
    assert microbench.l2_sweep_bytes(facts(48 << 10, 128 << 10)) == 64 << 10    # tiny L2
    assert microbench.l2_sweep_bytes(CpuFacts(arch="x86_64")) == 64 << 10


def test_the_measured_l2_bandwidth_reaches_the_model():
    from polyopt.codegen.description import TargetDescription
    facts = _facts(cpu_fixtures.ZEN4)
    m = Measurements.from_json(cpu_fixtures.ZEN4["measurements"], "recorded")
    desc = TargetDescription(target_from_facts(facts), facts, m)
    assert desc.machine_fields()["l2_bytes_per_cycle"] == 32.0
    assert "L2 loads, bytes/cycle: 256-bit 32, 512-bit 32" in desc.render()
    unmeasured = TargetDescription(target_from_facts(facts), facts,
                                   microbench.defaults("test"))
    assert unmeasured.machine_fields()["l2_bytes_per_cycle"] == 0.0


def test_slow_gathers_tell_llvm_to_prefer_none():
    from dataclasses import replace

    from polyopt.codegen.description import TargetDescription
    facts = _facts(cpu_fixtures.ZEN4)
    m = Measurements.from_json(cpu_fixtures.ZEN4["measurements"], "recorded")
    desc = TargetDescription(target_from_facts(facts), facts, m)
    # Zen 4: a gather every 5 cycles brings 0.8 elements a cycle, two loads a cycle bring 2
    assert desc.gathered_elements_per_cycle() == 0.8
    assert desc.slow_gathers() and desc.llvm_tuning() == ",+prefer-no-gather"
    assert "gathers/cycle: 0.2 (0.8 elements) -> slower than loads" in desc.render()
    fast = TargetDescription(desc.target, facts, replace(m, gathers_per_cycle={"256": 0.5}))
    assert not fast.slow_gathers() and fast.llvm_tuning() == ""
    for unknown in (replace(m, gathers_per_cycle={}), microbench.defaults("test")):
        assert TargetDescription(desc.target, facts, unknown).llvm_tuning() == ""


def test_the_tuning_reaches_the_host_code_only():
    from polyopt.codegen.description import host_description
    from polyopt.codegen.target import compiling_for
    src = "func.func @f(%a: memref<4xf64>) { return }"
    attrs = lower_module(polyopt.parse(src)).llvm_ir
    assert ("+prefer-no-gather" in attrs) == host_description().slow_gathers()
    named = target_from_facts(_facts(cpu_fixtures.ZEN4))
    with compiling_for(named):
        assert "prefer-no-gather" not in lower_module(polyopt.parse(src), named).llvm_ir


def test_measurements_are_cached_per_cpu(tmp_path, monkeypatch):
    facts = _needs_fma()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("POLYOPT_NO_MICROBENCH", raising=False)
    monkeypatch.setattr(microbench, "_memo", {})
    first = microbench.host_measurements(facts)
    assert first.measured and first.source.startswith("measured now, cached in")
    path = microbench.cache_path(facts)
    assert path.startswith(str(tmp_path / "polyopt")) and os.path.isfile(path)
    stored = json.loads(open(path).read())
    assert stored["signature"] == facts.signature
    # a new process (no memo) reads the file instead of measuring
    monkeypatch.setattr(microbench, "_memo", {})
    monkeypatch.setattr(microbench, "measure", lambda *a: pytest.fail("measured again"))
    again = microbench.host_measurements(facts)
    assert again.source == f"cached in {path}" and again.fma == first.fma
    # a file of another version or CPU is ignored
    stored["version"] = -1
    open(path, "w").write(json.dumps(stored))
    monkeypatch.setattr(microbench, "_memo", {})
    monkeypatch.setattr(microbench, "measure", lambda *a: microbench.defaults("stub"))
    assert not microbench.host_measurements(facts).measured


def test_no_microbench_and_unwritable_cache_give_defaults(tmp_path, monkeypatch):
    facts = host_facts()
    monkeypatch.setattr(microbench, "measure", lambda *a: pytest.fail("measured"))
    monkeypatch.setattr(microbench, "_memo", {})
    monkeypatch.setenv("POLYOPT_NO_MICROBENCH", "1")
    m = microbench.host_measurements(facts)
    assert not m.measured and "POLYOPT_NO_MICROBENCH" in m.source
    monkeypatch.delenv("POLYOPT_NO_MICROBENCH")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    m = microbench.host_measurements(facts)
    assert not m.measured and "cannot be written" in m.source
    model = MachineModel(**describe_target(host_target(), facts, m).machine_fields())
    assert model.fma_latency == MachineModel().fma_latency


def test_polyopt_target_prints_the_description(capsys):
    from polyopt.cli import main
    assert main(["target"]) == 0
    out = capsys.readouterr().out
    desc = host_description()
    assert "names" in out.splitlines()[0] and desc.facts.llvm_cpu in out
    assert f"l1d_bytes={host_target().l1d_cache_bytes}" in out
    assert main(["target", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["machine_model"]["vector_bits"] == host_target().vector_bits
    assert data["cpu"]["signature"] == host_facts().signature
    assert data["summary"] == desc.summary_line()
