"""By CPU (issue 20, part 3): what the model chose on each CPU this project ran on and how fast
it was there, kept across report runs.

    python3 -m experiments.by_cpu [--reps N] [--file PATH]

Times DGEMM and SGEMM at 2088x2048x2048 and 1000^3 with polyopt's defaults (all passes, the
model's parameters: the README's first command) against numpy (OpenBLAS, one thread, its
native kernel) and torch.mm (one thread) in the same run, with ``polyopt.bench.bench_matmul``,
and merges one row per workload into ``experiments/results/by_cpu.json`` under this CPU's
signature.  Rows of other CPUs are never touched; a CPU's row for a workload is replaced by a
newer run of it, and every row carries its date and commit.  Then prints the table.

The CPU's signature and one-line summary come from the target description
(``polyopt.codegen.cpu_facts`` / ``polyopt.codegen.description``) when this checkout has it;
otherwise :func:`fallback_identity` derives them from ``/proc/cpuinfo`` and sysfs (the same
inputs).  Nothing here keys a decision on the CPU's name: the name is only a label.
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import argparse  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

from polyopt.bench import Variant, bench_matmul  # noqa: E402

from experiments.common import ALL_PASSES, gflops_text, markdown_table, percent_text  # noqa: E402
from experiments.machine import REPO, RESULTS_DIR, caches, cpu_info, git_state  # noqa: E402

TITLE = "By CPU: the model's choice and its speed on every CPU seen"
BY_CPU_FILE = REPO / RESULTS_DIR / "by_cpu.json"
FORMAT = 1

# (dtype, m, n, k): issue 20's acceptance workloads
WORKLOADS = (("f64", 2088, 2048, 2048), ("f32", 2088, 2048, 2048),
             ("f64", 1000, 1000, 1000), ("f32", 1000, 1000, 1000))
TEST_WORKLOADS = (("f64", 23, 19, 17), ("f32", 21, 18, 13))

# /proc/cpuinfo flags worth a word in the summary, grouped as the ISA manuals do
_FLAG_GROUPS = (
    ("AVX", "", ("avx", "avx2", "fma", "f16c", "avx_vnni")),
    ("AVX-512", "avx512", ("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl",
                           "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512vbmi",
                           "avx512_vbmi2", "avx512ifma", "avx512_bitalg",
                           "avx512_vpopcntdq")),
    ("AMX", "amx_", ("amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "amx_complex")),
)


def flags_summary(flags: Sequence[str]) -> str:
    """The vector ISA in a few words: ``AVX2 FMA; AVX-512 F/DQ/BW/VL/VNNI/BF16``, ``AMX
    TILE/BF16/INT8``..., from /proc/cpuinfo's flags."""
    have = set(flags)
    parts = []
    for name, prefix, members in _FLAG_GROUPS:
        present = [f for f in members if f in have]
        if not present:
            continue
        if prefix:
            subsets = [f[len(prefix):].lstrip("_").upper() for f in present]
            parts.append(f"{name} " + "/".join(subsets))
        else:
            parts.append(" ".join(f.upper() for f in present))
    return "; ".join(parts) or "no AVX"


def fallback_identity(info: dict, cache_list: Sequence[dict], *, arch: str = "x86_64",
                      llvm_cpu: str = "", llvm_features: Sequence[str] = ()) -> dict:
    """The CPU's signature and summary for checkouts without the target description, from
    /proc/cpuinfo (``info``: ``experiments.machine.cpu_info`` plus family, cpu_model and
    stepping), sysfs (``cache_list``: ``experiments.machine.caches``) and LLVM's host CPU name
    and enabled features.  The signature is built as ``CpuFacts.signature`` builds it (arch,
    vendor, family, model, stepping, a hash of the model name, LLVM's CPU name and the
    features), so rows recorded before and after the target description lands file under
    one CPU; a different hypervisor mask is another CPU."""
    flags = sorted(info.get("flags") or [])
    model_name = info.get("model") or ""
    features = sorted(llvm_features) or flags
    digest = hashlib.sha256(" ".join([model_name, llvm_cpu] + features).encode()
                            ).hexdigest()[:12]
    parts = [arch, info.get("vendor") or "unknown", f"f{info.get('family')}",
             f"m{info.get('cpu_model')}", f"s{info.get('stepping')}", digest]
    signature = "-".join(re.sub(r"[^A-Za-z0-9_.]", "_", str(p)) for p in parts)
    data = [c for c in cache_list if c.get("type") in ("Data", "Unified")]
    cache_text = ", ".join(f"L{c.get('level')}{'d' if c.get('type') == 'Data' else ''} "
                           f"{c.get('size')}" + (f" {c['ways']}-way" if c.get("ways") else "")
                           for c in data)
    name = model_name or "unknown CPU"
    return {"signature": signature, "model_name": name, "flags_summary": flags_summary(flags),
            "summary": f"{name}; {flags_summary(flags)}; {cache_text or 'caches unknown'}"}


