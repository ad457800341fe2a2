"""Expansion of high-level ops into their naive affine loop nests (the paper's ``-hopt``,
section 2.3; MLIR's ``-convert-linalg-to-affine-loops`` for ``linalg.matmul``).

    hop.matmul %A, %B, %C : (memref<MxK>, memref<KxN>, memref<MxN>)
  becomes
    affine.for %i = 0 to M {
      affine.for %j = 0 to N {
        affine.for %k = 0 to K {
          %a = affine.load %A[%i, %k]; %b = affine.load %B[%k, %j]; %c = affine.load %C[%i, %j]
          affine.store (%c + %a * %b), %C[%i, %j]
    }}}

With ``tiled=True`` (the ``--hopt`` pass) the product nest is then rescheduled with the BLIS
schedule of :mod:`polyopt.schedules.blis_schedule` (tile sizes from the op's ``M_C``/``K_C``/
``N_C``/``M_R``/``N_R``/``K_U`` attributes, the rest from the machine model), or with the op's
``schedule`` attribute when it has one (paper section 2.5).

``alpha``/``beta`` attributes of ``hop.matmul`` (C = alpha*A*B + beta*C) scale the product and
add a ``C *= beta`` nest first; values of 1 fold away.  ``hop.conv2d`` becomes the 7-d nest
``O[n, oh, ow, f] += I[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * K[kh, kw, c, f]``.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.affine_expr import AffineMap, dim
from ..affine.builder import Builder
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.dialects.arith import FLOAT_BINARY, INT_BINARY, ConstantOp
from ..affine.dialects.hop import HopConv2DOp, HopMatmulOp
from ..affine.dialects.linalg import LinalgMatmulOp
from ..affine.ir import Operation, Value
from ..affine.types import FloatType
from .blis_schedule import BlisParams, MachineModel, default_blis_params

# (loc, message) sink for remarks such as the chosen tile sizes
RemarkSink = Optional[Callable[[object, str], None]]


def _mul_add(b: Builder, x: Value, y: Value, acc: Value, loc) -> Value:
    """``acc + x * y`` with float or integer arithmetic."""
    ops = FLOAT_BINARY if isinstance(x.type, FloatType) else INT_BINARY
    mul, add = ops["mulf" if isinstance(x.type, FloatType) else "muli"], \
        ops["addf" if isinstance(x.type, FloatType) else "addi"]
    prod = b.create(mul, x, y, loc=loc).result
    return b.create(add, acc, prod, loc=loc).result


def _constant_loops(b: Builder, extents, loc) -> tuple[list[AffineForOp], Builder]:
    """A perfect nest ``0 to extent`` per extent; returns the loops and a builder in the body."""
    loops = []
    inner = b
    for n in extents:
        loop = inner.create(AffineForOp.build_constant, 0, n, loc=loc)
        loops.append(loop)
        inner = Builder.before_terminator(loop.body)
    return loops, inner


def expand_matmul(op: Operation) -> list[AffineForOp]:
    """Replace a ``hop.matmul``/``linalg.matmul`` by its (i, j, k) nest; returns the loops of
    the product nest (the ``C *= beta`` nest, when present, comes before it)."""
    a, bmat, c = op.operands
    m, k = a.type.shape
    n = bmat.type.shape[1]
    loc = op.loc
    alpha = getattr(op, "alpha", None)
    beta = getattr(op, "beta", None)
    b = Builder.before(op)
    etype = c.type.element_type
    if beta is not None and beta != 1:
        loops, body = _constant_loops(b, (m, n), loc)
        i, j = (l.induction_var for l in loops)
        beta_v = body.create(ConstantOp, beta, etype, loc=loc).result
        cij = body.create(AffineLoadOp, c, [i, j], loc=loc).result
        mul = FLOAT_BINARY["mulf"] if isinstance(etype, FloatType) else INT_BINARY["muli"]
        scaled = body.create(mul, cij, beta_v, loc=loc).result
        body.create(AffineStoreOp, scaled, c, [i, j], loc=loc)
    loops, body = _constant_loops(b, (m, n, k), loc)
    i, j, kk = (l.induction_var for l in loops)
    av = body.create(AffineLoadOp, a, [i, kk], loc=loc).result
    bv = body.create(AffineLoadOp, bmat, [kk, j], loc=loc).result
    cv = body.create(AffineLoadOp, c, [i, j], loc=loc).result
    if alpha is not None and alpha != 1:
        alpha_v = body.create(ConstantOp, alpha, etype, loc=loc).result
        mul = FLOAT_BINARY["mulf"] if isinstance(etype, FloatType) else INT_BINARY["muli"]
        av = body.create(mul, alpha_v, av, loc=loc).result
    body.create(AffineStoreOp, _mul_add(body, av, bv, cv, loc), c, [i, j], loc=loc)
    op.erase()
    return loops


def expand_conv2d(op: HopConv2DOp) -> list[AffineForOp]:
    """Replace a ``hop.conv2d`` by its 7-d nest (n, oh, ow, f, kh, kw, c)."""
    inp, flt, out = op.input, op.filter, op.output
    nb, oh, ow, nf = out.type.shape
    kh, kw, nc, _ = flt.type.shape
    (sh, sw), (dh, dw) = op.strides, op.dilations
    loc = op.loc
    loops, body = _constant_loops(Builder.before(op), (nb, oh, ow, nf, kh, kw, nc), loc)
    n_, y, x, f, r, s, c = (l.induction_var for l in loops)
    # I[n, y*sh + r*dh, x*sw + s*dw, c] over dims (n, y, x, r, s, c)
    in_map = AffineMap.get(6, 0, (dim(0), dim(1) * sh + dim(3) * dh, dim(2) * sw + dim(4) * dw,
                                  dim(5)))
    iv = body.create(AffineLoadOp, inp, [n_, y, x, r, s, c], map=in_map, loc=loc).result
    kv = body.create(AffineLoadOp, flt, [r, s, c, f], loc=loc).result
    ov = body.create(AffineLoadOp, out, [n_, y, x, f], loc=loc).result
    body.create(AffineStoreOp, _mul_add(body, iv, kv, ov, loc), out, [n_, y, x, f], loc=loc)
    op.erase()
    return loops


def matmul_blis_params(op: Operation, machine: Optional[MachineModel] = None) -> BlisParams:
    """The BLIS parameters of a matmul op: its tile attributes, completed by the model."""
    m, k = op.operands[0].type.shape
    n = op.operands[1].type.shape[1]
    elem_bytes = op.operands[2].type.element_type.width // 8
    given = dict(getattr(op, "tile_params", {}) or {})
    return default_blis_params(m, n, k, elem_bytes, machine, given)


def expand_matmul_tiled(op: Operation, machine: Optional[MachineModel] = None,
                        remark: RemarkSink = None) -> list[Operation]:
    """Expand a matmul op and apply its BLIS schedule (or its ``schedule`` attribute) through
    ISL; returns the generated top-level ops."""
    from .apply import apply_schedule
    schedule = getattr(op, "schedule", None)
    loc = op.loc
    if schedule is None:
        params = matmul_blis_params(op, machine)
        schedule = params.schedule()
        if remark is not None:
            remark(loc, f"{op.name}: BLIS schedule {schedule} with {params.describe()}")
    elif remark is not None:
        remark(loc, f"{op.name}: schedule {schedule} (from the op's 'schedule' attribute)")
    loops = expand_matmul(op)
    return apply_schedule(loops[0], {"S0": schedule}, check=True)


def expand_high_level_ops(module: Operation, *, tiled: bool = False,
                          machine: Optional[MachineModel] = None,
                          remark: RemarkSink = None) -> int:
    """Expand every ``hop.matmul``, ``linalg.matmul`` and ``hop.conv2d`` under ``module``
    into affine nests (BLIS-tiled matmuls with ``tiled``, naive otherwise); returns how many
    ops were expanded."""
    todo = [op for op in module.walk()
            if isinstance(op, (HopMatmulOp, LinalgMatmulOp, HopConv2DOp))]
    for op in todo:
        if isinstance(op, HopConv2DOp):
            expand_conv2d(op)
        elif tiled:
            expand_matmul_tiled(op, machine, remark)
        else:
            expand_matmul(op)
    return len(todo)
