"""Lowering of polyopt's IR (func/arith/math/memref/vector/affine/linalg.fill) to LLVM IR.

One pass over the module does what MLIR's ``lower-affine`` and ``convert-{func,arith,math,
memref,vector}-to-llvm`` do, emitting textual LLVM IR with :mod:`llvmlite.ir` (opaque
pointers).  :func:`lower_module` returns the IR and, per function, the
:class:`FunctionSignature` that :mod:`polyopt.codegen.jit` needs to call it on numpy arrays::

    lowered = lower_module(parse(text))            # LoweredModule(llvm_ir, signatures)
    engine = lowered.jit()                         # JITEngine (O3, host CPU)
    matmul = lowered.signatures["matmul"].make_callable(engine)
    matmul(A, B, C)

ABI (the one documented in :mod:`polyopt.codegen.jit`, used for internal calls too): a memref
is ONE ``ptr`` to element 0 of its (physical) buffer; scalars by value (``index`` -> ``i64``);
0 results -> ``void``, 1 result -> that type, N >= 2 results -> ``void`` and N trailing
out-pointers (an ``i1`` result is stored as one byte).

What the lowering does
----------------------
* ``affine.for`` -> a canonical loop: ``iv = max(lb results)``; ``while iv < min(ub results)``;
  the induction variable and the ``iter_args`` are header phis.  ``affine.if`` -> the
  conjunction of its constraints, then/else blocks, results through phis.
* Affine expressions (bounds, ``affine.apply/min/max``, subscripts) are flattened into linear
  forms ``sum(coeff * term) + const`` before emission, after composing the access map with the
  memref's layout linearization (:func:`polyopt.memref_layout.layout.linearize`); constants
  fold, ``floordiv``/``mod`` by ``c`` drop the terms whose coefficient is a multiple of ``c``,
  and value ranges of loop IVs (from constant-ish bounds) fold ``floordiv``/``mod`` that are
  constant over the loop and select cheap unsigned forms for non-negative operands.
  Otherwise ``floordiv``/``ceildiv``/``mod`` use MLIR's exact signed expansions (``ashr``/``and``
  for powers of two); non-constant divisors use the general signed floor/ceil formulas.
  Index arithmetic carries ``nsw``; address GEPs are ``inbounds``.
* Memory: ``memref.alloc`` -> ``aligned_alloc(align, round_up(bytes, align))`` (alignment: the
  op's, default 64), ``memref.dealloc`` -> ``free``; ``memref.alloca`` -> an ``alloca`` hoisted
  to the entry block (alignment >= 64; buffers above ``max_stack_bytes`` go to the heap,
  allocated at entry and freed at every return).  Loads and stores use the alignment the
  base pointer and the offset prove (element alignment at least).  ``memref.cast`` and
  ``memref.collapse_shape`` are views: the same pointer with the new type.
* Vectors: 1-D vectors are LLVM vectors; n-D vectors are (nested) LLVM arrays of 1-D
  vectors; elementwise ops, broadcast, fma, print, loads/stores work row by row (rows of an
  n-D vector access are consecutive indices of the memref dimensions before the last).
* Float arithmetic carries the fast-math flag ``contract`` (so ``mulf`` + ``addf`` become FMAs)
  plus whatever ``fastmath<...>`` the op asks for.
* Calls to ``printMemref{F64,F32,I64,I32,Ind}`` (unranked operand from ``memref.cast``), the
  paper's ``print_memref_2d_{f64,f32}``, ``rtclock`` and CRunnerUtils' ``print{F64,...}`` go to the
  runtime (:mod:`polyopt.codegen.runtime`); other declarations are C symbols of the process.

Layout: this module is the driver; :mod:`~polyopt.codegen.lowering` holds the module and
function state and the handler registry, and each source dialect has its own module of
handlers (``lower_func``, ``lower_arith``, ``lower_math``, ``lower_vector``, ``lower_affine``,
``lower_scf``, ``lower_memref``, ``lower_linalg``, ``lower_x86vector``, ``lower_amx``), as
MLIR's ``convert-<dialect>-to-llvm`` patterns are.

Not handled (``CodegenError`` at the op): dynamic dimensions, ``hop.*``/``linalg.matmul``/
``linalg.conv_*`` (expand them first), multi-block functions, unknown ops.
"""

from __future__ import annotations

from typing import Optional

from polyopt.affine.diagnostics import CodegenError
from polyopt.affine.ir import Operation
# the handler modules register their ops with the driver when imported
from polyopt.codegen import (lower_affine, lower_amx, lower_arith, lower_cf,  # noqa: F401
                             lower_func, lower_linalg, lower_llvm, lower_math, lower_memref,
                             lower_memref_buffers, lower_scf, lower_vector, lower_x86vector)
from polyopt.codegen import lower_ub, lower_vector_elements, lower_vector_transfer  # noqa: F401
from polyopt.codegen import lower_vector_build  # noqa: F401
from polyopt.codegen import (lower_memref_meta, lower_vector_contract,  # noqa: F401
                             lower_vector_masked)
from polyopt.codegen.lowering import (DEFAULT_ALLOC_ALIGNMENT, DEFAULT_MAX_STACK_BYTES,
                                      FunctionSignature, LoweredModule, ModuleLowering)
from polyopt.codegen.target import Target, host_target

__all__ = [
    "FunctionSignature",
    "LoweredModule",
    "lower_module",
    "DEFAULT_ALLOC_ALIGNMENT",
    "DEFAULT_MAX_STACK_BYTES",
]


def lower_module(module: Operation, target: Optional[Target] = None, *,
                 noalias_memref_args: bool = False,
                 max_stack_bytes: int = DEFAULT_MAX_STACK_BYTES,
                 threads: int = 1) -> LoweredModule:
    """Lower ``module`` (a ``builtin.module`` of ``func.func`` ops) to LLVM IR for ``target``.

    Args:
        module: a verified module whose high-level ops (``hop.*``, ``linalg.matmul``) have
            been expanded into affine loop nests.
        target: the code-generation target (default: the host); its CPU and features are put
            on every function (``"target-cpu"``/``"target-features"``) so that the JIT uses
            AVX2/FMA, and its data layout gives element sizes.
        noalias_memref_args: mark memref pointer arguments ``noalias`` (only valid if no call
            passes the same buffer twice; off by default).
        max_stack_bytes: ``memref.alloca`` buffers above this size are heap-allocated.
        threads: the team size of parallel regions: with ``threads > 1`` the outermost
            dimension of ``affine.parallel``/``scf.parallel`` runs on the OpenMP runtime
            (:mod:`polyopt.codegen.openmp`); 1 runs them as sequential loops.

    Returns a :class:`LoweredModule`.  Raises :class:`CodegenError` (with the location of the
    offending op) for anything that cannot be lowered.

    Example: ``affine.for %i = 0 to 10 { ... }`` becomes::

        br label %for.header
      for.header:
        %iv = phi i64 [ 0, %entry ], [ %iv.next, %for.body ]
        %c = icmp slt i64 %iv, 10
        br i1 %c, label %for.body, label %for.exit
    """
    if target is None:
        target = host_target()
    if module.name != "builtin.module":
        raise CodegenError(f"expected a 'builtin.module', got '{module.name}'", module.loc)
    if threads < 1:
        raise CodegenError(f"threads must be at least 1, got {threads}", module.loc)
    return ModuleLowering(module, target, noalias_memref_args, max_stack_bytes, threads).run()
