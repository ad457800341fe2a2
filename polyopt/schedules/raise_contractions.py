"""Contraction raising (issue 14, part 1): the affine nests a user wrote that compute a matrix
product go through the BLIS pipeline, as ``hop.matmul`` does.  MLIR has no upstream
counterpart; Polly's matmul pattern (``-polly-pattern-matching-based-opts``,
``ScheduleOptimizer.cpp`` ``isMatrMultPattern``) is the closest, and this is its polyhedral
reading: the test is on the model's access relations and the reduction's dataflow, not on the
text.

A top-level nest of a function is raised when its polyhedral model holds

* an *update* statement ``C[c(l)] = C[c(l)] + s * A[a(l)] * B[b(l)]`` (``arith.addf``/
  ``mulf``, ``addi``/``muli``, ``math.fma``; ``s`` a product of loop-invariant scalars or
  absent), where every subscript is ``stride * loop + offset`` of one loop, over a box of
  static extents, the loops splitting into batch loops (in C, A and B), one row loop (C and
  A), one column loop (C and B) and one reduction loop (A and B only);
* optionally one *initialization* ``C[c(l)] = 0`` or ``C[c(l)] = C[c(l)] * beta`` of exactly
  the elements the update writes, each before all of its updates (PolyBench's gemm, 2mm, 3mm);
* nothing else, and C does not share memory with A or B,

or whose C is a vector of one loop times a matrix of that loop and the reduction's
(``y[i] += A[i, k] * x[k]``, ``y[j] += x[k] * A[k, j]``: ``linalg.matvec``, ``linalg.vecmat``,
PolyBench's mvt), raised as an M x 1 or 1 x N product of views (``memref.expand_shape``) that
the GEMV forms of :mod:`polyopt.schedules.gemv` run, or whose C is one element summing
products of two vectors (``linalg.dot``), raised as a 1 x 1 x K product the dot form runs,

in any loop order; the nest is then replaced by the
:class:`~polyopt.schedules.contraction.Contraction` it computes, expanded by
:func:`polyopt.schedules.expand.expand_contraction` (BLIS tiling, packing, register tile,
micro-kernel).  Results differ from the nest's only by the order of the additions.

    affine.for %i = 0 to 200 {                          // PolyBench gemm
      affine.for %j = 0 to 220 { C[i, j] = C[i, j] * %beta }
      affine.for %k = 0 to 240 { affine.for %j = 0 to 220 {
          C[i, j] = C[i, j] + %alpha * A[i, k] * B[k, j] }}}
  -> remark: raised to a contraction: C[i, j] = %beta * C[i, j] + %alpha * A[i, k] * B[k, j]
     (ixjxk = 200x220x240); then the BLIS nest of expand_contraction

A nest with an update statement that misses one of the conditions keeps its form, with a remark
naming the condition (``reads C[i, k] as a factor: not a contraction``, ``loop %arg5 only
indexes A: a sum along it, not a contraction``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import islpy as isl

from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.ir import Operation, Value
from ..affine.printer import value_namer
from ..affine.types import FloatType, IntegerType
from .contraction import COL, RED, ROW, Contraction, Operand, Subscript
from .model import PolyhedralModel, Statement, extract
from ..affine.dialects.hop import MIXED_TYPES

__all__ = ["raise_contractions", "recognize_nest", "NearMiss"]

Remark = Optional[Callable[[object, str], None]]

_ADD = {"arith.addf", "arith.addi"}
_MUL = {"arith.mulf", "arith.muli"}
_FMA = {"math.fma"}
_CASTS = {"arith.extf", "arith.extsi", "arith.extui"}


class NearMiss(Exception):
    """A nest that holds an update ``C[..] += x * y`` but is not a contraction: why."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message = message
        self.loc = loc


@dataclass
class _Update:
    stmt: Statement
    store: AffineStoreOp
    acc: AffineLoadOp
    factors: list[AffineLoadOp]
    scalars: list[Value]
    # the cast of a factor to C's type (``arith.extf``, ``extsi``, ``extui``), by id(load)
    casts: dict


def raise_contractions(module: Operation, *, remark: Remark = None,
                       expand: Optional[Callable[[Contraction], None]] = None,
                       on_raised: Optional[Callable[[list], None]] = None,
                       machine=None, threads: int = 1) -> int:
    """Raise every top-level nest of ``module``'s functions that computes a contraction (see
    the module docstring): ``expand(contraction)`` builds its replacement in front of the nest
    (:func:`polyopt.schedules.expand.expand_contraction` with the pipeline's options; by
    default the naive nest of the contraction), then the nest is erased.  A nest that is not
    a contraction is tried as a convolution
    (:func:`polyopt.schedules.raise_convolutions.recognize_convolution`), whose implicit GEMM
    goes through the same ``expand`` (``machine`` and ``threads`` choose its K_C and loop
    order).  Near misses get a
    remark.  ``on_raised(ops)`` receives the top-level ops that replaced each raised nest.
    Returns how many nests were raised."""
    if expand is None:
        from .expand import expand_contraction
        expand = lambda con: expand_contraction(con, tiled=False)   # noqa: E731
    raised = 0
    for func in [op for op in module.walk() if op.name == "func.func"]:
        if not func.regions or not func.regions[0].blocks:
            continue
        # every nest is recognized before any is expanded: the register-tile steps of an
        # expansion (scalar replacement, unroll-and-jam) may rewrite the nests after it
        found = []
        for top in list(func.regions[0].blocks[0].ops):
            if not isinstance(top, AffineForOp):
                continue
            try:
                con = recognize_nest(top)
            except NearMiss as miss:
                con, miss = _try_convolution(top, miss)
                if con is None:
                    if remark is not None:
                        remark(miss.loc or top.loc, miss.message)
                    continue
            if isinstance(con, Contraction):
                con = _one_gemm_over_the_pixels(top, con)
            if con is not None:
                found.append((top, con))
        for top, con in found:
            if isinstance(con, _Privatized):
                con = con.materialize()
            what = "contraction" if isinstance(con, Contraction) else "convolution"
            if remark is not None:
                remark(top.loc, f"raised to a {what}: {con.describe()}")
            block = top.parent
            before = {id(op) for op in block.ops}
            if isinstance(con, Contraction):
                expand(con)
            else:
                con.expand(expand, machine, threads)
            top.erase()
            raised += 1
            if on_raised is not None:
                on_raised([op for op in block.ops if id(op) not in before])
    return raised


