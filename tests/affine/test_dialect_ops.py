"""memref, vector, math, linalg and hop ops: syntax, MLIR interop, 2020 forms, verification."""

from __future__ import annotations

import textwrap

import pytest

import polyopt.affine.dialects  # noqa: F401  (registers the ops)
from polyopt.affine.affine_expr import AffineMap, dim
from polyopt.affine.diagnostics import ParseError, PolyoptError, VerifyError
from polyopt.affine.dialects.builtin import ModuleOp
from polyopt.affine.dialects.func import FuncOp, ReturnOp
from polyopt.affine.dialects.hop import HopConv2DOp, HopMatmulOp
from polyopt.affine.dialects.linalg import FillOp, LinalgMatmulOp
from polyopt.affine.dialects.math import MathFMAOp
from polyopt.affine.dialects.memref import (AllocaOp, AllocOp, DeallocOp, MemRefCastOp,
                                            MemRefLoadOp, MemRefStoreOp)
from polyopt.affine.dialects.vector import (BroadcastOp, PrintOp, ReductionOp, VectorFMAOp,
                                            VectorLoadOp, VectorStoreOp)
from polyopt.affine.parser import parse
from polyopt.affine.printer import print_module
from polyopt.affine.types import FunctionType, MemRefType, VectorType, f32, f64, index
from upstream_mlir import mlir_opt


def roundtrip(text: str) -> str:
    """Parse+verify, print; check that printing is a fixed point; return the printed text."""
    printed = print_module(parse(text, "t.mlir"))
    assert print_module(parse(printed, "printed.mlir")) == printed
    return printed


def error_of(text: str) -> str:
    with pytest.raises(PolyoptError) as info:
        parse(text, "t.mlir")
    return info.value.render()


def func(body: str, args: str = "%A: memref<4x4xf64>, %x: f64, %i: index, %v: vector<4xf64>") -> str:
    return f"func.func @f({args}) {{\n{textwrap.dedent(body).strip()}\n  return\n}}\n"


def only_op(module, cls):
    ops = [op for op in module.walk() if isinstance(op, cls)]
    assert len(ops) == 1, ops
    return ops[0]


# ---------------------------------------------------------------------------------------------
# One module with every op, in MLIR 22 syntax (hop ops in generic form, as mlir-opt prints them).

ALL_OPS = """\
#map = affine_map<(d0, d1) -> (d1, d0)>
#map1 = affine_map<(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)>
module {
  func.func @f(%arg0: index, %arg1: memref<4x4xf64>, %arg2: f64, %arg3: vector<4xf64>, %arg4: memref<16x16xf32>, %arg5: memref<1x6x6x3xf64>, %arg6: memref<3x3x3x8xf64>, %arg7: memref<1x4x4x8xf64>, %arg8: memref<4x4xvector<4xf64>>) {
    %alloc = memref.alloc(%arg0) {alignment = 64 : i64} : memref<?x4xf64, #map>
    %alloc_0 = memref.alloc() : memref<8xf64>
    %alloca = memref.alloca() {alignment = 32 : i64} : memref<8xf64>
    %0 = memref.load %arg1[%arg0, %arg0] : memref<4x4xf64>
    memref.store %0, %arg1[%arg0, %arg0] : memref<4x4xf64>
    memref.store %0, %arg1[%arg0, %arg0] {nontemporal = true} : memref<4x4xf64>
    %cast = memref.cast %arg1 : memref<4x4xf64> to memref<*xf64>
    %cast_1 = memref.cast %arg1 : memref<4x4xf64> to memref<?x4xf64>
    %cast_2 = memref.cast %arg1 : memref<4x4xf64> to memref<4x4xf64, strided<[?, 1], offset: ?>>
    memref.dealloc %alloc_0 : memref<8xf64>
    memref.dealloc %alloc : memref<?x4xf64, #map>
    %1 = vector.broadcast %arg2 : f64 to vector<4xf64>
    %2 = vector.broadcast %1 : vector<4xf64> to vector<2x4xf64>
    %3 = vector.fma %arg3, %arg3, %1 : vector<4xf64>
    %4 = vector.reduction <add>, %3 : vector<4xf64> into f64
    %5 = vector.reduction <maximumf>, %3, %arg2 fastmath<fast> : vector<4xf64> into f64
    vector.print %3 : vector<4xf64>
    vector.print %arg2 : f64 punctuation <comma>
    vector.print str "done"
    %6 = vector.load %arg4[%arg0, %arg0] : memref<16x16xf32>, vector<8xf32>
    vector.store %6, %arg4[%arg0, %arg0] : memref<16x16xf32>, vector<8xf32>
    %7 = memref.load %arg8[%arg0, %arg0] : memref<4x4xvector<4xf64>>
    %8 = math.fma %arg2, %arg2, %arg2 : f64
    %9 = math.fma %3, %3, %7 fastmath<contract> : vector<4xf64>
    %cst = arith.constant 1.000000e+00 : f64
    linalg.fill ins(%cst : f64) outs(%arg1 : memref<4x4xf64>)
    linalg.matmul ins(%arg1, %arg1 : memref<4x4xf64>, memref<4x4xf64>) outs(%arg1 : memref<4x4xf64>)
    "hop.matmul"(%arg1, %arg1, %arg1) {K_C = 480 : i32, K_U = 4 : i32, M_C = 180 : i32, M_R = 3 : i32, N_R = 16 : i32} : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>) -> ()
    "hop.matmul"(%arg1, %arg1, %arg1) {schedule = #map1} : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>) -> ()
    "hop.conv2d"(%arg5, %arg6, %arg7) {dilations = [1, 1], strides = [1, 1]} : (memref<1x6x6x3xf64>, memref<3x3x3x8xf64>, memref<1x4x4x8xf64>) -> ()
    return
  }
}
"""


