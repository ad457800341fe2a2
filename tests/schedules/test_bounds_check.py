"""Static bounds checking of affine accesses (MLIR's -memref-bound-check) with ISL: exact
messages (op, memref, dimension, index, iteration, symbol values) and locations; no false alarms
on the tiled nests with min bounds, guarded accesses and vector accesses that fit."""

from __future__ import annotations

import textwrap

import pytest

import polyopt
from polyopt.affine.diagnostics import VerifyError
from polyopt.schedules.bounds_check import check_bounds, find_out_of_bounds
from polyopt.schedules.model import extract


def parse(text: str, filename: str = "b.mlir"):
    return polyopt.parse(textwrap.dedent(text), filename)


def func_of(module, index: int = 0):
    return [op for op in module.regions[0].blocks[0].ops if op.name == "func.func"][index]


def bounds_error(root) -> str:
    with pytest.raises(VerifyError) as err:
        check_bounds(root)
    return str(err.value)


def test_off_by_one_is_refused():
    module = parse("""
        func.func @f(%A: memref<16x16xf64>, %B: memref<16x16xf64>, %C: memref<16x16xf64>) {
          affine.for %i = 0 to 16 {
            affine.for %j = 0 to 16 {
              %v = affine.load %A[%i, %j + 1] : memref<16x16xf64>
              affine.store %v, %B[%i, %j] : memref<16x16xf64>
            }
          }
          return
        }""")
    expected = ("b.mlir:5:12: error: 'affine.load' op out-of-bounds access to memref<16x16xf64> "
                "(%arg0) in dimension 1: index 16 at iteration (%arg3 = 0, %arg4 = 15)")
    assert bounds_error(func_of(module)) == expected
    assert bounds_error(module) == expected
    assert bounds_error(extract(func_of(module))) == expected   # the same through the model


def test_loop_one_iteration_too_long_and_negative_index():
    module = parse("""
        func.func @f(%A: memref<10xf64>, %B: memref<10xf64>) {
          affine.for %i = 0 to 11 {
            %v = affine.load %B[%i - 1] : memref<10xf64>
            affine.store %v, %A[%i] : memref<10xf64>
          }
          return
        }""")
    errors = [str(e) for e in find_out_of_bounds(module)]
    assert errors == [
        "b.mlir:4:10: error: 'affine.load' op out-of-bounds access to memref<10xf64> (%arg1) in "
        "dimension 0: index -1 at iteration (%arg2 = 0)",
        "b.mlir:5:5: error: 'affine.store' op out-of-bounds access to memref<10xf64> (%arg0) in "
        "dimension 0: index 10 at iteration (%arg2 = 10)"]


# the paper's section 2.5 nest: 33 tiles of 64 rows over 2088 rows, the last one cut by a min
TILED = """
#lb = affine_map<(d0) -> (d0 * 64)>
#ub = affine_map<(d0) -> (UB, d0 * 64 + 64)>
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  affine.for %arg3 = 0 to 8 {
    affine.for %arg4 = 0 to 33 {
      affine.for %arg5 = 0 to 2048 {
        affine.for %arg6 = #lb(%arg4) to min #ub(%arg4) {
          affine.for %arg7 = 0 to 256 {
            %3 = affine.load %A[%arg6, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
            %4 = affine.load %B[%arg3 * 256 + %arg7, %arg5] : memref<2048x2048xf64>
            %5 = affine.load %C[%arg6, %arg5] : memref<2088x2048xf64>
            %6 = arith.mulf %3, %4 : f64
            %7 = arith.addf %5, %6 : f64
            affine.store %7, %C[%arg6, %arg5] : memref<2088x2048xf64>
          }
        }
      }
    }
  }
  return
}
"""


def test_tiled_nest_with_min_bounds_is_in_bounds():
    module = parse(TILED.replace("UB", "2088"))
    check_bounds(module)
    check_bounds(extract(func_of(module)))
    assert find_out_of_bounds(module) == []


def test_tiled_nest_with_a_wrong_min_bound_is_refused():
    module = parse(TILED.replace("UB", "2089"), "tiled.mlir")
    assert bounds_error(module) == (
        "tiled.mlir:10:18: error: 'affine.load' op out-of-bounds access to memref<2088x2048xf64> "
        "(%arg0) in dimension 0: index 2088 at iteration (%arg3 = 0, %arg4 = 32, %arg5 = 0, "
        "%arg6 = 2088, %arg7 = 0)")