def _try_convolution(top: AffineForOp, miss: NearMiss):
    """(the nest as a convolution, None) or (None, the near miss to report: the
    convolution's when the nest looks like one, else the contraction's)."""
    from .raise_convolutions import recognize_convolution
    try:
        conv = recognize_convolution(top)
    except NearMiss as conv_miss:
        return None, NearMiss(f"not raised to a convolution: {conv_miss.message}",
                              conv_miss.loc)
    if conv is None:
        return None, NearMiss(f"not raised to a contraction: {miss.message}", miss.loc)
    return conv, None


def _one_gemm_over_the_pixels(top: AffineForOp, con: Contraction):
    """``con``, or the nest as a convolution when it is one and ``con`` runs it as a batch of
    GEMMs over output rows: a 1x1 convolution with stride 2 is a contraction whose output
    rows cannot be merged into one column (B's rows are every other input row), so raising
    it as a contraction made 28 GEMMs of 512x28x256 at ResNet's conv3_1, the register
    tile's 64 columns a third full.  The convolution's implicit GEMM has every pixel of an
    image as a column, B's strided rows gathered by its packing copy."""
    if not con.batch:
        return con
    from .raise_convolutions import recognize_convolution
    try:
        conv = recognize_convolution(top)
    except NearMiss:
        return con
    if conv is None or not hasattr(conv, "spec"):
        return con
    images = conv.spec.output.type.shape[0]
    gemms = 1
    for extent in con.batch:
        gemms *= extent
    return conv if gemms > images else con


def recognize_nest(top: AffineForOp) -> Optional[Contraction]:
    """The contraction the nest ``top`` computes (anchored at ``top``), ``None`` when it holds
    no update statement; raises :class:`NearMiss` when it holds one but is not a
    contraction."""
    try:
        model = extract([top])
    except ScheduleError:
        return None   # opaque nests are reported by report_opaque_nests
    updates = [u for u in (_match_update(s, top) for s in model.statements) if u is not None]
    if not updates:
        return None
    if len(updates) > 1:
        names = ", ".join(u.stmt.name for u in updates)
        raise NearMiss(f"the nest holds {len(updates)} reductions ({names}); a contraction "
                       f"is one", top.loc)
    upd = updates[0]
    printer = value_namer(top)
    return _contraction(model, upd, top, lambda v: printer.value_name(v).lstrip("%"))


# ---------------------------------------------------------------------------------------------
# the update statement


def _defined_outside(v: Value, top: Operation) -> bool:
    owner = v.defining_op
    if owner is None:
        block_owner = v.block.parent_op
        return block_owner is not top and not top.is_proper_ancestor_of(block_owner)
    return owner is not top and not top.is_proper_ancestor_of(owner)


def _match_update(stmt: Statement, top: Operation) -> Optional[_Update]:
    """The statement as ``C[f] = C[f] + product`` (``None``: it is not a reduction)."""
    stores = [op for op in stmt.group if isinstance(op, AffineStoreOp)]
    if len(stores) != 1:
        return None
    store = stores[0]
    rel = {id(x.op): x.relation for x in stmt.accesses}
    v = store.value
    op = v.defining_op
    if op is None:
        return None
    candidates = []
    if op.name in _ADD:
        candidates = [(op.operands[0], [op.operands[1]]), (op.operands[1], [op.operands[0]])]
    elif op.name in _FMA:
        candidates = [(op.operands[2], [op.operands[0], op.operands[1]])]
    acc = None
    for a, terms in candidates:
        d = a.defining_op
        if isinstance(d, AffineLoadOp) and d.memref is store.memref and \
                id(d) in rel and rel[id(d)].is_equal(rel[id(store)]):
            acc, product = d, terms
            break
    if acc is None:
        return None
    loc = stmt.loc
    factors: list[AffineLoadOp] = []
    scalars: list[Value] = []
    casts: dict = {}
    used = {id(op), id(acc), id(store)}

    def flatten(x: Value) -> None:
        d = x.defining_op
        if d is not None and d.name in _MUL and len(x.uses) == 1 and id(d) not in used and \
                not _defined_outside(x, top):
            used.add(id(d))
            flatten(d.operands[0])
            flatten(d.operands[1])
        elif isinstance(d, AffineLoadOp) and not _defined_outside(x, top):
            used.add(id(d))
            factors.append(d)
        elif d is not None and d.name in _CASTS and len(x.uses) == 1 and \
                isinstance(d.operands[0].defining_op, AffineLoadOp) and \
                not _defined_outside(x, top):
            load = d.operands[0].defining_op
            used.update((id(d), id(load)))
            factors.append(load)
            casts[id(load)] = d.name
        elif _defined_outside(x, top):
            scalars.append(x)
        elif d is not None and (d.name == "arith.constant" or d.name == "constant"):
            scalars.append(x)
        else:
            what = f"'{d.name}'" if d is not None else "a loop induction variable"
            raise NearMiss(f"the update of C multiplies {what}, not a memref element or a "
                           f"loop-invariant scalar", loc)

    for t in product:
        flatten(t)
    if len(factors) != 2:
        raise NearMiss(f"the update of C multiplies {len(factors)} memref elements; a "
                       f"contraction multiplies two", loc)
    extra = [o for o in stmt.group if id(o) not in used]
    if extra:
        raise NearMiss(f"the update statement also computes '{extra[0].name}'",
                       extra[0].loc or loc)
    if len(acc.result.uses) != 1:
        raise NearMiss("the value of C read by the update is used elsewhere", acc.loc or loc)
    for f in factors:
        if len(f.result.uses) != 1:
            raise NearMiss("a factor of the update is used elsewhere", f.loc or loc)
    return _Update(stmt, store, acc, factors, scalars, casts)