def test_all_ops_print_exactly_as_mlir_opt():
    ours = roundtrip(ALL_OPS)
    assert ours == ALL_OPS  # already in canonical form
    assert mlir_opt(ALL_OPS, "--allow-unregistered-dialect") == ours


def test_all_ops_parse_from_mlir_opt_generic_form():
    generic = mlir_opt(ALL_OPS, "--allow-unregistered-dialect", "-mlir-print-op-generic")
    # take the function body in generic form (linalg ops with their payload regions, memref.alloc
    # with operandSegmentSizes, vector.reduction with #vector.kind, ...) into a custom-form func
    lines = generic.splitlines()
    aliases = [ln for ln in lines if ln.startswith("#")]
    start = next(k for k, ln in enumerate(lines) if ln.strip().startswith("^bb0(%arg0"))
    end = next(k for k, ln in enumerate(lines) if '"func.return"' in ln)
    header = ALL_OPS.splitlines()[2:4]  # module { func.func @f(...) {
    text = "\n".join(aliases + header + lines[start + 1:end] + ["    return", "  }", "}"]) + "\n"
    assert '"linalg.matmul"' in text and "operandSegmentSizes" in text and "#vector.kind" in text
    assert roundtrip(text) == ALL_OPS


# ---------------------------------------------------------------------------------------------
# Each op alone: custom form round trip, class and accessors.

def test_alloc_accessors_and_roundtrip():
    text = func("""
      %0 = memref.alloc(%i, %i) {alignment = 64 : i64} : memref<?x4x?xf64>
      %1 = memref.alloca() : memref<1xvector<4xf64>>
    """)
    m = parse(text)
    alloc = only_op(m, AllocOp)
    assert [v.type for v in alloc.dynamic_sizes] == [index, index]
    assert alloc.symbol_operands == ()
    assert alloc.alignment == 64
    assert alloc.memref_type == MemRefType((None, 4, None), f64)
    alloca = only_op(m, AllocaOp)
    assert alloca.alignment is None and alloca.dynamic_sizes == ()
    out = roundtrip(text)
    assert "%alloc = memref.alloc(%arg2, %arg2) {alignment = 64 : i64} : memref<?x4x?xf64>" in out
    assert "%alloca = memref.alloca() : memref<1xvector<4xf64>>" in out


def test_load_store_cast_dealloc_accessors():
    m = parse(func("""
      %0 = memref.load %A[%i, %i] : memref<4x4xf64>
      memref.store %0, %A[%i, %i] : memref<4x4xf64>
      %1 = memref.cast %A : memref<4x4xf64> to memref<*xf64>
      memref.dealloc %A : memref<4x4xf64>
    """))
    fn = m.functions[0]
    A, _, i, _ = fn.args
    load, store, cast, dealloc = fn.body.ops[:4]
    assert isinstance(load, MemRefLoadOp) and load.memref is A and load.indices == (i, i)
    assert isinstance(store, MemRefStoreOp) and store.value is load.result
    assert store.memref is A and store.indices == (i, i)
    assert isinstance(cast, MemRefCastOp) and cast.source is A
    assert isinstance(dealloc, DeallocOp) and dealloc.memref is A
    assert "%cast = memref.cast %arg0" in roundtrip(print_module(m))