def _family_model_stepping() -> dict:
    """family, model and stepping of the first processor in /proc/cpuinfo (empty if none)."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        return {}
    out = {}
    for line in first.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("cpu family", "model", "stepping") and value.strip().isdigit():
            out[{"cpu family": "family", "model": "cpu_model"}.get(key, key)] = int(value)
    return out


def _llvm_host() -> dict:
    """LLVM's view of the host: arch (from the process triple), CPU name, enabled features."""
    import llvmlite.binding as llvm

    from polyopt.codegen.target import host_target
    host_target()    # initializes LLVM's native target
    try:
        features = [f[1:] for f in llvm.get_host_cpu_features().flatten().split(",")
                    if f.startswith("+")]
    except RuntimeError:
        features = []
    return {"arch": llvm.get_process_triple().split("-", 1)[0] or "x86_64",
            "llvm_cpu": llvm.get_host_cpu_name(), "llvm_features": features}


def cpu_identity() -> dict:
    """``{signature, model_name, flags_summary, summary}`` of this CPU: the target
    description's when polyopt has one, else :func:`fallback_identity`."""
    info = dict(cpu_info(), **_family_model_stepping())
    try:
        from polyopt.codegen.cpu_facts import host_facts
        from polyopt.codegen.description import host_description
    except ImportError:
        return fallback_identity(info, caches(), **_llvm_host())
    facts = host_facts()
    return {"signature": facts.signature, "model_name": facts.model_name or info["model"],
            "flags_summary": flags_summary(info.get("flags") or []),
            "summary": host_description().summary_line()}


def workload_label(dtype: str, m: int, n: int, k: int) -> str:
    name = {"f64": "DGEMM", "f32": "SGEMM"}[dtype]
    return f"{name} {m}^3" if m == n == k else f"{name} {m}x{n}x{k}"


def model_choice(dtype: str, m: int, n: int, k: int) -> str:
    """What the parameter model picks for this matmul on this machine (form, tile, blocking):
    ``default_blis_params(...).describe()`` with polyopt's machine model."""
    from polyopt.pipeline import machine_model
    from polyopt.schedules.blis_schedule import default_blis_params
    return default_blis_params(m, n, k, {"f64": 8, "f32": 4}[dtype], machine_model(),
                               {}).describe()


def measure(workloads=WORKLOADS, *, reps: int = 5, progress=None) -> list[dict]:
    """Time every workload (polyopt's defaults, numpy and torch.mm in the same run) and return
    one row each, dated, with the commit."""
    from polyopt.codegen.peak import measure_peak
    git = git_state()
    peaks: dict = {}
    rows = []
    for dtype, m, n, k in workloads:
        label = workload_label(dtype, m, n, k)
        if progress:
            progress(f"by CPU: {label}")
        if dtype not in peaks:
            peaks[dtype] = measure_peak(dtype).gflops
        result = bench_matmul(m, n, k, dtype, reps=reps, measure_peak=False,
                              variants=[Variant("polyopt, all passes", dict(ALL_PASSES))])
        (timed,) = result.variants
        gflops = result.gflops(timed.timing)
        rows.append({
            "workload": label, "dtype": dtype, "m": m, "n": n, "k": k,
            "choice": model_choice(dtype, m, n, k), "gflops": gflops,
            "peak_gflops": peaks[dtype], "fraction_of_peak": gflops / peaks[dtype],
            "openblas_gflops": result.gflops(result.numpy),
            "ratio_vs_openblas": result.ratio(timed),
            "torch_gflops": result.gflops(result.torch) if result.torch else None,
            "ratio_vs_torch": result.ratio_vs_torch(timed), "reps": reps,
            "blas": result.blas, "torch_note": result.torch_note,
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "commit": git.get("short"), "dirty": git.get("dirty")})
    return rows


