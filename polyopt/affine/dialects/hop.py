"""The ``hop`` dialect (paper section 2.3): high-level ops that the ``hopt`` pass expands.

``hop.matmul %A, %B, %C {M_C = 180 : i32, K_C = 480 : i32, M_R = 3 : i32, N_R = 16 : i32,
K_U = 4 : i32} : (memref<MxKxf64>, memref<KxNxf64>, memref<MxNxf64>)`` means C += A * B; instead
of tile sizes it may carry ``schedule = (d0, d1, d2) -> (...)`` over (d0, d1, d2) = (i, j, k),
the loops of ``C[i, j] += A[i, k] * B[k, j]``.

``hop.conv2d %I, %K, %O {strides = [1, 1], dilations = [1, 1]} : (memref<NxHxWxC>,
memref<KHxKWxCxF>, memref<NxOHxOWxF>)`` means O[n, oh, ow, f] += I[n, oh*sh + kh*dh,
ow*sw + kw*dw, c] * K[kh, kw, c, f] (NHWC input, HWCF filter).

Both parse from this custom form and from MLIR's generic form, and always print in generic form
(``"hop.matmul"(%0, %1, %2) {...} : (...) -> ()``) so that ``mlir-opt-22
--allow-unregistered-dialect`` accepts them.  Tile sizes written without a type (the paper's
``M_R = 3``) are stored as ``i32`` like the others.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..affine_expr import AffineMap
from ..attributes import (AffineMapAttr, ArrayAttr, DenseArrayAttr, FloatAttr, IntegerAttr,
                          StringAttr, UnitAttr)
from ..ir import Operation, Value, register_op
from ..types import FloatType, MemRefType, i32, i64

# tile sizes of the BLIS schedule (paper section 2.4): cache tiles M_C x K_C (x N_C), register
# tile M_R x N_R, unroll factor K_U of the k loop
TILE_PARAMS = ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U")
#: The largest register tile (M_R x N_R elements) and k unrolling accepted: the tile is
#: unrolled into the k loop, K_U times; 64 x 64 took 52 s to compile a 16x8x12 product and
#: 256 x 256 did not finish (32 vector registers hold 512 f32).
MAX_REGISTER_TILE = 1024
MAX_K_UNROLL = 64
#: Blocks past this many rows, columns or k are typos (and past i64, overflows).
MAX_BLOCK = 1 << 30


def tile_param_problem(params: dict) -> Optional[str]:
    """Why the BLIS parameters ``params`` (by attribute name, positive integers) are not
    usable, or None: a register tile or an unrolling too large to generate, or a block past
    :data:`MAX_BLOCK`."""
    for name in ("M_C", "K_C", "N_C", "M_R", "N_R", "K_U"):
        v = params.get(name)
        if v is not None and v > MAX_BLOCK:
            return f"{name} must be at most {MAX_BLOCK}, got {v}"
    m_r, n_r, k_u = params.get("M_R"), params.get("N_R"), params.get("K_U")
    if m_r is not None and n_r is not None and m_r * n_r > MAX_REGISTER_TILE:
        return (f"the register tile M_R x N_R = {m_r} x {n_r} must have at most "
                f"{MAX_REGISTER_TILE} elements (it is unrolled into the k loop)")
    if (m_r or 1) > MAX_REGISTER_TILE or (n_r or 1) > MAX_REGISTER_TILE:
        name, v = ("M_R", m_r) if (m_r or 1) > MAX_REGISTER_TILE else ("N_R", n_r)
        return f"{name} must be at most {MAX_REGISTER_TILE}, got {v}"
    if k_u is not None and k_u > MAX_K_UNROLL:
        return f"K_U must be at most {MAX_K_UNROLL}, got {k_u}"
    return None
# the register tile's form: "row" (broadcast A, vector loads of B) or "col" (vector loads of
# A's packed column, broadcast B), a string attribute beside the tile sizes
REGISTER_FORMS = ("row", "col")
# string-valued choices of the BLIS schedule beside the tile sizes, with their allowed values:
# the register tile's form, and which operand's block sits in L2 ("A": GEBP, the paper's
# order; "B": GEPB, B's K_C x N_C block in L2 and A's micro-panel in L1)
STRING_PARAMS = {"register_form": REGISTER_FORMS, "l2_block": ("A", "B")}


def _normalize_attrs(attrs: dict) -> dict:
    """``M_R = 3`` (i64 by default) -> ``M_R = 3 : i32``, as the paper writes the others.

    The result is sorted by name, the order in which MLIR keeps (and prints) a dictionary.
    """
    out = dict(attrs)
    for k in TILE_PARAMS:
        a = out.get(k)
        if isinstance(a, IntegerAttr) and a.type != i32 and -(1 << 31) <= a.value < (1 << 31) \
                and not (hasattr(a.type, "width") and a.type.width == 1):
            out[k] = IntegerAttr(a.value, i32)
    return dict(sorted(out.items()))


class _HopOp(Operation):
    """Three memref operands, an attribute dictionary, no results; generic printing."""

    OPERAND_NAMES: tuple[str, str, str] = ("A", "B", "C")
    KNOWN_ATTRS: tuple[str, ...] = ()

    @classmethod
    def parse_custom(cls, p, loc, name):
        p.skip_ws()
        start = p.pos
        operands = p.parse_operand_list()
        if len(operands) != 3:
            raise p.error(f"'{cls.OP_NAME}' expects 3 operands "
                          f"({', '.join(cls.OPERAND_NAMES)}), got {len(operands)}", start)
        attrs = _normalize_attrs(p.parse_optional_attr_dict())
        p.expect(":")
        p.skip_ws()
        tstart = p.pos
        if not p.peek("("):
            raise p.error(f"expected '(' to begin the operand types of '{cls.OP_NAME}', found "
                          f"{p._describe_next()}")
        types = p.parse_comma_separated("(", ")", p.parse_type)
        if p.optional("->"):
            p.expect("(")
            p.expect(")", f"('{cls.OP_NAME}' has no results)")
        if len(types) != 3:
            raise p.error(f"expected 3 operand types, got {len(types)}", tstart)
        for v, t in zip(operands, types):
            p.check_type(v, t, start)
        return cls(operands=operands, attributes=attrs, loc=loc)

    @classmethod
    def from_generic(cls, p, loc, operands, result_types, attrs, regions):
        return cls(operands=operands, result_types=result_types,
                   attributes=_normalize_attrs(attrs), regions=regions, loc=loc)

    # no print_custom: the printer uses the generic form

    @property
    def tile_params(self) -> dict[str, int]:
        """The tile sizes present among M_C, K_C, N_C, M_R, N_R, K_U, by name."""
        out = {k: self.attributes[k].value for k in TILE_PARAMS
               if isinstance(self.attributes.get(k), IntegerAttr)}
        for name in STRING_PARAMS:
            value = self.attributes.get(name)
            if isinstance(value, StringAttr):
                out[name] = value.value
        return out

    # -- verification helpers ---------------------------------------------------------------
    def _verify_operands(self, rank: int, allow_dynamic: bool = False,
                         mixed: bool = False) -> list[MemRefType]:
        return verify_memref_operands(self, self.OPERAND_NAMES, (rank,) * 3, allow_dynamic,
                                      mixed)

    def _verify_attr_names(self) -> None:
        for k in self.attributes:
            if k not in self.KNOWN_ATTRS:
                raise self.error(f"unknown attribute '{k}'; known attributes are "
                                 + ", ".join(self.KNOWN_ATTRS))

    def _verify_tile_params(self) -> None:
        for k in TILE_PARAMS:
            a = self.attributes.get(k)
            if a is None:
                continue
            if not isinstance(a, IntegerAttr) or getattr(a.type, "width", 64) == 1:
                raise self.error(f"{k} must be a positive integer, got {a}")
            if a.value <= 0:
                raise self.error(f"{k} must be positive, got {a.value}")
        problem = tile_param_problem({k: a.value for k in TILE_PARAMS
                                      if isinstance(a := self.attributes.get(k), IntegerAttr)})
        if problem is not None:
            raise self.error(problem)
        for name, allowed in STRING_PARAMS.items():
            value = self.attributes.get(name)
            if value is not None and (not isinstance(value, StringAttr)
                                      or value.value not in allowed):
                raise self.error(f"{name} must be " + " or ".join(f'"{a}"' for a in allowed)
                                 + f", got {value}")


@register_op
class HopMatmulOp(_HopOp):
    """``hop.matmul %A, %B, %C {tiles | schedule} : (memref<MxK>, memref<KxN>, memref<MxN>)``;
    with a batch, ``(memref<BxMxK>, memref<BxKxN>, memref<BxMxN>)``, A or B of rank 2 when
    one matrix is shared by the batch."""

    OP_NAME = "hop.matmul"
    OPERAND_NAMES = ("A", "B", "C")
    KNOWN_ATTRS = TILE_PARAMS + tuple(STRING_PARAMS) + ("schedule", "alpha", "beta",
                                                         "a_unsigned")

    @classmethod
    def build(cls, a: Value, b: Value, c: Value, tile_params: Optional[dict[str, int]] = None,
              schedule: Optional[AffineMap] = None, alpha: Optional[float] = None,
              beta: Optional[float] = None, loc=None) -> "HopMatmulOp":
        attrs = {k: IntegerAttr(int(v), i32) for k, v in (tile_params or {}).items()}
        if schedule is not None:
            attrs["schedule"] = AffineMapAttr(schedule)
        et = getattr(a.type, "element_type", None)
        ft = et if isinstance(et, FloatType) else FloatType(64)
        if alpha is not None:
            attrs["alpha"] = FloatAttr(float(alpha), ft)
        if beta is not None:
            attrs["beta"] = FloatAttr(float(beta), ft)
        return cls(operands=[a, b, c], attributes=_normalize_attrs(attrs), loc=loc)

    @property
    def a(self) -> Value:
        return self.operands[0]

    @property
    def b(self) -> Value:
        return self.operands[1]

    @property
    def c(self) -> Value:
        return self.operands[2]

    @property
    def schedule(self) -> Optional[AffineMap]:
        s = self.attributes.get("schedule")
        return s.value if isinstance(s, AffineMapAttr) else None

    def _number(self, name: str) -> Optional[float]:
        a = self.attributes.get(name)
        if isinstance(a, (FloatAttr, IntegerAttr)):
            return float(a.value)
        return None

    @property
    def alpha(self) -> Optional[float]:
        return self._number("alpha")

    @property
    def beta(self) -> Optional[float]:
        return self._number("beta")

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, N, K) of one product (of each matrix of the batch)."""
        (m, k), n = self.a.type.shape[-2:], self.b.type.shape[-1]
        return m, n, k

    @property
    def batch(self) -> Optional[int]:
        """The batch extent when C has a batch dimension (``C[b] += A[b] * B[b]``, A or B
        possibly shared by every b: rank 2), else None."""
        return self.c.type.shape[0] if self.c.type.rank == 3 else None

    @property
    def a_unsigned(self) -> bool:
        """``{a_unsigned}``: A's i8 elements are unsigned (u8 x s8 -> i32)."""
        return "a_unsigned" in self.attributes

    def _verify_batch_ranks(self) -> tuple[int, int, int]:
        """The operands' ranks: all 2 (one product), or C of rank 3 (a batch) with A and B
        of rank 3 or 2 (shared by the batch), not both 2."""
        ranks = tuple(getattr(v.type, "rank", 0) for v in self.operands)
        if ranks[2] == 3:
            if any(r not in (2, 3) for r in ranks[:2]) or ranks[:2] == (2, 2):
                raise self.error(f"with a batch dimension (C of rank 3), A and B must have rank "
                                 f"3 (a matrix per batch) or 2 (one shared matrix), not both 2; "
                                 f"got ranks {ranks[0]} and {ranks[1]}")
            for i, v in enumerate(self.operands):
                if not v.type.has_static_shape:
                    raise self.error(f"operand #{i} ({self.OPERAND_NAMES[i]}) has a dynamic "
                                     f"shape '{v.type}': a hop.matmul with a batch dimension "
                                     f"takes static shapes (one product with '?' sizes takes "
                                     f"any)")
            return ranks
        return 2, 2, 2

    @property
    def has_dynamic_shape(self) -> bool:
        """A ``?`` in an operand: the sizes are only known at run time."""
        return any(not v.type.has_static_shape for v in self.operands)

    def verify_op(self) -> None:
        ranks = self._verify_batch_ranks()
        ta, tb, tc = verify_memref_operands(self, self.OPERAND_NAMES, ranks, True, True)
        (m, k), (kb, n), (mc, nc) = ta.shape[-2:], tb.shape[-2:], tc.shape[-2:]
        if tc.rank == 3:
            for i, t in ((0, ta), (1, tb)):
                if t.rank == 3 and None not in (t.shape[0], tc.shape[0]) and \
                        t.shape[0] != tc.shape[0]:
                    raise self.error(f"operand #{i} ({self.OPERAND_NAMES[i]}) has a batch of "
                                     f"{t.shape[0]} but C has {tc.shape[0]}")
        # a '?' agrees with anything here; the expansion checks it at run time
        if None not in (kb, k) and kb != k:
            raise self.error(f"operand #1 (B) has {kb} rows but A has {k} columns")
        if None not in (mc, m) and mc != m:
            raise self.error(f"operand #2 (C) has {mc} rows but A has {m} rows")
        if None not in (nc, n) and nc != n:
            raise self.error(f"operand #2 (C) has {nc} columns but B has {n} columns")
        self._verify_attr_names()
        self._verify_tile_params()
        s = self.attributes.get("schedule")
        if s is not None and tc.rank == 3:
            raise self.error("schedule applies to the (i, j, k) loops of one product: a "
                             "hop.matmul with a batch dimension takes none")
        if s is not None:
            if not isinstance(s, AffineMapAttr):
                raise self.error(f"schedule must be an affine map, got {s}")
            amap = s.value
            if amap.num_dims != 3 or amap.num_symbols != 0:
                raise self.error("schedule must be an affine map with 3 dims (d0, d1, d2) = "
                                 f"(i, j, k) and no symbols, got ({amap.num_dims} dims, "
                                 f"{amap.num_symbols} symbols) {amap}")
            if not amap.results:
                raise self.error("schedule must have at least one result")
        for k_ in ("alpha", "beta"):
            a = self.attributes.get(k_)
            if a is not None and not (isinstance(a, (FloatAttr, IntegerAttr))
                                      and getattr(a.type, "width", 64) != 1):
                raise self.error(f"{k_} must be a number, got {a}")
        u = self.attributes.get("a_unsigned")
        if u is not None:
            if not isinstance(u, UnitAttr):
                raise self.error(f"a_unsigned is a unit attribute, got {u}")
            if str(ta.element_type) != "i8":
                raise self.error(f"a_unsigned applies to an i8 A, got '{ta.element_type}'")
        if ta.element_type != tc.element_type and "alpha" in self.attributes:
            raise self.error("alpha with mixed element types is not supported (scale C "
                             "after the product)")