@pytest.mark.parametrize("src,dst,ok", [
    ("memref<4x4xf64>", "memref<*xf64>", True),
    ("memref<*xf64>", "memref<4x4xf64>", True),
    ("memref<4x4xf64>", "memref<?x?xf64>", True),
    ("memref<?x4xf64>", "memref<4x4xf64>", True),
    ("memref<4x4xf64>", "memref<4x4xf64, strided<[4, 1]>>", True),
    ("memref<4x4xf64>", "memref<4x4xf64, strided<[?, 1], offset: ?>>", True),
    ("memref<4x4xf64>", "memref<4x4xf64, affine_map<(d0, d1) -> (d0 * 4 + d1)>>", True),
    ("memref<4x4xf64>", "memref<4x4xf64, strided<[5, 1]>>", False),
    ("memref<4x4xf64>", "memref<4x5xf64>", False),
    ("memref<4x4xf64>", "memref<*xf32>", False),
    ("memref<4x4xf64>", "memref<16xf64>", False),
    ("memref<4x4xf64>", "memref<4x4xf64, affine_map<(d0, d1) -> (d1, d0)>>", False),
])
def test_cast_compatibility_matches_mlir(src, dst, ok):
    text = func(f"%0 = memref.cast %B : {src} to {dst}", args=f"%B: {src}")
    if ok:
        assert mlir_opt(roundtrip(text), "--allow-unregistered-dialect") == roundtrip(text)
    else:
        assert (f"t.mlir:2:6: error: 'memref.cast' op operand type '{src}' and result type "
                f"'{dst}' are cast incompatible") in error_of(text)


def test_vector_ops_accessors():
    m = parse(func("""
      %0 = vector.broadcast %x : f64 to vector<4xf64>
      %1 = vector.fma %v, %v, %0 : vector<4xf64>
      %2 = vector.reduction <mul>, %1, %x : vector<4xf64> into f64
      vector.print %2 : f64
      %3 = vector.load %A[%i, %i] : memref<4x4xf64>, vector<4xf64>
      vector.store %3, %A[%i, %i] : memref<4x4xf64>, vector<4xf64>
    """))
    fn = m.functions[0]
    A, x, i, v = fn.args
    bc, fma, red, pr, ld, st = fn.body.ops[:6]
    assert isinstance(bc, BroadcastOp) and bc.source is x
    assert bc.result.type == VectorType((4,), f64)
    assert isinstance(fma, VectorFMAOp) and (fma.lhs, fma.rhs, fma.acc) == (v, v, bc.result)
    assert isinstance(red, ReductionOp) and red.kind == "mul" and red.vector is fma.result
    assert red.acc is x
    assert isinstance(pr, PrintOp) and pr.source is red.result and pr.punctuation == "newline"
    assert isinstance(ld, VectorLoadOp) and ld.memref is A and ld.indices == (i, i)
    assert isinstance(st, VectorStoreOp) and st.value is ld.result and st.memref is A
    roundtrip(print_module(m))


def test_math_fma():
    m = parse(func("%0 = math.fma %x, %x, %x fastmath<fast> : f64"))
    op = only_op(m, MathFMAOp)
    assert op.a is op.b is op.c and op.result.type == f64
    assert "math.fma %arg1, %arg1, %arg1 fastmath<fast> : f64" in roundtrip(print_module(m))


def test_linalg_accessors():
    m = parse(func("""
      linalg.fill ins(%x : f64) outs(%A : memref<4x4xf64>)
      linalg.matmul ins(%A, %A : memref<4x4xf64>, memref<4x4xf64>) outs(%A : memref<4x4xf64>)
    """))
    fill, mm = only_op(m, FillOp), only_op(m, LinalgMatmulOp)
    A, x = m.functions[0].args[:2]
    assert fill.value is x and fill.output is A
    assert mm.a is A and mm.b is A and mm.c is A


