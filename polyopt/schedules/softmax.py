"""``linalg.softmax`` along its rows as vector loops (``--hopt``; the scalar decomposition of
:func:`polyopt.affine.dialects.linalg_softmax.decompose_softmax` is the fallback).

MLIR's counterpart is ``transform.structured.decompose_interface`` followed by the
vectorizer (``transform.structured.vectorize``) and ``--math-polynomial-approximation``; the
libraries' are oneDNN's softmax primitive and ``torch.softmax``.  For a softmax along the last
dimension of row-major memrefs, each row of ``N`` elements takes three passes of ``W``-lane
vectors, as the decomposition does in scalars:

1. the max: four vector accumulators of ``arith.maxnumf`` (from the most negative finite
   value), the last ``N mod W`` elements one masked load, then ``vector.reduction <maxnumf>``;
2. ``exp(x - max)`` stored into the output and summed in a vector accumulator (masked lanes
   add zero), then ``vector.reduction <add>``; the exp carries ``fastmath<afn>``, so it is
   glibc's vector ``exp`` (:mod:`polyopt.codegen.vector_math`), within 2.6 ulp;
3. the output divided by the sum (a division, as the decomposition does, not a product by
   the reciprocal).

The sums are reassociated (vector lanes, then a tree), as ``torch.softmax`` and numpy's
``sum`` reassociate them: results differ from the sequential order in the last bits.  Rows
are independent: with ``threads > 1`` the rows loop is an ``affine.parallel``.
"""

from __future__ import annotations

from typing import Optional

from ..affine.builder import Builder
from ..affine.types import FloatType, MemRefType
from .gemm_templates import splice_template
from .gemv import MlirLines

#: Vector accumulators of the max (``maxnumf`` has a latency of several cycles).
MAX_ACCUMULATORS = 4
#: Elements (all rows) from which the rows run on the team: below it, waking the threads
#: costs more than the exp of the rows saves.
PARALLEL_MIN_ELEMENTS = 16 * 1024
_LOWEST = {32: "-3.40282347E+38", 64: "-1.7976931348623157E+308"}


