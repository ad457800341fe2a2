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

import pytest
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


# affine seed 20052, reduced: ISL's dataflow analysis of this scop (mod/floordiv/ceildiv
# subscripts, parametric bounds and steps) ran for more than ten minutes under --schedule
EXPENSIVE_SCOP = """
func.func @f(%A0: memref<4x4xi32>, %A1: memref<1x1xi32>, %A2: memref<3x2xi32>, %s0: index, %s1: index) {
  affine.for %i0 = affine_map<()[s0] -> (s0 - 2)>()[%s1] to affine_map<()[s0] -> (s0 + 1)>()[%s0] step 2 {
  }
  affine.for %i1 = affine_map<()[s0] -> (s0)>()[%s1] to 1 {
    %v14 = affine.vector_load %A2[%i1 * 3, %i1 * -1 - 2] : memref<3x2xi32>, vector<4xi32>
    %v20 = affine.vector_load %A2[%i1, %i1 + 3] : memref<3x2xi32>, vector<4xi32>
    affine.for %i2 = 1 to affine_map<()[s0] -> (s0 + 1)>()[%s1] {
      affine.for %i3 = affine_map<(d0) -> ((d0) floordiv 3 + 2)>(%i1) to min affine_map<(d0)[s0] -> (s0, d0 * -1 + 8)>(%i1)[%s0] step 2 {
        affine.if affine_set<(d0)[s0] : (d0 + s0 * -1 - 4 >= 0)>(%i2)[%s0] {
        }
        affine.if affine_set<(d0) : ((d0 + 1) mod 2 == 0)>(%i1) {
        }
      }
      affine.for %i4 = max affine_map<() -> (1, 2)>() to affine_map<(d0) -> (d0 + 6)>(%i1) {
      }
    }
  }
  affine.for %i5 = affine_map<()[s0] -> (s0)>()[%s0] to 10 step 2 {
    affine.for %i6 = affine_map<()[s0] -> (s0 - 1)>()[%s1] to min affine_map<(d0) -> (d0 * -1 + 10, d0 + 4)>(%i5) {
      affine.if affine_set<(d0) : ((d0 + 1) mod 3 == 0)>(%i5) {
        %v57 = affine.load %A2[%i6, %i5 + 1] : memref<3x2xi32>
        %v73 = affine.load %A2[(%i6 + %i5) ceildiv 2, %i5 * 3 - 2] : memref<3x2xi32>
      }
      %v77 = affine.apply affine_map<(d0) -> (d0 + 2)>(%i5)
      %v78 = affine.apply affine_map<(d0) -> (d0 * 2 - 2)>(%i6)
      %v76 = affine.vector_load %A1[%v77, %v78] : memref<1x1xi32>, vector<2xi32>
      %v80 = arith.constant -2 : i32
      %v79 = vector.broadcast %v80 : i32 to vector<2xi32>
      %v75 = arith.addi %v76, %v79 : vector<2xi32>
      %v82 = affine.vector_load %A2[%i6 * 3 + 1, %i5 + %i6 * 2 + 3] : memref<3x2xi32>, vector<2xi32>
      %v83 = affine.vector_load %A0[%i6 + 2, %i5] : memref<4x4xi32>, vector<2xi32>
      %v81 = arith.maxsi %v82, %v83 : vector<2xi32>
      %v74 = arith.subi %v75, %v81 : vector<2xi32>
      affine.vector_store %v74, %A2[%i6 * 2 - 2, %i6 - 1] : memref<3x2xi32>, vector<2xi32>
      affine.for %i7 = 0 to 10 {
        affine.if affine_set<(d0) : (d0 * -1 - 4 >= 0)>(%i6) {
        }
        affine.if affine_set<(d0, d1) : ((d0 * 2) mod 3 == 0, (d1) mod 2 == 0)>(%i5, %i7) {
        }
      }
    }
  }
  return
}
"""


def test_too_expensive_dependence_analysis_is_refused_not_a_hang(monkeypatch):
    """ISL's operation budget turns the endless analysis into a ScheduleError at the scop
    (here with a 25th of the budget: the reduced nest needs 2 to 2.5 million operations,
    the fuzzer's original more than the whole budget), and is lifted afterwards."""
    import islpy as isl
    import pytest
    from polyopt.affine.diagnostics import ScheduleError
    from polyopt.schedules import dependences
    monkeypatch.setattr(dependences, "MAX_ISL_OPERATIONS", 1_000_000)
    module = polyopt.parse(EXPENSIVE_SCOP, "scop.mlir")
    with pytest.raises(ScheduleError) as err:
        apply_schedule(module.regions[0].blocks[0].ops[0], {"S0": "(d0) -> (d0)"})
    assert str(err.value).startswith("scop.mlir:")
    assert "the dependence analysis of this nest (" in str(err.value)
    assert "takes ISL more than 1,000,000 operations" in str(err.value)
    assert isl.DEFAULT_CONTEXT.get_max_operations() == 0
    # and the next analysis has no budget left over
    want, got = _scheduled_run(
        "func.func @f(%A: memref<8xf64>) {\n  affine.for %i = 1 to 8 {\n"
        "    %v = affine.load %A[%i - 1] : memref<8xf64>\n"
        "    affine.store %v, %A[%i] : memref<8xf64>\n  }\n  return\n}\n",
        {"S0": "(d0) -> (d0 floordiv 2, d0)"}, [np.arange(8.0)])
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("seed, flags", [
    # the privatization test asked for the first time of a statement that never runs
    # (AttributeError: 'NoneType' object has no attribute 'lexmin', with --hopt)
    (77061, {"hopt": True}),
    # ISL's lexmin of a dependence with existential divisions sampled a void point in the
    # vectorization test (isl_point_get_coordinate_val failed, with all passes)
    (77028, {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}),
    # (seed 123016, a later campaign) the loop-order score read the subscripts of a
    # vector access, a relation to 8 elements, as a function (isl_pw_multi_aff_from_map
    # failed: map is not single-valued); its first lane's are taken
    (123016, {"hopt": True, "copy": True, "unroll": True, "scalrep": True, "vect": True}),
    # (seed 131075, the evening's campaign) ISL's dataflow analysis failed inside itself on a
    # nest of empty loops with floordiv bounds (isl_union_access_info_compute_flow: "affine
    # expression involves some of the domain dimensions"), a traceback under --hopt; the
    # nest now stays in its order with a remark
    (131075, {"hopt": True}),
    # (seed 264045, a campaign of the next session) a hop.matmul with a bias + ReLU nest
    # after it, all passes but vect: the fusion of the epilogue into the stores of C proved
    # "no two of the 129 stores of the scalar-replaced tile write one element per K block"
    # with one ISL single-valuedness test on their union, which ran for more than ten
    # minutes; store by store against the union of the ones before, it takes 0.1 s
    (264045, {"hopt": True, "copy": True, "unroll": True, "scalrep": True}),
    # (seed 265005) a depthwise convolution, a product and a small nest under --hopt: the
    # scheduler asks whether each innermost loop is parallel, and the yes/no question went
    # through the check that builds an error message, whose smallest violating point ISL
    # searched for more than eight minutes; the question no longer looks for a witness
    (265005, {"hopt": True}),
])
def test_defects_of_the_campaign_of_2026_11_29(seed, flags):
    from diff_harness import check_run
    from diff_programs import any_case
    stats = Stats()
    check_run(any_case(seed), flags, stats)
    assert not stats.failures, "\n".join(f.report() for f in stats.failures)
    assert stats.runs == 1


def test_a_matrix_vector_product_with_a_strided_c_and_an_identity_b():
    """Seed 77075 (ops, before the generator drew softmaxes and epilogues): the GEMV typed B's
    collapsed column ``strided<[1]>`` where B has the identity layout, and the verifier
    refused its own output (a valid program refused, with --hopt-vect)."""
    text = """
func.func @f(%A: memref<1x23xf64>, %B: memref<23x1xf64>, %C: memref<1x1xf64, strided<[3, 1]>>) {
  hop.matmul %A, %B, %C {alpha = 2.5 : f64} : (memref<1x23xf64>, memref<23x1xf64>, memref<1x1xf64, strided<[3, 1]>>)
  return
}
"""
    rng = np.random.default_rng(75)
    a, b = rng.standard_normal((1, 23)), rng.standard_normal((23, 1))
    c = rng.standard_normal(3)           # the flat buffer of C (stride 3)
    want = c.copy()
    want[0] += 2.5 * (a @ b)[0, 0]
    polyopt.compile(text, hopt=True, vect=True)["f"](a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-13)