def test_guarded_and_unguarded_accesses():
    module = parse("""
        func.func @f(%v: memref<18xf64>) {
          affine.for %i = 0 to 16 {
            affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
              %a = affine.load %v[%i - 1] : memref<18xf64>
            } else {
              %b = affine.load %v[%i - 1] : memref<18xf64>
            }
          }
          return
        }""")
    assert [str(e) for e in find_out_of_bounds(module)] == [
        "b.mlir:7:12: error: 'affine.load' op out-of-bounds access to memref<18xf64> (%arg0) in "
        "dimension 0: index -1 at iteration (%arg1 = 0)"]


def test_vector_accesses_check_every_lane():
    ok = """
        func.func @f(%v: memref<4x16xf32>) {
          affine.for %i = 0 to 4 {
            affine.for %j = 0 to 16 step 8 {
              %x = affine.vector_load %v[%i, %j] : memref<4x16xf32>, vector<8xf32>
              affine.vector_store %x, %v[%i, %j] : memref<4x16xf32>, vector<8xf32>
            }
          }
          return
        }"""
    check_bounds(parse(ok))
    # 14 columns: the lanes 14 and 15 of the second vector are outside
    bad = parse(ok.replace("4x16xf32", "4x14xf32").replace("0 to 16", "0 to 14"))
    assert bounds_error(bad) == (
        "b.mlir:5:12: error: 'affine.vector_load' op out-of-bounds access to memref<4x14xf32> "
        "(%arg0) in dimension 1: index 14 at iteration (%arg1 = 0, %arg2 = 8)")


def test_symbolic_bounds():
    module = parse("""
        func.func @f(%A: memref<16xf64>, %N: index, %D: memref<?xf64>) {
          affine.for %i = 0 to %N {
            %a = affine.load %A[%i] : memref<16xf64>
            %d = affine.load %D[%i + 100] : memref<?xf64>
          }
          affine.for %i = 0 to min affine_map<()[s0] -> (s0, 16)>()[%N] {
            %b = affine.load %A[%i] : memref<16xf64>
          }
          affine.for %i = %N to affine_map<()[s0] -> (s0 + 17)>()[%N] {
            %c = affine.load %A[%i - symbol(%N)] : memref<16xf64>
          }
          return
        }""")
    assert [str(e) for e in find_out_of_bounds(module)] == [
        # only when %N > 16: said so, with the smallest such value
        "b.mlir:4:10: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg3 = 16) for some values of the symbols "
        "(%arg1 = 17)",
        # for every %N (the iteration depends on it: one example is given)
        "b.mlir:11:10: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg3 = 16) (for example with %arg1 = 0)"]
    # (%D has a dynamic size: not checked; the min-bounded loop is fine for every %N)


def test_context_of_an_inner_nest():
    text = """
        func.func @f(%A: memref<16xf64>) {
          affine.for %ii = 0 to TILES {
            affine.for %j = 0 to 4 {
              %a = affine.load %A[%ii * 4 + %j] : memref<16xf64>
            }
          }
          return
        }"""
    good = parse(text.replace("TILES", "4"))
    inner = func_of(good).body.ops[0].body.ops[0]
    model = extract(inner)                 # %ii is a parameter with 0 <= %ii < 4 as context
    assert str(model.context()) == "[p0] -> {  : 0 <= p0 <= 3 }"
    check_bounds(model)
    check_bounds(good)
    bad = parse(text.replace("TILES", "5"))
    inner = func_of(bad).body.ops[0].body.ops[0]
    assert bounds_error(extract(inner)) == (
        "b.mlir:5:12: error: 'affine.load' op out-of-bounds access to memref<16xf64> (%arg0) in "
        "dimension 0: index 16 at iteration (%arg2 = 0) for some values of the symbols "
        "(%arg1 = 4)")


def test_names_restart_in_each_function():
    module = parse("""
        func.func @g(%X: memref<4xf64>) {
          affine.for %i = 0 to 4 {
            %a = affine.load %X[%i] : memref<4xf64>
          }
          return
        }
        func.func @f(%A: memref<4xf64>, %B: memref<4xf64>) {
          affine.for %i = 0 to 5 {
            %a = affine.load %B[%i] : memref<4xf64>
          }
          return
        }""")
    assert bounds_error(module) == (
        "b.mlir:10:10: error: 'affine.load' op out-of-bounds access to memref<4xf64> (%arg1) in "
        "dimension 0: index 4 at iteration (%arg2 = 4)")


