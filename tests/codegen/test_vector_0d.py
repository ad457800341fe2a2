"""0-D vectors (``vector<f32>``) end to end, as mlir-opt-22 and mlir-runner-22 take them: a 0-D
vector is a vector of one element in LLVM; broadcast to and from it, extract/insert without a
position, shape_cast, load/store, transfers (masked by a ``vector<1xi1>``), reductions, masks,
arith/math on it and printing, against mlir-runner-22 or (where upstream does not lower the
op) the expected values."""

import pytest

import polyopt
from run_helpers import polyopt_run
from vector_programs import assert_runs_as_upstream

_PROLOGUE = """func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 2.5 : f32
  %A = memref.alloc() : memref<4xf32>
  %init = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  vector.store %init, %A[%c0] : memref<4xf32>, vector<4xf32>
  %Z = memref.alloc() : memref<f32>
  memref.store %f, %Z[] : memref<f32>
  %z = arith.constant dense<7.0> : vector<f32>
"""


def _parse(text: str):
    """``polyopt.parse(text)``: any error fails the test."""
    return polyopt.parse(text)


def _program(*lines: str) -> str:
    text = _PROLOGUE + "".join(f"  {ln}\n" for ln in lines) + "  return\n}\n"
    _parse(text)
    return text


CASES = {
    "constant": (["vector.print %z : vector<f32>"], "( 7 )"),
    "broadcast of a scalar": (["%b = vector.broadcast %f : f32 to vector<f32>",
                               "vector.print %b : vector<f32>"], "( 2.5 )"),
    "broadcast to 1-D": (["%b = vector.broadcast %z : vector<f32> to vector<3xf32>",
                          "vector.print %b : vector<3xf32>"], "( 7, 7, 7 )"),
    "broadcast to 2-D": (["%b = vector.broadcast %z : vector<f32> to vector<2x3xf32>",
                          "vector.print %b : vector<2x3xf32>"], "( ( 7, 7, 7 ), ( 7, 7, 7 ) )"),
    "extract": (["%e = vector.extract %z[] : f32 from vector<f32>", "vector.print %e : f32"],
                "7"),
    "insert": (["%e = vector.insert %f, %z[] : f32 into vector<f32>",
                "vector.print %e : vector<f32>"], "( 2.5 )"),
    "broadcast and transpose to itself": (["%b = vector.broadcast %z : vector<f32> to vector<f32>",
                                           "%t = vector.transpose %b, [] : vector<f32> to "
                                           "vector<f32>",
                                           "vector.print %t : vector<f32>"], "( 7 )"),
    "shape_cast to 1-D": (["%s = vector.shape_cast %z : vector<f32> to vector<1xf32>",
                           "vector.print %s : vector<1xf32>"], "( 7 )"),
    "shape_cast from 1-D": (["%o = arith.constant dense<3.0> : vector<1xf32>",
                             "%s = vector.shape_cast %o : vector<1xf32> to vector<f32>",
                             "vector.print %s : vector<f32>"], "( 3 )"),
    "load": (["%s = vector.load %A[%c1] : memref<4xf32>, vector<f32>",
              "vector.print %s : vector<f32>"], "( 2 )"),
    "store": (["vector.store %z, %A[%c1] : memref<4xf32>, vector<f32>",
               "%l = vector.load %A[%c0] : memref<4xf32>, vector<4xf32>",
               "vector.print %l : vector<4xf32>"], "( 1, 7, 3, 4 )"),
    "transfer_read": (["%p = arith.constant 0.0 : f32",
                       "%r = vector.transfer_read %A[%c1], %p : memref<4xf32>, vector<f32>",
                       "vector.print %r : vector<f32>"], "( 2 )"),
    "transfer_read of a 0-D memref": (["%p = arith.constant 0.0 : f32",
                                       "%r = vector.transfer_read %Z[], %p : memref<f32>, "
                                       "vector<f32>",
                                       "vector.print %r : vector<f32>"], "( 2.5 )"),
    "transfer_write": (["vector.transfer_write %z, %A[%c1] : vector<f32>, memref<4xf32>",
                        "%l = vector.load %A[%c0] : memref<4xf32>, vector<4xf32>",
                        "vector.print %l : vector<4xf32>"], "( 1, 7, 3, 4 )"),
    "transfer_write to a 0-D memref": (["vector.transfer_write %z, %Z[] : vector<f32>, "
                                        "memref<f32>",
                                        "%l = memref.load %Z[] : memref<f32>",
                                        "vector.print %l : f32"], "7"),
    "arith, math and fma": (["%s = arith.addf %z, %z : vector<f32>",
                             "%q = math.sqrt %s : vector<f32>",
                             "%m = vector.fma %z, %z, %s : vector<f32>",
                             "vector.print %q : vector<f32>", "vector.print %m : vector<f32>"],
                            "( 3.74166 )\n( 63 )"),
    "cmpf and select": (["%c = arith.cmpf olt, %z, %z : vector<f32>",
                         "%t = arith.constant dense<true> : vector<i1>",
                         "%s = arith.select %t, %z, %z : vector<i1>, vector<f32>",
                         "vector.print %c : vector<i1>", "vector.print %s : vector<f32>"],
                        "( 0 )\n( 7 )"),
    "casts": (["%i = arith.constant dense<-3> : vector<i32>",
               "%s = arith.sitofp %i : vector<i32> to vector<f32>",
               "vector.print %s : vector<f32>"], "( -3 )"),
    "reductions": (["%r1 = vector.reduction <add>, %z : vector<f32> into f32",
                    "%acc = arith.constant 1.5 : f32",
                    "%r2 = vector.reduction <mul>, %z, %acc : vector<f32> into f32",
                    "%r3 = vector.reduction <maximumf>, %z, %acc : vector<f32> into f32",
                    "vector.print %r1 : f32", "vector.print %r2 : f32",
                    "vector.print %r3 : f32"], "7\n10.5\n7"),
    "masks": (["%cm = arith.constant -3 : index",
               "%a = vector.create_mask %c0 : vector<i1>",
               "%b = vector.create_mask %c1 : vector<i1>",
               "%c = vector.create_mask %cm : vector<i1>",
               "%d = vector.constant_mask [0] : vector<i1>",
               "%e = vector.constant_mask [1] : vector<i1>",
               "vector.print %a : vector<i1>", "vector.print %b : vector<i1>",
               "vector.print %c : vector<i1>", "vector.print %d : vector<i1>",
               "vector.print %e : vector<i1>"], "( 0 )\n( 1 )\n( 0 )\n( 0 )\n( 1 )"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_0d_vectors_as_upstream(tmp_path, capfd, case):
    lines, want = CASES[case]
    out = assert_runs_as_upstream(tmp_path, capfd, _program(*lines))
    assert out == want + "\n"


def test_masked_0d_transfers(tmp_path, capfd):
    # upstream does not lower masked 0-D transfers: the expected values
    text = _program("%off = vector.create_mask %c0 : vector<1xi1>",
                    "%on = vector.create_mask %c1 : vector<1xi1>",
                    "%p = arith.constant -1.0 : f32",
                    "%r1 = vector.transfer_read %A[%c1], %p, %off : memref<4xf32>, vector<f32>",
                    "%r2 = vector.transfer_read %A[%c1], %p, %on : memref<4xf32>, vector<f32>",
                    "vector.transfer_write %z, %A[%c0], %off : vector<f32>, memref<4xf32>",
                    "vector.transfer_write %z, %A[%c1], %on : vector<f32>, memref<4xf32>",
                    "%l = vector.load %A[%c0] : memref<4xf32>, vector<4xf32>",
                    "vector.print %r1 : vector<f32>", "vector.print %r2 : vector<f32>",
                    "vector.print %l : vector<4xf32>")
    assert polyopt_run(tmp_path, capfd, text) == "( -1 )\n( 2 )\n( 1, 7, 3, 4 )\n"


def test_a_broadcast_transfer_takes_a_one_element_mask(tmp_path, capfd):
    # no memref dim is transferred: mlir-opt-22 infers the mask type vector<1xi1> (its 0-D
    # mask made 1-D), whose one bit enables every lane; upstream does not lower it
    from upstream_mlir import mlir_opt
    text = """func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %A = memref.alloc() : memref<4xf32>
  %init = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  vector.store %init, %A[%c0] : memref<4xf32>, vector<4xf32>
  %p = arith.constant -1.0 : f32
  %on = vector.create_mask %c1 : vector<1xi1>
  %off = vector.create_mask %c0 : vector<1xi1>
  %r1 = vector.transfer_read %A[%c1], %p, %on {in_bounds = [true], permutation_map = affine_map<(d0) -> (0)>} : memref<4xf32>, vector<3xf32>
  %r0 = vector.transfer_read %A[%c1], %p, %off {in_bounds = [true], permutation_map = affine_map<(d0) -> (0)>} : memref<4xf32>, vector<3xf32>
  vector.print %r1 : vector<3xf32>
  vector.print %r0 : vector<3xf32>
  return
}
"""
    assert str(polyopt.parse(text)) == mlir_opt(text)
    assert polyopt_run(tmp_path, capfd, text) == "( 2, 2, 2 )\n( -1, -1, -1 )\n"


@pytest.mark.parametrize("op", ["vector.create_mask %c1, %c1 : vector<i1>",
                                "vector.create_mask : vector<i1>",
                                "vector.constant_mask [1, 1] : vector<i1>",
                                "vector.constant_mask [2] : vector<i1>"])
def test_0d_masks_refused_as_mlir_opt_refuses_them(op):
    from polyopt.affine.diagnostics import VerifyError
    from upstream_mlir import mlir_opt_error
    text = f"func.func @f(%c1: index) -> vector<i1> {{\n  %m = {op}\n  return %m : vector<i1>\n}}\n"
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        _parse(text)
    assert str(e.value).splitlines()[0].endswith(want)


@pytest.mark.parametrize("op", ["%e = vector.extract %v[1] : vector<f32> from vector<3xf32>",
                                "%e = vector.insert %z, %v[2] : vector<f32> into vector<3xf32>"])
def test_a_0d_vector_where_a_scalar_belongs_is_refused_as_mlir_opt_does(op):
    from polyopt.affine.diagnostics import VerifyError
    from upstream_mlir import mlir_opt_error
    text = ("func.func @f(%v: vector<3xf32>, %z: vector<f32>) {\n"
            f"  {op}\n  return\n}}\n")
    want = mlir_opt_error(text)
    with pytest.raises(VerifyError) as e:
        _parse(text)
    assert str(e.value).splitlines()[0].endswith(want)
