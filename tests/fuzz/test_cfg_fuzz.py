"""Differential fuzzing of functions of several blocks (:mod:`cfg_fuzzer`): random structured
programs turned into branches by mlir-opt-22 (--convert-scf-to-cf, then a random choice of
--canonicalize, --cse, --sccp, --lift-cf-to-scf...), run by polyopt with no switches, --hopt,
the full pipeline and two threads, against a Python reference and polyopt's run of the
structured program; and hand-written CFGs that mlir-opt-22 accepts (:mod:`cfg_cases`).

A failure is a wrong answer, a traceback, an error without a location, a hang (each run is a
forked child with a timeout), lift-cf-to-scf output that mlir-opt-22 refuses, or a valid
program refused.  Seeds are fixed; ``python3 tests/fuzz/cfg_fuzzer.py --minutes N`` runs a
longer campaign and ``--replay SEED`` one program.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cfg_cases import CASES, STRUCTURED  # noqa: E402  (tests/fuzz on sys.path)
from cfg_fuzzer import (PIPELINES, SWITCH_SETS, Program, Stats, check_batch,
                        check_random_cfgs, generate, mlir_opt, polyopt_lift, run_child,
                        upstream_refuses)

SEED_BATCHES = [list(range(0, 8)), list(range(8, 16)), list(range(16, 24))]


def _fail(stats: Stats) -> None:
    if stats.failures:
        raise AssertionError("\n\n".join(f.report() for f in stats.failures[:3]) +
                             f"\n({len(stats.failures)} failures)")


@pytest.mark.parametrize("seeds", SEED_BATCHES, ids=lambda s: f"seeds{s[0]}-{s[-1]}")
def test_generated_programs_run_the_same_as_branches(seeds):
    stats = Stats()
    check_batch([generate(s) for s in seeds], stats, random.Random(seeds[0]))
    _fail(stats)
    # the programs exercise what they are meant to: lifted CFGs (the random CFGs below are the
    # ones left as branches), every switch set
    assert stats.runs >= len(seeds) * 3 * len(SWITCH_SETS)
    assert stats.lifted > 0, (stats.lifted, stats.not_lifted)


def test_random_cfgs_run_as_their_reference():
    """Random blocks and branches (irreducible loops, several entries, switches with
    duplicate cases, blocks out of order): run as written (no switches) and lifted (--hopt),
    and lift-cf-to-scf's output is valid for mlir-opt-22."""
    stats = Stats()
    check_random_cfgs(range(16), stats, switch_sets=SWITCH_SETS[:2])
    _fail(stats)
    assert stats.runs == 32
    # every one is lifted (before the multiplexers for several entries and for paths that
    # meet at several blocks: 10 of these 16)
    assert stats.lifted == 16, stats.not_lifted


# random CFGs with a cycle entered at several blocks (irreducible), among seeds 0-60: before
# the entry multiplexer none of them was lifted; ``python3 tests/fuzz/lift_census.py --cfgs
# 0:1000`` counts them (169 of 173 lifted; the rest reach a block only through a repeated
# cf.switch case, which the lifting refuses to drop)
IRREDUCIBLE_SEEDS = [0, 3, 24, 25, 27, 30, 35, 50, 55]


def test_irreducible_random_cfgs_are_lifted_and_run_as_their_reference():
    stats = Stats()
    check_random_cfgs(IRREDUCIBLE_SEEDS, stats, switch_sets=SWITCH_SETS[1:3])
    _fail(stats)
    assert stats.runs == 2 * len(IRREDUCIBLE_SEEDS)
    assert stats.lifted == len(IRREDUCIBLE_SEEDS), stats.not_lifted


def _call(fn, args):
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    result = fn(*args)
    if not isinstance(result, tuple):
        result = (result,)
    return tuple(float(r) if isinstance(r, (float, np.floating)) else int(r) for r in result), \
        [a for a in args if isinstance(a, np.ndarray)]


def _run_cases(texts: dict, cases: dict, switches: dict):
    import polyopt
    module = polyopt.compile("\n".join(texts.values()), filename="<cfg_cases>", **switches)
    return {name: [_call(module[name], a) for a in cases[name][1]] for name in texts}


