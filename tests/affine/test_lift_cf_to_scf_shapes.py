"""lift-cf-to-scf on the shapes canonicalization and upstream's own lifting make of branches:
a loop whose exit is the next loop's header or an enclosing if's merge block, a loop whose
body is an inner loop's header, an scf.while doing work before its condition, a do-while
(upstream's --lift-cf-to-scf, then --convert-scf-to-cf), and cf.switch (as scf.index_switch).
Before, each of these left its whole function as branches.

Each lifted function is printed and compared with the expected text, accepted by mlir-opt-22,
and run (with and without --hopt) against the branches it came from and a Python reference."""

from __future__ import annotations

import numpy as np
import pytest

import polyopt
from polyopt.passes import run_pipeline
from upstream_mlir import mlir_opt

LIFTED = "lift-cf-to-scf: branches lifted to scf.for/scf.while/scf.if"

SOURCE = """func.func @seq(%A: memref<?xi64>, %n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> i64 {
    %v = memref.load %A[%i] : memref<?xi64>
    %a2 = arith.addi %a, %v : i64
    scf.yield %a2 : i64
  }
  %t = scf.for %i = %c1 to %n step %c1 iter_args(%a = %s) -> i64 {
    %v = memref.load %A[%i] : memref<?xi64>
    %a2 = arith.muli %a, %v : i64
    scf.yield %a2 : i64
  }
  return %t : i64
}
func.func @loop_in_if(%A: memref<?xi64>, %n: index, %p: i1) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 7 : i64
  %r = scf.if %p -> i64 {
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> i64 {
      %v = memref.load %A[%i] : memref<?xi64>
      %a2 = arith.addi %a, %v : i64
      scf.yield %a2 : i64
    }
    scf.yield %s : i64
  } else {
    scf.yield %z : i64
  }
  return %r : i64
}
func.func @nest(%A: memref<?xi64>, %n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> i64 {
    %t = scf.for %j = %i to %n step %c1 iter_args(%b = %a) -> i64 {
      %v = memref.load %A[%j] : memref<?xi64>
      %b2 = arith.addi %b, %v : i64
      scf.yield %b2 : i64
    }
    scf.yield %t : i64
  }
  return %s : i64
}
func.func @work_before(%A: memref<?xi64>, %n: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %c16 = arith.constant 16 : i64
  %r:2 = scf.while (%x = %n, %s = %c1) : (i64, i64) -> (i64, i64) {
    %b = arith.andi %x, %c1 : i64
    %even = arith.cmpi ne, %b, %c1 : i64
    %y = scf.if %even -> i64 {
      %t = arith.muli %x, %c3 : i64
      scf.yield %t : i64
    } else {
      scf.yield %x : i64
    }
    %more = arith.cmpi slt, %y, %c16 : i64
    scf.condition(%more) %y, %s : i64, i64
  } do {
  ^bb0(%y: i64, %s: i64):
    %y2 = arith.addi %y, %c1 : i64
    %s2 = arith.addi %s, %y : i64
    scf.yield %y2, %s2 : i64, i64
  }
  %q = arith.addi %r#0, %r#1 : i64
  return %q : i64
}
func.func @switch(%A: memref<?xi64>, %k: index) -> i64 {
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c0] : memref<?xi64>
  %r = scf.index_switch %k -> i64
  case 2 {
    %a = arith.addi %v, %v : i64
    scf.yield %a : i64
  }
  case 5 {
    %a = arith.muli %v, %v : i64
    scf.yield %a : i64
  }
  default {
    scf.yield %v : i64
  }
  return %r : i64
}
"""