#: The contractions whose A and B are narrower than C (A, B, C): products of the narrow
#: types are exact in C's type, and the sum is C's (hop.matmul and linalg.matmul take them).
MIXED_TYPES = (("bf16", "bf16", "f32"), ("f16", "f16", "f32"), ("i8", "i8", "i32"))


def verify_memref_operands(op: Operation, names: Sequence[str], ranks: Sequence[int],
                           allow_dynamic: bool = False, mixed: bool = False) -> list[MemRefType]:
    """The operand checks of ``hop.*`` and of linalg's convolutions: ``len(names)`` operands,
    no results or regions, memrefs of rank ``ranks[i]`` (static shapes unless
    ``allow_dynamic``) with one element type, f32 or f64, or with ``mixed`` one of
    :data:`MIXED_TYPES`; returns their types."""
    def desc(i: int) -> str:
        return f"operand #{i} ({names[i]})"
    if len(op.operands) != len(names):
        raise op.error(f"expects {len(names)} operands ({', '.join(names)}), got "
                       f"{len(op.operands)}")
    if op.results:
        raise op.error(f"has no results, got {len(op.results)}")
    if op.regions:
        raise op.error("has no regions")
    types = []
    for i, v in enumerate(op.operands):
        t = v.type
        if not isinstance(t, MemRefType):
            raise op.error(f"{desc(i)} must be a memref, got '{t}'")
        if t.rank != ranks[i]:
            raise op.error(f"{desc(i)} must have rank {ranks[i]}, got '{t}'")
        if not t.has_static_shape and not allow_dynamic:
            raise op.error(f"{desc(i)} has a dynamic shape '{t}'; dynamic shapes are not "
                           "supported")
        types.append(t)
    ets = [t.element_type for t in types]
    if mixed and len(set(ets)) != 1:
        if tuple(str(e) for e in ets) in MIXED_TYPES:
            return types
        raise op.error("operands must have one element type, f32 or f64, or the element "
                       f"types ({', '.join(names)}) of a mixed contraction: " + ", ".join(
                           "(" + ", ".join(c) + ")" for c in MIXED_TYPES)
                       + "; got (" + ", ".join(str(e) for e in ets) + ")")
    for i, t in enumerate(types):
        if not isinstance(t.element_type, FloatType) or t.element_type.width not in (32, 64):
            raise op.error(f"{desc(i)} must have element type f32 or f64, got "
                           f"'{t.element_type}'")
    if len(set(ets)) != 1:
        raise op.error("operands must have the same element type, got "
                       + ", ".join(f"'{e}'" for e in ets))
    return types


