"""Shared fixtures of the PolyBench tests: the C twins (clang-22, which scripts/setup.sh
installs; a missing compiler fails the tests, naming the package) and PolyBench's initial
values."""

import pytest

from polyopt.polybench import ctwin
from polyopt.polybench.init import init_values


def copy_values(values: dict) -> dict:
    import numpy as np
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}


def twin(kernel, params, compiler="clang"):
    """The loaded C twin, or a test failure naming the Debian package."""
    try:
        return ctwin.load(kernel, params, compiler)
    except ctwin.ToolchainError as e:
        pytest.fail(str(e))


def reference(kernel, params, compiler="clang"):
    """(initial values, arrays after the C twin built by ``compiler``)."""
    initial = init_values(kernel, params)
    out = copy_values(initial)
    twin(kernel, params, compiler).run(out)
    return initial, out


def odd_sizes(kernel) -> dict:
    """MINI's sizes moved to the next prime: shapes that are multiples of nothing."""
    def next_prime(n):
        n += 1
        while any(n % d == 0 for d in range(2, int(n ** 0.5) + 1)):
            n += 1
        return n
    return {p: next_prime(v) for p, v in kernel.params_of("MINI").items()}
