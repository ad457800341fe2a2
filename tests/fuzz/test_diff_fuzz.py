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


@fuzz_settings(45)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_affine_programs(seed):
    """Every flag set, two random schedules, the bound-check mutant; upstream on 1 in 3."""
    _check(affine_case(seed), schedules=2, upstream=seed % 3 == 0)


@fuzz_settings(30)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_random_hop_and_linalg_programs(seed):
    """The baseline and four random flag sets of the 16 --hopt combinations and the BLIS
    modes; upstream on 1 in 3."""
    _check(ops_case(seed), max_flag_sets=4, upstream=seed % 3 == 0)