def test_hop_matmul_accessors_custom_and_generic():
    custom = func("""
      hop.matmul %A, %B, %C {M_C = 180 : i32, K_C = 480 : i32, M_R = 3, N_R = 16 : i32, K_U = 4 : i32, alpha = 2.0 : f64, beta = 1} : (memref<6x8xf64>, memref<8x5xf64>, memref<6x5xf64>)
    """, args="%A: memref<6x8xf64>, %B: memref<8x5xf64>, %C: memref<6x5xf64>")
    op = only_op(parse(custom), HopMatmulOp)
    assert op.tile_params == {"M_C": 180, "K_C": 480, "M_R": 3, "N_R": 16, "K_U": 4}
    assert op.schedule is None and op.alpha == 2.0 and op.beta == 1.0
    assert op.shape == (6, 5, 8)
    printed = roundtrip(custom)
    assert ('"hop.matmul"(%arg0, %arg1, %arg2) {K_C = 480 : i32, K_U = 4 : i32, M_C = 180 : i32, '
            'M_R = 3 : i32, N_R = 16 : i32, alpha = 2.000000e+00 : f64, beta = 1 : i64} : '
            '(memref<6x8xf64>, memref<8x5xf64>, memref<6x5xf64>) -> ()') in printed
    # the generic form parses into the same op class
    again = only_op(parse(printed), HopMatmulOp)
    assert again.tile_params == op.tile_params and again.a.type == op.a.type
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


def test_hop_matmul_schedule_in_2020_syntax():
    text = func("""
      hop.matmul %A, %A, %A {
      schedule = (d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1 floordiv 8, d0 floordiv 4, d2, d1, d0)

      } : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>)
    """)
    op = only_op(parse(text), HopMatmulOp)
    d0, d1, d2 = dim(0), dim(1), dim(2)
    assert op.schedule == AffineMap.get(3, 0, (d2.floordiv(256), d0.floordiv(64), d1.floordiv(8),
                                               d0.floordiv(4), d2, d1, d0))
    assert op.tile_params == {}
    printed = roundtrip(text)
    assert printed.startswith("#map = affine_map<(d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, "
                              "d1 floordiv 8, d0 floordiv 4, d2, d1, d0)>\n")
    assert '{schedule = #map} : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>) -> ()' in printed
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


def test_hop_conv2d_accessors():
    text = func("""
      hop.conv2d %I, %K, %O {strides = [2, 1], dilations = [1, 2]} : (memref<1x9x9x3xf32>, memref<3x3x3x8xf32>, memref<1x4x5x8xf32>)
    """, args="%I: memref<1x9x9x3xf32>, %K: memref<3x3x3x8xf32>, %O: memref<1x4x5x8xf32>")
    op = only_op(parse(text), HopConv2DOp)
    I, K, O = parse(text).functions[0].args
    assert (op.input.type, op.filter.type, op.output.type) == (I.type, K.type, O.type)
    assert op.strides == (2, 1) and op.dilations == (1, 2)
    printed = roundtrip(text)
    assert ('"hop.conv2d"(%arg0, %arg1, %arg2) {dilations = [1, 2], strides = [2, 1]} : '
            '(memref<1x9x9x3xf32>, memref<3x3x3x8xf32>, memref<1x4x5x8xf32>) -> ()') in printed
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


# ---------------------------------------------------------------------------------------------
# The 2020 syntax of the paper's listings.

PAPER_2020 = """\
func @main() {
  %A = alloc() : memref<2048x2048xf64>
  %cf1 = constant 1.00000e+00 : f64
  linalg.fill(%A, %cf1) : memref<2048x2048xf64>, f64
  %9 = alloc() {alignment = 32 : i32} : memref<29x512x6xf64>
  %4 = alloca() : memref<1xvector<4xf64>>
  %c0 = constant 0 : index
  %28 = load %A[%c0, %c0] : memref<2048x2048xf64>
  %29 = splat %28 : vector<4xf64>
  store %29, %4[%c0] : memref<1xvector<4xf64>>
  %30 = memref_cast %A : memref<2048x2048xf64> to memref<*xf64>
  hop.matmul %A, %A, %A {
  M_C = 180 : i32, K_C = 480 : i32, M_R = 3, N_R = 16 : i32, K_U = 4 : i32

  } : (memref<2048x2048xf64>, memref<2048x2048xf64>, memref<2048x2048xf64>)
  dealloc %9 : memref<29x512x6xf64>
  dealloc %A : memref<2048x2048xf64>
  return
}
"""

