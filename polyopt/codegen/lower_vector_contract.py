"""Lowering of ``vector.outerproduct`` and ``vector.contract`` (MLIR's
``--convert-vector-to-llvm``, which first rewrites them with its contraction lowering patterns).

* ``vector.outerproduct %a, %b[, %acc]``: row ``i`` is ``splat(a[i]) * b`` (with a scalar
  ``%b``, the AXPY ``a * splat(b)``), combined with the accumulator's row by ``kind``; a float
  ``add`` is one fused multiply-add (upstream makes it ``vector.fma``).  Without an
  accumulator the product alone, whatever the kind (upstream ignores it too).
* ``vector.contract``: any projected-permutation indexing maps and iterator types.  Each
  result element is ``acc <kind> p0 <kind> p1 ...`` folded left to right, the products
  ``lhs * rhs`` taken over the iterations that map to it in row-major order of the loops
  (upstream's default ``dot`` lowering reduces in the same order, from the accumulator, with
  the multiplications not fused).  Operands narrower than the accumulator are extended to it
  first, integers signed (``arith.extsi``), as upstream promotes them.
* ``vector.mask`` around them: a contraction leaves out the iterations whose bit of the mask
  (shaped as its loops) is off; an outer product keeps the accumulator's element where it is.
"""

from __future__ import annotations

from llvmlite import ir

from polyopt.affine.affine_expr import AffineDimExpr
from polyopt.affine.ir import Operation
from polyopt.affine.types import FloatType, IntegerType, Type, VectorType
from polyopt.codegen.llvm_helpers import Unsupported, call_intrinsic, check_float, index_space
from polyopt.codegen.lower_math import _fma16
from polyopt.codegen.lower_vector_elements import _elements, _from_elements
from polyopt.codegen.lowering import FunctionLowering, handles

#: vector.contract is unrolled to scalars: refuse contractions with more iterations than this
MAX_CONTRACT_ITERATIONS = 1 << 16

_MIN_MAX = {"minui": "umin", "minsi": "smin", "maxui": "umax", "maxsi": "smax",
            "minnumf": "minnum", "maxnumf": "maxnum", "minimumf": "minimum",
            "maximumf": "maximum"}


def combine(L: FunctionLowering, kind: str, x: ir.Value, y: ir.Value, is_float: bool):
    """``x <kind> y`` (MLIR's ``vector::makeArithReduction``), on scalars or 1-D rows."""
    b = L.b
    if kind == "add":
        return b.fadd(x, y) if is_float else b.add(x, y)
    if kind == "mul":
        return b.fmul(x, y) if is_float else b.mul(x, y)
    if kind in ("and", "or", "xor"):
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[kind](x, y)
    return call_intrinsic(L, _MIN_MAX[kind], [x, y])


def _multiply(L: FunctionLowering, x: ir.Value, y: ir.Value, is_float: bool):
    return L.b.fmul(x, y) if is_float else L.b.mul(x, y)


def _element(t: Type) -> Type:
    return t.element_type if isinstance(t, VectorType) else t


def _is_float(t: Type) -> bool:
    if isinstance(_element(t), FloatType):
        check_float(t)
        return True
    return False


@handles("vector.outerproduct")
def _lower_outerproduct(L: FunctionLowering, op: Operation) -> None:
    L.bind(op.results[0], _outerproduct(L, op))


def _outerproduct(L: FunctionLowering, op: Operation) -> ir.Value:
    b = L.b
    rt = op.results[0].type
    L.ml.type(rt)
    is_float = _is_float(rt)
    kind = op.kind
    a = L.get(op.lhs)
    rhs = L.get(op.rhs)
    acc = L.get(op.acc) if op.acc is not None else None
    is16 = is_float and _element(rt).width == 16
    if is16 and (kind != "add" or acc is None):
        raise Unsupported(f"on '{rt}', only the kind 'add' with an accumulator is supported")

    def row_of(lhs_row, rhs_row, acc_row):
        if acc_row is None:
            return _multiply(L, lhs_row, rhs_row, is_float)
        if is_float and kind == "add":
            if is16:
                return _fma16(L, lhs_row, rhs_row, acc_row, ())
            return call_intrinsic(L, "fma", [lhs_row, rhs_row, acc_row])
        return combine(L, kind, acc_row, _multiply(L, lhs_row, rhs_row, is_float), is_float)

    if len(rt.shape) == 1:   # AXPY: a * splat(b)
        return row_of(a, L.splat(rhs, rt.shape[0]), acc)
    agg = ir.Constant(L.ml.type(rt), ir.Undefined)
    for i in range(rt.shape[0]):
        ai = b.extract_element(a, ir.Constant(ir.IntType(32), i))
        row = row_of(L.splat(ai, rt.shape[1]), rhs,
                     b.extract_value(acc, [i]) if acc is not None else None)
        agg = b.insert_value(agg, row, [i])
    return agg


def _promote(L: FunctionLowering, x: ir.Value, src: Type, dst: Type) -> ir.Value:
    """An operand's element extended to the accumulator's type (upstream's promotion)."""
    if src == dst:
        return x
    to = L.ml.scalar_type(dst)
    if isinstance(src, IntegerType) and isinstance(dst, IntegerType) and src.width < dst.width:
        return L.b.sext(x, to)
    if isinstance(src, FloatType) and isinstance(dst, FloatType) and src.width < dst.width:
        return L.b.fpext(x, to)
    raise Unsupported(f"a contraction of '{src}' operands into '{dst}' is not supported")


