"""Outer compiler, inner library (paper section 2.12, ``--hopt-blis``): the ``M_R x N_R x K_C``
register-tile nest of a packed BLIS-tiled matmul becomes a ``func.call`` to a micro-kernel
wrapper.

There is no upstream MLIR pass for this; it is what the paper's ``-hopt-blis`` did.  It runs in
two steps because the packed buffers change type when their layouts are normalized:

1. :func:`mark_register_tile` (during ``hop.matmul`` expansion): the tile's ``k`` loop gets the
   discardable attributes ``polyopt.microkernel`` (the kernel's symbol), ``polyopt.m_r`` and
   ``polyopt.n_r`` (the kernel's tile of C: the panels' widths, and the next tile's A panel is
   ``m_r`` rows further);
2. :func:`map_to_microkernels` (after ``normalize-memrefs``): every marked loop is replaced by

       func.call @polyopt_<symbol>(%A_buf, %a_off, %B_buf, %b_off, %C, %c_off, %rs_c,
                                        %cs_c, %k, %m, %n, %a_next_off, %b_next_off, %alpha)

   meaning ``C[c_off + r*rs_c + c*cs_c] += alpha * sum_kk A[a_off + kk*M_R + r] * B[b_off +
   kk*N_R + c]`` for ``r < m, c < n`` (element offsets into the buffers; ``a_next_off``/
   ``b_next_off`` are the panels the next tile reads, for the kernel's prefetch).  The tile's
   statement must be ``C[i, j] += s_1 * ... * A[..] * B[..]`` and nothing else; the scalar
   factors ``s_n`` (``hop.matmul``'s ``alpha``) become ``%alpha``, as BLIS passes alpha to its
   micro-kernels; the panels must be in the kernel's layout.  Anything else is refused with a
   :class:`ScheduleError` (a dropped op would be a wrong answer).  The callee is declared
   ``func.func private ... attributes {polyopt.blis_kernel = "<symbol>"}``; the LLVM lowering
   defines it around the library's kernel (:mod:`polyopt.codegen.microkernels`).
"""

from __future__ import annotations

from typing import Callable, Optional

from ..affine.affine_expr import AffineConstantExpr, AffineExpr, AffineMap, dim
from ..affine.attributes import IntegerAttr, StringAttr
from ..affine.builder import Builder
from ..affine.diagnostics import ScheduleError
from ..affine.dialects.affine import (AffineApplyOp, AffineForOp, AffineLoadOp, AffineMinOp,
                                      AffineStoreOp)
from ..affine.dialects.arith import FLOAT_BINARY, ConstantOp
from ..affine.dialects.func import BLIS_KERNEL_ATTR, CallOp, FuncOp
from ..affine.ir import OpResult, Operation, Value
from ..affine.loop_utils import simplify_affine_expr
from ..affine.types import FunctionType, IntegerType, index
from ..affine.value_table import export_map
from ..memref_layout.layout import linearize

MARK = "polyopt.microkernel"
WRAPPER_ATTR = BLIS_KERNEL_ATTR

Remark = Optional[Callable[[object, str], None]]


def mark_register_tile(k_loop: AffineForOp, symbol: str, m_r: int, n_r: int) -> None:
    """Mark ``k_loop`` (the register tile's reduction loop) for :func:`map_to_microkernels`:
    the kernel's symbol and its ``m_r x n_r`` tile of C (in polyopt's orientation)."""
    k_loop.attributes[MARK] = StringAttr(symbol)
    k_loop.attributes["polyopt.m_r"] = IntegerAttr(m_r, IntegerType(64))
    k_loop.attributes["polyopt.n_r"] = IntegerAttr(n_r, IntegerType(64))


def map_to_microkernels(module: Operation, remark: Remark = None) -> int:
    """Replace every marked register tile under ``module`` by a call to its micro-kernel
    wrapper (declared once per kernel and signature); returns how many were replaced."""
    marked = [op for op in module.walk() if isinstance(op, AffineForOp) and MARK in op.attributes]
    for k_loop in marked:
        call = _replace(k_loop, module)
        if remark is not None:
            remark(call.loc, f"register tile -> call @{call.callee} "
                             f"({k_loop.attributes[MARK].value})")
    return len(marked)


class _Table:
    """SSA index values numbered as dims, for building affine expressions over them."""

    def __init__(self):
        self.values: list[Value] = []

    def add(self, v: Value) -> AffineExpr:
        for n, u in enumerate(self.values):
            if u is v:
                return dim(n)
        self.values.append(v)
        return dim(len(self.values) - 1)

    def import_map(self, amap: AffineMap, operands) -> list[AffineExpr]:
        repl = [self.add(v) for v in operands]
        return [r.replace(repl[:amap.num_dims], repl[amap.num_dims:]) for r in amap.results]

    def export(self, exprs) -> tuple[AffineMap, list[Value]]:
        return export_map(list(exprs), self.values, [False] * len(self.values),
                          simplify_affine_expr)


def _lower_bound(loop: AffineForOp, table: _Table) -> AffineExpr:
    if loop.lower_map.num_results != 1 or loop.step != 1:
        raise ScheduleError("--hopt-blis: a register-tile loop has a max lower bound or a step",
                            loop.loc)
    return table.import_map(loop.lower_map, loop.lower_operands)[0]


def _extent(loop: AffineForOp, table: _Table) -> list[AffineExpr]:
    """The loop's trip count as the min of these expressions."""
    lb = _lower_bound(loop, table)
    return [simplify_affine_expr(ub - lb)
            for ub in table.import_map(loop.upper_map, loop.upper_operands)]


def _offset(access, table: _Table, origin: dict) -> AffineExpr:
    """Element offset (from the memref's base) of ``access`` at the tile origin: its subscripts
    with the tile IVs replaced by ``origin[iv]``, through the memref's linearized layout."""
    subs = []
    for v in access.map_operands:
        subs.append(origin[id(v)] if id(v) in origin else table.add(v))
    amap = access.map
    idx = [r.replace(subs[:amap.num_dims], subs[amap.num_dims:]) for r in amap.results]
    lin = linearize(access.memref.type, access.loc)
    return simplify_affine_expr(lin.results[0].replace(idx, []))


def _index_value(b: Builder, exprs: list[AffineExpr], table: _Table, loc,
                 constants: dict) -> Value:
    """An index value for ``min(exprs)``: a constant (one per value, shared through
    ``constants``), an ``affine.apply`` or an ``affine.min``."""
    consts = [e.value for e in exprs if isinstance(e, AffineConstantExpr)]
    if len(consts) == len(exprs):
        value = min(consts)
        if value not in constants:
            constants[value] = b.create(ConstantOp.build, value, index, loc=loc).results[0]
        return constants[value]
    amap, operands = table.export(exprs)
    op_class = AffineApplyOp if len(exprs) == 1 else AffineMinOp
    return b.create(op_class.build, amap, operands, loc=loc).results[0]


def _defined_inside(v: Value, loop: Operation) -> bool:
    where = v.defining_op if isinstance(v, OpResult) else v.owner_block.parent_op
    return where is not None and (where is loop or loop.is_proper_ancestor_of(where))


def _tile_statement(k_loop: AffineForOp, store: AffineStoreOp, loc):
    """Match the register tile's statement ``C[i, j] = C[i, j] + s_1 * ... * a * b`` (the
    product in any association and order, ``s_n`` constants or values defined outside the
    tile): returns the loads (two, not of C) and the scalar factors.  Anything else in the tile
    (another op, a subtraction, a second store...) is refused: the kernel would drop it."""
    c = store.memref

    def refuse(why: str):
        return ScheduleError(f"--hopt-blis: the register tile does not compute "
                             f"C += alpha * A * B ({why}); it cannot become a micro-kernel call",
                             loc)
    add = store.value.defining_op if isinstance(store.value, OpResult) else None
    if add is None or add.name != "arith.addf":
        raise refuse("the stored value is not a floating-point sum")
    c_loads = [v.defining_op for v in add.operands
               if isinstance(v, OpResult) and isinstance(v.defining_op, AffineLoadOp)
               and v.defining_op.memref is c and v.defining_op.map == store.map
               and v.defining_op.map_operands == store.map_operands]
    if len(c_loads) != 1:
        raise refuse("no accumulation into the stored element of C")
    c_load = c_loads[0]
    product = add.operands[1] if add.operands[0] is c_load.result else add.operands[0]
    matched = [store, add, c_load]
    loads, scalars = [], []
    todo = [product]
    while todo:
        v = todo.pop()
        op = v.defining_op if isinstance(v, OpResult) else None
        if op is not None and op.parent is not None and _defined_inside(v, k_loop):
            matched.append(op)
            if op.name == "arith.mulf":
                todo.extend(op.operands)
            elif isinstance(op, AffineLoadOp) and op.memref is not c:
                loads.append(op)
            elif isinstance(op, ConstantOp):
                scalars.append(v)
            else:
                raise refuse(f"'{op.name}' in the product")
        elif not _defined_inside(v, k_loop):
            scalars.append(v)
        else:
            raise refuse("a loop-carried value in the product")
    if len(loads) != 2:
        raise refuse(f"{len(loads)} panel loads in the product, not 2")
    ids = {id(op) for op in matched}
    extra = [op for op in k_loop.walk() if op is not k_loop and id(op) not in ids
             and not isinstance(op, AffineForOp) and op.name != "affine.yield"]
    if extra:
        raise refuse(f"'{extra[0].name}' besides the product")
    return loads, scalars


def _alpha(b: Builder, scalars: list, etype, loc) -> Value:
    """The product of ``scalars`` as one value before the call (the constants folded)."""
    constant, values = 1.0, []
    for v in scalars:
        if isinstance(v, OpResult) and isinstance(v.defining_op, ConstantOp):
            constant *= v.defining_op.value
        else:
            values.append(v)
    result = None
    if constant != 1.0 or not values:
        result = b.create(ConstantOp.build, constant, etype, loc=loc).results[0]
    for v in values:
        result = v if result is None else \
            b.create(FLOAT_BINARY["mulf"], result, v, loc=loc).result
    return result