# ---------------------------------------------------------------------------------------------
# subscripts and loops


def _subscripts(relation: isl.Map, what: str, loop_names: list[str], loc) -> list[tuple]:
    """Per memref dimension ``(loop position or None, stride, offset)`` of an access."""
    pieces = []
    relation.as_pw_multi_aff().foreach_piece(lambda s, ma: pieces.append(ma))
    if len(pieces) != 1:
        raise NearMiss(f"the subscripts of {what} are piecewise", loc)
    ma = pieces[0]
    n_in = relation.dim(isl.dim_type.in_)
    out = []
    for o in range(relation.dim(isl.dim_type.out)):
        aff = ma.get_at(o)
        if aff.get_denominator_val().to_python() != 1:
            raise NearMiss(f"subscript #{o} of {what} divides", loc)
        for p in range(aff.dim(isl.dim_type.param)):
            if aff.get_coefficient_val(isl.dim_type.param, p).to_python() != 0:
                raise NearMiss(f"subscript #{o} of {what} depends on a value of the function "
                               f"(a symbol), not only on the loops", loc)
        used = [(d, aff.get_coefficient_val(isl.dim_type.in_, d).to_python())
                for d in range(n_in)
                if aff.get_coefficient_val(isl.dim_type.in_, d).to_python() != 0]
        const = aff.get_constant_val().to_python()
        if len(used) > 1:
            names = " and ".join(loop_names[d] for d, _ in used)
            raise NearMiss(f"subscript #{o} of {what} combines loops {names}", loc)
        if used and used[0][1] < 0:
            raise NearMiss(f"subscript #{o} of {what} runs backwards along loop "
                           f"{loop_names[used[0][0]]}", loc)
        out.append((used[0][0], used[0][1], const) if used else (None, 1, const))
    seen = [d for d, _, _ in out if d is not None]
    if len(seen) != len(set(seen)):
        raise NearMiss(f"{what} uses a loop in two subscripts (a diagonal)", loc)
    return out


def _box(domain: isl.Set, loop_names: list[str], loc) -> list[tuple[int, int]]:
    """``(lower bound, extent)`` of each dimension of a box domain."""
    bounds = []
    for d in range(domain.dim(isl.dim_type.set)):
        lo, hi = domain.dim_min(d), domain.dim_max(d)
        if not (lo.is_cst() and hi.is_cst()):
            raise NearMiss(f"loop {loop_names[d]} has bounds that are not constants ('?' "
                           f"sizes or bounds that depend on other loops): the BLIS pipeline "
                           f"needs a box of static extents", loc)
        lv = lo.get_pieces()[0][1].get_constant_val().to_python()
        hv = hi.get_pieces()[0][1].get_constant_val().to_python()
        bounds.append((lv, hv - lv + 1))
    text = " and ".join(f"{lo} <= i{d} < {lo + n}" for d, (lo, n) in enumerate(bounds))
    names = ", ".join(f"i{d}" for d in range(len(bounds)))
    dom = domain.reset_tuple_id()
    box = isl.Set(f"{{ [{names}] : {text} }}").align_params(dom.get_space())
    if not box.is_equal(dom):
        raise NearMiss("the iteration domain is not a box (steps, or bounds that depend on "
                       "other loops)", loc)
    return bounds


