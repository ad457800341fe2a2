"""An epilogue (:mod:`polyopt.schedules.epilogue`) fused into the f32/f64 BLIS nest: applied
to C's tile where the nest stores it for the last time, in the last K block, instead of a
second pass over C.

MLIR counterpart: ``transform.structured.fuse_into_containing_op`` of the elementwise consumer
into the matmul's tile loop, after the register tile is scalar-replaced, so that it works on
the accumulators' values before their store (as ``scf::tileConsumerAndFuseProducers`` does
with the consumer's tile).

The BLIS nest with its register tile optimized (packing, unroll-and-jam, scalar replacement)
stores each element of C once per K block: the full tiles' vectors after the ``k`` loop, the
edge tiles' elements when their buffer is copied back.  :func:`fuse_epilogue_into_stores`
proves it with ISL from the stores' access relations (affine.if conditions included): there
is one loop, the K-block loop, such that no element of C is stored twice in one of its
iterations, and its last iteration stores every element.  So each store to C in that
iteration writes C's final value: there the epilogue's body is applied to the stored vector or
element, under ``affine.if`` (last K block), and its result stored to the epilogue's output
(C itself, or the matrix of a cast); the other K blocks keep the plain store.  The stores are
the nest's last accesses to the elements they write (the tile reads C only before it stores
it), which the construction of the nest guarantees.  When the proof fails (C stored inside a
``k`` loop, two K-block loops), the nest is left as it is and the epilogue nest stays after
it.
"""

from __future__ import annotations

from typing import Optional

import islpy as isl

from ..affine.builder import Builder
from ..affine.dialects.affine import (AffineForOp, AffineLoadOp, AffinePrefetchOp,
                                      AffineStoreOp, AffineVectorLoadOp, AffineVectorStoreOp)
from ..affine.ir import Value
from ..affine.types import VectorType
from .epilogue import Epilogue
from .gemm_templates import splice_template
from .gemv import MlirLines
from .model import access_relation

C_STORES = (AffineStoreOp, AffineVectorStoreOp)
C_READS = (AffineLoadOp, AffineVectorLoadOp, AffinePrefetchOp)


def last_iteration(loop: AffineForOp) -> int:
    lb, ub, step = loop.constant_lower_bound, loop.constant_upper_bound, loop.step
    return lb + (ub - lb - 1) // step * step


def _injective(relation) -> bool:
    """No element is the image of two iterations."""
    return relation.reverse().is_single_valued()


def with_k_block(relation: isl.Map, d: int) -> isl.Map:
    """``{ S[i..] -> [M[e..] -> K[i_d]] }``: the elements paired with iteration dim ``d``."""
    n = relation.dim(isl.dim_type.in_)
    dims = ", ".join(f"i{t}" for t in range(n))
    return relation.range_product(isl.Map(f"{{ S[{dims}] -> K[i{d}] }}"))


def _k_block_of(store) -> tuple[bool, Optional[AffineForOp], Optional[isl.Map]]:
    """(whether ``store`` stores no element twice per K block, the K-block loop or None, its
    relation ``{ S[..] -> M[..] }``): the loop is the one whose iterations, each, store an
    element at most once, where the whole nest stores some twice."""
    acc = access_relation(store)
    rel = acc.relation
    if rel.dim(isl.dim_type.param):
        return False, None, None
    if _injective(rel):
        return True, None, rel
    loops = {id(op.induction_var): op for op in store.ancestors() if isinstance(op, AffineForOp)}
    found = [(d, loops[id(v)]) for d, v in enumerate(acc.ivs) if id(v) in loops
             and loops[id(v)].has_constant_bounds and _injective(with_k_block(rel, d))]
    if len(found) != 1:
        return False, None, None
    return True, found[0][1], rel


def stores_once_per_k_block(stores: list, shape: tuple
                             ) -> tuple[Optional[str], Optional[AffineForOp]]:
    """(None, the K-block loop or None) when the stores together write each element of C at
    most once per K block and every element in the last one, the last K block's store being
    an element's last; else (why not, None)."""
    found = [_k_block_of(s) for s in stores]
    if not all(ok for ok, _, _ in found):
        return "C is stored more than once per K block", None
    loops = {id(loop): loop for _, loop, _ in found}
    if len(loops) != 1:
        return "C's stores are in different K-block loops", None
    (k_block,) = loops.values()
    written, last = None, None      # the (element, K block) pairs stored so far
    for store, (_, _, rel) in zip(stores, found):
        if k_block is not None:
            d = next(t for t, v in enumerate(access_relation(store).ivs)
                     if v is k_block.induction_var)
            n_in = rel.dim(isl.dim_type.in_)
            if not rel.reverse().project_out(isl.dim_type.out, d, n_in - d).is_single_valued():
                # an element's stores must all fall in one iteration of the loops around the
                # K-block loop, so that the last K block's store is its last one
                return "the loops around the K-block loop store an element twice", None
            rel_k = with_k_block(rel, d)
            in_last = rel.intersect_domain(isl.Set(
                f"{{ S[{', '.join(f'i{t}' for t in range(rel.dim(isl.dim_type.in_)))}] : "
                f"i{d} = {last_iteration(k_block)} }}")).range()
        else:
            rel_k, in_last = rel, rel.range()
        # each store writes an element once per K block (_k_block_of): two stores must not
        # share one.  Checked store by store against the union of the ones before, which
        # coalesces into few boxes; one single-valuedness test on the union of all (129
        # stores in a scalar-replaced register tile) ran for minutes in ISL
        pairs = rel_k.range()
        if written is not None and not pairs.intersect(written).is_empty():
            return "two stores write the same element of C in one K block", None
        written = pairs if written is None else written.union(pairs).coalesce()
        last = in_last if last is None else last.union(in_last).coalesce()
    box = isl.Set("{ M[o0, o1] : " + f"0 <= o0 < {shape[0]} and 0 <= o1 < {shape[1]}" + " }")
    if not box.is_subset(last):
        return "the last K block does not store every element of C", None
    return None, k_block


