"""Which attributes of an upstream op are *properties* (MLIR's inherent attributes, the
attributes its ODS definition declares) and which are discardable, for the generic form:
``mlir-opt-22 --mlir-print-op-generic`` prints the first inside ``<{...}>`` and the others in
the trailing ``{...}`` (``"arith.addi"(%a, %b) <{overflowFlags = #arith.overflow<none>}>
{tag} : ...``).

The names were read off mlir-opt-22 itself: an attribute is inherent when mlir-opt checks its
value against the op's constraint (``'memref.load' op attribute 'nontemporal' failed to
satisfy constraint``).  ``DEFAULTS`` are the default-valued properties mlir-opt prints even when
the IR never spelt them (MLIR's ``populateDefaultProperties``).  Ops of polyopt's own dialects
(``hop``, ``transform.polyopt``) and unregistered ops have no entry: their attributes stay in
the dictionary.
"""

from __future__ import annotations

from typing import Optional

from .attributes import Attribute, OpaqueAttr

SEGMENTS = "operandSegmentSizes"

_ARITH_FASTMATH = ("addf", "divf", "maximumf", "maxnumf", "minimumf", "minnumf", "mulf", "negf",
                   "remf", "subf")
_ARITH_OVERFLOW = ("addi", "muli", "shli", "subi", "trunci")
_MATH_FASTMATH = ("absf", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt",
                  "ceil", "clampf", "copysign", "cos", "cosh", "erf", "erfc", "exp", "exp2",
                  "expm1", "floor", "fma", "fpowi", "isfinite", "isinf", "isnan", "isnormal",
                  "log", "log10", "log1p", "log2", "powf", "round", "roundeven", "rsqrt", "sin",
                  "sincos", "sinh", "sqrt", "tan", "tanh", "trunc")
_LINALG_UNARY_BINARY = ("abs", "add", "ceil", "div", "div_unsigned", "erf", "exp", "floor",
                        "log", "max", "min", "mul", "negf", "powf", "reciprocal", "round", "rsqrt",
                        "select", "sqrt", "square", "sub", "tanh", "batch_matvec", "batch_vecmat",
                        "dot", "fill", "matvec", "mmt4d", "quantized_matmul", "vecmat", "conv_1d", "batch_mmt4d",
                        "conv_2d", "conv_3d")
_LINALG_WINDOW = ("conv_1d_nwc_wcf", "conv_2d_nchw_fchw", "conv_2d_nchw_fchw_q",
                  "conv_2d_nhwc_hwcf_q", "depthwise_conv_2d_nhwc_hwc_q", "conv_2d_ngchw_fgchw",
                  "conv_2d_nhwc_fhwc", "conv_2d_nhwc_hwcf", "depthwise_conv_2d_nchw_chw",
                  "depthwise_conv_2d_nhwc_hwc", "depthwise_conv_2d_nhwc_hwcm", "pooling_nchw_max",
                  "pooling_nchw_sum", "pooling_nhwc_max", "pooling_nhwc_max_unsigned",
                  "pooling_nhwc_min", "pooling_nhwc_min_unsigned", "pooling_nhwc_sum",
                  "conv_1d_ncw_fcw", "depthwise_conv_1d_nwc_wc", "depthwise_conv_1d_ncw_cw",
                  "conv_3d_ndhwc_dhwcf", "conv_3d_ncdhw_fcdhw", "depthwise_conv_3d_ndhwc_dhwc",
                  "pooling_nwc_sum", "pooling_nwc_max", "pooling_nwc_min",
                  "pooling_nwc_max_unsigned", "pooling_nwc_min_unsigned", "pooling_ncw_sum",
                  "pooling_ncw_max", "pooling_ndhwc_sum", "pooling_ndhwc_max",
                  "pooling_ndhwc_min", "depthwise_conv_1d_nwc_wcm",
                  "depthwise_conv_3d_ndhwc_dhwcm", "conv_2d_nhwgc_gfhwc", "conv_2d_ngchw_gfchw",
                  "conv_2d_nhwgc_gfhwc_q", "conv_2d_ngchw_gfchw_q",
                  "depthwise_conv_2d_nhwc_hwcm_q", "conv_3d_ndhwc_dhwcf_q")