def _contraction(model: PolyhedralModel, upd: _Update, top: AffineForOp, namer
                 ) -> Contraction:
    stmt = upd.stmt
    loc = stmt.loc
    loop_names = ["%" + namer(iv) for iv in stmt.ivs]
    rel = {id(x.op): x.relation for x in stmt.accesses}
    c_mem = upd.store.memref
    f0, f1 = upd.factors
    from ..memref_layout.data_copy import alias_root
    for f in (f0, f1):
        if alias_root(f.memref) is alias_root(c_mem):
            subs = _subscripts(rel[id(f)], "C", loop_names, loc)
            text = ", ".join(_sub_text(s, loop_names) for s in subs)
            raise NearMiss(f"reads C[{text}] as a factor: not a contraction", f.loc or loc)
    types = {str(v.type.element_type) for v in (c_mem, f0.memref, f1.memref)}
    etype = c_mem.type.element_type
    mixed = len(types) != 1
    if mixed and not (len(upd.casts) == 2 and
                      _mixed_key(f0, f1, c_mem) in MIXED_TYPES):
        raise NearMiss(f"the operands have different element types ({', '.join(sorted(types))})"
                       f"; the pipeline takes (A, B, C) = " + ", ".join(
                           "(" + ", ".join(c) + ")" for c in MIXED_TYPES)
                       + " with A and B cast to C's type", loc)
    if not mixed and (not isinstance(etype, (FloatType, IntegerType)) or
                      (isinstance(etype, FloatType) and etype.width not in (32, 64))):
        raise NearMiss(f"element type {etype}: the BLIS pipeline takes f32, f64 and integers",
                       loc)
    c_sub = _subscripts(rel[id(upd.store)], "C", loop_names, loc)
    x_sub = _subscripts(rel[id(f0)], "the first factor", loop_names, loc)
    y_sub = _subscripts(rel[id(f1)], "the second factor", loop_names, loc)
    bounds = _box(stmt.domain, loop_names, loc)
    in_c = {d for d, _, _ in c_sub if d is not None}
    in_x = {d for d, _, _ in x_sub if d is not None}
    in_y = {d for d, _, _ in y_sub if d is not None}
    roles: dict[int, str] = {}
    xs, ys, batch, red, private = [], [], [], [], []
    for d in range(len(loop_names)):
        where = (d in in_c, d in in_x, d in in_y)
        name = loop_names[d]
        if where == (True, True, True):
            batch.append(d)
        elif where == (True, True, False):
            xs.append(d)
        elif where == (True, False, True):
            ys.append(d)
        elif where == (False, True, True):
            red.append(d)
        elif where == (True, False, False):
            raise NearMiss(f"loop {name} indexes C but neither factor: a broadcast, not a "
                           f"contraction", loc)
        elif where == (False, True, False) or where == (False, False, True):
            private.append(d)
        elif bounds[d][1] != 1:
            raise NearMiss(f"no operand depends on loop {name}: the product is accumulated "
                           f"{bounds[d][1]} times", loc)
    if private and mixed:
        raise NearMiss("a loop indexes only one factor of a mixed-type product: the "
                       "low-precision GEMM takes plain matrix products", loc)
    if private:
        return _privatized(model, upd, top, namer, loop_names, bounds, private, xs, ys, batch,
                           red, c_sub, x_sub, y_sub, f0, f1)
    if not xs or not ys:
        return _matrix_vector(model, upd, top, namer, loop_names, bounds, xs + ys, red, batch,
                              c_sub, {id(f0): x_sub, id(f1): y_sub}, f0, f1)
    if not red:
        raise NearMiss("0 reduction loops (none): the BLIS pipeline takes one", loc)
    # C's innermost own loop is its column: A is the factor that loop does not index
    c_order = [d for d, _, _ in c_sub if d is not None and d not in batch]
    col = c_order[-1]
    if col in xs:
        xs, ys, x_sub, y_sub, f0, f1 = ys, xs, y_sub, x_sub, f1, f0
    row = [d for d in c_order if d in xs][-1]
    batch += [d for d in xs + ys if d not in (row, col)]
    batch.sort()
    outer = _column_pair(batch, col, ys, bounds, c_sub, y_sub, c_mem, f1.memref)
    if outer is not None:
        batch.remove(outer)
    # more reduction loops than one: K is the innermost of A's, the others a batch summed
    # into the same C (BRGEMM, linalg.batch_reduce_matmul), innermost of the batch loops
    a_order = [d for d, _, _ in x_sub if d in red]
    k_loop = a_order[-1]
    batch += [d for d in red if d != k_loop]
    red = [k_loop]
    for t, d in enumerate(batch):
        roles[d] = f"b{t}"
    roles[row], roles[col], roles[red[0]] = ROW, COL, RED

    def operand(memref: Value, subs) -> Operand:
        out = []
        for d, stride, off in subs:
            if d is None:
                out.append(Subscript(None, 1, off))
            else:
                out.append(Subscript(roles[d], stride, off + stride * bounds[d][0]))
        return Operand(memref, tuple(out))

    beta = _initialization(model, upd, top, c_mem, namer)
    alpha = _alpha(upd, loc)
    names = {f"b{t}": d for t, d in enumerate(batch)}
    names.update({ROW: row, COL: col, RED: red[0]})
    where = ", ".join(f"{r} = {loop_names[d]}" for r, d in names.items())
    mems = ", ".join(f"{r} = {_mem_name(v, namer)}"
                     for r, v in (("A", f0.memref), ("B", f1.memref), ("C", c_mem)))
    scalars = []
    for what, s in (("alpha", alpha), ("beta", beta)):
        if isinstance(s, Value):
            scalars.append(f"{what} = {_mem_name(s, namer)}")
    c_view, b_view = c_mem, f1.memref
    if outer is not None:
        where += f" ({loop_names[outer]} and {loop_names[col]} merged: C's and B's rows " \
                 f"are contiguous)"
        c_view, c_sub = _collapse_pair(c_mem, c_sub, col, top)
        b_view, y_sub = _collapse_pair(f1.memref, y_sub, col, top)
        bounds = list(bounds)
        bounds[col] = (0, bounds[outer][1] * bounds[col][1])
    origin = f"with {where}; {mems}" + (f"; {', '.join(scalars)}" if scalars else "")
    return Contraction("contraction", top.loc, top, operand(f0.memref, x_sub),
                       operand(b_view, y_sub), operand(c_view, c_sub),
                       bounds[row][1], bounds[col][1], bounds[red[0]][1],
                       batch=tuple(bounds[d][1] for d in batch), alpha=alpha, beta=beta,
                       origin=origin, a_unsigned=upd.casts.get(id(f0)) == "arith.extui",
                       b_unsigned=upd.casts.get(id(f1)) == "arith.extui")


def _alpha(upd: _Update, loc):
    """The update's scalar factor (a number when constant), or None."""
    if not upd.scalars:
        return None
    if len(upd.scalars) > 1:
        raise NearMiss(f"the update multiplies {len(upd.scalars)} scalars; a contraction "
                       f"has one alpha", loc)
    return _constant_or_value(upd.scalars[0])


