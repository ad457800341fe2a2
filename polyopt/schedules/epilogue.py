"""Fused epilogues: the elementwise nest over C that follows a contraction (a bias, a scale,
ReLU or a clamp, GELU, a cast into another matrix), applied to C's register tile after the
last K block, before its single store, instead of a second pass over C.

MLIR counterpart: ``transform.structured.fuse_into_containing_op`` of the elementwise consumer
into the matmul's tile loop (``scf::tileConsumerAndFuseProducers``), then vectorized with the
tile.

A nest is an epilogue of the contraction ``con`` (matrix form, static M x N) when it follows
``con``'s op in the same block (only ``arith.constant`` ops between, moved in front; a
``linalg.generic`` or ``linalg.map`` with parallel loops only, writing C, is taken as its loop
nest) and

* it is two perfectly nested ``affine.for`` loops over 0..M and 0..N (either order), step 1;
* its body loads C[i, j] once, stores one value to C[i, j] or to another M x N memref D[i, j]
  (a cast output), and otherwise holds ``affine.load`` of memrefs indexed by ``[j]`` (a bias
  along rows), ``[i]`` (along columns) or ``[i, j]`` (a residual), constants, and the
  elementwise ops of :data:`ELEMENTWISE` on them and on scalars defined before the nest;
* nothing it reads is written by it (except C) and D is none of A, B or a loaded memref.

:func:`epilogue_of` recognizes it; :class:`Epilogue` gives its values (the memrefs and scalars
it reads from outside) and writes its body as MLIR text over a vector of w columns of C or over
one element (``emit``), for the GEMM templates (:mod:`~polyopt.schedules.lowp_gemm`,
:mod:`~polyopt.schedules.amx_gemm`) to splice where C's tile is final, and for the f32/f64
BLIS nest's stores of C in its last K block (:mod:`~polyopt.schedules.tile_epilogue`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..affine.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..affine.ir import Operation, Value
from ..affine.types import FloatType, IntegerType, VectorType

#: elementwise ops an epilogue may use: name -> form ("binary", "unary", "cmp", "select",
#: "cast", "fma")
ELEMENTWISE = {
    **{f"arith.{n}": "binary" for n in (
        "addf", "subf", "mulf", "divf", "maximumf", "minimumf", "maxnumf", "minnumf",
        "addi", "subi", "muli", "maxsi", "minsi", "maxui", "minui", "andi", "ori", "xori",
        "shrsi", "shrui", "shli", "divsi")},
    "math.powf": "binary",
    **{n: "unary" for n in ("arith.negf", "math.tanh", "math.exp", "math.erf", "math.absf",
                            "math.sqrt", "math.rsqrt", "math.log", "math.absi")},
    "arith.cmpf": "cmp", "arith.cmpi": "cmp", "arith.select": "select",
    **{f"arith.{n}": "cast" for n in ("truncf", "extf", "sitofp", "uitofp", "fptosi",
                                      "fptoui", "trunci", "extsi", "extui")},
    "math.fma": "fma",
}


@dataclass
class Epilogue:
    """A recognized epilogue (see the module docstring)."""

    nest: AffineForOp
    body: list[Operation]
    c_load: AffineLoadOp
    store: AffineStoreOp
    loads: dict = field(default_factory=dict)      # id(load) -> "row" | "col" | "tile"
    externals: list[Value] = field(default_factory=list)   # memrefs and scalars it reads
    # a memref over a convolution's output shape -> its matrix view (by id)
    views: dict = field(default_factory=dict)

    def view(self, v: Value) -> Value:
        """What the GEMM template reads for ``v``: its matrix view, or ``v``."""
        return self.views.get(id(v), v)

    @property
    def output(self) -> Value:
        """The matrix the result is stored to (C itself, or a cast output)."""
        return self.view(self.store.memref)

    @property
    def stores_to_c(self) -> bool:
        return self.store.memref is self.c_load.memref

    def describe(self) -> str:
        ops = [op.name.split(".", 1)[1] for op in self.body if op.name in ELEMENTWISE]
        return ", ".join(dict.fromkeys(ops)) or "a copy"

    def lane_by_lane(self) -> str:
        """A note on the math functions the tile computes one lane at a time (libm, exact)
        where ``fastmath<afn>`` would let libmvec take whole vectors, or ``""``."""
        from ..codegen.vector_math import LIBMVEC
        slow = [op.name.split(".", 1)[1] for op in self.body
                if op.name in LIBMVEC and not any(f in _fastmath(op) for f in ("afn", "fast"))]
        if not slow:
            return ""
        names = ", ".join(dict.fromkeys(slow))
        return (f"; {names} computed lane by lane by libm: fastmath<afn> on it lets glibc's "
                f"vector {names} take whole vectors")

    def emit(self, t, depth: int, value: str, args: dict, lanes: Optional[int], row: str,
             col: str) -> str:
        """The body as text on ``t`` (:class:`~polyopt.schedules.gemv.MlirLines`) at
        ``depth``: C's element (or ``lanes`` columns, a vector) is ``value``, the row and
        column of C are the index expressions ``row`` and ``col``, ``args[v]`` names an
        external value in the template; returns the stored value's name."""
        names: dict[int, str] = {id(self.c_load.result): value}

        def ty(t_) -> str:
            return f"vector<{lanes}x{t_}>" if lanes else str(t_)

        def scalar_to_vector(name: str, t_) -> str:
            if not lanes:
                return name
            out = t.fresh("eb")
            t.add(depth, f"{out} = vector.broadcast {name} : {t_} to {ty(t_)}")
            return out

        def get(v: Value) -> str:
            if id(v) in names:
                return names[id(v)]
            name = scalar_to_vector(args[id(v)], v.type)   # a scalar from outside
            names[id(v)] = name
            return name

        for op in self.body:
            if op is self.c_load or op is self.store:
                continue
            res = op.results[0] if op.results else None
            out = t.fresh("e")
            if isinstance(op, AffineLoadOp):
                mem, kind = args[id(op.memref)], self.loads[id(op)]
                mt = self.view(op.memref).type
                index = {"row": row, "col": col, "tile": f"{row}, {col}"}[kind]
                if lanes and kind != "row":
                    t.add(depth, f"{out} = affine.vector_load {mem}[{index}] : {mt}, "
                                 f"{ty(res.type)}")
                else:
                    t.add(depth, f"{out} = affine.load {mem}[{index}] : {mt}")
                    out = scalar_to_vector(out, res.type)
            elif op.name == "arith.constant":
                t.add(depth, f"{out} = arith.constant {op.attributes['value']}")
                out = scalar_to_vector(out, res.type)
            else:
                form = ELEMENTWISE[op.name]
                xs = [get(v) for v in op.operands]
                if form in ("binary", "unary", "fma"):
                    t.add(depth, f"{out} = {op.name} {', '.join(xs)}{_fastmath(op)} : "
                                 f"{ty(res.type)}")
                elif form == "cmp":
                    t.add(depth, f"{out} = {op.name} {op.predicate}, {xs[0]}, {xs[1]} : "
                                 f"{ty(op.operands[0].type)}")
                elif form == "select":
                    t.add(depth, f"{out} = arith.select {xs[0]}, {xs[1]}, {xs[2]} : "
                                 f"{ty(op.operands[0].type)}, {ty(res.type)}")
                else:
                    t.add(depth, f"{out} = {op.name} {xs[0]} : {ty(op.operands[0].type)} to "
                                 f"{ty(res.type)}")
            names[id(res)] = out
        return get(self.store.value)