# -- the file: {"format": 1, "cpus": {signature: {"cpu": identity, "rows": {workload: row}}}} --

def empty_store() -> dict:
    return {"format": FORMAT, "cpus": {}}


def load(path: Path) -> dict:
    """The stored table (an empty one if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return empty_store()
    store = json.loads(path.read_text())
    if store.get("format") != FORMAT or not isinstance(store.get("cpus"), dict):
        raise ValueError(f"{path}: not a by-CPU table of format {FORMAT}")
    return store


def merge(store: dict, identity: dict, rows: Sequence[dict]) -> dict:
    """A new store: ``store`` with ``rows`` filed under ``identity``'s signature, each one
    replacing that CPU's earlier row for the same workload; other CPUs and other workloads
    are kept as they were.  ``store`` itself is not changed."""
    merged = json.loads(json.dumps(store))
    entry = merged["cpus"].setdefault(identity["signature"], {"cpu": {}, "rows": {}})
    entry["cpu"] = dict(identity)
    for row in rows:
        entry["rows"][row["workload"]] = dict(row)
    return merged


def save(path: Path, store: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(store, indent=2, sort_keys=True) + "\n")


def record(path: Path, identity: dict, rows: Sequence[dict]) -> dict:
    """Merge ``rows`` into the file at ``path`` (created if missing) and return the store."""
    store = merge(load(path), identity, rows)
    save(path, store)
    return store


def _ratio(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.3f}x"


def _workload_order(label: str) -> tuple:
    known = [workload_label(*w) for w in WORKLOADS]
    return (known.index(label) if label in known else len(known), label)


def table(store: dict) -> str:
    """One row per CPU and workload: the CPU (its name and vector ISA on its first row,
    signature), the model's choice, GFLOPS, % of the FMA peak measured in that run, the
    ratios to OpenBLAS and torch.mm in the same run, the date and commit."""
    header = ["CPU", "signature", "workload", "the model's choice", "GFLOPS", "of peak",
              "vs OpenBLAS", "vs torch.mm", "date", "commit"]
    lines = []
    for signature in sorted(store["cpus"]):
        entry = store["cpus"][signature]
        cpu = entry["cpu"]
        for i, label in enumerate(sorted(entry["rows"], key=_workload_order)):
            r = entry["rows"][label]
            first = i == 0
            lines.append([
                f"{cpu.get('model_name', '?')} ({cpu.get('flags_summary', '?')})" if first
                else "", f"`{signature}`" if first else "", label, f"`{r['choice']}`",
                gflops_text(r["gflops"]), percent_text(r["fraction_of_peak"]),
                _ratio(r["ratio_vs_openblas"]), _ratio(r.get("ratio_vs_torch")),
                r["date"][:10], (r.get("commit") or "?") + ("+" if r.get("dirty") else "")])
    return markdown_table(header, lines)


def describe_method() -> str:
    return ("One row per CPU signature and workload, kept across report runs in "
            "`experiments/results/by_cpu.json` (a newer run of a workload on the same CPU "
            "replaces its row; other CPUs' rows are never touched). Each row is one run of "
            "`polyopt.bench.bench_matmul` with polyopt's defaults (all passes, the model's "
            "parameters): checked against numpy, then repetitions alternating polyopt, numpy "
            "(OpenBLAS, one thread, native kernel) and torch.mm (one thread) when torch is "
            "installed; **GFLOPS** the median, **of peak** against the FMA peak measured in "
            "that run, **vs OpenBLAS** / **vs torch.mm** the peer's time over polyopt's "
            "(above 1: polyopt is faster), **the model's choice** "
            "`default_blis_params(...).describe()`, **commit** with `+` when the tree had "
            "uncommitted changes.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--file", default=str(BY_CPU_FILE),
                        help=f"the table to merge into (default {RESULTS_DIR}/by_cpu.json)")
    parser.add_argument("--sizes-for-tests", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    identity = cpu_identity()
    print(identity["summary"], file=sys.stderr)
    rows = measure(TEST_WORKLOADS if args.sizes_for_tests else WORKLOADS, reps=args.reps,
                   progress=lambda s: print(s, file=sys.stderr, flush=True))
    store = record(Path(args.file), identity, rows)
    print(f"## {TITLE}\n\n{describe_method()}\n\n{table(store)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
