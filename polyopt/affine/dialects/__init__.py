"""Importing this package registers every op polyopt knows (see ``ir.register_op``)."""

from . import builtin, func, arith, cf  # noqa: F401
from . import affine, memref, memref_views, vector, math, linalg, hop, scf  # noqa: F401
from . import memref_buffers, memref_meta  # noqa: F401
from . import x86vector, amx, llvm, transform  # noqa: F401
from . import ub, vector_transfer, vector_elements, vector_masked, vector_contract  # noqa: F401
from . import vector_mask, vector_build, scf_forall, linalg_softmax  # noqa: F401