INHERENT: dict[str, tuple[str, ...]] = {
    **{f"affine.{n}": ("map",) for n in ("apply", "load", "max", "min", "store", "vector_load",
                                         "vector_store")},
    "affine.delinearize_index": ("static_basis",),
    "affine.for": ("lowerBoundMap", SEGMENTS, "step", "upperBoundMap"),
    "affine.if": ("condition",),
    "affine.linearize_index": ("disjoint", SEGMENTS, "static_basis"),
    "affine.parallel": ("lowerBoundsGroups", "lowerBoundsMap", "reductions", "steps",
                        "upperBoundsGroups", "upperBoundsMap"),
    "affine.prefetch": ("isDataCache", "isWrite", "localityHint", "map"),
    "amx.tile_load": (SEGMENTS,),
    "amx.tile_store": (SEGMENTS,),
    "amx.tile_muli": ("isZextLhs", "isZextRhs"),
    **{f"arith.{n}": ("fastmath",) for n in _ARITH_FASTMATH + ("extf", "scaling_extf")},
    **{f"arith.{n}": ("overflowFlags",) for n in _ARITH_OVERFLOW},
    **{f"arith.{n}": ("isExact",) for n in ("divsi", "divui", "shrsi", "shrui")},
    "arith.cmpf": ("fastmath", "predicate"),
    "arith.cmpi": ("predicate",),
    "arith.constant": ("value",),
    "arith.truncf": ("fastmath", "roundingmode"),
    "arith.scaling_truncf": ("fastmath", "roundingmode"),
    "builtin.module": ("sym_name", "sym_visibility"),
    "cf.assert": ("msg",),
    "cf.cond_br": ("branch_weights", SEGMENTS),
    "cf.switch": ("case_operand_segments", "case_values", SEGMENTS),
    "func.call": ("arg_attrs", "callee", "no_inline", "res_attrs"),
    "func.func": ("arg_attrs", "function_type", "no_inline", "res_attrs", "sym_name",
                  "sym_visibility"),
    **{f"linalg.{n}": (SEGMENTS,) for n in _LINALG_UNARY_BINARY},
    **{f"linalg.{n}": ("dilations", SEGMENTS, "strides") for n in _LINALG_WINDOW},
    "linalg.batch_matmul": ("cast", "indexing_maps", SEGMENTS),
    "linalg.batch_reduce_matmul": ("cast", "indexing_maps", SEGMENTS),
    "linalg.contract": ("cast", "indexing_maps", SEGMENTS),
    "linalg.matmul": ("cast", "indexing_maps", SEGMENTS),
    "linalg.copy": ("cast", SEGMENTS),
    "linalg.elementwise": ("indexing_maps", "kind", SEGMENTS),
    "linalg.generic": ("doc", "indexing_maps", "iterator_types", "library_call", SEGMENTS),
    "linalg.index": ("dim",),
    "linalg.reduce": ("dimensions",),
    "linalg.transpose": ("permutation",),
    "linalg.broadcast": ("dimensions",),
    "linalg.softmax": ("dimension",),
    "llvm.call_intrinsic": ("arg_attrs", "fastmathFlags", "intrin", "op_bundle_sizes",
                            "op_bundle_tags", SEGMENTS, "res_attrs"),
    **{f"math.{n}": ("fastmath",) for n in _MATH_FASTMATH},
    "memref.alloc": ("alignment", SEGMENTS),
    "memref.alloca": ("alignment", SEGMENTS),
    **{f"memref.{n}": ("alignment",) for n in ("assume_alignment", "realloc")},
    "memref.atomic_rmw": ("kind",),
    "memref.collapse_shape": ("reassociation",),
    "memref.expand_shape": ("reassociation", "static_output_shape"),
    "memref.get_global": ("name",),
    "memref.global": ("alignment", "constant", "initial_value", "sym_name", "sym_visibility",
                      "type"),
    **{f"{d}.{n}": ("alignment", "nontemporal") for d in ("memref", "vector")
       for n in ("load", "store")},
    "memref.prefetch": ("isDataCache", "isWrite", "localityHint"),
    **{f"memref.{n}": (SEGMENTS, "static_offsets", "static_sizes", "static_strides")
       for n in ("reinterpret_cast", "subview")},
    "memref.transpose": ("permutation",),
    "scf.execute_region": ("no_inline",),
    "scf.for": ("unsignedCmp",),
    "scf.index_switch": ("cases",),
    "scf.parallel": (SEGMENTS,),
    "ub.poison": ("value",),
    "vector.constant_mask": ("mask_dim_sizes",),
    "vector.contract": ("indexing_maps", "iterator_types", "kind"),
    "vector.extract": ("static_position",),
    "vector.insert": ("static_position",),
    "vector.extract_strided_slice": ("offsets", "sizes", "strides"),
    "vector.insert_strided_slice": ("offsets", "strides"),
    **{f"vector.{n}": ("alignment",) for n in ("gather", "maskedload", "maskedstore", "scatter")},
    "vector.outerproduct": ("kind",),
    "vector.print": ("punctuation", "stringLiteral"),
    "vector.reduction": ("fastmath", "kind"),
    "vector.shuffle": ("mask",),
    "vector.transfer_read": ("in_bounds", SEGMENTS, "permutation_map"),
    "vector.transfer_write": ("in_bounds", SEGMENTS, "permutation_map"),
    "vector.transpose": ("permutation",),
}

