#!/usr/bin/env bash
# Installs what polyopt and its tests need on a fresh Debian machine:
# Debian's mlir-22-tools (the upstream MLIR oracle the interop tests run against), clang-22
# and libpolly-22-dev (the PolyBench suite's C twins, built with clang -O3 and with Polly,
# which Debian's clang-22 has built in), and the Python package with its test extra and its
# report extra (matplotlib, for the plots of `python3 -m experiments.report`).  Safe to run
# again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=()
if ! command -v mlir-opt-22 >/dev/null 2>&1 || ! command -v mlir-runner-22 >/dev/null 2>&1; then
    PACKAGES+=(mlir-22-tools)
fi
if ! command -v clang-22 >/dev/null 2>&1 || ! dpkg -s libpolly-22-dev >/dev/null 2>&1; then
    PACKAGES+=(clang-22 libpolly-22-dev)
fi
# LLVM's OpenMP runtime (libomp.so.5): parallel loops of the JIT-compiled code and clang -fopenmp
if ! dpkg -s libomp-22-dev >/dev/null 2>&1; then
    PACKAGES+=(libomp-22-dev)
fi
if [ "${#PACKAGES[@]}" != 0 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e ".[test,report]"
# Bytecode of the package, the experiments and the tests' helpers, written once here: an
# editable install leaves it to the first import, which does not write it where
# PYTHONDONTWRITEBYTECODE is set (as on the machines this runs on), and every process of
# the suite -- its workers and the CLI runs it starts -- then compiled polyopt's source
# again (0.3-0.5 s an import of the pipeline)
python3 -m compileall -q polyopt experiments tests >/dev/null