def _renamed(text: str, name: str) -> str:
    lines = text.strip().splitlines()
    if lines[0].startswith("module"):
        lines = lines[1:-1]
    return "\n".join(lines).replace("func.func @f(", f"func.func @{name}(", 1)


def _check_cases(texts: dict, cases: dict) -> list[str]:
    """Run every function of ``texts`` (name -> text of @name) under every switch set against
    the references of ``cases``; the failures."""
    failures = []
    expected = {name: [_call(cases[name][2], a) for a in cases[name][1]] for name in texts}
    for sw in SWITCH_SETS:
        kind, got = run_child(lambda: _run_cases(texts, cases, sw), 120)
        if kind != "ok":        # one by one, to name the culprit
            for name, text in texts.items():
                k1, g1 = run_child(lambda: _run_cases({name: text}, cases, sw), 120)
                if k1 != "ok":
                    failures.append(f"{name} {sw}: {k1}: {g1}\n{text}")
                elif not _same(g1[name], expected[name]):
                    failures.append(f"{name} {sw}: expected {expected[name]}, got {g1[name]}")
            continue
        for name in texts:
            if not _same(got[name], expected[name]):
                failures.append(f"{name} {sw}: expected {expected[name]}, got {got[name]}")
    for name, text in texts.items():
        kind, value = run_child(lambda: polyopt_lift(text), 60)
        if kind != "ok":
            failures.append(f"{name} lift-cf-to-scf: {kind}: {value}")
        elif upstream_refuses(value[0], text):
            failures.append(f"{name}: mlir-opt-22 refuses lift-cf-to-scf's output:\n{value[0]}")
    return failures


def _same(a, b) -> bool:
    return all(ra == rb and len(aa) == len(ab) and
               all(np.array_equal(x, y) for x, y in zip(aa, ab))
               for (ra, aa), (rb, ab) in zip(a, b)) and len(a) == len(b)


def test_hand_written_cfgs():
    for name, (text, _, _) in CASES.items():
        assert mlir_opt(text, ()) is not None, f"{name}: mlir-opt-22 refuses it"
    texts = {name: _renamed(text, name) for name, (text, _, _) in CASES.items()}
    failures = _check_cases(texts, CASES)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("flags", [PIPELINES[0], PIPELINES[2], PIPELINES[8]],
                         ids=lambda f: "+".join(x.lstrip("-") for x in f))
def test_deep_nests_and_nested_while_loops_as_branches(flags):
    texts = {}
    for name, (text, _, _) in STRUCTURED.items():
        cf = mlir_opt(text, flags)
        assert cf is not None, f"{name}: mlir-opt-22 refuses it"
        texts[name] = _renamed(cf, name)
    failures = _check_cases(texts, STRUCTURED)
    assert not failures, "\n\n".join(failures)


def test_the_harness_reports_a_wrong_answer():
    """A program whose reference is off by one must be reported, once per run."""
    good = generate(3)
    bad = Program(**{**good.__dict__, "ref": good.ref.replace(
        "def f(A, B, C, n, s, x, m, p, steps):",
        "def f(A, B, C, n, s, x, m, p, steps):\n    A[0] += 1.0", 1)})
    stats = Stats()
    check_batch([bad], stats, random.Random(0), switch_sets=[{}], lift_check=False)
    assert stats.failures and all(f.what == "wrong" for f in stats.failures)
    assert len(stats.failures) == stats.runs


def test_every_cfg_the_pipelines_make_of_generated_programs_is_lifted():
    """--convert-scf-to-cf followed by --canonicalize, --cse, --sccp, upstream's own
    --lift-cf-to-scf...: the blocks they merge and the do-whiles they make all come back as
    structured loops (before: 376 of 1011 over seeds 0-99; ``lift_census.py`` measures it)."""
    from lift_census import census
    lifted, not_lifted, reasons, _ = census(range(100, 106))
    assert not_lifted == 0 and lifted > 40, (lifted, reasons)
