"""Upstream MLIR 22 as the oracle of the tests: ``mlir-opt-22`` to print, check and lower IR,
``mlir-runner-22`` to run it (Debian's mlir-22-tools, which scripts/setup.sh installs).

``tests/conftest.py`` puts this folder on ``sys.path``, so any test module does
``from upstream_mlir import mlir_opt``.  Every helper fails the test, naming the package, when
a tool is missing: the oracle is never skipped."""

from __future__ import annotations

import glob
import shutil
import subprocess

import pytest

MLIR_OPT = "mlir-opt-22"
MLIR_RUNNER = "mlir-runner-22"
PACKAGE = "mlir-22-tools"


def tool(name: str) -> str:
    """The path of the upstream tool ``name`` (``mlir-opt-22``, ``mlir-runner-22``); fails the
    test when it is not installed."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: install Debian's {PACKAGE} (scripts/setup.sh does)")
    return path


def run_mlir_opt(text: str, *flags: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``mlir-opt-22 flags`` on ``text`` (given on stdin), whatever its outcome: the completed
    process, for tests that read the exit status or stderr themselves."""
    assert all(f.startswith("-") for f in flags), f"mlir-opt flags start with '-': {flags}"
    return subprocess.run([tool(MLIR_OPT), *flags, "-"], input=text, capture_output=True,
                          text=True, timeout=timeout)


def mlir_opt(text: str, *flags: str, timeout: float = 60, raw: bool = False) -> str:
    """What ``mlir-opt-22 flags`` prints for ``text``; fails the test when it refuses ``text``.

    mlir-opt ends its output with an empty line; it is dropped (the result ends with one
    newline, as polyopt prints a module) unless ``raw``, which returns stdout as it is."""
    r = run_mlir_opt(text, *flags, timeout=timeout)
    assert r.returncode == 0, f"{MLIR_OPT} rejected:\n{text}\n{r.stderr}"
    return r.stdout if raw else r.stdout.rstrip("\n") + "\n"


def mlir_opt_error(text: str, *flags: str, filename: str | None = None,
                   timeout: float = 60) -> str:
    """The first ``error:`` line ``mlir-opt-22 flags`` reports for ``text``, which it must refuse
    (exit status 1): ``FILENAME:LINE:COL: error: message`` as if read from ``filename``, or
    ``LINE:COL: error: message`` without one."""
    r = run_mlir_opt(text, *flags, timeout=timeout)
    assert r.returncode == 1, f"{MLIR_OPT} exited with {r.returncode} on:\n{text}\n{r.stderr}"
    line = next((ln for ln in r.stderr.splitlines() if ": error: " in ln), None)
    assert line is not None, f"{MLIR_OPT} refused it without an error line:\n{r.stderr}"
    if filename is None:
        return line.removeprefix("<stdin>:")
    return line.replace("<stdin>", filename)


def assert_mlir_opt_prints_back(text: str) -> None:
    """``mlir-opt-22 --allow-unregistered-dialect`` accepts ``text`` (polyopt's print) and what it
    prints parses back here to ``text``: both print the same canonical IR."""
    import polyopt
    assert str(polyopt.parse(mlir_opt(text, "--allow-unregistered-dialect"))) == text


def runner_libs() -> list[str]:
    """The shared libraries ``mlir-runner-22`` loads for ``printMemref*`` and ``vector.print``
    (the newest installed ``libmlir_c_runner_utils`` and ``libmlir_runner_utils``)."""
    libs = [sorted(glob.glob(f"/usr/lib/llvm-*/lib/{name}*"))[-1:]
            for name in ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so")]
    if not all(libs):
        pytest.fail(f"MLIR runner utils not found (Debian package {PACKAGE})")
    return [lib[0] for lib in libs]


def lower_and_run(text: str, passes: list[str], timeout: float = 120) -> str:
    """``text`` lowered by ``mlir-opt-22 passes`` and run from ``@main`` (returning nothing) by
    ``mlir-runner-22``; what it prints.  Fails the test when either tool fails."""
    lowered = run_mlir_opt(text, *passes, timeout=timeout)
    assert lowered.returncode == 0, lowered.stderr
    ran = subprocess.run([tool(MLIR_RUNNER), "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + ",".join(runner_libs())],
                         input=lowered.stdout, capture_output=True, text=True, timeout=timeout)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout
