"""Property test of the automatic scheduler: random affine nests (several nests and
statements, random dependences through shared arrays, min/max bounds, sizes that are multiples
of nothing) rescheduled by ISL, tiled and regenerated compute bit for bit what the original
order computes (integer data: every reordering error shows)."""

import numpy as np
from hypothesis import HealthCheck, example, given, settings, strategies as st

import polyopt
from polyopt.pipeline import machine_model
from polyopt.schedules.auto_schedule import AutoScheduleOptions, schedule_remaining_nests

MACHINE = machine_model()
PAD = 3            # subscripts are iv + offset with offsets in [0, PAD]
ARRAYS = ("%A", "%B", "%C")


@st.composite
def nests(draw):
    n = draw(st.integers(3, 11))                       # the extent of every loop
    size = n + PAD + 1
    mem = f"memref<{size}x{size}xi32>"
    lines = [f"func.func @f(%A: {mem}, %B: {mem}, %C: {mem}) {{"]
    for k in range(draw(st.integers(1, 3))):           # top-level nests
        depth = draw(st.integers(1, 3))
        ivs = [f"%i{k}_{d}" for d in range(depth)]
        for d, iv in enumerate(ivs):
            ind = "  " * (d + 1)
            if d == 0:
                lines.append(f"{ind}affine.for {iv} = 0 to {n} {{")
                continue
            outer = ivs[d - 1]
            lb = draw(st.sampled_from(["0", f"max affine_map<(d0) -> (0, d0 - 2)>({outer})",
                                       f"affine_map<(d0) -> (d0)>({outer})"]))
            ub = draw(st.sampled_from([f"{n}", f"min affine_map<(d0) -> ({n}, d0 + 3)>({outer})"]))
            lines.append(f"{ind}affine.for {iv} = {lb} to {ub} {{")
        ind = "  " * (depth + 1)
        for s in range(draw(st.integers(1, 2))):       # statements in the innermost loop
            def sub():
                a = draw(st.sampled_from(ivs)) + f" + {draw(st.integers(0, PAD))}"
                b = draw(st.sampled_from(ivs)) + f" + {draw(st.integers(0, PAD))}"
                return f"[{a}, {b}]"
            x, y, z = (draw(st.sampled_from(ARRAYS)) for _ in range(3))
            op = draw(st.sampled_from(["arith.addi", "arith.muli", "arith.subi"]))
            v = f"%v{k}_{s}"
            lines += [f"{ind}{v}a = affine.load {y}{sub()} : {mem}",
                      f"{ind}{v}b = affine.load {z}{sub()} : {mem}",
                      f"{ind}{v}c = {op} {v}a, {v}b : i32",
                      f"{ind}affine.store {v}c, {x}{sub()} : {mem}"]
        lines += ["  " * (d + 1) + "}" for d in reversed(range(depth))]
    lines += ["  return", "}"]
    return "\n".join(lines), size


#: a nest hypothesis found on which ISL's search runs for minutes (it times out, and a
#: narrower search schedules it: auto_schedule._after_time_out)
SLOW_FOR_ISL = """\
func.func @f(%A: memref<14x14xi32>, %B: memref<14x14xi32>, %C: memref<14x14xi32>) {
  affine.for %i0_0 = 0 to 10 {
    affine.for %i0_1 = 0 to 10 {
      affine.for %i0_2 = 0 to min affine_map<(d0) -> (10, d0 + 3)>(%i0_1) {
        %v0_0a = affine.load %A[%i0_0 + 0, %i0_0 + 0] : memref<14x14xi32>
        %v0_0b = affine.load %A[%i0_0 + 1, %i0_0 + 0] : memref<14x14xi32>
        %v0_0c = arith.addi %v0_0a, %v0_0b : i32
        affine.store %v0_0c, %A[%i0_0 + 1, %i0_0 + 0] : memref<14x14xi32>
        %v0_1a = affine.load %B[%i0_1 + 0, %i0_2 + 1] : memref<14x14xi32>
        %v0_1b = affine.load %A[%i0_0 + 0, %i0_0 + 0] : memref<14x14xi32>
        %v0_1c = arith.addi %v0_1a, %v0_1b : i32
        affine.store %v0_1c, %B[%i0_1 + 0, %i0_1 + 0] : memref<14x14xi32>
      }
    }
  }
  affine.for %i1_0 = 0 to 10 {
    affine.for %i1_1 = 0 to 10 {
      %v1_0a = affine.load %C[%i1_1 + 1, %i1_0 + 2] : memref<14x14xi32>
      %v1_0b = affine.load %A[%i1_0 + 0, %i1_0 + 0] : memref<14x14xi32>
      %v1_0c = arith.addi %v1_0a, %v1_0b : i32
      affine.store %v1_0c, %A[%i1_0 + 0, %i1_1 + 1] : memref<14x14xi32>
      %v1_1a = affine.load %A[%i1_1 + 0, %i1_1 + 0] : memref<14x14xi32>
      %v1_1b = affine.load %A[%i1_1 + 1, %i1_0 + 2] : memref<14x14xi32>
      %v1_1c = arith.addi %v1_1a, %v1_1b : i32
      affine.store %v1_1c, %C[%i1_1 + 2, %i1_0 + 0] : memref<14x14xi32>
    }
  }
  affine.for %i2_0 = 0 to 10 {
    affine.for %i2_1 = affine_map<(d0) -> (d0)>(%i2_0) to 10 {
      %v2_0a = affine.load %A[%i2_1 + 0, %i2_0 + 2] : memref<14x14xi32>
      %v2_0b = affine.load %C[%i2_1 + 1, %i2_1 + 2] : memref<14x14xi32>
      %v2_0c = arith.addi %v2_0a, %v2_0b : i32
      affine.store %v2_0c, %A[%i2_1 + 0, %i2_1 + 2] : memref<14x14xi32>
      %v2_1a = affine.load %B[%i2_0 + 2, %i2_1 + 0] : memref<14x14xi32>
      %v2_1b = affine.load %A[%i2_0 + 0, %i2_0 + 0] : memref<14x14xi32>
      %v2_1c = arith.addi %v2_1a, %v2_1b : i32
      affine.store %v2_1c, %B[%i2_0 + 0, %i2_1 + 3] : memref<14x14xi32>
    }
  }
  return
}
"""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nests(), st.integers(0, 2 ** 31 - 1), st.sampled_from([(), (4, 3), (2, 5)]))
@example((SLOW_FOR_ISL, 14), 0, ())
def test_random_nests_compute_what_the_original_order_computes(nest, seed, sizes):
    text, size = nest
    module = polyopt.parse(text)
    options = AutoScheduleOptions(tile_sizes=sizes or None)
    results = schedule_remaining_nests(module, MACHINE, None, options)
    assert results and all(r.status in ("scheduled", "kept") for r in results), \
        [r.why for r in results]
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(-5, 6, (size, size), dtype=np.int32) for _ in ARRAYS]
    want = [a.copy() for a in inputs]
    got = [a.copy() for a in inputs]
    polyopt.compile(text)["f"](*want)
    polyopt.compile(module)["f"](*got)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_a_search_that_times_out_is_retried_narrower_and_says_so():
    remarks = []
    module = polyopt.parse(SLOW_FOR_ISL)
    (result,) = schedule_remaining_nests(module, MACHINE, lambda loc, msg: remarks.append(msg),
                                         AutoScheduleOptions())
    assert result.status == "scheduled", result.why
    assert "ISL's scheduler takes more than 4 s" in result.why
    assert "outer coincidence" in result.why and result.why in remarks[0]