def _matrix_vector(model: PolyhedralModel, upd: _Update, top: AffineForOp, namer, loop_names,
                   bounds, own, red, batch, c_sub, subs: dict, f0, f1) -> Contraction:
    """A nest whose C is a vector (``y[i] += A[i, k] * x[k]``, or ``y[j] += x[k] * A[k, j]``,
    in any loop order, ``linalg.matvec`` and ``linalg.vecmat`` among them; with batch loops
    indexing all three, ``linalg.batch_matvec``/``batch_vecmat``) as the contraction of an M x 1
    or 1 x N C: C and the vector factor seen as matrices of one column (one row) through
    ``memref.expand_shape`` of their last dimension, so that
    :func:`polyopt.schedules.gemv.expand_gemv` takes it (the dot form when the matrix's rows
    run along k, else the axpy form), per batch slice."""
    loc = upd.stmt.loc
    c_mem = upd.store.memref
    if not own and len(red) == 1 and not batch:
        return _dot_product(model, upd, top, namer, loop_names, bounds, red[0], c_sub, subs,
                            f0, f1)
    if len(own) != 1 or len(red) != 1:
        raise NearMiss("C has no row or no column loop of its own, and is not a vector of "
                       "one loop times a matrix, nor a scalar sum of products: a sum, not a "
                       "matrix product", loc)
    d_c, d_k = own[0], red[0]

    def core(xs):
        return [x for x in xs if x[0] not in batch]
    vec, mat = (f0, f1) if len(core(subs[id(f0)])) == 1 else (f1, f0)
    vec_sub, mat_sub = subs[id(vec)], subs[id(mat)]
    order = [d for d, _, _ in core(mat_sub) if d is not None]
    if not (len(core(c_sub)) == 1 and len(core(vec_sub)) == 1 and len(core(mat_sub)) == 2
            and sorted(order) == sorted((d_c, d_k))):
        raise NearMiss("C is a vector, but not one loop's vector times a matrix of that loop "
                       "and the reduction's: not a matrix-vector product", loc)
    if c_sub[-1][0] != d_c or vec_sub[-1][0] != d_k:
        raise NearMiss("a batch of matrix-vector products whose vectors do not run along "
                       "their memrefs' last dimension", loc)
    beta = _initialization(model, upd, top, c_mem, namer)
    alpha = _alpha(upd, loc)
    rows_along_k = order == [d_c, d_k]          # y = A x, else y = x^T A
    from ..affine.builder import Builder
    from ..affine.dialects.memref_views import ExpandShapeOp

    def as_matrix(v: Value, column: bool) -> Value:
        *lead, n = v.type.shape
        groups = [[q] for q in range(len(lead))] + [[len(lead), len(lead) + 1]]
        shape = (*lead, *((n, 1) if column else (1, n)))
        return Builder.before(top).create(ExpandShapeOp.build, v, groups, shape,
                                          loc=top.loc).results[0]

    roles = {d: f"b{t}" for t, d in enumerate(batch)}
    roles.update({d_c: ROW if rows_along_k else COL, d_k: RED})

    def sub(d, stride, off) -> Subscript:
        if d is None:
            return Subscript(None, 1, off)
        return Subscript(roles[d], stride, off + stride * bounds[d][0])
    one = Subscript(COL if rows_along_k else ROW)

    def viewed(subs_, column: bool) -> tuple:
        *lead, last = (sub(*x) for x in subs_)
        return (*lead, last, one) if column else (*lead, one, last)
    mat_op = Operand(mat.memref, tuple(sub(*x) for x in mat_sub))
    vec_view, c_view = as_matrix(vec.memref, rows_along_k), as_matrix(c_mem, rows_along_k)
    vec_op = Operand(vec_view, viewed(vec_sub, rows_along_k))
    c = Operand(c_view, viewed(c_sub, rows_along_k))
    if rows_along_k:
        a, b = mat_op, vec_op
        m, n, a_fac, b_fac = bounds[d_c][1], 1, mat, vec
    else:
        a, b = vec_op, mat_op
        m, n, a_fac, b_fac = 1, bounds[d_c][1], vec, mat
    own_name = "i" if rows_along_k else "j"
    mems = ", ".join(f"{r} = {_mem_name(v, namer)}"
                     for r, v in (("A", a_fac.memref), ("B", b_fac.memref), ("C", c_mem)))
    batch_names = "".join(f"b{t} = {loop_names[d]}, " for t, d in enumerate(batch))
    origin = (f"with {batch_names}{own_name} = {loop_names[d_c]}, k = {loop_names[d_k]}; "
              f"{mems}; a matrix-vector product, {_mem_name(vec.memref, namer)} and C seen as "
              f"{'columns' if rows_along_k else 'rows'} (memref.expand_shape)")
    return Contraction("contraction", top.loc, top, a, b, c, m, n, bounds[d_k][1],
                       batch=tuple(bounds[d][1] for d in batch), alpha=alpha, beta=beta,
                       origin=origin,
                       a_unsigned=upd.casts.get(id(a_fac)) == "arith.extui",
                       b_unsigned=upd.casts.get(id(b_fac)) == "arith.extui")


def _dot_product(model: PolyhedralModel, upd: _Update, top: AffineForOp, namer, loop_names,
                 bounds, d_k, c_sub, subs: dict, f0, f1) -> Contraction:
    """``s += x[k] * y[k]`` (``linalg.dot``; C a scalar: a rank-0 memref or one element of a
    one-element memref) as the 1 x 1 x K contraction of views (``memref.expand_shape``): x a
    row, y a column, C one element, which the GEMV dot form runs with vector accumulators,
    reassociating the sum as a BLAS ``dot`` does."""
    from ..affine.builder import Builder
    from ..affine.dialects.memref_views import ExpandShapeOp
    loc = upd.stmt.loc
    c_mem = upd.store.memref
    ct = c_mem.type
    xs_, ys_ = subs[id(f0)], subs[id(f1)]
    scalar_c = ct.rank == 0 or (ct.rank == 1 and ct.shape[0] == 1 and len(c_sub) == 1)
    if not (scalar_c and len(xs_) == 1 and len(ys_) == 1 and
            xs_[0][0] == d_k and ys_[0][0] == d_k and
            all(f.memref.type.rank == 1 for f in (f0, f1))):
        raise NearMiss("C is one element, but not a sum over one loop of products of two "
                       "vectors of that loop: not a dot product", loc)
    beta = _initialization(model, upd, top, c_mem, namer)
    alpha = _alpha(upd, loc)
    b = Builder.before(top)

    def view(v: Value, groups, shape) -> Value:
        return b.create(ExpandShapeOp.build, v, groups, shape, loc=top.loc).results[0]
    n_x, n_y = f0.memref.type.shape[0], f1.memref.type.shape[0]
    x_view = view(f0.memref, [[0, 1]], (1, n_x))
    y_view = view(f1.memref, [[0, 1]], (n_y, 1))
    c_view = view(c_mem, [] if ct.rank == 0 else [[0, 1]], (1, 1))

    def sub(s) -> Subscript:
        _, stride, off = s
        return Subscript(RED, stride, off + stride * bounds[d_k][0])
    a = Operand(x_view, (Subscript(ROW), sub(xs_[0])))
    bm = Operand(y_view, (sub(ys_[0]), Subscript(COL)))
    c = Operand(c_view, (Subscript(ROW), Subscript(COL)))
    mems = ", ".join(f"{r} = {_mem_name(v, namer)}"
                     for r, v in (("A", f0.memref), ("B", f1.memref), ("C", c_mem)))
    origin = (f"with k = {loop_names[d_k]}; {mems}; a dot product, A a row, B a column and C "
              f"one element (memref.expand_shape)")
    return Contraction("contraction", top.loc, top, a, bm, c, 1, 1, bounds[d_k][1],
                       alpha=alpha, beta=beta, origin=origin,
                       a_unsigned=upd.casts.get(id(f0)) == "arith.extui",
                       b_unsigned=upd.casts.get(id(f1)) == "arith.extui")


