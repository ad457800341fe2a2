"""Every PolyBench kernel built by polyopt computes what its C twin (clang-22 -O3) computes:
at MINI with every combination of the pass flags (no passes; --hopt with any subset of
--hopt-copy, --hopt-unroll, --hopt-scalrep, --hopt-vect; --hopt --hopt-blis), at odd sizes,
and at SMALL with each flag on its own and all of them (the combinations of two and three
flags, which MINI runs, took half of the suite's PolyBench time once there were 30 kernels).
All arguments are compared, not only PolyBench's printed ones, with the benchmark's tolerance
for reassociation.

Flag combinations whose pipeline prints the same IR compile to the same code, so each
distinct IR is compiled and run once (today --hopt leaves plain nests unchanged: all
combinations share one build; raising and scheduling will split them)."""

import itertools

import pytest

from polyopt.affine.printer import print_module
from polyopt.pipeline import CompiledModule, PipelineOptions, load, prepare_for_lowering, \
    run_passes
from polyopt.polybench.harness import HOPT_SWITCHES, max_rel_error
from polyopt.polybench.suite import KERNELS, kernel, mlir_source

from conftest import copy_values, odd_sizes, reference, twin

REGISTER_FLAGS = ("copy", "unroll", "scalrep", "vect")
COMBINATIONS = [{}] + [dict({"hopt": True}, **{f: True for f in subset})
                       for n in range(len(REGISTER_FLAGS) + 1)
                       for subset in itertools.combinations(REGISTER_FLAGS, n)] \
    + [{"hopt": True, "blis": True}]


def polyopt_compile(text: str, switches: dict):
    import polyopt
    return polyopt.compile(text, **switches)


def _label(switches: dict) -> str:
    return " ".join(f"--hopt-{f}" if f != "hopt" else "--hopt" for f in switches) or "no passes"


def check_builds(name: str, params: dict, combinations: list) -> int:
    """Run ``name`` at ``params`` under every combination against the clang twin; the
    number of distinct builds."""
    k = kernel(name)
    initial, expected = reference(k, params)
    text = mlir_source(k, params)
    builds: dict = {}         # printed IR -> (CompiledModule, first label)
    for switches in combinations:
        options = PipelineOptions(**switches)
        module = load(text, f"{name}.mlir")
        run_passes(module, options)
        prepare_for_lowering(module)
        key = print_module(module)
        if key not in builds:
            got = copy_values(initial)
            fn = CompiledModule(module, options)[k.symbol]
            fn(*[got[a.name] for a in k.args])
            err = max_rel_error(k, got, expected)
            assert err <= k.tolerance, (f"{name} at {params} with {_label(switches)}: arrays "
                                      f"differ from clang's by {err:.3g}")
            builds[key] = _label(switches)
    return len(builds)


# no passes, --hopt alone, with each flag alone, with all four, --hopt --hopt-blis
EACH_FLAG = [c for c in COMBINATIONS if len(c) <= 2 or len(c) == 1 + len(REGISTER_FLAGS)]


def test_combinations_cover_every_flag_subset():
    assert len(COMBINATIONS) == 1 + 16 + 1
    assert len({tuple(sorted(c)) for c in COMBINATIONS}) == len(COMBINATIONS)
    assert len(EACH_FLAG) == 1 + 1 + 4 + 1 + 1
    assert {"hopt": True, "blis": True} in EACH_FLAG and HOPT_SWITCHES in EACH_FLAG


@pytest.mark.parametrize("name", list(KERNELS))
def test_mini_every_flag_combination(name):
    assert check_builds(name, kernel(name).params_of("MINI"), COMBINATIONS) >= 1


@pytest.mark.parametrize("name", list(KERNELS))
def test_odd_sizes(name):
    check_builds(name, odd_sizes(kernel(name)), [{}, HOPT_SWITCHES])


@pytest.mark.parametrize("name", list(KERNELS))
def test_small_each_flag(name):
    assert check_builds(name, kernel(name).params_of("SMALL"), EACH_FLAG) >= 1


def test_gramschmidt_whole_arrays_on_well_conditioned_data():
    """gramschmidt's check on PolyBench's data covers the columns its rank-deficient A
    determines (harness.DETERMINED); on a well-conditioned A every element of A, R and Q is
    compared, under every flag combination."""
    import numpy as np
    from polyopt.polybench.harness import DETERMINED
    k = kernel("gramschmidt")
    params = {"M": 31, "N": 23}          # M >= N: rank N (PolyBench's M < N never is)
    rng = np.random.default_rng(7)
    initial = {"A": 1.0 + rng.random((params["M"], params["N"])),
               "R": np.zeros((params["N"], params["N"])),
               "Q": np.zeros((params["M"], params["N"]))}
    expected = copy_values(initial)
    twin(k, params).run(expected)
    parts = DETERMINED["gramschmidt"](expected)
    assert parts["Q"] == np.s_[:, :params["N"]]       # full rank: nothing left out
    text = mlir_source(k, params)
    for switches in COMBINATIONS:
        got = copy_values(initial)
        fn = polyopt_compile(text, switches)[k.symbol]
        fn(*[got[a.name] for a in k.args])
        for name in ("A", "R", "Q"):
            scale = np.max(np.abs(expected[name]))
            assert np.max(np.abs(got[name] - expected[name])) <= k.tolerance * scale, \
                (name, _label(switches))


def test_gramschmidt_check_leaves_out_the_residue_columns():
    """On PolyBench's MINI data A has numerical rank 13 of 30: R[13][13] is rounding residue
    (about 1e-13 against R[0][0] of about 200), and the check compares the 13 columns before."""
    import numpy as np
    from polyopt.polybench.harness import DETERMINED
    k = kernel("gramschmidt")
    _, expected = reference(k, k.params_of("MINI"))
    parts = DETERMINED["gramschmidt"](expected)
    assert parts["Q"] == np.s_[:, :13] and parts["R"] == np.s_[:13, :]
    diag = np.abs(np.diagonal(expected["R"]))
    assert diag[12] > 1e-3 * diag[0] and diag[13] < 1e-12 * diag[0]
