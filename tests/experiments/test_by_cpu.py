"""experiments.by_cpu: the "by CPU" table is kept per CPU signature across report runs (merged,
never overwritten for other CPUs).  Nothing is timed here: the rows are a fixture of two CPUs."""

import importlib
import json

import pytest


@pytest.fixture(scope="module", autouse=True)
def by_cpu_module():
    """experiments.* pin numpy's OpenBLAS to one thread when imported first; in this process
    numpy is loaded already, which they accept when the pin is in the environment."""
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENBLAS_NUM_THREADS", "1")
    global by_cpu
    by_cpu = importlib.import_module("experiments.by_cpu")
    yield by_cpu
    mp.undo()


by_cpu = None

ZEN4 = {"signature": "x86_64-AuthenticAMD-f25-m17-s1-2b2d65baba3b", "model_name": "AMD EPYC",
        "flags_summary": "AVX AVX2 FMA F16C; AVX-512 F/DQ/BW/VL", "summary": "AMD EPYC; ..."}
XEON = {"signature": "x86_64-GenuineIntel-f6-m167-s1-0123456789ab",
        "model_name": "Intel(R) Xeon(R) Processor",
        "flags_summary": "AVX AVX2 FMA; AVX-512 F/BW/VL/FP16; AMX TILE/BF16/INT8/FP16",
        "summary": "Intel(R) Xeon(R) Processor; ..."}


def row(workload, gflops, date, torch=1.02, choice="M_C=1044, K_C=80, N_C=2048, M_R=4, "
        "N_R=32, K_U=4, order=ji"):
    return {"workload": workload, "dtype": "f64", "m": 2088, "n": 2048, "k": 2048,
            "choice": choice, "gflops": gflops, "peak_gflops": 58.6,
            "fraction_of_peak": gflops / 58.6, "openblas_gflops": 53.0,
            "ratio_vs_openblas": gflops / 53.0, "torch_gflops": 50.0 if torch else None,
            "ratio_vs_torch": torch, "reps": 5, "blas": "openblas", "torch_note": "",
            "date": date, "commit": "abc1234", "dirty": False}


@pytest.fixture
def two_cpus(tmp_path):
    """A kept table with a Zen 4 (two workloads) and a Xeon (one), written by two runs."""
    path = tmp_path / "by_cpu.json"
    by_cpu.record(path, ZEN4, [row("DGEMM 2088x2048x2048", 50.1, "2026-11-25T03:00:00+00:00"),
                               row("SGEMM 1000^3", 101.0, "2026-11-25T03:05:00+00:00")])
    by_cpu.record(path, XEON, [row("DGEMM 2088x2048x2048", 95.0, "2026-11-24T10:00:00+00:00",
                                   torch=None)])
    return path


def test_each_cpu_keeps_its_rows(two_cpus):
    store = json.loads(two_cpus.read_text())
    assert store["format"] == by_cpu.FORMAT
    assert set(store["cpus"]) == {ZEN4["signature"], XEON["signature"]}
    assert set(store["cpus"][ZEN4["signature"]]["rows"]) == {"DGEMM 2088x2048x2048",
                                                              "SGEMM 1000^3"}
    assert store["cpus"][XEON["signature"]]["rows"]["DGEMM 2088x2048x2048"]["gflops"] == 95.0
    assert store["cpus"][XEON["signature"]]["cpu"] == XEON


def test_a_new_run_replaces_only_its_cpus_rows_of_the_same_workload(two_cpus):
    before = json.loads(two_cpus.read_text())
    by_cpu.record(two_cpus, ZEN4, [row("DGEMM 2088x2048x2048", 55.5,
                                       "2026-11-26T09:00:00+00:00")])
    after = json.loads(two_cpus.read_text())
    zen4 = after["cpus"][ZEN4["signature"]]["rows"]
    assert zen4["DGEMM 2088x2048x2048"]["gflops"] == 55.5
    assert zen4["DGEMM 2088x2048x2048"]["date"].startswith("2026-11-26")
    # the other workload of this CPU and the other CPU are as they were
    assert zen4["SGEMM 1000^3"] == before["cpus"][ZEN4["signature"]]["rows"]["SGEMM 1000^3"]
    assert after["cpus"][XEON["signature"]] == before["cpus"][XEON["signature"]]