# ---------------------------------------------------------------------------------------------
# the check is an option (--memref-bound-check), as upstream; packing and BLIS mode run it on
# the nests they transform

import numpy as np  # noqa: E402

from polyopt.cli import main as cli_main  # noqa: E402
from upstream_mlir import mlir_opt  # noqa: E402

# the off-by-one of test_off_by_one_is_refused, and a loop to %n that is in bounds for n <= 4
OOB = """\
func.func @f(%A: memref<4x5xf64>, %B: memref<4x5xf64>, %n: index) {
  affine.for %i = 0 to 4 {
    %v = affine.load %B[%i, %i + 2] : memref<4x5xf64>
    affine.store %v, %A[%i, 0] : memref<4x5xf64>
  }
  return
}
"""
OOB_MESSAGE = ("'affine.load' op out-of-bounds access to memref<4x5xf64> (%arg1) in dimension 1: "
               "index 5 at iteration (%arg3 = 3)")

MAYBE = """\
func.func @g(%A: memref<4xf64>, %n: index) {
  %one = arith.constant 1.0 : f64
  affine.for %i = 0 to %n {
    affine.store %one, %A[%i] : memref<4xf64>
  }
  return
}
"""
MAYBE_MESSAGE = ("'affine.store' op out-of-bounds access to memref<4xf64> (%arg0) in dimension "
                 "0: index 4 at iteration (%arg2 = 4) for some values of the symbols "
                 "(%arg1 = 5)")