def c_accesses_per_k_block(tops: list, c: Value
                           ) -> tuple[Optional[str], list, list, Optional[AffineForOp]]:
    """(why not, the ops of the nest made of ``tops`` that use ``c``, its stores to ``c``, the
    K-block loop or None): why not when something other than a load, prefetch or store of
    ``c`` uses it, when nothing stores to it, or when its stores are not once per K block
    (:func:`stores_once_per_k_block`)."""
    users = [op for top in tops for op in top.walk() if any(v is c for v in op.operands)]
    stores = [op for op in users if isinstance(op, C_STORES) and op.memref is c]
    other = [op for op in users if not isinstance(op, C_READS + C_STORES)
             or isinstance(op, C_STORES) and op.memref is not c]
    if other:
        return f"C is used by {other[0].name}", users, stores, None
    if not stores:
        return "the nest has no store to C", users, stores, None
    why, k_block = stores_once_per_k_block(stores, c.type.shape)
    return why, users, stores, k_block


def fuse_epilogue_into_stores(tops: list, c: Value, epilogue: Epilogue, loc) -> Optional[str]:
    """Apply ``epilogue`` at every store to ``c`` in the nest made of the ops ``tops`` (see
    the module docstring) and erase the epilogue's nest; returns None, or why it was not
    fused (then nothing changed)."""
    why, _, stores, k_block = c_accesses_per_k_block(tops, c)
    if why is not None:
        return why
    for run in _runs_of_stores(stores):
        _apply(run, c, epilogue, k_block, loc)
    epilogue.nest.erase()
    return None


def _runs_of_stores(stores: list) -> list[list]:
    """The stores grouped into runs that follow each other in one block (one ``affine.if``
    for a whole tile)."""
    runs: list[list] = []
    for store in stores:
        if runs:
            last = runs[-1][-1]
            ops = last.parent.ops if last.parent is store.parent else None
            if ops is not None and ops.index(store) == ops.index(last) + 1:
                runs[-1].append(store)
                continue
        runs.append([store])
    return runs


def _apply(run: list, c: Value, epilogue: Epilogue, k_block: Optional[AffineForOp],
           loc) -> None:
    """Replace the stores of ``run`` by: in the last K block, the epilogue on each stored
    value and its store to the epilogue's output (and the plain store to C when the output is
    another matrix); else the plain stores."""
    values: list[Value] = []        # the template's arguments, in order
    names: dict[int, str] = {}
    types: list[str] = []

    def arg(v: Value, hint: str) -> str:
        if id(v) not in names:
            names[id(v)] = f"%{hint}{len(values)}"
            values.append(v)
            types.append(str(v.type))
        return names[id(v)]

    c_name = arg(c, "C")
    out = epilogue.output
    out_name = c_name if epilogue.stores_to_c else arg(out, "out")
    ext = {id(v): arg(epilogue.view(v), "in") for v in epilogue.externals}
    stored, subscripts = [], []
    for store in run:
        dims = [arg(v, "x") for v in store.map_operands[:store.map.num_dims]]
        syms = [f"symbol({arg(v, 'x')})" for v in store.map_operands[store.map.num_dims:]]
        row, col = (e.to_str(dims, syms) for e in store.map.results)
        stored.append(arg(store.value, "v"))
        subscripts.append((row, col))
    t = MlirLines()
    depth = 2
    if k_block is not None:
        kc = arg(k_block.induction_var, "kc")
        t.add(1, f"affine.if affine_set<(d0) : (d0 - {last_iteration(k_block)} >= 0)>({kc}) {{")
    else:
        depth = 1
    results = []
    for store, value, (row, col) in zip(run, stored, subscripts):
        lanes = store.value.type.shape[0] if isinstance(store.value.type, VectorType) else None
        results.append(epilogue.emit(t, depth, value, ext, lanes, row, col))
    for store, value, result, (row, col) in zip(run, stored, results, subscripts):
        _store(t, depth, result, out_name, out.type, epilogue.store.value.type, store, row, col)
        if not epilogue.stores_to_c:
            _store(t, depth, value, c_name, c.type, store.value.type, store, row, col)
    if k_block is not None:
        t.add(1, "} else {")
        for store, value, (row, col) in zip(run, stored, subscripts):
            _store(t, 2, value, c_name, c.type, store.value.type, store, row, col)
        t.add(1, "}")
    args = ", ".join(f"{names[id(v)]}: {ty}" for v, ty in zip(values, types))
    text = "func.func @tile_epilogue(" + args + ") {\n" + "\n".join(t.lines) + "\n  return\n}\n"
    splice_template(Builder.before(run[0]), text, "<fused epilogue>", values, loc)
    for store in run:
        store.erase()


def _store(t: MlirLines, depth: int, value: str, memref: str, memref_type, elem_type, store,
           row: str, col: str) -> None:
    """One ``affine.store`` (or ``affine.vector_store`` when ``store`` stores a vector) of
    ``value`` (elements of ``elem_type``, a scalar type) at ``[row, col]``."""
    if isinstance(store.value.type, VectorType):
        if isinstance(elem_type, VectorType):
            elem_type = elem_type.element_type
        vt = f"vector<{store.value.type.shape[0]}x{elem_type}>"
        t.add(depth, f"affine.vector_store {value}, {memref}[{row}, {col}] : {memref_type}, {vt}")
    else:
        t.add(depth, f"affine.store {value}, {memref}[{row}, {col}] : {memref_type}")