def test_merge_does_not_change_its_input():
    store = by_cpu.empty_store()
    merged = by_cpu.merge(store, ZEN4, [row("DGEMM 1000^3", 40.0, "2026-11-25T00:00:00")])
    assert store == by_cpu.empty_store() and merged is not store
    again = by_cpu.merge(merged, XEON, [row("DGEMM 1000^3", 80.0, "2026-11-24T00:00:00")])
    assert merged["cpus"].keys() == {ZEN4["signature"]}
    assert again["cpus"].keys() == {ZEN4["signature"], XEON["signature"]}


def test_table_lists_every_cpu_with_its_dates(two_cpus):
    text = by_cpu.table(by_cpu.load(two_cpus))
    lines = text.splitlines()
    assert lines[0].startswith("| CPU | signature | workload | the model's choice | GFLOPS |")
    body = lines[2:]
    assert len(body) == 3
    # CPUs in signature order; a CPU's name and vector ISA on its first row only
    assert body[0].startswith("| AMD EPYC (AVX AVX2 FMA F16C; AVX-512 F/DQ/BW/VL) | "
                              f"`{ZEN4['signature']}` | DGEMM 2088x2048x2048 |")
    assert body[1].startswith("|  |  | SGEMM 1000^3 |")
    assert "Intel(R) Xeon(R) Processor (AVX AVX2 FMA; AVX-512 F/BW/VL/FP16; AMX " in body[2]
    assert "| 2026-11-25 |" in body[0] and "| 2026-11-24 |" in body[2]
    cells = [c.strip() for c in body[0].split("|")[1:-1]]
    assert cells[4:8] == ["50.1", "85.5%", "0.945x", "1.020x"]
    assert [c.strip() for c in body[2].split("|")[1:-1]][7] == "—"   # no torch on that run


def test_load_rejects_other_files(tmp_path):
    assert by_cpu.load(tmp_path / "missing.json") == by_cpu.empty_store()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="not a by-CPU table"):
        by_cpu.load(bad)


def test_flags_summary():
    flags = ("fpu sse2 avx avx2 fma f16c avx512f avx512dq avx512bw avx512vl avx512_fp16 "
             "avx512_bf16 amx_tile amx_bf16 amx_int8").split()
    assert by_cpu.flags_summary(flags) == ("AVX AVX2 FMA F16C; AVX-512 F/DQ/BW/VL/BF16/FP16; "
                                           "AMX TILE/BF16/INT8")
    assert by_cpu.flags_summary("fpu sse2 avx avx2 fma".split()) == "AVX AVX2 FMA"
    assert by_cpu.flags_summary(["sse2"]) == "no AVX"


def test_fallback_signature_follows_cpu_and_flags_not_the_date():
    info = {"model": "AMD EPYC", "vendor": "AuthenticAMD", "family": 25, "cpu_model": 17,
            "stepping": 1, "flags": ["avx2", "fma", "avx512f"]}
    caches = [{"level": "1", "type": "Data", "size": "32K", "ways": "8"},
              {"level": "1", "type": "Instruction", "size": "32K", "ways": "8"},
              {"level": "2", "type": "Unified", "size": "1024K", "ways": "8"}]
    a = by_cpu.fallback_identity(info, caches, llvm_cpu="znver4",
                                 llvm_features=["avx2", "fma", "avx512f"])
    assert a == by_cpu.fallback_identity(info, caches, llvm_cpu="znver4",
                                         llvm_features=["avx512f", "fma", "avx2"])
    assert a["signature"].startswith("x86_64-AuthenticAMD-f25-m17-s1-")
    assert a["summary"] == "AMD EPYC; AVX2 FMA; AVX-512 F; L1d 32K 8-way, L2 1024K 8-way"
    masked = by_cpu.fallback_identity(info, caches, llvm_cpu="znver4",
                                      llvm_features=["avx2", "fma"])
    assert masked["signature"] != a["signature"]    # another hypervisor mask: another CPU


def test_workload_labels_and_the_acceptance_set():
    assert by_cpu.workload_label("f64", 2088, 2048, 2048) == "DGEMM 2088x2048x2048"
    assert by_cpu.workload_label("f32", 1000, 1000, 1000) == "SGEMM 1000^3"
    assert [by_cpu.workload_label(*w) for w in by_cpu.WORKLOADS] == [
        "DGEMM 2088x2048x2048", "SGEMM 2088x2048x2048", "DGEMM 1000^3", "SGEMM 1000^3"]
