"""Property test of the automatic scheduler: random affine nests (several nests and
statements, random dependences through shared arrays, min/max bounds, sizes that are multiples
of nothing) rescheduled by ISL, tiled and regenerated compute bit for bit what the original
order computes (integer data: every reordering error shows)."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nests(), st.integers(0, 2 ** 31 - 1), st.sampled_from([(), (4, 3), (2, 5)]))
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
