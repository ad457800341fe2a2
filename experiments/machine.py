"""The facts a benchmark number needs beside it: the CPU and its caches, the measured FMA
peak, the software versions (numpy's BLAS, LLVM) and the exact source (git commit).

    python3 -m experiments.machine        # prints them as JSON
"""

from __future__ import annotations

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()  # before anything imports numpy

import datetime  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = "experiments/results"
_SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def cpu_info() -> dict:
    """Model name, vendor, flags and logical CPUs from /proc/cpuinfo (first processor)."""
    info = {"model": platform.processor() or platform.machine(), "vendor": None, "flags": [],
            "logical_cpus": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    first = text.split("\n\n", 1)[0]
    for line in first.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name":
            info["model"] = value
        elif key == "vendor_id":
            info["vendor"] = value
        elif key == "flags":
            info["flags"] = value.split()
        elif key == "cpu MHz":
            info["mhz_at_collection"] = float(value)
    return info


def caches() -> list[dict]:
    """cpu0's caches from sysfs: level, type, size, associativity, line, sharing CPUs."""
    found = []
    for index in sorted(_SYSFS_CACHES.glob("index*")):
        entry = {}
        for name, key in (("level", "level"), ("type", "type"), ("size", "size"),
                          ("ways_of_associativity", "ways"),
                          ("coherency_line_size", "line_bytes"),
                          ("shared_cpu_list", "shared_cpu_list")):
            try:
                entry[key] = (index / name).read_text().strip()
            except OSError:
                pass
        found.append(entry)
    return found


def git_state(repo: Path = REPO) -> dict:
    """Commit, whether the work tree differs from it (report folders aside), and how."""
    def git(*args: str) -> Optional[str]:
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                                  check=True, timeout=30).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain")
    changed = [line for line in (status or "").splitlines()
               if not line[3:].startswith(RESULTS_DIR)]
    return {"commit": commit, "short": commit[:7] if commit else None,
            "dirty": bool(changed), "changed": changed,
            "describe": git("log", "-1", "--format=%h %s")}


def _version(package: str) -> Optional[str]:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def software() -> dict:
    import llvmlite
    import llvmlite.binding as llvm
    import numpy

    from polyopt.bench import blas_description
    return {"python": sys.version.split()[0], "python_build": sys.version,
            "platform": platform.platform(), "numpy": numpy.__version__,
            "blas": blas_description(), "llvmlite": llvmlite.__version__,
            "llvm": ".".join(map(str, llvm.llvm_version_info)), "islpy": _version("islpy"),
            "matplotlib": _version("matplotlib"), "polyopt": _version("polyopt"),
            "blis": _version("blis"),
            "env": {var: os.environ.get(var) for var in
                    ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}}


def target() -> dict:
    """What polyopt compiles for: LLVM's CPU name, vector width and registers, the cache
    sizes its tiling model uses."""
    from polyopt.codegen.target import host_target
    t = host_target()
    return {"triple": t.triple, "llvm_cpu": t.cpu, "vector_bits": t.vector_bits,
            "vector_registers": t.num_vector_registers, "l1d_bytes": t.l1d_cache_bytes,
            "l2_bytes": t.l2_cache_bytes, "l3_bytes": t.l3_cache_bytes, "fma": t.has_fma,
            "avx2": t.has_avx2, "avx512f": t.has_avx512f}


def peaks(reps: int = 5, seconds: float = 0.2) -> dict:
    """The measured FMA peak for f64 and f32 (polyopt.codegen.peak.measure_peak)."""
    from polyopt.codegen.peak import measure_peak
    out = {}
    for dtype in ("f64", "f32"):
        p = measure_peak(dtype, reps=reps, seconds=seconds)
        out[dtype] = {"gflops": p.gflops, "lanes": p.lanes, "reps": p.reps}
    return out


def description() -> dict:
    """The target description the compiler used (polyopt.codegen.description: flags, caches,
    cached micro-benchmarks, the MachineModel), as ``polyopt target --json`` prints it."""
    from polyopt.codegen.description import host_description
    return host_description().to_json()


def machine_facts(peak_reps: int = 5, peak_seconds: float = 0.2) -> dict:
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu": cpu_info(), "caches": caches(), "target": target(),
            "description": description(),
            "peak": peaks(peak_reps, peak_seconds), "software": software(),
            "git": git_state()}


if __name__ == "__main__":
    json.dump(machine_facts(), sys.stdout, indent=2)
    print()