def test_plain_opt_prints_what_it_parsed_as_mlir_opt_does(tmp_path, capsys):
    path = tmp_path / "oob.mlir"
    path.write_text(OOB)
    assert cli_main(["opt", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == mlir_opt(OOB)


@pytest.mark.parametrize("command", [["opt"], ["translate", "--emit", "llvm"],
                                     ["run", "-e", "f"]])
def test_memref_bound_check_option_of_each_command(tmp_path, capsys, command):
    path = tmp_path / "oob.mlir"
    path.write_text(OOB)
    assert cli_main([*command, "--memref-bound-check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == f"{path}:3:10: error: {OOB_MESSAGE}"
    assert "Traceback" not in err


def test_compile_option_and_its_absence():
    with pytest.raises(VerifyError) as err:
        polyopt.compile(OOB, filename="oob.mlir", memref_bound_check=True)
    assert str(err.value) == f"oob.mlir:3:10: error: {OOB_MESSAGE}"
    # a store that is out of bounds only for %n > 4: refused on request, run as written
    # otherwise (with an %n for which it is in bounds)
    with pytest.raises(VerifyError) as err:
        polyopt.compile(MAYBE, filename="g.mlir", memref_bound_check=True)
    assert str(err.value) == f"g.mlir:4:5: error: {MAYBE_MESSAGE}"
    a = np.zeros(4)
    polyopt.compile(MAYBE)["g"](a, 3)
    np.testing.assert_array_equal(a, [1, 1, 1, 0])
    # with passes too: the option runs first, on the program as written
    with pytest.raises(VerifyError, match="out-of-bounds access"):
        polyopt.compile(MAYBE, hopt=True, copy=True, memref_bound_check=True)


def test_option_alone_needs_no_hopt(capsys):
    assert polyopt.PipelineOptions(memref_bound_check=True).hopt is False
    with pytest.raises(ValueError, match="--hopt-copy needs --hopt"):
        polyopt.PipelineOptions(copy=True, memref_bound_check=True)


COPY_NEST = """\
func.func @f(%A: memref<64xf64>, %n: index) {
  affine.for %i = 0 to min affine_map<()[s0] -> (s0, UB)>()[%n] {
    %v = affine.load %A[%i] : memref<64xf64>
    %w = arith.addf %v, %v : f64
    affine.store %w, %A[%i] : memref<64xf64>
  }
  return
}
"""


def test_packing_refuses_a_nest_that_may_leave_the_memref():
    """generate_copy copies the region's bounding box: [0, 100) for i < min(n, 100), beyond
    A's 64 elements; it is refused with the bound check's message, before any change."""
    from polyopt.memref_layout.data_copy import generate_copy
    module = parse(COPY_NEST.replace("UB", "100"), "copy.mlir")
    func = func_of(module)
    before = str(module)
    with pytest.raises(VerifyError) as err:
        generate_copy(func.body.ops[0], func.body.args[0], depth=0)
    assert str(err.value) == (
        "copy.mlir:3:10: error: 'affine.load' op out-of-bounds access to memref<64xf64> (%arg0) "
        "in dimension 0: index 64 at iteration (%arg2 = 64) for some values of the symbols "
        "(%arg1 = 65)")
    assert str(module) == before
    # in bounds for every %n: copied
    module = parse(COPY_NEST.replace("UB", "64"), "copy.mlir")
    func = func_of(module)
    info = generate_copy(func.body.ops[0], func.body.args[0], depth=0)
    assert str(info.buffer_type) == "memref<64xf64>"


def _widen_expansion(monkeypatch):
    """Make the matmul expansion one column too wide (j < N + 1): a defect the passes that
    rely on in-bounds accesses must catch rather than turn into a wrong answer."""
    from polyopt.affine.affine_expr import AffineMap, constant
    from polyopt.schedules import expand
    real = expand.expand_matmul

    def widened(op):
        loops = real(op)
        j = loops[1]
        bound = j.upper_map.results[0].value + 1
        j.set_upper_bound(AffineMap.get(0, 0, (constant(bound),)), [])
        return loops
    monkeypatch.setattr(expand, "expand_matmul", widened)


MATMUL = """\
func.func @matmul(%A: memref<9x7xf64>, %B: memref<7x11xf64>, %C: memref<9x11xf64>) {
  hop.matmul %A, %B, %C : (memref<9x7xf64>, memref<7x11xf64>, memref<9x11xf64>)
  return
}
"""


@pytest.mark.parametrize("switches, memref, operand, iteration", [
    # packing: the tiled nest's B panel
    (dict(copy=True), "memref<7x11xf64>", "%arg1",
     "(%arg3 = 1, %arg4 = 0, %arg5 = 0, %arg6 = 11, %arg7 = 0)"),
    # BLIS mode: the kernel would write C's tiles
    (dict(blis=True), "memref<9x11xf64>", "%arg2", "(%arg3 = 0, %arg4 = 11, %arg5 = 0)"),
])
def test_packing_and_blis_refuse_out_of_bounds_nests(monkeypatch, switches, memref, operand,
                                                     iteration):
    _widen_expansion(monkeypatch)
    with pytest.raises(VerifyError) as err:
        polyopt.compile(MATMUL, filename="mm.mlir", hopt=True, threads=1, **switches)
    assert str(err.value) == (f"mm.mlir:2:3: error: 'affine.load' op out-of-bounds access to "
                              f"{memref} ({operand}) in dimension 1: index 11 at iteration "
                              f"{iteration}")


_INDEX_OPS = """
    func.func @f(%A: memref<10x10xf32>, %B: memref<100xf32>) {{
      %n = arith.constant 10 : index
      affine.for %x = 0 to 100 {{
        %q:2 = affine.delinearize_index %x into (10, 10) : index, index
        %v = affine.load %A[{a}, %x floordiv 10] : memref<10x10xf32>
        affine.store %v, %B[%x] : memref<100xf32>
      }}
      affine.for %i = 0 to 10 {{
        affine.for %j = 0 to 10 {{
          %l = affine.linearize_index [%j, %i] by (%n, {inner}) : index
          %w = affine.load %B[%l] : memref<100xf32>
          affine.store %w, %A[%i, %j] : memref<10x10xf32>
        }}
      }}
      return
    }}
"""


def test_index_ops_are_their_floordiv_mod_and_sum():
    """``affine.delinearize_index`` results are ``x floordiv 10`` and ``x mod 10``, the
    ``affine.linearize_index`` result ``j * 10 + i`` (constant basis entries, as MLIR lowers
    them): in bounds here, where they had been unknown symbols that might be 10."""
    check_bounds(func_of(parse(_INDEX_OPS.format(a="%q#0", inner=10))))
    check_bounds(func_of(parse(_INDEX_OPS.format(a="%q#1", inner="%n"))))


@pytest.mark.parametrize("a,inner,where", [
    ("%q#1 + 1", 10, "index 10 at iteration (%arg2 = 9)"),
    ("%q#0", 11, "memref<100xf32> (%arg1) in dimension 0: index 100 at iteration "
               "(%arg2 = 1, %arg3 = 9)"),   # l = 9 * 11 + 1
])
def test_index_ops_out_of_bounds(a, inner, where):
    msg = bounds_error(func_of(parse(_INDEX_OPS.format(a=a, inner=inner))))
    assert "out-of-bounds access" in msg and where in msg, msg