def _wrap(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def _work_before(n: int) -> int:
    x, s = n, 1
    while True:
        y = x * 3 if x & 1 != 1 else x
        if not y < 16:
            return _wrap(y + s)
        x, s = y + 1, s + y


REFERENCE = {
    "seq": lambda A, n: int(np.prod(A[1:n])) * int(A[:n].sum()) if n > 0 else 0,
    "loop_in_if": lambda A, n, p: 7 + int(A[:n].sum()) if p else 7,
    "nest": lambda A, n: sum(int(A[i:n].sum()) for i in range(n)),
    "work_before": lambda A, n: _work_before(n),
    "switch": lambda A, k: {2: 2 * int(A[0]), 5: int(A[0]) ** 2}.get(k, int(A[0])),
}

ARGS = {
    "seq": [(0,), (1,), (4,), (6,)],
    "loop_in_if": [(0, True), (5, True), (5, False)],
    "nest": [(0,), (1,), (6,)],
    "work_before": [(-1,), (0,), (1,), (2,), (15,), (40,)],
    "switch": [(0,), (2,), (5,), (7,), (-3,)],
}

PIPELINES = {
    # blocks merged: a loop's exit is the next loop's header or the if's merge block, a loop's
    # body the inner loop's header, the exit of the while its work before the condition
    "canonicalized": ("--convert-scf-to-cf", "--canonicalize"),
    "plain": ("--convert-scf-to-cf",),
    # upstream's lifting turns every loop into a do-while (the before region is all of it,
    # leaving at the back edge), then back to branches
    "upstream-lifted": ("--convert-scf-to-cf", "--lift-cf-to-scf", "--convert-scf-to-cf"),
    "upstream-lifted-canonicalized": ("--convert-scf-to-cf", "--lift-cf-to-scf",
                                      "--convert-scf-to-cf", "--canonicalize"),
}


def _lift(text: str):
    remarks: list = []
    module = polyopt.parse(text)
    run_pipeline(module, "lift-cf-to-scf", remark=lambda loc, msg: remarks.append(msg))
    return module, remarks


def _function(printed: str, name: str) -> str:
    """The text of ``func.func @name`` in a printed module."""
    lines = printed.splitlines()
    start = next(k for k, line in enumerate(lines) if f"func.func @{name}(" in line)
    end = next(k for k in range(start, len(lines)) if lines[k] == "  }")
    return "\n".join(lines[start:end + 1]) + "\n"


def _check_runs(cf: str, lifted: str, names) -> None:
    """The branches (run as written), the lifted function and its --hopt build give the
    reference's results."""
    rng = np.random.default_rng(7)
    A = rng.integers(-3, 4, 8).astype(np.int64)
    builds = [polyopt.compile(cf), polyopt.compile(lifted), polyopt.compile(lifted, hopt=True)]
    for name in names:
        for args in ARGS[name]:
            want = REFERENCE[name](A, *args)
            got = [b[name](A.copy(), *args) for b in builds]
            assert got == [want] * 3, (name, args, got, want)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_every_function_is_lifted_and_runs_as_its_branches(pipeline):
    cf = mlir_opt(SOURCE, *PIPELINES[pipeline])
    module, remarks = _lift(cf)
    assert remarks == [LIFTED] * 5, remarks
    names = [op.name for op in module.walk()]
    assert not any(n.startswith("cf.") for n in names), str(module)
    lifted = str(module)
    mlir_opt(lifted)
    _check_runs(cf, lifted, REFERENCE)


EXPECTED_CANONICALIZED = {
    # the first loop's exit is the second loop's header
    "seq": """\
  func.func @seq(%arg0: memref<?xi64>, %arg1: index) -> i64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c0_i64 = arith.constant 0 : i64
    %0 = scf.for %arg2 = %c0 to %arg1 step %c1 iter_args(%arg3 = %c0_i64) -> (i64) {
      %2 = memref.load %arg0[%arg2] : memref<?xi64>
      %3 = arith.addi %arg3, %2 : i64
      scf.yield %3 : i64
    }
    %1 = scf.for %arg2 = %c1 to %arg1 step %c1 iter_args(%arg3 = %0) -> (i64) {
      %2 = memref.load %arg0[%arg2] : memref<?xi64>
      %3 = arith.muli %arg3, %2 : i64
      scf.yield %3 : i64
    }
    return %1 : i64
  }
""",
    # the cf.cond_br enters the loop; the loop's exit is the if's merge block
    "loop_in_if": """\
  func.func @loop_in_if(%arg0: memref<?xi64>, %arg1: index, %arg2: i1) -> i64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7_i64 = arith.constant 7 : i64
    %0 = scf.if %arg2 -> (i64) {
      %1 = scf.for %arg3 = %c0 to %arg1 step %c1 iter_args(%arg4 = %c7_i64) -> (i64) {
        %2 = memref.load %arg0[%arg3] : memref<?xi64>
        %3 = arith.addi %arg4, %2 : i64
        scf.yield %3 : i64
      }
      scf.yield %1 : i64
    } else {
      scf.yield %c7_i64 : i64
    }
    return %0 : i64
  }
""",
    # the outer loop's body is the inner loop's header
    "nest": """\
  func.func @nest(%arg0: memref<?xi64>, %arg1: index) -> i64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c0_i64 = arith.constant 0 : i64
    %0 = scf.for %arg2 = %c0 to %arg1 step %c1 iter_args(%arg3 = %c0_i64) -> (i64) {
      %1 = scf.for %arg4 = %arg2 to %arg1 step %c1 iter_args(%arg5 = %arg3) -> (i64) {
        %2 = memref.load %arg0[%arg4] : memref<?xi64>
        %3 = arith.addi %arg5, %2 : i64
        scf.yield %3 : i64
      }
      scf.yield %1 : i64
    }
    return %0 : i64
  }
""",
    # the loop leaves from the block after the if, not from its header
    "work_before": """\
  func.func @work_before(%arg0: memref<?xi64>, %arg1: i64) -> i64 {
    %c1_i64 = arith.constant 1 : i64
    %c3_i64 = arith.constant 3 : i64
    %c16_i64 = arith.constant 16 : i64
    %0:2 = scf.while (%arg2 = %arg1, %arg3 = %c1_i64) : (i64, i64) -> (i64, i64) {
      %2 = arith.andi %arg2, %c1_i64 : i64
      %3 = arith.cmpi ne, %2, %c1_i64 : i64
      %4 = scf.if %3 -> (i64) {
        %6 = arith.muli %arg2, %c3_i64 : i64
        scf.yield %6 : i64
      } else {
        scf.yield %arg2 : i64
      }
      %5 = arith.cmpi slt, %4, %c16_i64 : i64
      scf.condition(%5) %4, %arg3 : i64, i64
    } do {
    ^bb0(%arg2: i64, %arg3: i64):
      %2 = arith.addi %arg2, %c1_i64 : i64
      %3 = arith.addi %arg3, %arg2 : i64
      scf.yield %2, %3 : i64, i64
    }
    %1 = arith.addi %0#0, %0#1 : i64
    return %1 : i64
  }
""",
    # the cf.switch on the i32 --convert-scf-to-cf made of the index: back to index
    "switch": """\
  func.func @switch(%arg0: memref<?xi64>, %arg1: index) -> i64 {
    %c0 = arith.constant 0 : index
    %0 = memref.load %arg0[%c0] : memref<?xi64>
    %1 = arith.index_cast %arg1 : index to i32
    %2 = arith.index_cast %1 : i32 to index
    %3 = scf.index_switch %2 -> i64 
    case 2 {
      %4 = arith.addi %0, %0 : i64
      scf.yield %4 : i64
    }
    case 5 {
      %4 = arith.muli %0, %0 : i64
      scf.yield %4 : i64
    }
    default {
      scf.yield %0 : i64
    }
    return %3 : i64
  }
""",
}


@pytest.mark.parametrize("name", sorted(EXPECTED_CANONICALIZED))
def test_canonicalized_branches_lift_to_the_structure_they_came_from(name):
    module, _ = _lift(mlir_opt(SOURCE, *PIPELINES["canonicalized"]))
    assert _function(str(module), name) == EXPECTED_CANONICALIZED[name]


# upstream's do-while of @work_before, back as branches: the loop leaves from its back edge;
# the values read after the loop (%6: y, %arg3: s) are passed by the scf.condition
EXPECTED_DO_WHILE = """\
  func.func @work_before(%arg0: memref<?xi64>, %arg1: i64) -> i64 {
    %0 = ub.poison : i64
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %c1_i64 = arith.constant 1 : i64
    %c3_i64 = arith.constant 3 : i64
    %c16_i64 = arith.constant 16 : i64
    %1:4 = scf.while (%arg2 = %arg1, %arg3 = %c1_i64, %arg4 = %0, %arg5 = %0) : (i64, i64, i64, i64) -> (i64, i64, i64, i64) {
      %3 = arith.andi %arg2, %c1_i64 : i64
      %4 = arith.cmpi ne, %3, %c1_i64 : i64
      %5 = scf.if %4 -> (i64) {
        %9 = arith.muli %arg2, %c3_i64 : i64
        scf.yield %9 : i64
      } else {
        scf.yield %arg2 : i64
      }
      %6 = arith.cmpi slt, %5, %c16_i64 : i64
      %7:4 = scf.if %6 -> (i64, i64, i32, i32) {
        %9 = arith.addi %5, %c1_i64 : i64
        %10 = arith.addi %arg3, %5 : i64
        scf.yield %9, %10, %c0_i32, %c1_i32 : i64, i64, i32, i32
      } else {
        scf.yield %0, %0, %c1_i32, %c0_i32 : i64, i64, i32, i32
      }
      %8 = arith.trunci %7#3 : i32 to i1
      scf.condition(%8) %7#0, %7#1, %5, %arg3 : i64, i64, i64, i64
    } do {
    ^bb0(%arg2: i64, %arg3: i64, %arg4: i64, %arg5: i64):
      scf.yield %arg2, %arg3, %arg4, %arg5 : i64, i64, i64, i64
    }
    %2 = arith.addi %1#2, %1#3 : i64
    return %2 : i64
  }
"""


def test_a_do_while_leaving_at_its_back_edge_is_one_scf_while():
    module, _ = _lift(mlir_opt(SOURCE, *PIPELINES["upstream-lifted"]))
    assert _function(str(module), "work_before") == EXPECTED_DO_WHILE


SWITCHES = """func.func @sw(%x: i64, %b: i1) -> i64 {
  %c10 = arith.constant 10 : i64
  %c20 = arith.constant 20 : i64
  cf.switch %x : i64, [
    default: ^bb3(%x : i64),
    -5: ^bb1,
    7: ^bb2(%c20 : i64),
    -5: ^bb1
  ]
^bb1:
  cf.br ^bb3(%c10 : i64)
^bb2(%v: i64):
  %w = arith.addi %v, %x : i64
  cf.br ^bb3(%w : i64)
^bb3(%r: i64):
  cf.switch %b : i1, [
    default: ^bb4(%r : i64),
    1: ^bb5
  ]
^bb4(%s: i64):
  return %s : i64
^bb5:
  %n = arith.subi %c10, %r : i64
  cf.br ^bb4(%n : i64)
}
"""

# a negative i64 case stays negative (index_cast is signed); the second -5 is never taken;
# an i1 flag is read unsigned, so that true is case 1
EXPECTED_SWITCHES = """\
  func.func @sw(%arg0: i64, %arg1: i1) -> i64 {
    %c10_i64 = arith.constant 10 : i64
    %c20_i64 = arith.constant 20 : i64
    %0 = arith.index_cast %arg0 : i64 to index
    %1 = scf.index_switch %0 -> i64 
    case -5 {
      scf.yield %c10_i64 : i64
    }
    case 7 {
      %4 = arith.addi %c20_i64, %arg0 : i64
      scf.yield %4 : i64
    }
    default {
      scf.yield %arg0 : i64
    }
    %2 = arith.index_castui %arg1 : i1 to index
    %3 = scf.index_switch %2 -> i64 
    case 1 {
      %4 = arith.subi %c10_i64, %1 : i64
      scf.yield %4 : i64
    }
    default {
      scf.yield %1 : i64
    }
    return %3 : i64
  }
"""


def _switches_reference(x: int, b: bool) -> int:
    r = {-5: 10, 7: 20 + x}.get(x, x)
    return 10 - r if b else r


def test_cf_switch_on_i64_and_i1_with_a_repeated_case_becomes_scf_index_switch():
    module, remarks = _lift(SWITCHES)
    assert remarks == [LIFTED]
    lifted = str(module)
    assert _function(lifted, "sw") == EXPECTED_SWITCHES
    mlir_opt(lifted)
    for text, hopt in ((SWITCHES, False), (lifted, True)):     # branches as written, lifted
        f = polyopt.compile(text, hopt=hopt)["sw"]
        for x in (-5, 7, 0, 3, -1, 1 << 40):
            for b in (False, True):
                assert f(x, b) == _switches_reference(x, b), (x, b)


def test_a_repeated_case_to_a_block_only_it_reaches_is_left_as_branches():
    """The second case 7 goes to ^bb2, which no path takes: the lifting would drop the block,
    so the function stays as written (and runs as mlir-opt-22's semantics say: the first case
    wins)."""
    text = """func.func @f(%x: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  cf.switch %x : i32, [
    default: ^bb3(%x : i32),
    7: ^bb1,
    7: ^bb2
  ]
^bb1:
  cf.br ^bb3(%c1 : i32)
^bb2:
  cf.br ^bb3(%c2 : i32)
^bb3(%r: i32):
  return %r : i32
}
"""
    module, remarks = _lift(text)
    assert len(remarks) == 1 and "not lifted" in remarks[0], remarks
    assert "cf.switch" in str(module)
    f = polyopt.compile(text, hopt=True)["f"]
    assert [f(7), f(3)] == [1, 3]


# the body's conditional branches back to the header from both sides (two back edges)
TWO_BACK_EDGES = """func.func @collatz(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  cf.br ^bb1(%n, %c0 : i64, i64)
^bb1(%x: i64, %steps: i64):
  %more = arith.cmpi sgt, %x, %c1 : i64
  cf.cond_br %more, ^bb2, ^bb5
^bb2:
  %s1 = arith.addi %steps, %c1 : i64
  %bit = arith.andi %x, %c1 : i64
  %odd = arith.cmpi eq, %bit, %c1 : i64
  cf.cond_br %odd, ^bb3, ^bb4
^bb3:
  %t = arith.muli %x, %c3 : i64
  %t1 = arith.addi %t, %c1 : i64
  cf.br ^bb1(%t1, %s1 : i64, i64)
^bb4:
  %h = arith.divsi %x, %c2 : i64
  cf.br ^bb1(%h, %s1 : i64, i64)
^bb5:
  return %steps : i64
}
"""

EXPECTED_TWO_BACK_EDGES = """\
  func.func @collatz(%arg0: i64) -> i64 {
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c2_i64 = arith.constant 2 : i64
    %c3_i64 = arith.constant 3 : i64
    %0:2 = scf.while (%arg1 = %arg0, %arg2 = %c0_i64) : (i64, i64) -> (i64, i64) {
      %1 = arith.cmpi sgt, %arg1, %c1_i64 : i64
      scf.condition(%1) %arg1, %arg2 : i64, i64
    } do {
    ^bb0(%arg1: i64, %arg2: i64):
      %1 = arith.addi %arg2, %c1_i64 : i64
      %2 = arith.andi %arg1, %c1_i64 : i64
      %3 = arith.cmpi eq, %2, %c1_i64 : i64
      %4:2 = scf.if %3 -> (i64, i64) {
        %5 = arith.muli %arg1, %c3_i64 : i64
        %6 = arith.addi %5, %c1_i64 : i64
        scf.yield %6, %1 : i64, i64
      } else {
        %5 = arith.divsi %arg1, %c2_i64 : i64
        scf.yield %5, %1 : i64, i64
      }
      scf.yield %4#0, %4#1 : i64, i64
    }
    return %0#1 : i64
  }
"""


def _collatz_steps(n: int) -> int:
    steps = 0
    while n > 1:
        n, steps = (3 * n + 1 if n % 2 else n // 2), steps + 1
    return steps


def test_a_loop_with_two_back_edges_from_a_conditional_is_one_scf_while():
    module, remarks = _lift(TWO_BACK_EDGES)
    assert remarks == [LIFTED]
    lifted = str(module)
    assert _function(lifted, "collatz") == EXPECTED_TWO_BACK_EDGES
    mlir_opt(lifted)
    for text, hopt in ((TWO_BACK_EDGES, False), (lifted, True)):
        f = polyopt.compile(text, hopt=hopt)["collatz"]
        assert [f(n) for n in (-4, 1, 2, 3, 7, 27)] == \
            [_collatz_steps(n) for n in (-4, 1, 2, 3, 7, 27)]


# paths that meet only at the returns (an early return, then one return on each side of the
# last test): scf.ifs whose results are the values returned, then one return
EARLY_RETURNS = """func.func @clamped_sum(%A: memref<?xi64>, %n: index, %lim: i64) -> (i64, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 0 : i64
  %empty = arith.cmpi eq, %n, %c0 : index
  cf.cond_br %empty, ^bb1, ^bb2(%c0, %z : index, i64)
^bb1:
  return %z, %c0 : i64, index
^bb2(%i: index, %s: i64):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^bb3, ^bb4
^bb3:
  %v = memref.load %A[%i] : memref<?xi64>
  %s2 = arith.addi %s, %v : i64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^bb2(%i2, %s2 : index, i64)
^bb4:
  %big = arith.cmpi sgt, %s, %lim : i64
  cf.cond_br %big, ^bb5, ^bb6
^bb5:
  return %lim, %c1 : i64, index
^bb6:
  return %s, %c2 : i64, index
}
"""

EXPECTED_EARLY_RETURNS = """\
  func.func @clamped_sum(%arg0: memref<?xi64>, %arg1: index, %arg2: i64) -> (i64, index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c0_i64 = arith.constant 0 : i64
    %0 = arith.cmpi eq, %arg1, %c0 : index
    %1:2 = scf.if %0 -> (i64, index) {
      scf.yield %c0_i64, %c0 : i64, index
    } else {
      %2 = scf.for %arg3 = %c0 to %arg1 step %c1 iter_args(%arg4 = %c0_i64) -> (i64) {
        %5 = memref.load %arg0[%arg3] : memref<?xi64>
        %6 = arith.addi %arg4, %5 : i64
        scf.yield %6 : i64
      }
      %3 = arith.cmpi sgt, %2, %arg2 : i64
      %4:2 = scf.if %3 -> (i64, index) {
        scf.yield %arg2, %c1 : i64, index
      } else {
        scf.yield %2, %c2 : i64, index
      }
      scf.yield %4#0, %4#1 : i64, index
    }
    return %1#0, %1#1 : i64, index
  }
"""


def _clamped_sum(A, n: int, lim: int):
    if n == 0:
        return 0, 0
    s = int(A[:n].sum())
    return (lim, 1) if s > lim else (s, 2)


def test_paths_that_meet_only_at_returns_are_conditionals_with_the_returned_results():
    module, remarks = _lift(EARLY_RETURNS)
    assert remarks == [LIFTED]
    lifted = str(module)
    assert _function(lifted, "clamped_sum") == EXPECTED_EARLY_RETURNS
    mlir_opt(lifted)
    A = np.array([3, -1, 4, 1, 5], dtype=np.int64)
    for text, hopt in ((EARLY_RETURNS, False), (lifted, True)):
        f = polyopt.compile(text, hopt=hopt)["clamped_sum"]
        for n in (0, 2, 5):
            for lim in (2, 100):
                assert tuple(map(int, f(A, n, lim))) == _clamped_sum(A, n, lim), (n, lim)


# a search loop that leaves from three places: its header (not found), a return (found) and
# a break (too many negatives): the back edge and the exits go through one latch, a selector
# telling them apart (0: round again), the loop's values read after it (%i) passed along;
# after the scf.while an scf.index_switch on the selector runs the exit taken
MULTI_EXIT = """func.func @find(%A: memref<?xi64>, %n: index, %key: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %none = arith.constant -1 : i64
  %c1_i64 = arith.constant 1 : i64
  cf.br ^bb1(%c0, %z : index, i64)
^bb1(%i: index, %neg: i64):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^bb2, ^bb5(%none : i64)
^bb2:
  %v = memref.load %A[%i] : memref<?xi64>
  %hit = arith.cmpi eq, %v, %key : i64
  cf.cond_br %hit, ^bb6, ^bb3
^bb3:
  %stop = arith.cmpi sgt, %neg, %c1_i64 : i64
  cf.cond_br %stop, ^bb5(%neg : i64), ^bb4
^bb4:
  %isneg = arith.cmpi slt, %v, %z : i64
  %one = arith.extui %isneg : i1 to i64
  %neg2 = arith.addi %neg, %one : i64
  %i2 = arith.addi %i, %c1 : index
  cf.br ^bb1(%i2, %neg2 : index, i64)
^bb5(%r: i64):
  %r2 = arith.muli %r, %none : i64
  return %r2 : i64
^bb6:
  %iv = arith.index_cast %i : index to i64
  return %iv : i64
}
"""

EXPECTED_MULTI_EXIT = """\
  func.func @find(%arg0: memref<?xi64>, %arg1: index, %arg2: i64) -> i64 {
    %c0_i64 = arith.constant 0 : i64
    %c0 = arith.constant 0 : index
    %c0_0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c0_i64_1 = arith.constant 0 : i64
    %c-1_i64 = arith.constant -1 : i64
    %c1_i64 = arith.constant 1 : i64
    %0:5 = scf.while (%arg3 = %c0_0, %arg4 = %c0_i64_1) : (index, i64) -> (index, i64, i32, i64, index) {
      %3 = arith.cmpi slt, %arg3, %arg1 : index
      %c1_i32 = arith.constant 1 : i32
      %4:5 = scf.if %3 -> (i32, index, i64, i64, index) {
        %6 = memref.load %arg0[%arg3] : memref<?xi64>
        %7 = arith.cmpi eq, %6, %arg2 : i64
        %c2_i32 = arith.constant 2 : i32
        %8:5 = scf.if %7 -> (i32, index, i64, i64, index) {
          scf.yield %c2_i32, %c0, %c0_i64, %c0_i64, %arg3 : i32, index, i64, i64, index
        } else {
          %9 = arith.cmpi sgt, %arg4, %c1_i64 : i64
          %c1_i32_2 = arith.constant 1 : i32
          %10:5 = scf.if %9 -> (i32, index, i64, i64, index) {
            scf.yield %c1_i32_2, %c0, %c0_i64, %arg4, %arg3 : i32, index, i64, i64, index
          } else {
            %11 = arith.cmpi slt, %6, %c0_i64_1 : i64
            %12 = arith.extui %11 : i1 to i64
            %13 = arith.addi %arg4, %12 : i64
            %14 = arith.addi %arg3, %c1 : index
            %c0_i32_3 = arith.constant 0 : i32
            scf.yield %c0_i32_3, %14, %13, %c0_i64, %arg3 : i32, index, i64, i64, index
          }
          scf.yield %10#0, %10#1, %10#2, %10#3, %10#4 : i32, index, i64, i64, index
        }
        scf.yield %8#0, %8#1, %8#2, %8#3, %8#4 : i32, index, i64, i64, index
      } else {
        scf.yield %c1_i32, %c0, %c0_i64, %c-1_i64, %arg3 : i32, index, i64, i64, index
      }
      %c0_i32 = arith.constant 0 : i32
      %5 = arith.cmpi eq, %4#0, %c0_i32 : i32
      scf.condition(%5) %4#1, %4#2, %4#0, %4#3, %4#4 : index, i64, i32, i64, index
    } do {
    ^bb0(%arg3: index, %arg4: i64, %arg5: i32, %arg6: i64, %arg7: index):
      scf.yield %arg3, %arg4 : index, i64
    }
    %1 = arith.index_cast %0#2 : i32 to index
    %2 = scf.index_switch %1 -> i64 
    case 1 {
      %3 = arith.muli %0#3, %c-1_i64 : i64
      scf.yield %3 : i64
    }
    default {
      %3 = arith.index_cast %0#4 : index to i64
      scf.yield %3 : i64
    }
    return %2 : i64
  }
"""


def _find(A, n: int, key: int) -> int:
    neg = 0
    for i in range(n):
        if A[i] == key:
            return i
        if neg > 1:
            return -neg
        neg += int(A[i] < 0)
    return 1


def test_a_loop_leaving_from_three_places_goes_through_one_latch_and_a_selector():
    module, remarks = _lift(MULTI_EXIT)
    assert remarks == [LIFTED]
    lifted = str(module)
    assert _function(lifted, "find") == EXPECTED_MULTI_EXIT
    mlir_opt(lifted)
    A = np.array([3, -1, 4, -1, 5, -9, 2, 6], dtype=np.int64)
    for text, hopt in ((MULTI_EXIT, False), (lifted, True)):
        f = polyopt.compile(text, hopt=hopt)["find"]
        for n in (0, 3, 8):
            for key in (4, 6, 7, 3):
                assert f(A, n, key) == _find(A, n, key), (n, key)