def _fastmath(op: Operation) -> str:
    """`` fastmath<...>`` as the op carries it (``afn`` makes a vector tanh libmvec's), or
    nothing."""
    fm = op.attributes.get("fastmath")
    text = str(fm) if fm is not None else ""
    if "<" not in text or text.endswith("<none>"):
        return ""
    return " fastmath" + text[text.index("<"):]


def _source_of_matrix(c: Value) -> tuple[Value, bool]:
    """(the memref the nest may be written over, whether it is C's collapsed source): a
    convolution's C is its output with all dimensions but the last folded into rows."""
    d = c.defining_op
    if d is not None and d.name == "memref.collapse_shape":
        rank = d.source.type.rank
        groups = [list(g) for g in d.reassociation]
        if groups == [list(range(rank - 1)), [rank - 1]]:
            return d.source, True
    return c, False


def _elementwise_linalg_on(op: Operation, source: Value) -> bool:
    """A structured linalg op with only parallel loops whose one output is ``source``."""
    from ..affine.dialects.linalg import LinalgStructuredOp
    if not isinstance(op, LinalgStructuredOp) or op.name == "linalg.fill":
        return False
    try:
        iterators = op.iterator_types
        outputs = list(op.outputs)
    except (AttributeError, ValueError):
        return False
    return all(str(i) == "parallel" for i in iterators) and len(outputs) == 1 and \
        outputs[0] is source


def memrefs_read_by(con) -> tuple:
    """What the contraction ``con`` reads, which its epilogue may not write: A, B, and the
    anchor's operands (a convolution's image, which A's im2col stand-in does not name)."""
    return (con.a.memref, con.b.memref,
            *(v for v in con.anchor.operands if hasattr(v.type, "shape")))


def epilogue_of(anchor: Operation, c: Value, m: int, n: int,
                reads: tuple = (), remark: Optional[Callable] = None, loc=None,
                collapse: Optional[Callable[[Value], Value]] = None) -> Optional[Epilogue]:
    """The epilogue following ``anchor`` (the contraction's op or nest) over ``c`` (M x N),
    or None; ``reads``: the contraction's A and B, which the epilogue may not write.  When
    ``c`` collapses a memref O (a convolution's output), the nest runs over O's dimensions in
    order and its other full-size operands are collapsed the same way with ``collapse``
    (built in front of ``anchor``).  The constants between ``anchor`` and the nest are moved
    in front of ``anchor``."""
    from ..memref_layout.data_copy import alias_root
    block = anchor.parent
    ops = block.ops
    k = ops.index(anchor) + 1
    consts = []
    while k < len(ops) and ops[k].name == "arith.constant":
        consts.append(ops[k])
        k += 1
    source, collapsed = _source_of_matrix(c)
    if k < len(ops) and _elementwise_linalg_on(ops[k], source):
        # a linalg.generic / linalg.map on the result: its loop nest (what
        # --convert-linalg-to-affine-loops would make of it later anyway)
        from ..affine.linalg_to_affine import lower_to_affine_loops
        lower_to_affine_loops(ops[k])
        ops = block.ops
    if k >= len(ops) or not isinstance(ops[k], AffineForOp):
        return None
    if collapsed and collapse is None:
        return None
    shape = source.type.shape
    loops = [ops[k]]
    while len(loops) < len(shape):
        inner_ops = [op for op in loops[-1].body.ops if op.name != "affine.yield"]
        if len(inner_ops) != 1 or not isinstance(inner_ops[0], AffineForOp):
            return None
        loops.append(inner_ops[0])
    outer = loops[0]
    for lp in loops:
        if lp.step != 1 or not lp.has_constant_bounds or lp.constant_lower_bound != 0 or \
                lp.inits or lp.results:
            return None
    body = [op for op in loops[-1].body.ops if op.name != "affine.yield"]
    if any(isinstance(op, AffineForOp) or op.regions for op in body):
        return None
    ivs = [lp.induction_var for lp in loops]
    root_c = alias_root(source)
    c_loads = [op for op in body if isinstance(op, AffineLoadOp)
               and alias_root(op.memref) is root_c]
    stores = [op for op in body if isinstance(op, AffineStoreOp)]
    if len(c_loads) != 1 or len(stores) != 1:
        return None
    c_load, store = c_loads[0], stores[0]
    if c_load.memref is not source or not c_load.map.is_identity():
        return None
    # the order of C's subscripts: for a matrix either loop order, for a collapsed output the
    # nest's order
    subs = [id(v) for v in c_load.map_operands]
    extent = {id(lp.induction_var): lp.constant_upper_bound for lp in loops}
    if sorted(subs) != sorted(id(v) for v in ivs) or \
            tuple(extent[x] for x in subs) != tuple(shape):
        return None
    if collapsed and subs != [id(v) for v in ivs]:
        return None
    if tuple(shape) != (m, n) and not collapsed:
        return None
    rows, col = tuple(subs[:-1]), subs[-1]

    def subscript_role(op) -> Optional[str]:
        if not op.map.is_identity():
            return None
        got = tuple(id(v) for v in op.map_operands)
        return {(col,): "col", rows: "row", (*rows, col): "tile"}.get(got)

    out = store.memref
    if subscript_role(store) != "tile" or out.type.shape != tuple(shape):
        return None
    roots_read = {id(alias_root(v)) for v in reads}
    if alias_root(out) is not root_c and id(alias_root(out)) in roots_read:
        return None
    inside = {id(op) for op in body}
    externals: list[Value] = []
    loads = {}

    def external(v: Value) -> bool:
        d = v.defining_op
        if d is not None and id(d) in inside:
            return False
        if any(v is iv for iv in ivs):
            raise ValueError("an induction variable")
        if d is not None and d in consts:
            return True
        if d is not None and d.parent is block and ops.index(d) > ops.index(anchor):
            raise ValueError("defined after the contraction")
        return True

    sizes = {"row": tuple(shape[:-1]), "col": (shape[-1],), "tile": tuple(shape)}
    try:
        for op in body:
            if op is store:
                if external(store.value):
                    return None
                continue
            if isinstance(op, AffineLoadOp):
                if op is c_load:
                    continue
                role = subscript_role(op)
                root = alias_root(op.memref)
                if role is None or root is root_c or root is alias_root(out):
                    return None
                if op.memref.type.shape != sizes[role] or (collapsed and role == "row"):
                    return None
                loads[id(op)] = role
                if all(op.memref is not e for e in externals):
                    externals.append(op.memref)
                continue
            if op.name != "arith.constant" and op.name not in ELEMENTWISE:
                return None
            if op.name == "arith.constant":
                if isinstance(op.results[0].type, VectorType):
                    return None
                continue
            if not all(isinstance(r.type, (FloatType, IntegerType)) for r in op.results):
                return None
            for v in op.operands:
                if external(v) and all(v is not e for e in externals):
                    if isinstance(v.type, (FloatType, IntegerType)):
                        externals.append(v)
                    else:
                        return None
    except ValueError as why:
        if remark is not None:
            remark(loc or outer.loc, f"the nest after the contraction uses {why}: not fused")
        return None
    for cst in consts:            # in front of the contraction, where the GEMM is built
        cst.move_before(anchor)
    views = {id(source): c}
    if collapsed:                 # the operands over the output's shape, as matrices
        for v in [*externals, out]:
            if id(v) not in views and getattr(v.type, "shape", None) == tuple(shape):
                views[id(v)] = collapse(v)
    return Epilogue(outer, body, c_load, store, loads, externals, views)
