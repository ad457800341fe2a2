"""Differential fuzzing (issue 13, item 7): random valid programs (:mod:`diff_programs`) run
through polyopt under flag combinations and random schedules, compared with the expected
outputs (a Python interpreter of the affine programs, numpy for the hop/linalg ops), with the
unoptimized program, and on a subset with mlir-runner-22 running the upstream-lowered program
(the original, and polyopt's optimized IR); printed IR must be a parse/print fixed point and
print as mlir-opt-22 prints it (:mod:`diff_harness`).

Seeds are fixed (hypothesis ``derandomize``), so CI runs the same programs every time; long
campaigns are ``scripts/fuzz_diff.py --minutes N``.  A failure prints the seed, the flags and
the program; ``python3 scripts/fuzz_diff.py --replay SEED`` reruns it.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from diff_harness import Stats, check_case  # noqa: E402  (tests/fuzz on sys.path)
from diff_programs import affine_case, ops_case  # noqa: E402

def fuzz_settings(examples: int) -> settings:
    # no shrinking: a smaller seed is not a smaller program
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))


def _check(case, **options) -> Stats:
    stats = Stats()
    check_case(case, stats, random.Random(case.seed), **options)
    if stats.failures:
        first = stats.failures[0]
        lines = [f"{case.description}"] + [f.report() for f in stats.failures]
        raise AssertionError("\n".join(lines) + f"\n--- program (seed {case.seed}):\n"
                             + first.text)
    assert stats.runs > 0
    return stats


@fuzz_settings(30)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_affine_programs(seed):
    """Every flag set, two random schedules, the bound-check mutant; upstream on 1 in 4."""
    _check(affine_case(seed), schedules=2, upstream=seed % 4 == 0)


@fuzz_settings(14)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_hop_and_linalg_programs(seed):
    """The baseline and four random flag sets of the 16 --hopt combinations and the BLIS
    modes, matrices up to 48 (the long campaigns go to 110); upstream on 1 in 4."""
    _check(ops_case(seed, max_size=48), max_flag_sets=4, upstream=seed % 4 == 0)


# ---------------------------------------------------------------------------------------------
# regressions: defects the fuzzer found, each reduced to the smallest program showing it

import numpy as np  # noqa: E402

import polyopt  # noqa: E402
from polyopt.affine.verifier import verify  # noqa: E402
from polyopt.schedules.apply import apply_schedule  # noqa: E402


def _scheduled_run(text: str, schedule: dict, args: list) -> tuple:
    """(outputs of the program as written, outputs after ``schedule``) on copies of ``args``."""
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    polyopt.compile(text)["f"](*want)
    module = polyopt.parse(text)
    apply_schedule(module.regions[0].blocks[0].ops[0], schedule)
    verify(module)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    polyopt.compile(module)["f"](*got)
    return want, got


def test_folded_affine_apply_does_not_push_the_next_statement_past_the_yield():
    """Seeds 103, 109, 126 (affine): a statement whose affine.apply is folded into its access
    erased the apply after the builder had counted it, so the next statement (here an
    affine.if) was inserted after the loop's affine.yield: invalid IR ("'affine.for' op
    expects regions to end with 'affine.yield', found 'affine.if'")."""
    text = """
func.func @f(%A: memref<10xf64>, %s: index) {
  affine.for %i = affine_map<()[s0] -> (s0 - 2)>()[%s] to affine_map<()[s0] -> (s0 + 2)>()[%s] {
    %a = affine.apply affine_map<(d0) -> (d0)>(%i)
    %v = affine.load %A[%a] : memref<10xf64>
    %w = arith.mulf %v, %v : f64
    affine.store %w, %A[%a] : memref<10xf64>
    affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
      %x = affine.load %A[%i] : memref<10xf64>
      %y = arith.addf %x, %x : f64
      affine.store %y, %A[%i] : memref<10xf64>
    }
  }
  return
}
"""
    a = np.arange(10, dtype=np.float64)
    want, got = _scheduled_run(text, {"S0": "(d0) -> (d0)", "S1": "(d0) -> (d0)"}, [a, 3])
    np.testing.assert_array_equal(got[0], want[0])