# The operand layouts of each convolution kind (CONV_KIND of its op), as dimension names.
CONV_LAYOUTS = {
    "conv2d": ("NHWC", "HWCF", "NHWF"),       # hop.conv2d, linalg.conv_2d_nhwc_hwcf
    "conv1d": ("NWC", "WCF", "NWF"),          # linalg.conv_1d_nwc_wcf
    "depthwise2d": ("NHWC", "HWC", "NHWC"),   # linalg.depthwise_conv_2d_nhwc_hwc
}


def verify_conv_shapes(op: Operation, kind: str, types: Sequence[MemRefType],
                       strides: Sequence[int], dilations: Sequence[int]) -> None:
    """The shape rules of a convolution of ``kind`` (see :data:`CONV_LAYOUTS`): the filter's
    input channels and the output's batch and channels agree with the input and the filter,
    the dilated filter fits in the input, and each output spatial size is
    ``(size - dilation * (k - 1) - 1) floordiv stride + 1``."""
    ti, tf, to = types
    li, lf, lo = CONV_LAYOUTS[kind]
    inp = dict(zip(li, ti.shape))
    flt = dict(zip(lf, tf.shape))
    out = dict(zip(lo, to.shape))
    if kind == "depthwise2d":
        if flt["C"] != inp["C"]:
            raise op.error(f"operand #1 (filter) has {flt['C']} channels but input has "
                           f"{inp['C']}")
    elif flt["C"] != inp["C"]:
        raise op.error(f"operand #1 (filter) has {flt['C']} input channels but input has "
                       f"{inp['C']}")
    if out["N"] != inp["N"]:
        raise op.error(f"operand #2 (output) has batch size {out['N']} but input has "
                       f"{inp['N']}")
    if kind == "depthwise2d":
        if out["C"] != inp["C"]:
            raise op.error(f"operand #2 (output) has {out['C']} channels but input has "
                           f"{inp['C']}")
    elif out["F"] != flt["F"]:
        raise op.error(f"operand #2 (output) has {out['F']} channels but filter has "
                       f"{flt['F']}")
    spatial = [d for d in li if d in "HW"]
    for dn, s, d in zip(spatial, strides, dilations):
        what = {"H": "height", "W": "width"}[dn]
        kn = "K" + dn
        size, k, got = inp[dn], flt[dn], out[dn]
        extent = d * (k - 1) + 1
        if extent > size:
            raise op.error(f"filter {what} {k} (dilated to {extent}) exceeds the input "
                           f"{what} {size}")
        expected = (size - d * (k - 1) - 1) // s + 1
        if got != expected:
            sfx = dn.lower()
            raise op.error(f"operand #2 (output) has {what} {got} but expected {expected} "
                           f"= ({dn} - dilation_{sfx} * ({kn} - 1) - 1) floordiv stride_{sfx}"
                           f" + 1 with {dn} = {size}, {kn} = {k}, stride_{sfx} = {s}, "
                           f"dilation_{sfx} = {d}")


