"""Large heap buffers kept between calls (BLIS's pool of packing blocks; OpenBLAS and MKL keep
theirs too).

A compiled function allocates its packing buffers and temporaries (``memref.alloc``, and
``memref.alloca`` too large for the stack) with ``aligned_alloc`` on every call.  glibc serves
blocks above its mmap threshold (128 KiB, raised dynamically by frees but never past an aligned
request's padding) with a fresh ``mmap``, so every call touches new pages: doitgen's 27 MB
temporary cost 6,500 page faults, 10 of its 37 ms, per call.

Each allocation site of a static size of at least :data:`CACHED_MIN_BYTES` gets a slot, a
module global holding one free block of that size::

    p = atomicrmw xchg ptr @__polyopt_buffer.3, null      ; take the cached block, if any
    p = p ? p : aligned_alloc(64, 27 MB)
    ...
    cmpxchg ptr @__polyopt_buffer.3, null, p              ; give it back, unless the slot is
    (failed: free(p))                                     ; full (another call's block)

A block belongs to the slot or to one running call, never both, so concurrent calls (two
Python threads, the threads of a team) stay correct: the one that finds the slot empty
allocates.  ``__polyopt_release_buffers`` frees the cached blocks; the JIT engine calls it when
it is garbage-collected (:class:`~polyopt.codegen.jit.JITEngine`), so a module keeps at most
one block per site, for its lifetime.
"""

from __future__ import annotations

from llvmlite import ir

from .llvm_helpers import I64 as _I64, PTR as _PTR

__all__ = ["CACHED_MIN_BYTES", "RELEASE_SYMBOL", "BufferCache"]

#: static allocations at least this large are cached (glibc's default mmap threshold: smaller
#: blocks come back from malloc's free lists without new pages)
CACHED_MIN_BYTES = 128 * 1024
#: the function that frees every cached block of a module (no arguments, no result)
RELEASE_SYMBOL = "__polyopt_release_buffers"


class BufferCache:
    """The slots of one LLVM module and the helpers that take and give back their blocks."""

    def __init__(self, llmod: ir.Module, aligned_alloc, free: ir.Function):
        """``aligned_alloc()``: the allocation function (declared when first needed)."""
        self.llmod = llmod
        self._aligned_alloc = aligned_alloc
        self._free = free
        self.slots: list[ir.GlobalVariable] = []
        self._take = None
        self._give = None

    def new_slot(self) -> ir.GlobalVariable:
        gv = ir.GlobalVariable(self.llmod, _PTR, f"__polyopt_buffer.{len(self.slots)}")
        gv.linkage = "internal"
        gv.initializer = ir.Constant(_PTR, None)
        self.slots.append(gv)
        return gv

    def alloc(self, builder: ir.IRBuilder, slot: ir.GlobalVariable, align: int,
              size: int) -> ir.Value:
        """The slot's block, or a new one of ``size`` bytes aligned to ``align``."""
        return builder.call(self._take_fn(), [slot, _I64(align), _I64(size)])

    def free(self, builder: ir.IRBuilder, slot: ir.GlobalVariable, ptr: ir.Value) -> None:
        """Give ``ptr`` back to the slot, or free it when the slot holds another block."""
        builder.call(self._give_fn(), [slot, ptr])

    def finish(self) -> None:
        """Define :data:`RELEASE_SYMBOL` when the module has slots."""
        if not self.slots:
            return
        fn = ir.Function(self.llmod, ir.FunctionType(ir.VoidType(), []), RELEASE_SYMBOL)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        for slot in self.slots:
            b.call(self._free, [b.atomic_rmw("xchg", slot, ir.Constant(_PTR, None),
                                             "acq_rel")])
        b.ret_void()

    def _take_fn(self) -> ir.Function:
        if self._take is None:
            fn = ir.Function(self.llmod, ir.FunctionType(_PTR, [_PTR, _I64, _I64]),
                             "__polyopt_buffer_take")
            fn.linkage = "internal"
            # like aligned_alloc's: the block is no other pointer's (it left the slot), which
            # LLVM must know to vectorize the packing copies and the micro-kernel without
            # alias checks (inlined, the attribute would be lost: the ResNet-50 stem 8% slower)
            fn.return_value.attributes.add("noalias")
            fn.attributes.add("noinline")
            slot, align, size = fn.args
            entry, fresh, done = (fn.append_basic_block(n) for n in ("entry", "fresh", "done"))
            b = ir.IRBuilder(entry)
            cached = b.atomic_rmw("xchg", slot, ir.Constant(_PTR, None), "acq_rel")
            b.cbranch(b.icmp_unsigned("==", cached, ir.Constant(_PTR, None)), fresh, done)
            b.position_at_end(fresh)
            new = b.call(self._aligned_alloc(), [align, size])
            b.branch(done)
            b.position_at_end(done)
            phi = b.phi(_PTR)
            phi.add_incoming(cached, entry)
            phi.add_incoming(new, fresh)
            b.ret(phi)
            self._take = fn
        return self._take

    def _give_fn(self) -> ir.Function:
        if self._give is None:
            fn = ir.Function(self.llmod, ir.FunctionType(ir.VoidType(), [_PTR, _PTR]),
                             "__polyopt_buffer_give")
            fn.linkage = "internal"
            slot, ptr = fn.args
            entry, full, done = (fn.append_basic_block(n) for n in ("entry", "full", "done"))
            b = ir.IRBuilder(entry)
            pair = b.cmpxchg(slot, ir.Constant(_PTR, None), ptr, "acq_rel", "monotonic")
            b.cbranch(b.extract_value(pair, 1), done, full)
            b.position_at_end(full)
            b.call(self._free, [ptr])
            b.branch(done)
            b.position_at_end(done)
            b.ret_void()
            self._give = fn
        return self._give