def _column_pair(batch, col, ys, bounds, c_sub, y_sub, c_mem, b_mem) -> Optional[int]:
    """A column loop ``o`` of C and B that sits right before the column loop ``j`` in both
    (``C[.., o, j]``, ``B[.., o, j]``, unit strides from 0, ``j`` spanning its whole
    dimension, row-major memrefs of static sizes there): one column loop over the collapsed
    pair, one GEMM of ``O x J`` columns instead of ``O`` GEMMs of ``J`` (as MLIR's
    collapse-dimensions does for linalg).  An NCHW 1x1 convolution's ``(oh, ow)`` is such a
    pair: 56 GEMMs of 256x56x64 ran at 80 GFLOPS where one of 256x3136x64 runs at the GEMM's
    speed.  Returns ``o`` or None."""
    def position(subs, d):
        found = [k for k, (e, _, _) in enumerate(subs) if e == d]
        return found[0] if len(found) == 1 else None

    def plain(subs, k, d):
        e, stride, off = subs[k]
        return e == d and stride == 1 and off == 0 and bounds[d][0] == 0

    for outer in [d for d in batch if d in ys]:
        if all(_pair_at(mem.type, subs, position(subs, col), position(subs, outer), col, outer,
                        bounds, plain) for mem, subs in ((c_mem, c_sub), (b_mem, y_sub))):
            return outer
    return None


def _pair_at(t, subs, k, k_outer, col, outer, bounds, plain) -> bool:
    return (k is not None and k > 0 and k_outer == k - 1 and plain(subs, k, col) and
            plain(subs, k - 1, outer) and t.layout is None and t.shape[k] == bounds[col][1]
            and t.shape[k - 1] is not None)


def _collapse_pair(mem: Value, subs, col: int, top: Operation):
    """``mem`` with the dimension of loop ``col`` folded into the one before it
    (``memref.collapse_shape``, built in front of ``top``), and its subscripts."""
    from ..affine.builder import Builder
    from ..affine.dialects.memref import CollapseShapeOp
    subs = list(subs)
    k = [i for i, (e, _, _) in enumerate(subs) if e == col][0]
    groups = [[i] for i in range(k - 1)] + [[k - 1, k]] + \
        [[i] for i in range(k + 1, mem.type.rank)]
    view = Builder.before(top).create(CollapseShapeOp.build, mem, groups, loc=top.loc)
    return view.results[0], subs[:k - 1] + [subs[k]] + subs[k + 1:]


def _mixed_key(f0, f1, c_mem) -> tuple:
    """(A, B, C) element types, either factor as A (the order is settled later)."""
    a, b = sorted(str(f.memref.type.element_type) for f in (f0, f1))
    return (a, b, str(c_mem.type.element_type))


def _sub_text(s, loop_names) -> str:
    d, stride, off = s
    if d is None:
        return str(off)
    t = loop_names[d] if stride == 1 else f"{stride} * {loop_names[d]}"
    return t if off == 0 else f"{t} + {off}"


def _mem_name(v: Value, namer) -> str:
    return "%" + namer(v)


def _constant_or_value(v: Value):
    """A constant scalar as its number (folds when 1), else the value."""
    d = v.defining_op
    if d is not None and d.name in ("arith.constant", "constant"):
        attr = d.attributes.get("value")
        num = getattr(attr, "value", None)
        if isinstance(num, (int, float)) and not isinstance(num, bool):
            return num
    return v


def _initialization(model: PolyhedralModel, upd: _Update, top: Operation, c_mem: Value,
                    namer):
    """beta from the nest's other statement (``C = 0``: 0, ``C = C * beta``: beta), ``None``
    when there is none; :class:`NearMiss` when there are others or the order is wrong."""
    others = [s for s in model.statements if s is not upd.stmt]
    if not others:
        return None
    if len(others) > 1:
        names = ", ".join(s.name for s in others)
        raise NearMiss(f"the nest also holds statements {names} besides the product", top.loc)
    s = others[0]
    stores = [op for op in s.group if isinstance(op, AffineStoreOp)]
    loads = [op for op in s.group if isinstance(op, AffineLoadOp)]
    why = f"the nest also holds {s.name}, which is not C = 0 or C = C * beta"
    if len(stores) != 1 or stores[0].memref is not c_mem:
        raise NearMiss(why, s.loc)
    store = stores[0]
    rel = {id(x.op): x.relation for x in s.accesses}
    v = store.value
    d = v.defining_op
    beta = None
    if d is not None and d.name in ("arith.constant", "constant") and not loads:
        b = _constant_or_value(v)
        if b == 0 and not isinstance(b, Value):
            beta = 0
    elif d is not None and d.name in _MUL and len(loads) == 1 and \
            loads[0].memref is c_mem and len(s.group) == 3:
        x, y = d.operands
        load = loads[0]
        other = y if x is load.result else x if y is load.result else None
        if other is not None and _defined_outside(other, top) and \
                rel[id(load)].is_equal(rel[id(store)]):
            beta = _constant_or_value(other)
    if beta is None:
        raise NearMiss(why, s.loc)
    w_init = rel[id(store)]
    w_upd = next(x.relation for x in upd.stmt.accesses if x.op is upd.store)
    if not w_init.is_injective():
        raise NearMiss(f"{s.name} writes some elements of C more than once", s.loc)
    if not w_init.range().is_equal(w_upd.range()):
        raise NearMiss(f"{s.name} initializes other elements of C than the product updates",
                       s.loc)
    # every element is initialized before its first update
    pairs = w_upd.apply_range(w_init.reverse())          # update -> init of the same element
    later = upd.stmt.schedule.lex_lt_map(s.schedule)     # update -> init scheduled after it
    if not pairs.intersect(later).is_empty():
        raise NearMiss(f"{s.name} scales C after some of its updates", s.loc)
    return beta


