"""A zero fill of C taken into the contraction that follows it: ``C = 0`` (a ``linalg.fill``,
or the loop nest ``hopt-linalg-to-loops`` makes of it) right before ``C += A * B`` goes, and
the product's first K block adds to zeros instead of reading C.  That is one pass over C
fewer, and none of C's reads in the first block: what a model's ``fill`` + ``conv`` costs,
against a library's convolution that writes its output.

MLIR counterpart: tile-and-fuse of the ``linalg.fill`` producer into the matmul's tiles
(``scf::tileConsumerAndFuseProducers``), after which the fill is each tile's accumulator
initialization.

The fill is taken when

* only ``arith.constant`` ops, allocations and views (``memref.collapse_shape``, ...) stand
  between it and the contraction's op, so nothing reads C in between;
* it writes +0 (not -0, whose sums differ) to every element of the memref C is a view of, and
  C covers all of that memref (a fill of a larger buffer stays);
* the contraction adds its product to C (no alpha or beta) over a static K > 0, so that every
  element of C is written by its first K block.
"""

from __future__ import annotations

import math
from typing import Optional

from ..affine.dialects.affine import AffineForOp, AffineStoreOp
from ..affine.ir import Operation, Value

#: ops that may stand between the fill and the contraction: they neither read nor write C
#: (a convolution's im2col stand-in is an ``memref.alloc``)
_BETWEEN = frozenset({"arith.constant", "memref.alloc", "memref.alloca",
                      "memref.collapse_shape", "memref.expand_shape", "memref.cast"})


def zero_fill_before(con) -> Optional[Operation]:
    """The op (``linalg.fill`` or a loop nest) that fills all of ``con``'s C with zeros right
    before ``con``'s op, when the product may take it over (see the module docstring), else
    None."""
    from ..memref_layout.data_copy import alias_root
    if con.alpha is not None or con.beta is not None or not isinstance(con.k, int) or \
            con.k <= 0:
        return None
    c = con.c.memref
    root = alias_root(c)
    if math.prod(c.type.shape) != math.prod(root.type.shape) or \
            any(not isinstance(e, int) or e < 0 for e in root.type.shape):
        return None
    ops = con.anchor.parent.ops
    k = ops.index(con.anchor) - 1
    while k >= 0 and ops[k].name in _BETWEEN:
        k -= 1
    if k < 0:
        return None
    op = ops[k]
    if op.name == "linalg.fill":
        ok = op.operands[-1] is root and _is_plus_zero(op.operands[0])
    else:
        ok = isinstance(op, AffineForOp) and _zero_nest_over(op, root)
    return op if ok else None


def _zero_nest_over(nest: AffineForOp, root: Value) -> bool:
    """Is ``nest`` a perfect nest over ``root``'s shape, in order, storing +0 to
    ``root[i0, i1, ...]`` and nothing else?"""
    loops = [nest]
    shape = root.type.shape
    while len(loops) < len(shape):
        inner = [op for op in loops[-1].body.ops if op.name != "affine.yield"]
        if len(inner) != 1 or not isinstance(inner[0], AffineForOp):
            return False
        loops.append(inner[0])
    for lp, extent in zip(loops, shape):
        if lp.step != 1 or not lp.has_constant_bounds or lp.constant_lower_bound != 0 or \
                lp.constant_upper_bound != extent or lp.inits or lp.results:
            return False
    body = [op for op in loops[-1].body.ops if op.name not in ("affine.yield", "arith.constant")]
    if len(body) != 1 or not isinstance(body[0], AffineStoreOp):
        return False
    store = body[0]
    return store.memref is root and store.map.is_identity() and \
        [id(v) for v in store.map_operands] == [id(lp.induction_var) for lp in loops] and \
        _is_plus_zero(store.value)


def _is_plus_zero(v: Value) -> bool:
    """Is ``v`` the constant +0 (an integer 0, or the float +0.0)?"""
    from ..affine.loop_utils import constant_index
    op = v.defining_op
    if op is None or op.name != "arith.constant":
        return False
    value = getattr(op.attributes.get("value"), "value", None)
    if isinstance(value, float):
        return value == 0.0 and math.copysign(1.0, value) > 0
    return constant_index(v) == 0