PAPER_MODERN = """\
module {
  func.func @main() {
    %alloc = memref.alloc() : memref<2048x2048xf64>
    %cst = arith.constant 1.000000e+00 : f64
    linalg.fill ins(%cst : f64) outs(%alloc : memref<2048x2048xf64>)
    %alloc_0 = memref.alloc() {alignment = 32 : i64} : memref<29x512x6xf64>
    %alloca = memref.alloca() : memref<1xvector<4xf64>>
    %c0 = arith.constant 0 : index
    %0 = memref.load %alloc[%c0, %c0] : memref<2048x2048xf64>
    %1 = vector.broadcast %0 : f64 to vector<4xf64>
    memref.store %1, %alloca[%c0] : memref<1xvector<4xf64>>
    %cast = memref.cast %alloc : memref<2048x2048xf64> to memref<*xf64>
    "hop.matmul"(%alloc, %alloc, %alloc) {K_C = 480 : i32, K_U = 4 : i32, M_C = 180 : i32, M_R = 3 : i32, N_R = 16 : i32} : (memref<2048x2048xf64>, memref<2048x2048xf64>, memref<2048x2048xf64>) -> ()
    memref.dealloc %alloc_0 : memref<29x512x6xf64>
    memref.dealloc %alloc : memref<2048x2048xf64>
    return
  }
}
"""


def test_2020_forms_print_as_modern_ops_that_mlir_opt_accepts():
    m = parse(PAPER_2020, "dgemm.mlir")
    fill = only_op(m, FillOp)
    assert fill.output.type == MemRefType((2048, 2048), f64) and fill.value.type == f64
    assert only_op(m, BroadcastOp).source.type == f64
    assert [op.alignment for op in m.walk() if isinstance(op, AllocOp)] == [None, 32]
    printed = print_module(m)
    assert printed == PAPER_MODERN
    assert roundtrip(printed) == printed
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


def test_splat_spellings_and_legacy_linalg_matmul():
    text = func("""
      %0 = splat %x : vector<4xf64>
      %1 = vector.splat %x : vector<4xf64>
      linalg.matmul(%A, %A, %A) : memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>
    """)
    printed = roundtrip(text)
    assert printed.count("vector.broadcast %arg1 : f64 to vector<4xf64>") == 2
    assert ("linalg.matmul ins(%arg0, %arg0 : memref<4x4xf64>, memref<4x4xf64>) "
            "outs(%arg0 : memref<4x4xf64>)") in printed
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


# ---------------------------------------------------------------------------------------------
# Builders.

def test_builders_make_valid_ops():
    A_t = MemRefType((8, 8), f32)
    fn = FuncOp.build("g", FunctionType((A_t, index, f32), ()))
    A, i, s = fn.args
    ops = []
    alloc = AllocOp.build(MemRefType((None, 8), f32), [i], alignment=64)
    load = MemRefLoadOp.build(A, [i, i])
    bc = BroadcastOp.build(load.result, VectorType((8,), f32))
    vl = VectorLoadOp.build(A, [i, i], VectorType((8,), f32))
    fma = VectorFMAOp.build(bc.result, vl.result, vl.result)
    red = ReductionOp.build("add", fma.result, acc=s)
    mfma = MathFMAOp.build(s, s, red.result, fastmath="contract")
    ops += [alloc, load, bc, vl, fma, red, mfma,
            VectorStoreOp.build(fma.result, A, [i, i]),
            MemRefStoreOp.build(mfma.result, A, [i, i]),
            PrintOp.build(red.result),
            FillOp.build(s, A),
            LinalgMatmulOp.build(A, A, A),
            HopMatmulOp.build(A, A, A, tile_params={"M_R": 4, "N_R": 8},
                              schedule=AffineMap.get(3, 0, (dim(2), dim(0), dim(1)))),
            MemRefCastOp.build(A, MemRefType((None, None), f32)),
            DeallocOp.build(alloc.result),
            AllocaOp.build(MemRefType((1,), f32)),
            ReturnOp(loc=None)]
    for op in ops:
        fn.body.append(op)
    module = ModuleOp.build()
    module.body.append(fn)
    printed = print_module(module)
    assert roundtrip(printed) == printed
    assert "%alloc = memref.alloc(%arg1) {alignment = 64 : i64} : memref<?x8xf32>" in printed
    assert "math.fma %arg2, %arg2, %4 fastmath<contract> : f32" in printed
    assert '"hop.matmul"(%arg0, %arg0, %arg0) {M_R = 4 : i32, N_R = 8 : i32, schedule = #map}' \
        in printed
    assert mlir_opt(printed, "--allow-unregistered-dialect") == printed


# ---------------------------------------------------------------------------------------------
# Errors: FILE:LINE:COL: error: message, the line and a caret.

