"""``linalg.softmax`` on memrefs and its decomposition into affine loops::

    linalg.softmax dimension(1) ins(%x : memref<4x5xf32>) outs(%y : memref<4x5xf32>)

``y = exp(x - max(x)) / sum(exp(x - max(x)))`` along ``dimension``.  mlir-opt-22 reads, prints
and verifies it on memrefs but lowers it nowhere (``--convert-linalg-to-affine-loops`` leaves it;
its decomposition, ``transform.structured.decompose_interface``, works on tensors): polyopt's
``--convert-linalg-to-affine-loops`` leaves it too, and compiling (or ``--hopt``) decomposes it
first (:func:`decompose_softmax`) the way MLIR's ``SoftmaxOp::decomposeOperation`` does: the max
by ``arith.maxnumf`` from the most negative finite value, ``math.exp(x - max)`` stored into the
output and summed, then the output divided by the sum.
"""

from __future__ import annotations

from ..attributes import IntegerAttr
from ..diagnostics import CodegenError, ParseError
from ..ir import Operation, register_op
from ..types import FloatType, MemRefType, i64

__all__ = ["SoftmaxOp", "decompose_softmax"]


@register_op
class SoftmaxOp(Operation):
    """``linalg.softmax [{attrs}] dimension(d) ins(%x : T) outs(%y : T)`` (see the module
    docstring)."""

    OP_NAME = "linalg.softmax"

    @property
    def dimension(self) -> int:
        a = self.attributes.get("dimension")
        return a.value if isinstance(a, IntegerAttr) else 0

    @classmethod
    def parse_custom(cls, p, loc, name):
        from .linalg import _reject_tensors
        _reject_tensors(p)
        attrs = p.parse_optional_attr_dict()
        p.skip_ws()
        if not p.optional_keyword("dimension"):
            raise ParseError("custom op 'linalg.softmax' expected 'dimension'", p.loc())
        p.expect("(")
        d = p.parse_integer("integer", name)
        p.expect(")")
        values = []
        for kw in ("ins", "outs"):
            p.skip_ws()
            if not p.optional_keyword(kw):
                raise ParseError(f"custom op 'linalg.softmax' expected '{kw}'", p.loc())
            p.expect("(")
            v = p.parse_operand()
            p.expect(":")
            p.check_type(v, p.parse_type())
            p.expect(")")
            values.append(v)
        if p.optional("->"):
            raise ParseError("tensor values are not supported by polyopt (memref-based IR: "
                             "bufferize first)", loc)
        attrs["dimension"] = IntegerAttr(d, i64)
        return cls(operands=values, attributes=attrs, loc=loc)

    def print_custom(self, p) -> None:
        p.print("linalg.softmax")
        p.print_attr_dict(self.attributes, elide=("dimension",))
        x, y = self.operands
        p.print(f" dimension({self.dimension}) ins({p.value_name(x)} : {p.type_str(x.type)}) "
                f"outs({p.value_name(y)} : {p.type_str(y.type)})")

    def verify_op(self) -> None:
        if len(self.operands) != 2 or self.results:
            raise self.error("expects one input and one output (memrefs)")
        x, y = (v.type for v in self.operands)
        if not (isinstance(x, MemRefType) and isinstance(y, MemRefType)):
            raise self.error("expects memref operands")
        if x.element_type != y.element_type:
            raise self.error("failed to verify that input and output have same element type")
        if len(x.shape) != len(y.shape) or any(a is not None and b is not None and a != b
                                               for a, b in zip(x.shape, y.shape)):
            raise self.error("incompatible output shape")
        if not 0 <= self.dimension < len(x.shape):
            raise self.error("incorrect dimension specified")


def decompose_softmax(root: Operation, keep=None) -> int:
    """Every ``linalg.softmax`` under ``root`` (but those ``keep(op)`` says to keep) as its
    affine loops (module docstring): per position of the other dimensions, three loops along
    ``dimension``.  Static shapes and float elements (``exp`` has no integer form: a located
    error).  Returns how many."""
    ops = [op for op in root.walk() if isinstance(op, SoftmaxOp)
           and (keep is None or not keep(op))]
    for op in ops:
        _decompose(op)
        op.erase()
    return len(ops)


def _decompose(op: SoftmaxOp) -> None:
    from ..affine_expr import AffineMap
    from ..builder import Builder
    from .affine import AffineForOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
    from .arith import FLOAT_BINARY, ConstantOp
    from .math import FLOAT_UNARY
    x, y = op.operands
    t: MemRefType = x.type
    et = t.element_type
    loc = op.loc
    if not isinstance(et, FloatType):
        raise CodegenError(f"'linalg.softmax' of '{et}' elements cannot run: exp has no "
                           f"integer form", loc)
    if any(s is None for s in t.shape) or any(s is None for s in y.type.shape):
        raise CodegenError("'linalg.softmax' over '?' sizes is not supported yet", loc)
    d = op.dimension
    outer = [s for k, s in enumerate(t.shape) if k != d]
    b = Builder.before(op)
    lowest = {16: -65504.0, 32: -3.4028234663852886e+38, 64: -1.7976931348623157e+308}
    neutral = lowest.get(et.width, -3.3895313892515355e+38)      # bf16's most negative
    ivs, body = [], b
    for extent in outer:
        loop = body.create(AffineForOp.build_constant, 0, extent, loc=loc)
        ivs.append(loop.induction_var)
        body = Builder.before_terminator(loop.body)

    def along(builder, init=None):
        lp = builder.create(AffineForOp.build_constant, 0, t.shape[d], 1,
                            [init] if init is not None else [], loc=loc)
        j = lp.induction_var
        idx = ivs[:d] + [j] + ivs[d:]
        return lp, Builder.before_terminator(lp.body), idx

    ident = AffineMap.identity(len(t.shape))
    start = body.create(ConstantOp, neutral, et, loc=loc).result
    zero = body.create(ConstantOp, 0.0, et, loc=loc).result
    # the max
    lp, bb, idx = along(body, start)
    v = bb.create(AffineLoadOp.build, x, idx, ident, loc=loc).result
    m = bb.create(FLOAT_BINARY["maxnumf"], lp.body.args[1], v, loc=loc).result
    bb.create(AffineYieldOp.build, [m], loc=loc)
    peak = lp.results[0]
    # exp(x - max) into y, summed
    lp, bb, idx = along(body, zero)
    v = bb.create(AffineLoadOp.build, x, idx, ident, loc=loc).result
    e = bb.create(FLOAT_UNARY["exp"], bb.create(FLOAT_BINARY["subf"], v, peak,
                                                loc=loc).result, loc=loc).result
    bb.create(AffineStoreOp.build, e, y, idx, ident, loc=loc)
    s = bb.create(FLOAT_BINARY["addf"], lp.body.args[1], e, loc=loc).result
    bb.create(AffineYieldOp.build, [s], loc=loc)
    total = lp.results[0]
    # y / sum
    lp, bb, idx = along(body)
    v = bb.create(AffineLoadOp.build, y, idx, ident, loc=loc).result
    q = bb.create(FLOAT_BINARY["divf"], v, total, loc=loc).result
    bb.create(AffineStoreOp.build, q, y, idx, ident, loc=loc)