def _replace(k_loop: AffineForOp, module: Operation) -> CallOp:
    symbol = k_loop.attributes[MARK].value
    m_r = k_loop.attributes["polyopt.m_r"].value
    n_r = k_loop.attributes["polyopt.n_r"].value
    loc = k_loop.loc
    stores = [op for op in k_loop.walk() if isinstance(op, AffineStoreOp)]
    loops = [op for op in k_loop.walk() if isinstance(op, AffineForOp) and op is not k_loop]
    if len(stores) != 1 or len(loops) != 2:
        raise ScheduleError("--hopt-blis: the register tile is not the k, i, j product nest",
                            loc)
    store = stores[0]
    c = store.memref
    loads, scalars = _tile_statement(k_loop, store, loc)
    # i is the loop indexing C's first subscript, j the other one
    i_loop = j_loop = None
    for loop in loops:
        uses_row = any(loop.induction_var is v and d in store.map.results[0].used_dims()
                       for d, v in enumerate(store.map_operands))
        if uses_row:
            i_loop = loop
        else:
            j_loop = loop
    if i_loop is None or j_loop is None:
        raise ScheduleError("--hopt-blis: cannot tell the tile's row and column loops apart",
                            loc)

    def reads(op, loop):
        return any(v is loop.induction_var for v in op.map_operands)

    a_load = next((op for op in loads if reads(op, i_loop) and not reads(op, j_loop)), None)
    b_load = next((op for op in loads if reads(op, j_loop) and not reads(op, i_loop)), None)
    if a_load is None or b_load is None or a_load is b_load:
        raise ScheduleError("--hopt-blis: cannot tell the packed A and B panels apart", loc)

    table = _Table()
    i0, j0, k0 = (_lower_bound(loop, table) for loop in (i_loop, j_loop, k_loop))
    origin = {id(i_loop.induction_var): i0, id(j_loop.induction_var): j0,
              id(k_loop.induction_var): k0}
    a_off = _offset(a_load, table, origin)
    b_off = _offset(b_load, table, origin)
    c_off = _offset(store, table, origin)

    def step(access, base, loop, what) -> int:
        moved = dict(origin)
        moved[id(loop.induction_var)] = origin[id(loop.induction_var)] + 1
        diff = simplify_affine_expr(_offset(access, table, moved) - base)
        if not isinstance(diff, AffineConstantExpr):
            raise ScheduleError(f"--hopt-blis: {access.memref.type} is not strided: the "
                                f"micro-kernel needs constant {what}", loc)
        return diff.value

    strides = [step(store, c_off, loop, "row and column strides of C")
               for loop in (i_loop, j_loop)]
    # the kernel reads a[kk*M_R + r] and b[kk*N_R + c]: the panels must be laid out so
    for access, off, lane_loop, width, what in ((a_load, a_off, i_loop, m_r, "A"),
                                                (b_load, b_off, j_loop, n_r, "B")):
        lane = step(access, off, lane_loop, f"strides of the packed {what} panel")
        depth = step(access, off, k_loop, f"strides of the packed {what} panel")
        if (lane, depth) != (1, width):
            raise ScheduleError(f"--hopt-blis: the packed {what} panel "
                                f"({access.memref.type}) is not in the micro-kernel's layout "
                                f"({width} consecutive elements per k)", loc)
    moved = dict(origin)
    moved[id(i_loop.induction_var)] = i0 + m_r
    a_next = _offset(a_load, table, moved)

    b = Builder.before(k_loop)
    constants: dict = {}

    def value(exprs):
        return _index_value(b, exprs, table, loc, constants)

    operands = [a_load.memref, value([a_off]), b_load.memref, value([b_off]),
                c, value([c_off]), value([AffineConstantExpr(strides[0])]),
                value([AffineConstantExpr(strides[1])]),
                value(_extent(k_loop, table)), value(_extent(i_loop, table)),
                value(_extent(j_loop, table)), value([a_next]), value([b_off]),
                _alpha(b, scalars, c.type.element_type, loc)]
    callee = _declare_wrapper(module, symbol, [v.type for v in operands], loc)
    call = b.create(CallOp.build, callee, operands, [], loc=loc)
    k_loop.erase()
    return call


def _declare_wrapper(module: Operation, symbol: str, types, loc) -> str:
    """The name of a private declaration of the wrapper of ``symbol`` with these argument types
    (declared at the end of the module the first time)."""
    ft = FunctionType(tuple(types), ())
    body = module.regions[0].blocks[0]
    base = f"polyopt_{symbol}"
    taken = {op.sym_name: op for op in body.ops if isinstance(op, FuncOp)}
    for n in range(len(taken) + 1):
        name = base if n == 0 else f"{base}_{n}"
        f = taken.get(name)
        if f is None:
            decl = FuncOp.build(name, ft, private=True, declaration=True, loc=loc)
            decl.attributes[WRAPPER_ATTR] = StringAttr(symbol)
            body.append(decl)
            return name
        if f.function_type == ft and f.attributes.get(WRAPPER_ATTR) == StringAttr(symbol):
            return name
    raise AssertionError("unreachable")
