"""Upstream MLIR 22 as an oracle: ``mlir-opt-22`` to lower, ``mlir-runner-22`` to run (Debian's
mlir-22-tools, which scripts/setup.sh installs)."""

import glob
import shutil
import subprocess

import pytest


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: install Debian's mlir-22-tools (scripts/setup.sh does)")
    return path


def lower_and_run(text: str, passes: list[str]) -> str:
    """``text`` lowered by ``mlir-opt-22 passes`` and run from ``@main``; its stdout."""
    lowered = subprocess.run([tool("mlir-opt-22"), *passes, "-"], input=text,
                             capture_output=True, text=True, timeout=120)
    assert lowered.returncode == 0, lowered.stderr
    libs = [sorted(glob.glob(f"/usr/lib/llvm-*/lib/{n}*"))[-1:] for n in
            ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so")]
    if not all(libs):
        pytest.fail("MLIR runner utils not found (Debian package mlir-22-tools)")
    ran = subprocess.run([tool("mlir-runner-22"), "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + ",".join(lib[0] for lib in libs)],
                         input=lowered.stdout, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout
