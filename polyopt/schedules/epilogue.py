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

    def emit(self, t, depth: int, value: str, args: dict, lanes: Optional[int], row: str = "",
             col: str = "", load: Optional[Callable] = None) -> str:
        """The body as text on ``t`` (:class:`~polyopt.schedules.gemv.MlirLines`) at
        ``depth``: C's element (or ``lanes`` columns, a vector) is ``value``, the row and
        column of C are the index expressions ``row`` and ``col``, ``args[v]`` names an
        external value in the template; returns the stored value's name.  ``load(op, name,
        role)``, where given, writes the load ``op`` of ``name`` (its role in :attr:`loads`)
        and returns (the value, whether it is a vector of ``lanes``; a scalar is then
        broadcast)."""
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
            if isinstance(op, AffineLoadOp) and load is not None:
                out, whole = load(op, args[id(op.memref)], self.loads[id(op)])
                if not whole:
                    out = scalar_to_vector(out, res.type)
            elif isinstance(op, AffineLoadOp):
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
    """A structured linalg op with only parallel loops and one output, reading or writing
    ``source``."""
    from ..affine.dialects.linalg import LinalgStructuredOp
    if not isinstance(op, LinalgStructuredOp) or op.name == "linalg.fill":
        return False
    try:
        iterators = op.iterator_types
        outputs = list(op.outputs)
    except (AttributeError, ValueError):
        return False
    return all(str(i) == "parallel" for i in iterators) and len(outputs) == 1 and \
        any(v is source for v in (*op.inputs, *outputs))


def memrefs_read_by(con) -> tuple:
    """What the contraction ``con`` reads, which its epilogue may not write: A, B, and the
    anchor's operands (a convolution's image, which A's im2col stand-in does not name)."""
    return (con.a.memref, con.b.memref,
            *(v for v in con.anchor.operands if hasattr(v.type, "shape")))


def _nest_after(anchor: Operation, source: Value, lower: bool = True):
    """(the constants between ``anchor`` and the nest, the nest's loops, its innermost body)
    of the perfect nest over ``source``'s shape right after ``anchor``, or None.  A
    ``linalg.generic`` / ``linalg.map`` there with parallel loops only, reading or writing
    ``source``, is first made its loop nest (not without ``lower``: None)."""
    block = anchor.parent
    ops = block.ops
    k = ops.index(anchor) + 1
    consts = []
    while k < len(ops) and ops[k].name == "arith.constant":
        consts.append(ops[k])
        k += 1
    if k < len(ops) and _elementwise_linalg_on(ops[k], source) and lower:
        # what --convert-linalg-to-affine-loops would make of it later anyway
        from ..affine.linalg_to_affine import lower_to_affine_loops
        lower_to_affine_loops(ops[k])
        ops = block.ops
    if k >= len(ops) or not isinstance(ops[k], AffineForOp):
        return None
    loops = [ops[k]]
    while len(loops) < len(source.type.shape):
        inner_ops = [op for op in loops[-1].body.ops if op.name != "affine.yield"]
        if len(inner_ops) != 1 or not isinstance(inner_ops[0], AffineForOp):
            return None
        loops.append(inner_ops[0])
    for lp in loops:
        if lp.step != 1 or not lp.has_constant_bounds or lp.constant_lower_bound != 0 or \
                lp.inits or lp.results:
            return None
    body = [op for op in loops[-1].body.ops if op.name != "affine.yield"]
    if any(isinstance(op, AffineForOp) or op.regions for op in body):
        return None
    return consts, loops, body


def _loaded_and_stored(body: list, source: Value):
    """(the one load of ``source`` by its identity map, the one store) in ``body``, or
    None."""
    from ..memref_layout.data_copy import alias_root
    root = alias_root(source)
    c_loads = [op for op in body if isinstance(op, AffineLoadOp) and alias_root(op.memref) is root]
    stores = [op for op in body if isinstance(op, AffineStoreOp)]
    if len(c_loads) != 1 or len(stores) != 1:
        return None
    if c_loads[0].memref is not source or not c_loads[0].map.is_identity():
        return None
    return c_loads[0], stores[0]


def _classify_body(anchor: Operation, source: Value, consts: list, loops: list, body: list,
                   c_load: AffineLoadOp, store: AffineStoreOp, role_of: Callable,
                   reads: tuple, remark: Optional[Callable], loc):
    """(the role of each load other than C's, the memrefs and scalars the body reads from
    outside) where the body is an epilogue, else None: ``role_of(load)`` gives a load's role
    (or None where its subscripts or shape do not fit); ``"tile"`` is the store's."""
    from ..memref_layout.data_copy import alias_root
    block = anchor.parent
    ops = block.ops
    ivs = [lp.induction_var for lp in loops]
    root_c, out = alias_root(source), store.memref
    if role_of(store) != "tile":
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

    try:
        for op in body:
            if op is store:
                if external(store.value):
                    return None
                continue
            if isinstance(op, AffineLoadOp):
                if op is c_load:
                    continue
                role = role_of(op)
                root = alias_root(op.memref)
                if role is None or root is root_c or root is alias_root(out):
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
            remark(loc or loops[0].loc, f"the nest after the contraction uses {why}: not "
                                        f"fused")
        return None
    return loads, externals