def test_error_hop_matmul_mismatched_shapes():
    text = func("""
      hop.matmul %A, %B, %C : (memref<4x2048xf64>, memref<2049x8xf64>, memref<4x8xf64>)
    """, args="%A: memref<4x2048xf64>, %B: memref<2049x8xf64>, %C: memref<4x8xf64>")
    assert error_of(text) == (
        "t.mlir:2:1: error: 'hop.matmul' op operand #1 (B) has 2049 rows but A has 2048 columns\n"
        "hop.matmul %A, %B, %C : (memref<4x2048xf64>, memref<2049x8xf64>, memref<4x8xf64>)\n"
        "^")


def test_error_hop_matmul_output_shape():
    text = func("hop.matmul %A, %A, %C : (memref<4x4xf64>, memref<4x4xf64>, memref<4x5xf64>)",
                args="%A: memref<4x4xf64>, %C: memref<4x5xf64>")
    assert error_of(text).startswith(
        "t.mlir:2:1: error: 'hop.matmul' op operand #2 (C) has 5 columns but B has 4 columns\n")


def test_error_hop_matmul_m_r_zero():
    text = func("hop.matmul %A, %A, %A {M_C = 64 : i32, M_R = 0} : "
                "(memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>)")
    assert error_of(text).startswith("t.mlir:2:1: error: 'hop.matmul' op M_R must be positive, "
                                     "got 0\n")


@pytest.mark.parametrize("attrs,message", [
    ("{some_attr = 96}", "'hop.matmul' op unknown attribute 'some_attr'; known attributes are "
                         "M_C, K_C, N_C, M_R, N_R, K_U, register_form, l2_block, schedule, alpha, beta, "
                         "a_unsigned"),
    ("{K_U = 2.5}", "'hop.matmul' op K_U must be a positive integer, got 2.500000e+00 : f64"),
    ('{l2_block = "C"}', "'hop.matmul' op l2_block must be \"A\" or \"B\", got \"C\""),
    ('{register_form = "diag"}',
     "'hop.matmul' op register_form must be \"row\" or \"col\", got \"diag\""),
    ("{schedule = affine_map<(d0, d1) -> (d0)>}",
     "'hop.matmul' op schedule must be an affine map with 3 dims (d0, d1, d2) = (i, j, k) and no "
     "symbols, got (2 dims, 0 symbols) (d0, d1) -> (d0)"),
])
def test_error_hop_matmul_attributes(attrs, message):
    text = func(f"hop.matmul %A, %A, %A {attrs} : (memref<4x4xf64>, memref<4x4xf64>, memref<4x4xf64>)")
    assert error_of(text).startswith(f"t.mlir:2:1: error: {message}\n")


def test_error_hop_matmul_dynamic_and_mixed_types():
    # '?' operands are accepted (their sizes are checked at run time) when the static ones agree
    dyn = func("hop.matmul %D, %A, %D : (memref<?x4xf64>, memref<4x4xf64>, memref<?x4xf64>)",
               args="%A: memref<4x4xf64>, %D: memref<?x4xf64>")
    polyopt.parse(dyn)
    bad = func("hop.matmul %D, %B, %D : (memref<?x4xf64>, memref<5x4xf64>, memref<?x4xf64>)",
               args="%B: memref<5x4xf64>, %D: memref<?x4xf64>")
    assert "'hop.matmul' op operand #1 (B) has 5 rows but A has 4 columns" in error_of(bad)
    conv = func("hop.conv2d %I, %K, %O : (memref<1x?x32x3xf32>, memref<3x3x3x16xf32>, "
                "memref<1x30x30x16xf32>)",
                args="%I: memref<1x?x32x3xf32>, %K: memref<3x3x3x16xf32>, "
                     "%O: memref<1x30x30x16xf32>")
    assert "'hop.conv2d' op operand #0 (input) has a dynamic shape 'memref<1x?x32x3xf32>'; " \
           "dynamic shapes are not supported" in error_of(conv)
    mixed = func("hop.matmul %A, %S, %A : (memref<4x4xf64>, memref<4x4xf32>, memref<4x4xf64>)",
                 args="%A: memref<4x4xf64>, %S: memref<4x4xf32>")
    assert "operands must have one element type, f32 or f64, or the element types (A, B, C) " \
           "of a mixed contraction: (bf16, bf16, f32), (f16, f16, f32), (i8, i8, i32); got " \
           "(f64, f32, f64)" in error_of(mixed)


def test_error_hop_conv2d_wrong_output_size():
    text = func("""
      hop.conv2d %I, %K, %O {strides = [2, 2], dilations = [1, 1]} : (memref<1x32x32x3xf32>, memref<3x3x3x16xf32>, memref<1x30x15x16xf32>)
    """, args="%I: memref<1x32x32x3xf32>, %K: memref<3x3x3x16xf32>, %O: memref<1x30x15x16xf32>")
    assert error_of(text).startswith(
        "t.mlir:2:1: error: 'hop.conv2d' op operand #2 (output) has height 30 but expected 15 = "
        "(H - dilation_h * (KH - 1) - 1) floordiv stride_h + 1 with H = 32, KH = 3, "
        "stride_h = 2, dilation_h = 1\n")


def test_error_hop_conv2d_channels_and_strides():
    args = "%I: memref<1x8x8x3xf32>, %K: memref<3x3x4x16xf32>, %O: memref<1x6x6x16xf32>"
    text = func("hop.conv2d %I, %K, %O : (memref<1x8x8x3xf32>, memref<3x3x4x16xf32>, "
                "memref<1x6x6x16xf32>)", args=args)
    assert "'hop.conv2d' op operand #1 (filter) has 4 input channels but input has 3" \
        in error_of(text)
    text = func("hop.conv2d %I, %K, %O {strides = [1, 0]} : (memref<1x8x8x3xf32>, "
                "memref<3x3x4x16xf32>, memref<1x6x6x16xf32>)", args=args)
    assert "'hop.conv2d' op strides must be a list of 2 positive integers, got [1, 0]" \
        in error_of(text)


def test_error_load_wrong_index_count():
    text = func("%0 = memref.load %A[%i] : memref<4x4xf64>")
    assert error_of(text) == (
        "t.mlir:2:6: error: 'memref.load' op incorrect number of indices for load, expected 2 "
        "but got 1\n"
        "%0 = memref.load %A[%i] : memref<4x4xf64>\n"
        "     ^")


def test_error_alloc_missing_dynamic_size():
    text = func("%0 = memref.alloc() : memref<?x4xf64>")
    assert error_of(text) == (
        "t.mlir:2:6: error: 'memref.alloc' op incorrect number of dynamic sizes, has 0, "
        "expected 1\n"
        "%0 = memref.alloc() : memref<?x4xf64>\n"
        "     ^")


def test_error_alloc_alignment_not_power_of_two():
    text = func("%0 = memref.alloc() {alignment = 48 : i64} : memref<4xf64>")
    assert "'memref.alloc' op attribute 'alignment' failed to satisfy constraint: 64-bit " \
           "signless integer attribute whose value is positive and whose value is a power of " \
           "two > 0" in error_of(text)


def test_error_store_wrong_value_type():
    text = func("memref.store %y, %A[%i, %i] : memref<4x4xf64>",
                args="%A: memref<4x4xf64>, %i: index, %y: f32")
    assert error_of(text) == (
        "t.mlir:2:14: error: use of value '%y' expects different type than prior uses: 'f64' vs 'f32'\n"
        "memref.store %y, %A[%i, %i] : memref<4x4xf64>\n"
        "             ^")
    generic = func('"memref.store"(%y, %A, %i, %i) : (f32, memref<4x4xf64>, index, index) -> ()',
                   args="%A: memref<4x4xf64>, %i: index, %y: f32")
    assert error_of(generic).startswith(
        "t.mlir:2:1: error: 'memref.store' op failed to verify that type of 'value' matches "
        "element type of 'memref' ('f32' vs 'f64')\n")


def test_error_linalg_matmul_shape_mismatch():
    text = func("linalg.matmul ins(%A, %B : memref<4x4xf64>, memref<4x5xf64>) "
                "outs(%C : memref<5x4xf64>)",
                args="%A: memref<4x4xf64>, %B: memref<4x5xf64>, %C: memref<5x4xf64>")
    # the same message as mlir-opt-22
    assert error_of(text) == (
        "t.mlir:2:1: error: 'linalg.matmul' op inferred input/output operand #2 has shape's "
        "dimension #0 to be 4, but found 5\n"
        "linalg.matmul ins(%A, %B : memref<4x4xf64>, memref<4x5xf64>) outs(%C : memref<5x4xf64>)\n"
        "^")


def test_error_linalg_on_tensors():
    text = func("linalg.fill ins(%x : f64) outs(%T : tensor<4x4xf64>)", args="%x: f64")
    assert error_of(text).startswith("t.mlir:2:37: error: linalg ops on tensors are not "
                                     "supported; use memrefs\n")