# ops with no inherent attribute still have properties (an empty ``<{}>`` is never printed):
# they are listed so that every attribute they carry is known to be discardable
REGISTERED_DIALECTS = frozenset({"affine", "amx", "arith", "builtin", "cf", "func", "linalg",
                                 "llvm", "math", "memref", "scf", "ub", "vector", "x86vector"})

_FASTMATH_NONE = OpaqueAttr("#arith.fastmath<none>")
_OVERFLOW_NONE = OpaqueAttr("#arith.overflow<none>")
_KIND_ADD = OpaqueAttr("#vector.kind<add>")

DEFAULTS: dict[str, dict[str, Attribute]] = {
    **{f"arith.{n}": {"fastmath": _FASTMATH_NONE} for n in _ARITH_FASTMATH + ("cmpf",)},
    **{f"arith.{n}": {"overflowFlags": _OVERFLOW_NONE} for n in _ARITH_OVERFLOW},
    **{f"math.{n}": {"fastmath": _FASTMATH_NONE} for n in _MATH_FASTMATH},
    "affine.linearize_index": {"disjoint": OpaqueAttr("false")},
    "ub.poison": {"value": OpaqueAttr("#ub.poison")},
    "vector.contract": {"kind": _KIND_ADD},
    "vector.outerproduct": {"kind": _KIND_ADD},
    "vector.reduction": {"fastmath": _FASTMATH_NONE},
    "vector.print": {"punctuation": OpaqueAttr("#vector.punctuation<newline>")},
    "llvm.call_intrinsic": {"fastmathFlags": OpaqueAttr("#llvm.fastmath<none>")},
}


def inherent_names(op_name: str) -> Optional[frozenset[str]]:
    """The names of ``op_name``'s inherent attributes (MLIR's ``getAttributeNames`` plus the
    segment sizes), or None for an op mlir-opt-22 does not register."""
    if op_name.split(".", 1)[0] not in REGISTERED_DIALECTS:
        return None
    return frozenset(INHERENT.get(op_name, ()))


def split_properties(op_name: str, attrs: dict[str, Attribute],
                     explicit: Optional[dict[str, Attribute]] = None
                     ) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """``(properties, discardable)`` of an op's attributes as mlir-opt-22's generic printer
    splits them, each sorted by name; properties include the defaults mlir-opt prints.
    ``explicit`` are attributes an op class says are properties whatever the table says."""
    names = inherent_names(op_name)
    explicit = dict(explicit or {})
    if names is None:
        return explicit, {k: v for k, v in sorted(attrs.items()) if k not in explicit}
    props = {**DEFAULTS.get(op_name, {}),
             **{k: v for k, v in attrs.items() if k in names}, **explicit}
    rest = {k: v for k, v in attrs.items() if k not in props}
    return dict(sorted(props.items())), dict(sorted(rest.items()))