# ---------------------------------------------------------------------------------------------
# a temporary reused across outer loops (PolyBench doitgen)


class _Privatized:
    """``for r, q { for p { T[p] = 0; for s: T[p] += A[r, q, s] * B[s, p] }
    for p: X[.., p] = T[p] }``: the product of the rows (r, q) of A, written to a fresh
    ``(R*Q) x P`` buffer by one contraction, then copied to X; T ends with the last row, as
    after the nest.  :meth:`materialize` builds the buffer and A's collapsed view in front of
    the nest and the copies after it."""

    def __init__(self, top, con_args, temp, a_mem, a_groups, rows, p_extent, copy, copy_subs,
                 copy_p, loc):
        self.top, self.con_args, self.temp, self.a_mem = top, con_args, temp, a_mem
        self.a_groups, self.rows, self.p_extent = a_groups, rows, p_extent
        self.copy, self.copy_subs, self.copy_p, self.loc = copy, copy_subs, copy_p, loc

    def materialize(self) -> Contraction:
        from ..affine.affine_expr import AffineMap, constant, dim
        from ..affine.builder import Builder
        from ..affine.dialects.memref import AllocOp, CollapseShapeOp, DeallocOp
        from ..affine.types import MemRefType
        from .nest_building import constant_loops
        loc, top = self.loc, self.top
        etype = self.temp.type.element_type
        nrows = 1
        for e in self.rows:
            nrows *= e
        b = Builder.before(top)
        buf = b.create(AllocOp.build, MemRefType((nrows, self.p_extent), etype),
                       loc=loc).results[0]
        a2 = self.a_mem
        if self.a_groups is not None:
            a2 = b.create(CollapseShapeOp.build, self.a_mem, self.a_groups, loc=loc).results[0]
        kw = dict(self.con_args)
        kw["a"] = Operand(a2, kw["a"])
        kw["c"] = Operand(buf, (Subscript(ROW), Subscript(COL)))
        con = Contraction(anchor=top, **kw)
        # after the nest: X[.., p] = buf[row(r, q), p] for every row, then T = the last row
        after = Builder.after(top)
        loops, body = constant_loops(after, list(self.rows) + [self.copy_p], loc)
        ivs = [l.induction_var for l in loops]
        nr = len(self.rows)
        row = constant(0)
        for t, e in enumerate(self.rows):
            row = row * e + dim(t)
        v = body.create(AffineLoadOp.build, buf, ivs,
                        map=AffineMap.get(len(ivs), 0, (row, dim(nr))), loc=loc).result
        exprs = tuple(constant(off) if d is None else dim(d) * stride + off
                      for d, stride, off in self.copy_subs)
        body.create(AffineStoreOp.build, v, self.copy.memref, ivs,
                    map=AffineMap.get(len(ivs), 0, exprs), loc=self.copy.loc)
        last = nrows - 1
        tail = Builder.after(loops[0])
        (p_loop,), pb = constant_loops(tail, [self.p_extent], loc)
        pv = p_loop.induction_var
        v = pb.create(AffineLoadOp.build, buf, [pv],
                      map=AffineMap.get(1, 0, (constant(last), dim(0))), loc=loc).result
        pb.create(AffineStoreOp.build, v, self.temp, [pv], loc=loc)
        Builder.after(p_loop).create(DeallocOp.build, buf, loc=loc)
        return con