def epilogue_of(anchor: Operation, c: Value, m: int, n: int,
                reads: tuple = (), remark: Optional[Callable] = None, loc=None,
                collapse: Optional[Callable[[Value], Value]] = None) -> Optional[Epilogue]:
    """The epilogue following ``anchor`` (the contraction's op or nest) over ``c`` (M x N),
    or None; ``reads``: the contraction's A and B, which the epilogue may not write.  When
    ``c`` collapses a memref O (a convolution's output), the nest runs over O's dimensions in
    order and its other full-size operands are collapsed the same way with ``collapse``
    (built in front of ``anchor``).  The constants between ``anchor`` and the nest are moved
    in front of ``anchor``."""
    source, collapsed = _source_of_matrix(c)
    if collapsed and collapse is None:
        return None
    found = _nest_after(anchor, source)
    if found is None:
        return None
    consts, loops, body = found
    shape = source.type.shape
    ivs = [lp.induction_var for lp in loops]
    pair = _loaded_and_stored(body, source)
    if pair is None:
        return None
    c_load, store = pair
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
    sizes = {"row": tuple(shape[:-1]), "col": (shape[-1],), "tile": tuple(shape)}

    def role_of(op) -> Optional[str]:
        if not op.map.is_identity():
            return None
        got = tuple(id(v) for v in op.map_operands)
        role = {(col,): "col", rows: "row", (*rows, col): "tile"}.get(got)
        if role is None or op.memref.type.shape != sizes[role] or \
                (collapsed and role == "row"):
            return None
        return role

    classified = _classify_body(anchor, source, consts, loops, body, c_load, store, role_of,
                                reads, remark, loc)
    if classified is None:
        return None
    loads, externals = classified
    for cst in consts:            # in front of the contraction, where the GEMM is built
        cst.move_before(anchor)
    views = {id(source): c}
    if collapsed:                 # the operands over the output's shape, as matrices
        for v in [*externals, store.memref]:
            if id(v) not in views and getattr(v.type, "shape", None) == tuple(shape):
                views[id(v)] = collapse(v)
    return Epilogue(loops[0], body, c_load, store, loads, externals, views)


def pointwise_epilogue_of(anchor: Operation, out: Value, reads: tuple = (),
                          remark: Optional[Callable] = None, loc=None,
                          dry_run: bool = False) -> Optional[Epilogue]:
    """The epilogue following ``anchor`` over its N-d output ``out`` (a depthwise
    convolution's), or None: the nest runs over ``out``'s dimensions in order, and each load
    other than ``out``'s reads a memref by the induction variables of some of its dimensions,
    in order (a per-channel bias ``[c]``, a residual ``[n, c, h, w]``).  A load's role is the
    tuple of those dimensions' positions; the store's is ``"tile"``.  The constants between
    ``anchor`` and the nest are moved in front of ``anchor`` (with ``dry_run``, nothing
    changes)."""
    found = _nest_after(anchor, out, lower=not dry_run)
    if found is None:
        return None
    consts, loops, body = found
    shape = tuple(out.type.shape)
    ivs = [id(lp.induction_var) for lp in loops]
    if tuple(lp.constant_upper_bound for lp in loops) != shape:
        return None
    pair = _loaded_and_stored(body, out)
    if pair is None:
        return None
    c_load, store = pair
    if [id(v) for v in c_load.map_operands] != ivs:
        return None

    def role_of(op):
        if not op.map.is_identity():
            return None
        got = [id(v) for v in op.map_operands]
        if any(g not in ivs for g in got):
            return None
        dims = tuple(ivs.index(g) for g in got)
        if list(dims) != sorted(set(dims)) or \
                tuple(op.memref.type.shape) != tuple(shape[d] for d in dims):
            return None
        if len(dims) == len(shape):
            return "tile"
        return dims if isinstance(op, AffineLoadOp) else None

    classified = _classify_body(anchor, out, consts, loops, body, c_load, store, role_of,
                                reads, remark, loc)
    if classified is None:
        return None
    loads, externals = classified
    if not dry_run:
        for cst in consts:
            cst.move_before(anchor)
    return Epilogue(loops[0], body, c_load, store, loads, externals)


def held_for_fusion(ops: list[Operation]) -> Optional[Operation]:
    """The op (a linalg or ``hop`` op that ``hopt-expand`` expands) whose epilogue the scop
    ``ops`` is, or None: the automatic scheduler leaves such a nest as it is, for the
    expansion to fuse (a tiled nest would no longer be recognized)."""
    if len(ops) != 1 or not isinstance(ops[0], AffineForOp):
        return None
    block = ops[0].parent
    k = block.ops.index(ops[0]) - 1
    while k >= 0 and block.ops[k].name == "arith.constant":
        k -= 1
    if k < 0:
        return None
    anchor = block.ops[k]
    if not anchor.name.startswith(("linalg.", "hop.")) or anchor.results:
        return None
    outs = getattr(anchor, "outputs", None)
    out = outs[0] if outs and len(outs) == 1 else getattr(anchor, "output", None)
    if out is None and anchor.name == "hop.matmul":
        out = anchor.c
    if out is None or not hasattr(out.type, "shape"):
        return None
    reads = tuple(v for v in anchor.operands if v is not out)
    found = pointwise_epilogue_of(anchor, out, reads, dry_run=True)
    return anchor if found is not None else None