def take_fill_into_reads(tops: list, c: Value) -> Optional[str]:
    """The f32/f64 BLIS nest made of the ops ``tops`` after a zero fill of ``c`` (C): C's
    reads in the first K block replaced by zeros (under ``affine.if`` where there is a
    K-block loop), so that the fill can go; returns None, or why not (then nothing changed).

    Sound where the nest stores each element of C at most once per K block and every element
    in every K block (checked with ISL from the stores' access relations, as
    :mod:`~polyopt.schedules.tile_epilogue` checks its last block) and reads an element only
    before its store in the same block (the construction of the nest: the register tile and
    the edge tiles' copies load C's tile, then store it): a read in the first block then
    reads the fill, a read in a later one the block before's store."""
    import islpy as isl

    from ..affine.dialects.affine import AffineLoadOp, AffineVectorLoadOp
    from .model import access_relation
    from .tile_epilogue import c_accesses_per_k_block, with_k_block
    why, users, stores, k_block = c_accesses_per_k_block(tops, c)
    if why is not None:
        return why
    reads = [op for op in users if isinstance(op, (AffineLoadOp, AffineVectorLoadOp))]
    shape = c.type.shape
    if k_block is not None:
        stored = None           # the (element, K block) pairs
        for store in stores:
            access = access_relation(store)
            d = next(t for t, v in enumerate(access.ivs) if v is k_block.induction_var)
            pairs = with_k_block(access.relation, d).range()
            stored = pairs if stored is None else stored.union(pairs).coalesce()
        lb, ub, step = (k_block.constant_lower_bound, k_block.constant_upper_bound,
                        k_block.step)
        every = isl.Set(f"{{ [M[o0, o1] -> K[k]] : 0 <= o0 < {shape[0]} and "
                        f"0 <= o1 < {shape[1]} and {lb} <= k < {ub} and "
                        f"(k - {lb}) mod {step} = 0 }}")
        if not every.is_subset(stored):
            return "a K block does not store every element of C"
    for read in reads:
        _zero_in_first_block(read, k_block)
    return None


def _zero_in_first_block(read, k_block: Optional[AffineForOp]) -> None:
    """``read`` (a load of C) replaced by zeros in ``k_block``'s first iteration (everywhere
    when there is no K-block loop), by itself in the others."""
    from ..affine.builder import Builder
    from ..affine.types import VectorType
    from .gemm_templates import splice_template
    t = read.results[0].type
    vector = isinstance(t, VectorType)
    zero = "0" if str(getattr(t, "element_type", t)).startswith("i") else "0.0"
    zero_text = f"arith.constant dense<{zero}> : {t}" if vector else f"arith.constant {zero} : {t}"
    values = list(read.map_operands)
    nd = read.map.num_dims
    names = [f"%x{q}" for q in range(len(values))]
    dims, syms = names[:nd], [f"symbol({n})" for n in names[nd:]]
    at = ", ".join(e.to_str(dims, syms) for e in read.map.results)
    load = (f"affine.vector_load %C[{at}] : {read.memref.type}, {t}" if vector
            else f"affine.load %C[{at}] : {read.memref.type}")
    args = ", ".join([f"%C: {read.memref.type}"] + [f"{n}: index" for n in names])
    if k_block is None:
        body = f"  %r = {zero_text}\n"
    else:
        args += ", %kc: index"
        values.append(k_block.induction_var)
        body = (f"  %r = affine.if affine_set<(d0) : (d0 - {k_block.constant_lower_bound} == 0)>"
                f"(%kc) -> {t} {{\n    %z = {zero_text}\n    affine.yield %z : {t}\n"
                f"  }} else {{\n    %v = {load}\n    affine.yield %v : {t}\n  }}\n")
    text = f"func.func @first_block_read({args}) {{\n{body}  return\n}}\n"
    ops = splice_template(Builder.before(read), text, "<zero fill>", [read.memref, *values],
                          read.loc)
    read.results[0].replace_all_uses_with(ops[-1].results[0])
    read.erase()
