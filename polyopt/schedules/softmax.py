"""``linalg.softmax`` as vector loops (``--hopt``; the scalar decomposition of
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

Along another dimension ``d`` (``softmax(x, 0)`` of a matrix), the operands are viewed as
``outer x d x inner`` and the contiguous ``inner`` columns are the vectors
(:func:`column_softmax_source`): each lane's max and sum run over the ``d`` rows in order,
four vectors of columns at a time, their accumulators in registers; the scalar decomposition
read every element with a stride of ``inner`` (0.08x ``torch.softmax`` at 512x768).
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


#: Vectors of columns per chunk in a softmax along another dimension: their max and sum
#: accumulators stay in registers through the loop over the reduced dimension.
COLUMN_VECTORS = 4


def column_softmax_source(outer: int, d: int, inner: int, etype: str, lanes: int,
                          parallel: bool) -> str:
    """``func.func @softmax(%x, %y)`` on ``memref<outer x d x inner x etype>``, the softmax
    along the middle dimension (see :func:`expand_softmax`): per ``outer`` index and chunk of
    :data:`COLUMN_VECTORS` vectors of the ``inner`` (contiguous) columns, the same three passes
    over the ``d`` rows as along a row, with one accumulator per vector of columns, kept in
    registers: each column's max and sum in the order of the rows, as the decomposition
    computes them (no reassociation)."""
    w, u = lanes, COLUMN_VECTORS
    mt, vt, mk = (f"memref<{outer}x{d}x{inner}x{etype}>", f"vector<{w}x{etype}>",
                  f"vector<{w}xi1>")
    chunks = inner // (w * u)
    # what is left after the whole chunks: whole vectors, then a masked one
    rest = [(c, None) for c in range(chunks * w * u, inner - inner % w, w)]
    if inner % w:
        rest.append((inner - inner % w, inner % w))
    t = MlirLines()
    t.add(0, f"func.func @softmax(%x: {mt}, %y: {mt}) {{")
    t.add(1, f"%low = arith.constant dense<{_LOWEST[int(etype[1:])]}> : {vt}")
    t.add(1, f"%zero = arith.constant dense<0.0> : {vt}")
    if inner % w:
        t.add(1, f"%tmask = vector.constant_mask [{inner % w}] : {mk}")
        t.add(1, f"%ctail = arith.constant {inner - inner % w} : index")
    # the team takes the outer index, or for a single one, the chunks
    on_outer = parallel and outer >= 2
    t.add(1, f"affine.parallel (%o) = (0) to ({outer}) {{" if on_outer else
          f"affine.for %o = 0 to {outer} {{")

    def chunk(depth: int, columns: list[str], masked: bool) -> None:
        """The softmax of the columns starting at ``columns`` (index expressions), the last
        one masked with ``masked``."""
        n = len(columns)

        def load(dd: int, memref: str, q: int, passthru: str) -> str:
            v = t.fresh("v")
            if masked and q == n - 1:
                t.add(dd, f"{v} = vector.maskedload {memref}[%o, %k, %ctail], %tmask, "
                          f"{passthru} : {mt}, {mk}, {vt} into {vt}")
            else:
                t.add(dd, f"{v} = affine.vector_load {memref}[%o, %k, {columns[q]}] : {mt}, "
                          f"{vt}")
            return v

        def store(dd: int, value: str, q: int) -> None:
            if masked and q == n - 1:
                t.add(dd, f"vector.maskedstore %y[%o, %k, %ctail], %tmask, {value} : {mt}, "
                          f"{mk}, {vt}")
            else:
                t.add(dd, f"affine.vector_store {value}, %y[%o, %k, {columns[q]}] : {mt}, "
                          f"{vt}")

        def loop(dd: int, inits: str, body) -> list[str]:
            res, names = t.fresh("r"), [t.fresh("a") for _ in range(n)]
            t.add(dd, f"{res}:{n} = affine.for %k = 0 to {d} iter_args("
                      + ", ".join(f"{a} = {inits}" for a in names)
                      + f") -> ({', '.join([vt] * n)}) {{")
            new = [body(dd + 1, q, a) for q, a in enumerate(names)]
            t.add(dd + 1, f"affine.yield {', '.join(new)} : {', '.join([vt] * n)}")
            t.add(dd, "}")
            return [f"{res}#{q}" for q in range(n)]

        def maximum(dd: int, q: int, acc: str) -> str:
            m = t.fresh("m")
            t.add(dd, f"{m} = arith.maxnumf {acc}, {load(dd, '%x', q, '%low')} : {vt}")
            return m
        maxes = loop(depth, "%low", maximum)

        def exp_sum(dd: int, q: int, acc: str) -> str:
            # masked lanes read %low, whose max is %low: exp(0), never stored
            a, e, s_ = (t.fresh(c) for c in "aes")
            t.add(dd, f"{a} = arith.subf {load(dd, '%x', q, '%low')}, {maxes[q]} : {vt}")
            t.add(dd, f"{e} = math.exp {a} fastmath<afn> : {vt}")
            store(dd, e, q)
            t.add(dd, f"{s_} = arith.addf {acc}, {e} : {vt}")
            return s_
        sums = loop(depth, "%zero", exp_sum)
        t.add(depth, f"affine.for %k = 0 to {d} {{")
        for q in range(n):
            v = t.fresh("q")
            t.add(depth + 1, f"{v} = arith.divf {load(depth + 1, '%y', q, '%zero')}, {sums[q]} "
                             f": {vt}")
            store(depth + 1, v, q)
        t.add(depth, "}")

    if chunks:
        t.add(2, f"affine.parallel (%c) = (0) to ({chunks}) {{" if parallel and not on_outer
              else f"affine.for %c = 0 to {chunks} {{")
        chunk(3, [f"%c * {w * u} + {q * w}" for q in range(u)], False)
        t.add(2, "}")
    if rest:
        chunk(2, [str(c) for c, _ in rest], rest[-1][1] is not None)
    t.add(1, "}")
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def vector_softmax_refusal(op) -> Optional[str]:
    """Why ``op`` does not take the vector form, or None where it does: f32/f64 memrefs of
    one static shape and the identity layout, input and output the same memref or different
    ones."""
    from ..memref_layout.data_copy import alias_root
    x, y = op.operands
    t: MemRefType = x.type
    et = t.element_type
    if not (isinstance(et, FloatType) and et.width in (32, 64) and not et.brain):
        return f"its elements are {et} (the vector form takes f32 and f64)"
    if x.type != y.type or t.layout is not None or not t.has_static_shape:
        return "its operands are not row-major memrefs of one static shape"
    if x is not y and alias_root(x) is alias_root(y):
        return "its input and output are different views of one buffer"
    if 0 in t.shape:
        return "it has no elements"
    return None


def expand_softmax(op, lanes_of, remark=None, threads: int = 1) -> bool:
    """Replace ``op`` by its vector form, spliced in front of it: along the last dimension
    :func:`softmax_source` on the operands viewed as ``rows x n``, along another
    :func:`column_softmax_source` on them viewed as ``outer x d x inner``
    (``memref.collapse_shape``); False (nothing changed) where :func:`vector_softmax_refusal`
    gives a reason."""
    if vector_softmax_refusal(op) is not None:
        return False
    t: MemRefType = op.operands[0].type
    shape, dim = list(t.shape), op.dimension
    etype = str(t.element_type)
    lanes = lanes_of(t.element_type.width // 8)
    total = 1
    for s in shape:
        total *= s
    b = Builder.before(op)
    if dim == len(shape) - 1:
        n, rows = shape[-1], total // shape[-1]
        parallel = threads > 1 and rows >= 2 and total >= PARALLEL_MIN_ELEMENTS
        views = [_as_matrix(b, v, rows, n, op.loc) for v in op.operands]
        text = softmax_source(rows, n, etype, lanes, parallel)
        what = f"{rows} row{'s' if rows > 1 else ''} of {n}"
        extra = ""
        teams = f"the {rows} rows"
    else:
        outer, d = _product(shape[:dim]), shape[dim]
        inner = _product(shape[dim + 1:])
        parallel = threads > 1 and total >= PARALLEL_MIN_ELEMENTS and \
            (outer >= 2 or inner >= 2 * lanes * COLUMN_VECTORS)
        views = [_as_columns(b, v, dim, op.loc) for v in op.operands]
        lanes = column_lanes(inner, lanes)
        text = column_softmax_source(outer, d, inner, etype, lanes, parallel)
        what = (f"{outer * inner} column{'s' if outer * inner > 1 else ''} of {d} (dimension "
                f"{dim})")
        extra = f", {COLUMN_VECTORS} vectors of columns at a time"
        teams = "the outer index" if outer >= 2 else "the chunks of columns"
    if op.operands[0] is op.operands[1]:
        views[1] = views[0]
    splice_template(b, text, "<softmax>", views, op.loc)
    op.erase()
    if remark is not None:
        how = f", {teams} on {threads} threads" if parallel else ""
        remark(op.loc, f"linalg.softmax: {what} as vectors of {lanes} {etype}{extra} (max, exp "
                       f"with fastmath<afn> and sum, division){how}")
    return True


def column_lanes(inner: int, lanes: int) -> int:
    """The vector width for ``inner`` columns: the target's, or for fewer columns the
    narrowest (at least 4 lanes) holding them."""
    w = lanes
    while w > 4 and w // 2 >= inner:
        w //= 2
    return w


def _product(sizes) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def _as_columns(b: Builder, v, dim: int, loc):
    """``v`` (row-major, ``dim`` not its last dimension) viewed as ``outer x d x inner``."""
    from ..affine.dialects.memref import CollapseShapeOp
    from ..affine.dialects.memref_views import ExpandShapeOp
    shape = list(v.type.shape)
    rank = len(shape)
    after = list(range(dim + 1, rank))
    if dim == 0:
        if rank > 2:
            v = b.create(CollapseShapeOp.build, v, [[0], after], loc=loc).result
        return b.create(ExpandShapeOp.build, v, [[0, 1], [2]],
                        [1, shape[0], _product(shape[1:])], loc=loc).result
    if dim == 1 and rank == 3:
        return v
    return b.create(CollapseShapeOp.build, v, [list(range(dim)), [dim], after],
                    loc=loc).result


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