def test_error_linalg_fill_type():
    text = func("linalg.fill ins(%y : f32) outs(%A : memref<4x4xf64>)",
                args="%A: memref<4x4xf64>, %y: f32")
    assert "'linalg.fill' op expected fill value type ('f32') to match output element type " \
           "('f64')" in error_of(text)


@pytest.mark.parametrize("body,message", [
    ("%0 = vector.broadcast %y : f32 to vector<4xf64>",
     "'vector.broadcast' op failed to verify that source operand and result have same element type"),
    ("%0 = vector.broadcast %v : vector<4xf64> to vector<3xf64>",
     "'vector.broadcast' op dimension mismatch (4 vs. 3)"),
    ("%0 = vector.reduction <and>, %v : vector<4xf64> into f64",
     "'vector.reduction' op unsupported reduction type 'f64' for kind 'and'"),
    ("%0 = vector.reduction <foo>, %v : vector<4xf64> into f64",
     "unknown reduction kind 'foo'; expected one of: add, mul,"),
    ("%0 = vector.load %A[%i] : memref<4x4xf64>, vector<4xf64>", "'vector.load' op requires 2 indices"),
    ("%0 = vector.load %A[%i, %i] : memref<4x4xf64>, vector<4xf32>",
     "'vector.load' op base and result element types should match"),
    ("%0 = math.fma %i, %i, %i : index", "'math.fma' op operand #0 must be floating-point-like"),
    ("memref.store %x, %A[%i] : memref<4x4xf64>",
     "'memref.store' op store index operand count not equal to memref rank"),
    ("%0 = memref.load %A[%x, %i] : memref<4x4xf64>",
     "use of value '%x' expects different type than prior uses: 'index' vs 'f64'"),
])
def test_error_other_ops(body, message):
    text = func(body, args="%A: memref<4x4xf64>, %x: f64, %i: index, %v: vector<4xf64>, %y: f32")
    assert message in error_of(text)


def test_errors_are_typed():
    with pytest.raises(VerifyError):
        parse(func("%0 = memref.load %A[%i] : memref<4x4xf64>"))
    with pytest.raises(ParseError):
        parse(func("%0 = vector.reduction <foo>, %v : vector<4xf64> into f64"))


def test_extra_attributes_are_placed_as_mlir_opt_places_them():
    text = func("""
      %0 = memref.alloc() {foo, alignment = 64 : i64} : memref<4xf64>
      %1 = vector.load %A[%i, %i] {nontemporal = false} : memref<4x4xf64>, vector<4xf64>
      vector.store %1, %A[%i, %i] {nontemporal = false} : memref<4x4xf64>, vector<4xf64>
      %2 = memref.load %A[%i, %i] {nontemporal = true} : memref<4x4xf64>
      linalg.fill {foo = 1 : i32} ins(%x : f64) outs(%A : memref<4x4xf64>)
      %3 = vector.reduction <add>, %v {foo} : vector<4xf64> into f64
      %4 = vector.fma %v, %v, %v {foo} : vector<4xf64>
      %5 = memref.cast %A {foo} : memref<4x4xf64> to memref<*xf64>
      memref.dealloc %0 {foo} : memref<4xf64>
      %6 = vector.broadcast %x {foo} : f64 to vector<4xf64>
      %7 = math.fma %x, %x, %x {foo} : f64
      vector.print %x : f64 {foo}
    """)
    printed = roundtrip(text)
    assert "memref.alloc() {alignment = 64 : i64, foo}" in printed
    assert "nontemporal = false" not in printed
    assert mlir_opt(text, "--allow-unregistered-dialect") == printed


def test_call_prints_its_dialect_prefix_outside_the_function_body():
    """mlir-opt elides 'func.' only where func is the default dialect (directly in a
    func.func body); inside affine.for/affine.if it prints func.call (and only that parses)."""
    from polyopt.affine.parser import parse
    from polyopt.affine.printer import print_module
    text = """func.func private @w(index)
func.func @f() {
  %c0 = arith.constant 0 : index
  func.call @w(%c0) : (index) -> ()
  affine.for %i = 0 to 4 {
    func.call @w(%i) : (index) -> ()
    affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
      func.call @w(%i) : (index) -> ()
    }
  }
  return
}
"""
    printed = print_module(parse(text, "c.mlir"))
    lines = [line.strip() for line in printed.splitlines() if "@w(" in line and "call" in line]
    assert lines == ["call @w(%c0) : (index) -> ()", "func.call @w(%arg0) : (index) -> ()",
                     "func.call @w(%arg0) : (index) -> ()"]