@handles("vector.mask")
def _lower_mask(L: FunctionLowering, op: Operation) -> None:
    """A masked ``vector.contract``: the iterations whose bit of the mask (shaped as the loops)
    is off are left out, so a result element none of whose iterations is on keeps the
    accumulator (upstream's masked contraction lowering).  A masked ``vector.outerproduct``:
    the accumulator's element where the bit is off; without an accumulator those elements are
    undefined, and upstream leaves the product there, as here."""
    inner = op.masked_op
    if inner is None or inner.name not in ("vector.contract", "vector.outerproduct"):
        raise Unsupported(f"only a masked 'vector.contract' or 'vector.outerproduct' is "
                          f"supported, got '{inner.name if inner is not None else 'vector.yield'}'")
    if op.passthru is not None:
        raise Unsupported(f"a masked '{inner.name}' with a pass-through value is not supported")
    L.ml.type(op.mask.type)
    mask = L.get(op.mask)
    if inner.name == "vector.outerproduct":
        result = _outerproduct(L, inner)
        if inner.acc is not None:
            rt = inner.results[0].type
            result = L.map_nd(rt, lambda m, r, a: L.b.select(m, r, a), mask, result,
                              L.get(inner.acc))
    else:
        result = _contract(L, inner, (mask, tuple(op.mask.type.shape)))
    L.bind(inner.results[0], result)
    L.bind(op.results[0], result)


@handles("vector.contract")
def _lower_contract(L: FunctionLowering, op: Operation) -> None:
    L.bind(op.results[0], _contract(L, op, None))


def _mask_bit(L: FunctionLowering, mask: ir.Value, pos: tuple) -> ir.Value:
    row = L.b.extract_value(mask, list(pos[:-1])) if len(pos) > 1 else mask
    return L.b.extract_element(row, ir.Constant(ir.IntType(32), pos[-1]))


def _contract(L: FunctionLowering, op: Operation, mask) -> ir.Value:
    """The result of ``vector.contract`` ``op``; ``mask``: None or (the mask's LLVM value, its
    shape, one dim a loop)."""
    lhs_t, rhs_t, acc_t = op.lhs.type, op.rhs.type, op.acc.type
    for t in (lhs_t, rhs_t, acc_t):
        if isinstance(t, VectorType):
            L.ml.type(t)
    maps = op.indexing_maps
    elem = _element(acc_t)
    is_float = _is_float(acc_t)
    if is_float and elem.width == 16:
        raise Unsupported(f"a contraction into '{acc_t}' is not supported (16-bit floats)")
    kind = op.kind
    sizes: dict[int, int] = {}
    for m, t in zip(maps, (lhs_t, rhs_t, acc_t)):
        for e, size in zip(m.results, t.shape if isinstance(t, VectorType) else ()):
            if not isinstance(e, AffineDimExpr):
                raise Unsupported(f"the indexing map result '{e}' is not supported")
            sizes[e.position] = size
    num_dims = len(op.iterator_types)
    if len(sizes) != num_dims:
        raise Unsupported("a loop that no operand indexes is not supported")
    space = [sizes[d] for d in range(num_dims)]
    total = 1
    for s in space:
        total *= s
    if total > MAX_CONTRACT_ITERATIONS:
        raise Unsupported(f"a contraction of {total} iterations is not supported (at most "
                          f"{MAX_CONTRACT_ITERATIONS}; unroll it to smaller contractions)")

    def flat(t: Type, v: ir.Value) -> tuple[list, tuple]:
        if not isinstance(t, VectorType):
            return [v], ()
        return _elements(L, v, t), tuple(t.shape)

    def offset(shape: tuple, pos: list) -> int:
        k = 0
        for s, p in zip(shape, pos):
            k = k * s + p
        return k

    lhs, lhs_shape = flat(lhs_t, L.get(op.lhs))
    rhs, rhs_shape = flat(rhs_t, L.get(op.rhs))
    acc, acc_shape = flat(acc_t, L.get(op.acc))
    lhs = [_promote(L, x, _element(lhs_t), elem) for x in lhs]
    rhs = [_promote(L, x, _element(rhs_t), elem) for x in rhs]
    out = list(acc)
    pick = [[e.position for e in m.results] for m in maps]
    if mask is not None and mask[1] != tuple(space):
        raise Unsupported(f"a mask of shape {mask[1]} for a contraction of loops {tuple(space)}")
    for it in index_space(tuple(space)):
        x = lhs[offset(lhs_shape, [it[d] for d in pick[0]])]
        y = rhs[offset(rhs_shape, [it[d] for d in pick[1]])]
        k = offset(acc_shape, [it[d] for d in pick[2]])
        new = combine(L, kind, out[k], _multiply(L, x, y, is_float), is_float)
        out[k] = new if mask is None else L.b.select(_mask_bit(L, mask[0], it), new, out[k])
    if isinstance(acc_t, VectorType):
        return _from_elements(L, out, acc_t)
    return out[0]
