"""f16 x f16 -> f32 on AMX-BF16 where the CPU has no AMX-FP16 (Sapphire and Emerald Rapids):
each f16 is split into two bf16 halves, ``x = hi + lo`` with ``hi = bf16(x)`` and ``lo =
bf16(x - hi)``, both exact (f16's 11 significant bits are two halves of at most 8, and bf16's
exponents cover f16's), and the product becomes one bf16 GEMM of four times the depth::

    C += [A_hi  A_lo  A_hi  A_lo] . [B_hi; B_hi; B_lo; B_lo]
       = A_hi B_hi + A_lo B_hi + A_hi B_lo + A_lo B_lo = A B

with every product exact in f32 and summed in f32, as the f32 path on converted operands
sums it.  An infinity or a NaN in A or B would turn a term such as ``inf x 0`` (an ``lo`` half
of zero) into NaN where the f32 path gives an infinity, so the split nests also take the
largest exponent field (bits as integers: a reduction that vectorizes), and a run-time branch takes the converted path when it is not finite.

No MLIR pass does this; it is the bf16x3-style splitting oneDNN and cuBLAS use to run f32
on bf16 engines, here exact because f16 has fewer bits than two bf16 halves."""

from __future__ import annotations

#: f16's exponent bits (0x7C00): all ones in an infinity or a NaN.
F16_EXPONENT = 31744


#: Elements per vector of the split nests.
VL = 16


def split_source(ta: str, tb: str, m=None, n=None, k=None) -> str:
    """``func.func @split(%A, %B, %M, %N, %K)``: the halves ``A2`` (M x 4K) and ``B2`` (4K x N)
    in bf16 (16 elements at a time, then the rest one by one), then an ``scf.if`` that is
    taken (empty: the converted path goes there) when A or B holds an infinity or a NaN, its
    else block (empty: the bf16 GEMM on A2 and B2), then the buffers' deallocation.  With
    static ``m``, ``n``, ``k`` the buffers have static shapes, so that the compiled code keeps
    them between calls (:mod:`polyopt.codegen.buffer_cache`: a fresh 32 MiB block is 8,192
    page faults a call)."""
    static = all(isinstance(x, int) for x in (m, n, k))
    ha = f"memref<{m}x{4 * k}xbf16>" if static else "memref<?x?xbf16>"
    hb = f"memref<{4 * k}x{n}xbf16>" if static else "memref<?x?xbf16>"
    sizes_a, sizes_b = ("", "") if static else ("%M, %K4", "%K4, %N")
    lines = [
        f"func.func @split(%A: {ta}, %B: {tb}, %M: index, %N: index, %K: index) {{",
        "  %K4 = affine.apply affine_map<()[s0] -> (s0 * 4)>()[%K]",
        f"  %A2 = memref.alloc({sizes_a}) {{alignment = 64 : i64}} : {ha}",
        f"  %B2 = memref.alloc({sizes_b}) {{alignment = 64 : i64}} : {hb}",
        "  %z = arith.constant 0 : i16",
        f"  %zv = arith.constant dense<0> : vector<{VL}xi16>",
        f"  %exp = arith.constant {F16_EXPONENT} : i16",
        f"  %expv = arith.constant dense<{F16_EXPONENT}> : vector<{VL}xi16>",
    ]
    # A2[i, k + q K] = (hi, lo, hi, lo)[q]; B2[k + q K, j] = (hi, hi, lo, lo)[q]
    lines += _nest("a", "%A", ta, ha, "%M", "%K", "%zv", "%z", ("hi", "lo", "hi", "lo"),
                   lambda q, o, x: f"%A2[{o}, {x if q == 0 else f'%q{q}'}]", across="inner")
    lines += _nest("b", "%B", tb, hb, "%K", "%N", "%va#0", "%va#1", ("hi", "hi", "lo", "lo"),
                   lambda q, o, x: f"%B2[{o if q == 0 else f'%q{q}'}, {x}]", across="outer")
    lines += [
        f"  %rv = vector.reduction <maxui>, %vb#0 : vector<{VL}xi16> into i16",
        "  %mx = arith.maxui %rv, %vb#1 : i16",
        # an exponent of all ones: an infinity or a NaN
        "  %bad = arith.cmpi eq, %mx, %exp : i16",
        "  scf.if %bad {",
        "  } else {",
        "  }",
        f"  memref.dealloc %A2 : {ha}",
        f"  memref.dealloc %B2 : {hb}",
        "  return",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _nest(v: str, src: str, ts: str, h: str, rows: str, cols: str, vinit: str, sinit: str,
          order: tuple, dest, across: str) -> list[str]:
    """The split of ``src`` (rows x cols, row-major): for each row, its columns 16 at a time
    then one by one; the halves go to the four places ``dest(q, row, col)`` (the row or the
    column offset by q K: ``%q1``.. computed here), the exponent fields into a vector and a
    scalar maximum (``%v{v}#0``, ``%v{v}#1``); ``h`` the halves' memref type."""
    vt = f"vector<{VL}x"
    out = [f"  %v{v}:2 = affine.for %o = 0 to {rows} iter_args(%sv = {vinit}, %ss = {sinit}) -> "
           f"({vt}i16>, i16) {{"]
    whole = f"affine_map<()[s0] -> ((s0 floordiv {VL}) * {VL})>()[{cols}]"
    for vector in (True, False):
        if vector:
            out.append(f"    %w = affine.for %x = 0 to {whole} step {VL} iter_args(%a0 = %sv) -> "
                       f"({vt}i16>) {{")
            f16, f32, bf, i16 = (f"{vt}f16>", f"{vt}f32>", f"{vt}bf16>", f"{vt}i16>")
            out.append(f"      %e = affine.vector_load {src}[%o, %x] : {ts}, {f16}")
        else:
            out.append(f"    %r = affine.for %x = {whole} to {cols} iter_args(%a0 = %ss) -> "
                       f"(i16) {{")
            f16, f32, bf, i16 = "f16", "f32", "bf16", "i16"
            out.append(f"      %e = affine.load {src}[%o, %x] : {ts}")
        out += [f"      %f = arith.extf %e : {f16} to {f32}",
                f"      %hi = arith.truncf %f : {f32} to {bf}",
                f"      %fh = arith.extf %hi : {bf} to {f32}",
                f"      %d = arith.subf %f, %fh : {f32}",
                f"      %lo = arith.truncf %d : {f32} to {bf}",
                f"      %bits = arith.bitcast %e : {f16} to {i16}",
                f"      %ex = arith.andi %bits, {'%expv' if vector else '%exp'} : {i16}",
                f"      %m = arith.maxui %a0, %ex : {i16}"]
        moved = "%x" if across == "inner" else "%o"
        for q in (1, 2, 3):
            out.append(f"      %q{q} = affine.apply affine_map<(d0)[s0] -> (d0 + s0 * {q})>"
                       f"({moved})[%K]")
        for q, half in enumerate(order):
            at = dest(q, "%o", "%x")
            if vector:
                out.append(f"      affine.vector_store %{half}, {at} : {h}, {bf}")
            else:
                out.append(f"      affine.store %{half}, {at} : {h}")
        out += [f"      affine.yield %m : {i16}", "    }"]
    out += [f"    affine.yield %w, %r : {vt}i16>, i16", "  }"]
    return out