def softmax_source(rows: int, n: int, etype: str, lanes: int, parallel: bool) -> str:
    """``func.func @softmax(%x, %y)`` on ``memref<rows x n x etype>`` (see the module
    docstring)."""
    w, p = lanes, MAX_ACCUMULATORS
    mt, vt, mk = f"memref<{rows}x{n}x{etype}>", f"vector<{w}x{etype}>", f"vector<{w}xi1>"
    n_vec = n - n % w            # elements in whole vectors
    n_group = n - n % (w * p)     # elements in groups of p vectors
    t = MlirLines()
    t.add(0, f"func.func @softmax(%x: {mt}, %y: {mt}) {{")
    t.add(1, f"%low = arith.constant dense<{_LOWEST[int(etype[1:])]}> : {vt}")
    t.add(1, f"%zero = arith.constant dense<0.0> : {vt}")
    if n > n_vec:
        t.add(1, f"%tmask = vector.constant_mask [{n - n_vec}] : {mk}")
        t.add(1, f"%ctail = arith.constant {n_vec} : index")
    loop = "affine.parallel (%r) = (0) to" if parallel else "affine.for %r = 0 to"
    t.add(1, f"{loop} ({rows}) {{" if parallel else f"{loop} {rows} {{")

    def load(d: int, memref: str, column: str) -> str:
        v = t.fresh("v")
        t.add(d, f"{v} = affine.vector_load {memref}[%r, {column}] : {mt}, {vt}")
        return v

    def masked_load(d: int, memref: str, passthru: str) -> str:
        v = t.fresh("v")
        t.add(d, f"{v} = vector.maskedload {memref}[%r, %ctail], %tmask, {passthru} : {mt}, "
                 f"{mk}, {vt} into {vt}")
        return v

    def binary(d: int, op: str, a: str, b: str) -> str:
        v = t.fresh("v")
        t.add(d, f"{v} = arith.{op} {a}, {b} : {vt}")
        return v

    # 1. the max
    accs: list[str] = []
    if n_group:
        res, names = t.fresh("m"), [t.fresh("a") for _ in range(p)]
        inits = ", ".join(f"{a} = %low" for a in names)
        t.add(2, f"{res}:{p} = affine.for %j = 0 to {n_group} step {w * p} iter_args({inits}) "
                 f"-> ({', '.join([vt] * p)}) {{")
        new = [binary(3, "maxnumf", a, load(3, "%x", f"%j + {q * w}" if q else "%j"))
               for q, a in enumerate(names)]
        t.add(3, f"affine.yield {', '.join(new)} : {', '.join([vt] * p)}")
        t.add(2, "}")
        accs = [f"{res}#{q}" for q in range(p)]
    rest = [load(2, "%x", str(start)) for start in range(n_group, n_vec, w)]
    if n > n_vec:
        rest.append(masked_load(2, "%x", "%low"))
    for q, v in enumerate(rest):
        if q < len(accs):
            accs[q] = binary(2, "maxnumf", accs[q], v)
        else:
            accs.append(binary(2, "maxnumf", "%low", v))
    while len(accs) > 1:
        accs = [binary(2, "maxnumf", accs[i], accs[i + 1]) if i + 1 < len(accs) else accs[i]
                for i in range(0, len(accs), 2)]
    t.add(2, f"%max = vector.reduction <maxnumf>, {accs[0]} : {vt} into {etype}")
    t.add(2, f"%bmax = vector.broadcast %max : {etype} to {vt}")

    # 2. exp(x - max) into y, summed
    def exp_of(d: int, x: str) -> str:
        e = t.fresh("e")
        t.add(d, f"{e} = math.exp {binary(d, 'subf', x, '%bmax')} fastmath<afn> : {vt}")
        return e
    total = "%zero"
    if n_vec:
        t.add(2, f"%s = affine.for %j = 0 to {n_vec} step {w} iter_args(%acc = %zero) -> ({vt}) {{")
        e = exp_of(3, load(3, "%x", "%j"))
        t.add(3, f"affine.vector_store {e}, %y[%r, %j] : {mt}, {vt}")
        t.add(3, f"affine.yield {binary(3, 'addf', '%acc', e)} : {vt}")
        t.add(2, "}")
        total = "%s"
    if n > n_vec:
        # the lanes past the row take exp(0), not exp(lowest - max): libmvec computes
        # arguments out of exp's range one lane at a time (1000 rows of 37: 3.4x slower)
        d = binary(2, "subf", masked_load(2, "%x", "%low"), "%bmax")
        inside = t.fresh("d")
        t.add(2, f"{inside} = arith.select %tmask, {d}, %zero : {mk}, {vt}")
        e = t.fresh("e")
        t.add(2, f"{e} = math.exp {inside} fastmath<afn> : {vt}")
        t.add(2, f"vector.maskedstore %y[%r, %ctail], %tmask, {e} : {mt}, {mk}, {vt}")
        kept = t.fresh("e")     # (and add nothing to the sum)
        t.add(2, f"{kept} = arith.select %tmask, {e}, %zero : {mk}, {vt}")
        total = binary(2, "addf", total, kept)
    t.add(2, f"%sum = vector.reduction <add>, {total} : {vt} into {etype}")
    t.add(2, f"%bsum = vector.broadcast %sum : {etype} to {vt}")

    # 3. y / sum
    if n_vec:
        t.add(2, f"affine.for %j = 0 to {n_vec} step {w} {{")
        q = binary(3, "divf", load(3, "%y", "%j"), "%bsum")
        t.add(3, f"affine.vector_store {q}, %y[%r, %j] : {mt}, {vt}")
        t.add(2, "}")
    if n > n_vec:
        q = binary(2, "divf", masked_load(2, "%y", "%zero"), "%bsum")
        t.add(2, f"vector.maskedstore %y[%r, %ctail], %tmask, {q} : {mt}, {mk}, {vt}")
    t.add(1, "}")
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def vector_softmax_refusal(op) -> Optional[str]:
    """Why ``op`` does not take the vector form, or None where it does: f32/f64 memrefs of
    one static shape and the identity layout, the softmax along the last dimension, input and
    output the same memref or different ones."""
    from ..memref_layout.data_copy import alias_root
    x, y = op.operands
    t: MemRefType = x.type
    et = t.element_type
    if not (isinstance(et, FloatType) and et.width in (32, 64) and not et.brain):
        return f"its elements are {et} (the vector form takes f32 and f64)"
    if x.type != y.type or t.layout is not None or not t.has_static_shape:
        return "its operands are not row-major memrefs of one static shape"
    if op.dimension != len(t.shape) - 1:
        return f"dimension({op.dimension}) is not the last, contiguous one"
    if x is not y and alias_root(x) is alias_root(y):
        return "its input and output are different views of one buffer"
    if 0 in t.shape:
        return "it has no elements"
    return None


def expand_softmax(op, lanes_of, remark=None, threads: int = 1) -> bool:
    """Replace ``op`` by its vector form (:func:`softmax_source`), spliced in front of it with
    the operands viewed as ``rows x n`` (``memref.collapse_shape``); False (nothing changed)
    where :func:`vector_softmax_refusal` gives a reason."""
    if vector_softmax_refusal(op) is not None:
        return False
    t: MemRefType = op.operands[0].type
    n, rows = t.shape[-1], 1
    for s in t.shape[:-1]:
        rows *= s
    etype = str(t.element_type)
    lanes = lanes_of(t.element_type.width // 8)
    parallel = threads > 1 and rows >= 2 and rows * n >= PARALLEL_MIN_ELEMENTS
    b = Builder.before(op)
    views = [_as_matrix(b, v, rows, n, op.loc) for v in op.operands]
    if op.operands[0] is op.operands[1]:
        views[1] = views[0]
    splice_template(b, softmax_source(rows, n, etype, lanes, parallel), "<softmax>", views,
                    op.loc)
    op.erase()
    if remark is not None:
        how = f", the {rows} rows on {threads} threads" if parallel else ""
        remark(op.loc, f"linalg.softmax: {rows} row{'s' if rows > 1 else ''} of {n} as vectors "
                       f"of {lanes} {etype} (max, exp with fastmath<afn> and sum, division){how}")
    return True


def _as_matrix(b: Builder, v, rows: int, n: int, loc):
    """``v`` (rank >= 1, row-major) viewed as ``rows x n``."""
    from ..affine.dialects.memref import CollapseShapeOp
    from ..affine.dialects.memref_views import ExpandShapeOp
    rank = len(v.type.shape)
    if rank == 2:
        return v
    if rank == 1:
        return b.create(ExpandShapeOp.build, v, [[0, 1]], [1, n], loc=loc).result
    return b.create(CollapseShapeOp.build, v, [list(range(rank - 1)), [rank - 1]],
                    loc=loc).result