def _privatized(model, upd, top, namer, loop_names, bounds, private, xs, ys, batch, red,
                c_sub, x_sub, y_sub, f0, f1):
    """The doitgen form (see :class:`_Privatized`), or :class:`NearMiss`."""
    loc = upd.stmt.loc
    name = loop_names[private[0]]
    plain = NearMiss(f"loop {name} only indexes {_mem_name(f0.memref if private[0] in [d for d, _, _ in x_sub] else f1.memref, namer)}: "
                     f"a sum along it, not a contraction", loc)
    if xs or batch or len(ys) != 1 or len(red) != 1:
        raise plain
    if not all(d in [e for e, _, _ in x_sub] for d in private):
        f0, f1, x_sub, y_sub = f1, f0, y_sub, x_sub
        if not all(d in [e for e, _, _ in x_sub] for d in private):
            raise plain
    stmt = upd.stmt
    if private != list(range(len(private))):
        raise NearMiss(f"the temporary's rows (loops {', '.join(loop_names[d] for d in private)})"
                       f" are not the outer loops of the update", loc)
    col, k = ys[0], red[0]
    temp = upd.store.memref
    if list(c_sub) != [(col, 1, 0)] or temp.type.rank != 1 or             temp.type.shape[0] != bounds[col][1] or bounds[col][0] != 0:
        raise NearMiss("the temporary is not a vector T[p] written whole", loc)
    others = [s for s in model.statements if s is not stmt]
    if len(others) != 2:
        raise plain
    outer = stmt.loops[:len(private)]
    for s in others:
        if [id(l) for l in s.loops[:len(private)]] != [id(l) for l in outer]:
            raise NearMiss(f"{s.name} is not inside the temporary's row loops", s.loc)
    init, copy = others
    if any(isinstance(op, AffineLoadOp) for op in init.group):   # the copy reads T
        init, copy = copy, init
    # init: T[p] = 0 over the whole vector, before the update in each row
    i_stores = [op for op in init.group if isinstance(op, AffineStoreOp)]
    if len(i_stores) != 1 or len(init.group) != 1 or i_stores[0].memref is not temp or             _constant_or_value(i_stores[0].value) != 0 or             isinstance(_constant_or_value(i_stores[0].value), Value):
        raise NearMiss(f"{init.name} is not T = 0 before the product", init.loc)
    # copy: X[..] = T[p] after the update in each row
    c_loads = [op for op in copy.group if isinstance(op, AffineLoadOp)]
    c_stores = [op for op in copy.group if isinstance(op, AffineStoreOp)]
    if len(copy.group) != 2 or len(c_loads) != 1 or len(c_stores) != 1 or             c_loads[0].memref is not temp or c_stores[0].value is not c_loads[0].result:
        raise NearMiss(f"{copy.name} is not a copy of the temporary", copy.loc)
    copy_names = ["%" + namer(iv) for iv in copy.ivs]
    crel = {id(x.op): x.relation for x in copy.accesses}
    irel = {id(x.op): x.relation for x in init.accesses}
    np_ = len(private)
    if copy.depth != np_ + 1 or init.depth != np_ + 1:
        raise plain
    cbounds = _box(copy.domain, copy_names, copy.loc)
    ibounds = _box(init.domain, ["%" + namer(iv) for iv in init.ivs], init.loc)
    if _subscripts(crel[id(c_loads[0])], "the temporary", copy_names, copy.loc) !=             [(np_, 1, 0)] or cbounds[np_] != (0, temp.type.shape[0]) or             _subscripts(irel[id(i_stores[0])], "the temporary", copy_names, init.loc) !=             [(np_, 1, 0)] or ibounds[np_] != (0, temp.type.shape[0]):
        raise NearMiss(f"{copy.name} or {init.name} does not cover the temporary T[p]",
                       copy.loc)
    if any(bounds[d] != (0, bounds[d][1]) for d in private):
        raise plain
    copy_subs = _subscripts(crel[id(c_stores[0])], "the copy's target", copy_names, copy.loc)
    # order inside each row: init < update < copy (the 2d+1 positions after the row loops)
    if not (tuple(init.position[np_:]) < tuple(stmt.position[np_:]) <
            tuple(copy.position[np_:])):
        raise NearMiss("the temporary is not initialized, updated, then copied in each row",
                       loc)
    # A's rows (r, q) collapse into one: its leading subscripts, whole, row-major
    a_mem = f0.memref
    at = a_mem.type
    lead = [x_sub[t] for t in range(np_)]
    if at.layout is not None or any(sd != (d, 1, 0) for sd, d in zip(lead, private)) or             any(at.shape[t] != bounds[d][1] for t, d in enumerate(private)):
        raise NearMiss(f"the rows of {_mem_name(a_mem, namer)} along "
                       f"{', '.join(loop_names[d] for d in private)} are not whole leading "
                       f"dimensions (they cannot be one row index)", loc)
    rest = x_sub[np_:]
    if len(rest) != 1 or rest[0][0] != k:
        raise plain
    groups = [list(range(np_)), [np_]] if np_ > 1 else None
    # the copy may write A itself: legal when nothing flows from the copies back to the
    # products (the dependences on everything but the temporary, which becomes the buffer)
    from .dependences import compute_dependences
    deps = compute_dependences(model)
    tname = model.memref_names[temp]
    for kind, mname, pairs in deps.items():
        if mname == tname or pairs.is_empty():
            continue
        bad = isl.UnionMap.from_map(isl.Map(f"{model.param_space()}{{ {copy.name}[{', '.join(f'x{t}' for t in range(copy.depth))}] -> "
                                             f"{stmt.name}[{', '.join(f'y{t}' for t in range(stmt.depth))}] }}"))
        bad = bad.union(isl.UnionMap.from_map(isl.Map(f"{model.param_space()}{{ {copy.name}[{', '.join(f'x{t}' for t in range(copy.depth))}] -> "
                                                       f"{init.name}[{', '.join(f'y{t}' for t in range(init.depth))}] }}")))
        if not pairs.intersect(bad).is_empty():
            raise NearMiss(f"{copy.name} writes {model.describe_memref(mname)}, which a later "
                           f"row of the product reads ({kind} dependence)", copy.loc)
    nrows = 1
    for d in private:
        nrows *= bounds[d][1]
    kstart = bounds[k][0]
    a_subs = (Subscript(ROW), Subscript(RED, rest[0][1], rest[0][2] + rest[0][1] * kstart))
    b_subs = []
    for d, stride, off in y_sub:
        role = {col: COL, k: RED}.get(d)
        if d is not None and role is None:
            raise plain
        b_subs.append(Subscript(None, 1, off) if d is None else
                      Subscript(role, stride, off + stride * bounds[d][0]))
    where = ", ".join(loop_names[d] for d in private)
    origin = (f"with i = ({where}) through a fresh {nrows}x{bounds[col][1]} buffer for "
              f"{_mem_name(temp, namer)}, j = {loop_names[col]}, k = {loop_names[k]}; "
              f"A = {_mem_name(a_mem, namer)}, B = {_mem_name(f1.memref, namer)}; then "
              f"{copy.name} copies the buffer")
    con_args = dict(kind="contraction", loc=top.loc, a=a_subs,
                    b=Operand(f1.memref, tuple(b_subs)), m=nrows, n=bounds[col][1],
                    k=bounds[k][1], beta=0, origin=origin)
    return _Privatized(top, con_args, temp, a_mem, groups,
                       [bounds[d][1] for d in private], bounds[col][1], c_stores[0], copy_subs,
                       cbounds[np_][1], loc)
