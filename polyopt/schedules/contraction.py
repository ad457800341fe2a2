"""The record every producer of a contraction hands to the BLIS pipeline (issue 14, part 0).

``C[c(b, i, j)] = beta * C[c(b, i, j)] + alpha * sum_k A[a(b, i, k)] * B[b(b, k, j)]`` over the
box ``0 <= b_t < batch_t, 0 <= i < m, 0 <= j < n, 0 <= k < k``, where each subscript of an
operand is ``stride * loop + offset`` for one loop (or a constant): A and B may be transposed,
strided or slices of bigger memrefs through their subscripts.  ``hop.matmul``,
``linalg.matmul``/``batch_matmul``, the implicit GEMM of a convolution
(:mod:`polyopt.schedules.conv_gemm`) and nests raised from the affine code a user wrote
(:mod:`polyopt.schedules.raise_contractions`) all become one of these, and
:func:`polyopt.schedules.expand.expand_contraction` builds the BLIS nest from it, whoever produced
it.

The expansion works on the *matrix form*: no batch, ``A[i, k]``, ``B[k, j]``, ``C[i, j]`` on
rank-2 memrefs.  :func:`to_matrix_form` gets there with views (MLIR has the same ops): a loop per
batch dimension, ``memref.subview`` for offsets, strides and the batch slice,
``memref.transpose`` when a matrix is stored the other way round::

    C[b, i, j] += A[b, k, i] * B[k, 2 * j]          (A transposed per batch, B strided)
  ->
    affine.for %b = 0 to NB {
      %A2 = memref.subview %A[%b, 0, 0] [1, K, M] [1, 1, 1] : ... to memref<KxM, strided<..>>
      %At = memref.transpose %A2 (d0, d1) -> (d1, d0) : ... to memref<MxK, strided<[1, M], ..>>
      %B2 = memref.subview %B[0, 0] [K, N] [1, 2] : ... to memref<KxN, strided<[2N, 2]>>
      %C2 = memref.subview %C[%b, 0, 0] [1, M, N] [1, 1, 1] : ... to memref<MxN, strided<..>>
      <the BLIS nest of C2 += At * B2>
    }

The packing of ``--hopt-copy`` then copies the views into the contiguous micro-panels, so a
transposed or strided operand costs nothing in the register tile.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence, Union

from ..affine.affine_expr import AffineMap, constant, dim
from ..affine.builder import Builder
from ..affine.diagnostics import Location
from ..affine.ir import Operation, Value
from ..affine.types import MemRefType, StridedLayout

__all__ = ["Subscript", "Operand", "Contraction", "contraction_of_op", "to_matrix_form",
           "STAND_IN_ATTR", "STAND_IN_RUN_ATTR", "STAND_IN_WINDOW_RUN_ATTR",
           "STAND_IN_USER_TILES_ATTR", "ROW", "COL",
           "RED"]

#: marks the im2col stand-in of a convolution (conv_gemm), whose accesses are rewritten later
STAND_IN_ATTR = "polyopt.im2col_stand_in"
#: on the stand-in: the length of the aligned runs of its columns that are vectors of the input
STAND_IN_RUN_ATTR = "polyopt.im2col_input_vectors"
#: on the stand-in: the length of the runs of its columns, aligned from column 0, that are
#: consecutive elements of the input (a window row's channels, or one window position's)
STAND_IN_WINDOW_RUN_ATTR = "polyopt.im2col_window_run"
#: on the stand-in: the convolution's tile parameters were given (attributes, pass options),
#: not only chosen by the convolution's model
STAND_IN_USER_TILES_ATTR = "polyopt.im2col_user_tiles"

#: the loop names of a contraction: batch loops are ``"b0"``, ``"b1"``, ...
ROW, COL, RED = "i", "j", "k"

Extent = Union[int, Value]
Scalar = Union[None, int, float, Value]


@dataclass(frozen=True)
class Subscript:
    """One subscript of an operand: ``stride * loop + offset`` (``loop`` None: ``offset``)."""

    loop: Optional[str]
    stride: int = 1
    offset: int = 0

    def __str__(self) -> str:
        if self.loop is None:
            return str(self.offset)
        s = self.loop if self.stride == 1 else f"{self.stride} * {self.loop}"
        return s if self.offset == 0 else f"{s} + {self.offset}"


@dataclass(frozen=True, eq=False)
class Operand:
    """A memref and its subscripts, one per memref dimension."""

    memref: Value
    subscripts: tuple[Subscript, ...]

    def loops(self) -> list[str]:
        return [s.loop for s in self.subscripts if s.loop is not None]

    def map(self, loop_names: Sequence[str]) -> AffineMap:
        """The access function over ``loop_names`` (the contraction's dims, in order)."""
        pos = {n: k for k, n in enumerate(loop_names)}
        exprs = tuple(constant(s.offset) if s.loop is None
                      else dim(pos[s.loop]) * s.stride + s.offset for s in self.subscripts)
        return AffineMap.get(len(loop_names), 0, exprs)

    def describe(self, name: str) -> str:
        return f"{name}[{', '.join(str(s) for s in self.subscripts)}]"


def _canonical(memref: Value, rows: str, cols: str) -> Operand:
    return Operand(memref, (Subscript(rows), Subscript(cols)))


@dataclass(frozen=True, eq=False)
class Contraction:
    """``C = beta * C + alpha * A . B`` over a box (see the module docstring).

    ``kind`` and ``loc`` say where it came from (``"hop.matmul"``, ``"linalg.matmul"``, ``"affine
    nest"``, ...): remarks and errors name them.  ``anchor`` is the op the expansion is built
    in front of (the op or the nest it replaces, or the terminator of a batch loop).
    ``alpha``/``beta``: ``None`` when absent (beta ``None``: C accumulates; beta 0: C is
    overwritten, not read), a number, or a loop-invariant SSA scalar.  ``tile_params`` and
    ``schedule`` are the BLIS parameters and the explicit schedule a ``hop.matmul`` may carry.
    """

    kind: str
    loc: Optional[Location]
    anchor: Operation
    a: Operand
    b: Operand
    c: Operand
    m: Extent
    n: Extent
    k: Extent
    batch: tuple[Extent, ...] = ()
    alpha: Scalar = None
    beta: Scalar = None
    tile_params: dict = field(default_factory=dict)
    schedule: Optional[AffineMap] = None
    origin: str = ""
    # integer operands narrower than C extend unsigned (``linalg.matmul``'s ``cast_unsigned``,
    # ``hop.matmul``'s ``a_unsigned``); float ones extend exactly
    a_unsigned: bool = False
    b_unsigned: bool = False

    @property
    def loop_names(self) -> tuple[str, ...]:
        return tuple(f"b{t}" for t in range(len(self.batch))) + (ROW, COL, RED)

    @property
    def summed_batch(self) -> tuple[str, ...]:
        """The batch loops C does not index: their products all add into the same C
        (``linalg.batch_reduce_matmul``'s batch, BRGEMM's), so they run one after the other."""
        in_c = set(self.c.loops())
        return tuple(n for n in self.loop_names[:len(self.batch)] if n not in in_c)

    @property
    def element_type(self):
        return self.c.memref.type.element_type

    @property
    def is_mixed(self) -> bool:
        """A or B has a narrower element type than C (bf16 x bf16 -> f32, i8 x i8 -> i32)."""
        et = self.element_type
        return any(v.type.element_type != et for v in (self.a.memref, self.b.memref))

    @property
    def operands(self) -> tuple[Value, Value, Value]:
        return self.a.memref, self.b.memref, self.c.memref

    @property
    def is_matrix_form(self) -> bool:
        """No batch, and ``A[i, k]``, ``B[k, j]``, ``C[i, j]`` on rank-2 memrefs of the
        contraction's extents: what the BLIS expansion takes."""
        if self.batch:
            return False
        want = ((self.a, ROW, RED, self.m, self.k), (self.b, RED, COL, self.k, self.n),
                (self.c, ROW, COL, self.m, self.n))
        for x, r, c, er, ec in want:
            if tuple(x.subscripts) != (Subscript(r), Subscript(c)):
                return False
            shape = x.memref.type.shape
            for size, extent in zip(shape, (er, ec)):
                if isinstance(extent, int) and size != extent:
                    return False
        return True

    @property
    def has_static_shape(self) -> bool:
        return all(isinstance(e, int) for e in (self.m, self.n, self.k, *self.batch)) and \
            all(v.type.has_static_shape for v in self.operands)

    def static_mnk(self) -> tuple[int, int, int]:
        """(M, N, K), static ones."""
        return self.m, self.n, self.k

    def describe(self) -> str:
        """``C[i, j] += A[i, k] * B[k, j] (M x N x K = 8x9x10)``-like text for remarks."""
        lhs = self.c.describe("C")
        op = "+=" if self.beta is None else "="
        beta = ""
        if self.beta is not None and not (isinstance(self.beta, (int, float)) and self.beta == 0):
            beta = f"{_scalar_text(self.beta, 'beta')} * {lhs} + "
        alpha = "" if self.alpha is None else f"{_scalar_text(self.alpha, 'alpha')} * "
        sizes = "x".join(str(e) if isinstance(e, int) else "?" for e in
                         (*self.batch, self.m, self.n, self.k))
        names = "x".join(self.loop_names)
        summed = "".join(f", {n} summed into C" for n in self.summed_batch)
        text = (f"{lhs} {op} {beta}{alpha}{self.a.describe('A')} * {self.b.describe('B')} "
                f"({names} = {sizes}{summed})")
        return f"{text} {self.origin}" if self.origin else text


def _scalar_text(s: Scalar, which: str) -> str:
    """A number as itself, an SSA scalar by its role (``origin`` names the value)."""
    return which if isinstance(s, Value) else repr(s)


def contraction_of_op(op: Operation) -> Contraction:
    """The contraction of a ``hop.matmul`` (its tile attributes, ``schedule``, ``alpha``/
    ``beta``), a ``linalg.matmul`` or a ``linalg.batch_matmul`` with default indexing maps."""
    from ..affine.dialects.linalg import BatchMatmulOp
    a, bmat, c = op.operands[:3]
    tiles = dict(getattr(op, "tile_params", {}) or {})
    alpha = getattr(op, "alpha", None)
    beta = getattr(op, "beta", None)
    unsigned = bool(getattr(op, "unsigned_cast", False))
    signs = dict(a_unsigned=unsigned or bool(getattr(op, "a_unsigned", False)),
                 b_unsigned=unsigned)
    if isinstance(op, BatchMatmulOp):
        (nb, m, k), n = a.type.shape, bmat.type.shape[2]
        ab = Operand(a, (Subscript("b0"), Subscript(ROW), Subscript(RED)))
        bb = Operand(bmat, (Subscript("b0"), Subscript(RED), Subscript(COL)))
        cb = Operand(c, (Subscript("b0"), Subscript(ROW), Subscript(COL)))
        return Contraction(op.name, op.loc, op, ab, bb, cb, m, n, k, batch=(nb,),
                           tile_params=tiles, **signs)
    if getattr(op, "batch", None) is not None:       # hop.matmul with a batch dimension
        def batched(v, rows, cols):
            lead = (Subscript("b0"),) if v.type.rank == 3 else ()
            return Operand(v, lead + (Subscript(rows), Subscript(cols)))
        m, n, k = op.shape
        return Contraction(op.name, op.loc, op, batched(a, ROW, RED), batched(bmat, RED, COL),
                           batched(c, ROW, COL), m, n, k, batch=(op.batch,), alpha=alpha,
                           beta=beta, tile_params=tiles, **signs)
    (m, k), n = a.type.shape, bmat.type.shape[1]
    return Contraction(op.name, op.loc, op, _canonical(a, ROW, RED), _canonical(bmat, RED, COL),
                       _canonical(c, ROW, COL), m, n, k, alpha=alpha, beta=beta,
                       tile_params=tiles, schedule=getattr(op, "schedule", None), **signs)


def to_matrix_form(con: Contraction) -> Contraction:
    """The matrix form of ``con`` (see the module docstring): loops over the batch and views of
    the operands are created in front of ``con.anchor``; the result's anchor is inside them.
    ``con`` itself when it is in matrix form already.  Static extents only."""
    if con.is_matrix_form:
        return con
    if _shared_b_folds(con):
        return _fold_batch_into_rows(con)
    from ..affine.dialects.affine import AffineForOp
    b = Builder.before(con.anchor)
    if con.summed_batch and con.beta is not None and con.beta != 1:
        _scale_c(b, con)           # once: every product of the summed batch adds into C
        con = replace(con, beta=None)
    batch_ivs = {}
    for t, extent in enumerate(con.batch):
        loop = b.create(AffineForOp.build_constant, 0, extent, loc=con.loc)
        batch_ivs[f"b{t}"] = loop.induction_var
        b = Builder.before_terminator(loop.body)
    extents = {ROW: con.m, COL: con.n, RED: con.k}
    a = _matrix_view(b, con.a, ROW, RED, extents, batch_ivs, con.loc)
    bm = _matrix_view(b, con.b, RED, COL, extents, batch_ivs, con.loc)
    c = _matrix_view(b, con.c, ROW, COL, extents, batch_ivs, con.loc)
    anchor = b.block.ops[b.index] if b.index < len(b.block.ops) else con.anchor
    return replace(con, anchor=anchor, a=_canonical(a, ROW, RED), b=_canonical(bm, RED, COL),
                   c=_canonical(c, ROW, COL), batch=())


def _scale_c(b: Builder, con: Contraction) -> None:
    """``C = beta * C`` (``C = beta`` when beta is 0: C is not read) over the elements of C the
    contraction writes, a nest over C's own loops built at ``b``."""
    from ..affine.dialects.affine import AffineLoadOp, AffineStoreOp
    from ..affine.dialects.arith import FLOAT_BINARY, INT_BINARY, ConstantOp
    from ..affine.types import FloatType
    from .nest_building import extent_loops
    names = list(dict.fromkeys(con.c.loops()))
    extents = {**{f"b{t}": e for t, e in enumerate(con.batch)}, ROW: con.m, COL: con.n}
    loops, body = extent_loops(b, [extents[n] for n in names], con.loc)
    ivs = [loop.induction_var for loop in loops]
    at = con.c.map(names)
    etype = con.element_type
    is_float = isinstance(etype, FloatType)
    beta = con.beta
    if not isinstance(beta, Value):
        beta = body.create(ConstantOp, beta if is_float else int(beta), etype,
                           loc=con.loc).result
    scaled = beta
    if con.beta != 0:
        mul = FLOAT_BINARY["mulf"] if is_float else INT_BINARY["muli"]
        old = body.create(AffineLoadOp.build, con.c.memref, ivs, at, loc=con.loc).result
        scaled = body.create(mul, old, beta, loc=con.loc).result
    body.create(AffineStoreOp.build, scaled, con.c.memref, ivs, at, loc=con.loc)


def _shared_b_folds(con: Contraction) -> bool:
    """One B for the whole batch, and A and C row-major with the batch outermost: the batch
    of products is one product with ``batch * M`` rows, B packed once for all of them."""
    def batch_then(x: Operand, cols: str) -> bool:
        t = x.memref.type
        return t.layout is None and t.has_static_shape and \
            x.subscripts == (Subscript("b0"), Subscript(ROW), Subscript(cols))
    return len(con.batch) == 1 and isinstance(con.batch[0], int) and \
        "b0" not in con.b.loops() and batch_then(con.a, RED) and batch_then(con.c, COL)


def _fold_batch_into_rows(con: Contraction) -> Contraction:
    """``C[b, i, j] += A[b, i, k] * B[k, j]`` as ``C'[r, j] += A'[r, k] * B[k, j]`` over
    ``memref.collapse_shape`` views of A and C (r = b * M + i)."""
    from ..affine.dialects.memref import CollapseShapeOp
    b = Builder.before(con.anchor)

    def rows(v: Value) -> Value:
        return b.create(CollapseShapeOp.build, v, [[0, 1], [2]], loc=con.loc).results[0]

    extents = {ROW: con.m, COL: con.n, RED: con.k}
    bm = _matrix_view(b, con.b, RED, COL, extents, {}, con.loc)
    return replace(con, a=_canonical(rows(con.a.memref), ROW, RED),
                   b=_canonical(bm, RED, COL), c=_canonical(rows(con.c.memref), ROW, COL),
                   m=con.batch[0] * con.m, batch=())


def _matrix_view(b: Builder, x: Operand, rows: str, cols: str, extents: dict,
                 batch_ivs: dict, loc) -> Value:
    """``x`` seen as the ``rows x cols`` matrix its subscripts address (one batch slice)."""
    from ..affine.dialects.affine import AffineApplyOp
    from ..affine.dialects.memref import strides_and_offset
    from ..affine.dialects.memref_views import SubViewOp, TransposeOp, subview_layout
    t: MemRefType = x.memref.type
    order = [s.loop for s in x.subscripts if s.loop in (rows, cols)]
    plain = order == [rows, cols] and t.rank == 2 and t.layout is None and \
        all(s.stride == 1 and s.offset == 0 for s in x.subscripts) and \
        t.shape == (extents[rows], extents[cols])
    if plain:
        return x.memref
    offsets: list = []
    sizes, strides = [], []
    for s in x.subscripts:
        if s.loop in batch_ivs:
            iv = batch_ivs[s.loop]
            if s.stride == 1 and s.offset == 0:
                offsets.append(iv)
            else:
                amap = AffineMap.get(1, 0, (dim(0) * s.stride + s.offset,))
                offsets.append(b.create(AffineApplyOp.build, amap, [iv], loc=loc).results[0])
        else:
            offsets.append(s.offset)
        kept = s.loop in (rows, cols)
        sizes.append(extents[s.loop] if kept else 1)
        strides.append(s.stride if kept else 1)
    static_off = [o if isinstance(o, int) else None for o in offsets]
    view_strides, view_offset = subview_layout(t, static_off, sizes, strides)
    kept_dims = [d for d, s in enumerate(x.subscripts) if s.loop in (rows, cols)]
    shape = tuple(sizes[d] for d in kept_dims)
    kept_strides = tuple(view_strides[d] for d in kept_dims)
    row_major = (shape[1], 1)
    layout = None if (kept_strides == row_major and view_offset == 0) else \
        StridedLayout(kept_strides, view_offset)
    vtype = MemRefType(shape, t.element_type, layout, t.memory_space)
    if list(offsets) == [0] * t.rank and sizes == list(t.shape) and strides == [1] * t.rank \
            and t.rank == 2:
        view = x.memref
    else:
        view = b.create(SubViewOp.build, x.memref, offsets, sizes, strides, vtype,
                        loc=loc).results[0]
    if order == [cols, rows]:
        vt: MemRefType = view.type
        so = strides_and_offset(vt)
        (s0, s1), off = so
        ttype = MemRefType((vt.shape[1], vt.shape[0]), vt.element_type,
                           StridedLayout((s1, s0), off), vt.memory_space)
        perm = AffineMap.get(2, 0, (dim(1), dim(0)))
        from ..affine.attributes import AffineMapAttr
        view = b.insert(TransposeOp(operands=[view], result_types=[ttype],
                                    attributes={"permutation": AffineMapAttr(perm)},
                                    loc=loc)).results[0]
    return view