def _int_list(attr) -> Optional[tuple[int, ...]]:
    if isinstance(attr, ArrayAttr):
        if all(isinstance(e, IntegerAttr) for e in attr.elements):
            return tuple(e.value for e in attr.elements)
        return None
    if isinstance(attr, DenseArrayAttr):
        return tuple(int(v) for v in attr.values)
    return None


class ConvOperands:
    """The operands every convolution op has, in order: input, filter, output."""

    @property
    def input(self) -> Value:
        return self.operands[0]

    @property
    def filter(self) -> Value:
        return self.operands[1]

    @property
    def output(self) -> Value:
        return self.operands[2]


@register_op
class HopConv2DOp(ConvOperands, _HopOp):
    """``hop.conv2d %I, %K, %O {strides = [1, 1], dilations = [1, 1]} : (NHWC, HWCF, NHWF)``.

    ``strides``/``dilations`` default to ``[1, 1]``; the matmul tile sizes may also be given
    (the convolution is expanded as an implicit GEMM).
    """

    OP_NAME = "hop.conv2d"
    CONV_KIND = "conv2d"
    OPERAND_NAMES = ("input", "filter", "output")
    KNOWN_ATTRS = ("strides", "dilations") + TILE_PARAMS

    @classmethod
    def build(cls, input: Value, filter: Value, output: Value, strides: Sequence[int] = (1, 1),
              dilations: Sequence[int] = (1, 1), tile_params: Optional[dict[str, int]] = None,
              loc=None) -> "HopConv2DOp":
        attrs = {"strides": ArrayAttr(tuple(IntegerAttr(int(s), i64) for s in strides)),
                 "dilations": ArrayAttr(tuple(IntegerAttr(int(d), i64) for d in dilations))}
        attrs.update({k: IntegerAttr(int(v), i32) for k, v in (tile_params or {}).items()})
        return cls(operands=[input, filter, output], attributes=_normalize_attrs(attrs), loc=loc)


    @property
    def strides(self) -> tuple[int, int]:
        a = self.attributes.get("strides")
        return _int_list(a) if a is not None else (1, 1)

    @property
    def dilations(self) -> tuple[int, int]:
        a = self.attributes.get("dilations")
        return _int_list(a) if a is not None else (1, 1)

    def verify_op(self) -> None:
        ti, tf, to = self._verify_operands(rank=4, mixed=True)
        self._verify_attr_names()
        for name in ("strides", "dilations"):
            a = self.attributes.get(name)
            if a is None:
                continue
            vals = _int_list(a)
            if vals is None or len(vals) != 2 or any(v <= 0 for v in vals):
                raise self.error(f"{name} must be a list of 2 positive integers, got {a}")
        self._verify_tile_params()
        verify_conv_shapes(self, self.CONV_KIND, (ti, tf, to), self.strides, self.dilations)
