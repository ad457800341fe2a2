"""Matrix-vector products (a matmul with M = 1 or N = 1) as BLAS level-2 loops instead of a
packed GEMM: packing copies the whole matrix to read it once, and a register tile of
M_R x N_R has nothing to reuse when one side is a vector.  Both forms stream the matrix once,
in memory order, with explicit vectors (the ``vector`` dialect; MLIR's counterpart is
``-convert-linalg-to-loops`` of ``linalg.vecmat`` / ``linalg.matvec`` followed by
``-affine-super-vectorize``; BLAS's are ``xGEMV`` with ``trans = 'N'`` and ``'T'``).

* **Row times matrix** (M = 1, ``C[0, j] += sum_k A[0, k] * B[k, j]``): the *axpy* form.  For
  ``U`` rows of B at a time, ``C[0, j:j+W] += A[0, k+u] * B[k+u, j:j+W]`` over a block of
  ``J_B`` columns: each row of B is read once, contiguously, and C's block stays in L1 while
  the rows stream past (OpenBLAS's ``dgemv_n`` does the same on its column-major view).
* **Matrix times column** (N = 1, ``C[i, 0] += sum_k A[i, k] * B[k, 0]``): the *dot* form.
  ``R`` rows of A at a time, each with ``P`` vector accumulators along k; a horizontal
  ``vector.reduction`` at the end of the row.  This reassociates the sum as ``xGEMV('T')``
  does; the result differs from the sequential order in the last bits.

The remainders (the columns past the last full vector, the k past the last group of ``U``,
the rows past the last group of ``R``) run as plain scalar loops.  Where every row the form
streams (A's in the dot form, B's in the axpy form) starts at the same offset from a vector
boundary, the vector loops start at that boundary instead, and the part of the row before it
and after the last whole vector is one masked vector each (``vector.maskedload``): see
:func:`gemv_form`.  The nest is built as MLIR
text for the operands' static types and spliced in place of the naive product nest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..affine.builder import Builder
from ..affine.ir import Operation
from ..affine.types import FloatType

#: Rows of B per step of the axpy form: eight streams in flight, measured best on Zen 4 for
#: 1000 <= N <= 2048 among 4, 8 and 16 (16 streams outrun the hardware prefetchers).
AXPY_ROWS = 8
#: Columns per block of the axpy form (its slice of C stays in L1 across the rows of B).
AXPY_BLOCK_BYTES = 8 * 1024
#: Rows of A per step of the dot form, and vector accumulators per row, for a matrix in L2.
DOT_ROWS = 4
DOT_ACCUMULATORS = 2
#: The same for a matrix larger than L2, read from L3 or memory, on a core that splits 512-bit
#: loads in halves or has 256-bit vectors (:func:`dot_streams_past`): more rows in flight keep
#: more lines coming (Zen 4, one thread, against numpy in the same run, 4 x 2 -> 8 x 1:
#: 2048x1x2048 f32 1.02x -> 1.13x, f64 1.03x -> 1.27x, 1000x1x1000 f64 1.04x -> 1.16x; in L2,
#: f32 256x1x256 1.53x -> 1.40x, 100x1x300 1.81x -> 1.60x)
STREAM_DOT_ROWS = 8
STREAM_DOT_ACCUMULATORS = 1


def dot_streams_past(machine) -> Optional[int]:
    """The size of A in bytes past which the dot form reads :data:`STREAM_DOT_ROWS` rows at a
    time (:func:`dot_shape`): L2's, or None (never) on a core whose 512-bit loads are whole.
    There 4 rows x 2 accumulators measured as fast or faster from L3 and memory too (Zen 5,
    one thread, against numpy in the same runs, medians of three runs of 21 samples, 8 x 1 ->
    4 x 2: f32 1000x1x1000 0.96x -> 1.03x and 4000x1x1000 0.95x -> 1.02x, both with 8-lane
    aligned vectors; f64 1000x1x1000 1.16x -> 1.21x; f32 2048x1x2048 1.01x -> 1.03x;
    f32 1000x1x3000 1.08x -> 1.01x, the one loss)."""
    if machine.vector_bits > 256 and machine.full_width_fma:
        return None
    return machine.l2_bytes


def dot_shape(matrix_bytes: int, streams_past: Optional[int]) -> tuple[int, int]:
    """(rows, accumulators per row) of the dot form for a matrix of ``matrix_bytes``
    (``streams_past``: :func:`dot_streams_past`)."""
    if streams_past is not None and matrix_bytes > streams_past:
        return STREAM_DOT_ROWS, STREAM_DOT_ACCUMULATORS
    return DOT_ROWS, DOT_ACCUMULATORS


@dataclass(frozen=True)
class GemvForm:
    """Which form and its parameters; ``lanes`` is the vector width in elements."""

    kind: str          # "axpy" (M = 1) or "dot" (N = 1)
    lanes: int
    rows: int          # U (axpy) or R (dot)
    block: int = 0     # J_B (axpy)
    accumulators: int = 1
    threads: int = 1   # > 1: the outer loop (column blocks, or rows) is an affine.parallel
    aligned: bool = False   # the vector loops start at a vector boundary of A's (B's) rows
    # the dot form's bf16 vectors multiplied in pairs on the dot engine (vdpbf16ps) into
    # accumulators of half as many f32 lanes
    pairs: bool = False

    def describe(self) -> str:
        on = f", {'column blocks' if self.kind == 'axpy' else 'rows'} split over " \
             f"{self.threads} threads" if self.threads > 1 else ""
        peel = ", the rows' vectors aligned (masked head and tail)" if self.aligned else ""
        if self.pairs:
            on = f", pairs of k on the bf16 dot engine{on}"
        if self.kind == "axpy":
            return (f"axpy form (row times matrix): {self.rows} rows of B per step, blocks of "
                    f"{self.block} columns, {self.lanes}-lane vectors{peel}{on}")
        lanes = self.lanes // 2 if self.pairs else self.lanes
        return (f"dot form (matrix times column): {self.rows} rows of A per step, "
                f"{self.accumulators} accumulators of {lanes} lanes per row{peel}{on}")


#: The matrix must be at least this large for a matrix-vector product to run on the team:
#: a fork and join cost a few microseconds, the time to stream 128 KiB from L2.
PARALLEL_MIN_BYTES = 256 * 1024


#: The dot form aligns its rows' vectors when a row holds at least this many vectors: the
#: masked head and tail cost about two vectors' work per row.
ALIGN_MIN_VECTORS = 8


def rows_align(length: int, lanes: int, group: int = 1) -> bool:
    """Do the forms align their vectors of ``lanes`` on rows of ``length`` elements (read in
    groups of ``group`` vectors)?  Every row then starts at the same offset from a vector
    boundary, and the row is long enough to pay for the masked head and tail."""
    return lanes > 1 and length % lanes == 0 and length >= ALIGN_MIN_VECTORS * lanes * group


def aligning_lanes(length: int, lanes: int, group: int = 1) -> int:
    """The vector width on rows of ``length`` elements: ``lanes``, or half of it where only
    half-width vectors align (:func:`gemv_form`)."""
    half = lanes // 2
    if length % lanes and half >= 4 and rows_align(length, half, group):
        return half
    return lanes


def gemv_form(m: int, n: int, k: int, elem_bytes: int, lanes: int,
              threads: int = 1, streams_past: Optional[int] = None,
              can_align: bool = True, pairs: bool = False) -> GemvForm | None:
    """The form for an M x N x K product, or None when neither side is a vector
    (``streams_past``: the dot form's rows and accumulators, :func:`dot_shape`; ``can_align``:
    A's address can bound a loop, i.e. the product is at the top level of its function).

    The dot form starts its vector loop at the first vector boundary of the row, after a
    masked head, when every row starts at the same offset from one (K elements a multiple of
    a vector): numpy's large arrays start 16 bytes into a cache line, and a full-line vector
    load there touches two lines, every one of them (Zen 5, f32 2048x1x2048 from L3: 45 GFLOPS
    at an offset of 16 bytes, 53 at 0, numpy 53 at both).  The sum's order then depends on
    where A sits in memory, as with MKL outside its CNR mode.  The axpy form does the same
    on B's rows, with vectors of half the width when only those divide N (f32 1x1000x1000
    on Zen 5: 4000-byte rows are a whole number of 32-byte vectors, not of 64-byte ones;
    1.08x numpy with 16 lanes, 1.16x with 8 aligned; 1x3000x1000 1.01x -> 1.06x), and the
    dot form on A's rows (f32 1000x1x1000 on Zen 5, 4 rows x 2 accumulators, medians of
    three runs: 0.96x numpy with 16 lanes, 1.03x-1.05x with 8 aligned).  ``pairs``: the dot
    form reads bf16 rows by vectors of twice ``lanes`` (C's lanes) and multiplies them on the
    dot engine (:attr:`GemvForm.pairs`)."""
    if m * n * k * elem_bytes < PARALLEL_MIN_BYTES:
        threads = 1
    if m == 1 and n >= lanes:
        lanes = aligning_lanes(n, lanes) if can_align else lanes
        block = max(lanes, AXPY_BLOCK_BYTES // elem_bytes // lanes * lanes)
        n_vec = n - n % lanes
        if threads > 1:   # at least one block per thread
            block = min(block, -(-n_vec // threads // lanes) * lanes or lanes)
        if n_vec <= lanes:
            threads = 1
        aligned = can_align and rows_align(n, lanes)
        return GemvForm("axpy", lanes, AXPY_ROWS, block, threads=threads, aligned=aligned)
    if n == 1 and m >= 1:
        rows, accumulators = dot_shape(m * k * elem_bytes, streams_past)
        if m < 2 * rows:
            threads = 1
        if pairs:
            lanes *= 2
            aligned = can_align and rows_align(k, lanes, accumulators)
        else:
            lanes = aligning_lanes(k, lanes, accumulators) if can_align else lanes
            aligned = can_align and rows_align(k, lanes, accumulators)
        return GemvForm("dot", lanes, rows, accumulators=accumulators, threads=threads,
                        aligned=aligned, pairs=pairs)
    return None


class MlirLines:
    """Lines of MLIR text being built, with fresh SSA names (the GEMV and dynamic GEMM
    generators)."""

    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def add(self, depth: int, line: str) -> None:
        self.lines.append("  " * depth + line)


#: Bytes of the element types the forms read.
ELEMENT_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8}


def widened(t: MlirLines, depth: int, value: str, itype: str, etype: str, width: int = 1) -> str:
    """``value`` (an element of ``itype``, or a vector of ``width`` of them) as ``etype``,
    the type the forms multiply and add in: ``arith.extf`` where they differ (bf16 and f16
    matrices and vectors into f32 sums)."""
    if itype == etype:
        return value
    src, dst = (itype, etype) if width == 1 else \
        (f"vector<{width}x{itype}>", f"vector<{width}x{etype}>")
    out = t.fresh("x")
    t.add(depth, f"{out} = arith.extf {value} : {src} to {dst}")
    return out


def _mac(t: MlirLines, depth: int, acc: str, a: str, b: str, w: int, etype: str, it: str,
         pairs: bool) -> str:
    """``acc + a * b``, ``a`` a vector of ``w`` elements of ``it`` as read, ``b`` one of B
    (widened to ``etype`` already, unless ``pairs``): with ``pairs``, ``acc`` has ``w / 2``
    lanes, each the sum of a pair of products (``x86vector.avx512.dot``, vdpbf16ps)."""
    out = t.fresh("acc")
    if pairs:
        t.add(depth, f"{out} = x86vector.avx512.dot {acc}, {a}, {b} : vector<{w}x{it}> -> "
                     f"vector<{w // 2}x{etype}>")
        return out
    a = widened(t, depth, a, it, etype, w)
    t.add(depth, f"{out} = vector.fma {a}, {b}, {acc} : vector<{w}x{etype}>")
    return out


def dot_rows(t: MlirLines, depth: int, rows: int, p: int, w: int, etype: str, ta: str,
             tv: str, k_vec: str, zero: str, itype: Optional[str] = None,
             pairs: bool = False) -> list[str]:
    """The dot form's vector loop (shared by the static nest and the ``?x?`` function's
    run-time branch): ``affine.for %k = 0 to k_vec step w * p`` over rows ``%i + r`` of A
    (type ``ta``) times ``%Bv`` (type ``tv``) into ``p`` accumulators of ``w`` lanes per row,
    starting from ``zero``; returns one vector per row, its accumulators added.  ``itype``:
    the elements of A and B where they are narrower than the sums' ``etype``; ``pairs``: see
    :func:`_mac`."""
    vt = f"vector<{w // 2 if pairs else w}x{etype}>"
    accs = _dot_loop(t, depth, rows, p, w, etype, ta, tv, "0", k_vec, [zero] * (rows * p),
                     itype, pairs)
    totals = []
    for r in range(rows):
        total = accs[r * p]
        for q in range(1, p):
            v = t.fresh("v")
            t.add(depth, f"{v} = arith.addf {total}, {accs[r * p + q]} : {vt}")
            total = v
        totals.append(total)
    return totals


def _dot_loop(t: MlirLines, depth: int, rows: int, p: int, w: int, etype: str, ta: str,
              tv: str, lower: str, upper: str, inits: list[str],
              itype: Optional[str] = None, pairs: bool = False) -> list[str]:
    """``affine.for %k = lower to upper step w * p`` over rows ``%i + r`` of A times ``%Bv``
    into ``p`` accumulators of ``w`` lanes per row, starting from ``inits`` (row-major: row
    r's accumulator q is ``inits[r * p + q]``); returns the accumulators in the same order."""
    it = itype or etype
    vt, lt = f"vector<{w // 2 if pairs else w}x{etype}>", f"vector<{w}x{it}>"
    count = rows * p
    types = ", ".join([vt] * count)
    res = t.fresh("r")
    names = [t.fresh("acc") for _ in range(count)]
    init_text = ", ".join(f"{n} = {v}" for n, v in zip(names, inits))
    t.add(depth, f"{_results(res, count)} = affine.for %k = {lower} to {upper} step {w * p} "
                 f"iter_args({init_text}) -> ({types}) {{")
    bs = []
    for q in range(p):
        b = t.fresh("b")
        t.add(depth + 1, f"{b} = affine.vector_load %Bv[%k + {q * w}] : {tv}, {lt}")
        bs.append(b if pairs else widened(t, depth + 1, b, it, etype, w))
    nexts = []
    for r in range(rows):
        for q in range(p):
            a = t.fresh("a")
            t.add(depth + 1, f"{a} = affine.vector_load %A[%i + {r}, %k + {q * w}] : {ta}, {lt}")
            nexts.append(_mac(t, depth + 1, names[r * p + q], a, bs[q], w, etype, it, pairs))
    t.add(depth + 1, f"affine.yield {', '.join(nexts)} : {types}")
    t.add(depth, "}")
    return [_result(res, count, n) for n in range(count)]


def gemv_source(m: int, n: int, k: int, etype: str, form: GemvForm, alpha: str | None,
                itype: Optional[str] = None, types: Optional[tuple[str, str, str]] = None,
                column_type: Optional[str] = None) -> str:
    """``func.func @gemv(%A, %B, %C[, %alpha])`` doing ``C += alpha * A * B`` in ``form``
    (``alpha``: None for 1, else the MLIR type of the scalar argument, ``etype``; ``itype``:
    A's and B's elements where they are narrower than C's ``etype``, widened as they are
    read).  ``types``: the operands' memref types when they are views (a batch slice, with
    unit strides along their rows), ``column_type`` then B's column collapsed to a vector."""
    it = itype or etype
    ta, tb, tc = types or (f"memref<{m}x{k}x{it}>", f"memref<{k}x{n}x{it}>",
                           f"memref<{m}x{n}x{etype}>")
    args = f"%A: {ta}, %B: {tb}, %C: {tc}" + (f", %alpha: {etype}" if alpha else "")
    t = MlirLines()
    t.add(0, f"func.func @gemv({args}) {{")
    if form.kind == "axpy":
        _axpy(t, n, k, etype, form, alpha is not None, ta, tb, tc, it)
    else:
        _dot(t, m, k, etype, form, alpha is not None, ta, tb, tc, it, column_type)
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def _axpy(t: MlirLines, n: int, k: int, etype: str, f: GemvForm, alpha: bool, ta, tb, tc,
          it: str) -> None:
    w, u = f.lanes, f.rows
    n_vec = n - n % w
    k_full = k - k % u

    def coefficients(depth: int, k_from: str, rows: int, widths) -> list[dict]:
        """A[0, k+r] (times alpha) for each row r, as a scalar and broadcast to each width."""
        coeffs = []
        for r in range(rows):
            a = t.fresh("a")
            t.add(depth, f"{a} = affine.load %A[0, {k_from} + {r}] : {ta}")
            a = widened(t, depth, a, it, etype)
            if alpha:
                scaled = t.fresh("as")
                t.add(depth, f"{scaled} = arith.mulf %alpha, {a} : {etype}")
                a = scaled
            by_width = {1: a}
            for width in widths:
                if width > 1:
                    av = t.fresh("av")
                    t.add(depth, f"{av} = vector.broadcast {a} : {etype} to "
                                 f"vector<{width}x{etype}>")
                    by_width[width] = av
            coeffs.append(by_width)
        return coeffs

    def update(depth: int, j: str, width: int, k_from: str, coeffs: list[dict]) -> None:
        """C[0, j:j+width] += sum_r coeffs[r] * B[k+r, j:j+width]."""
        if width == 1:
            load, store, vt, lt, typ = "affine.load", "affine.store", "", "", etype
        else:
            vt, lt = f"vector<{width}x{etype}>", f"vector<{width}x{it}>"
            load, store, typ = "affine.vector_load", "affine.vector_store", vt
        suffix, b_suffix = (f", {vt}", f", {lt}") if vt else ("", "")
        c = t.fresh("c")
        t.add(depth, f"{c} = {load} %C[0, {j}] : {tc}{suffix}")
        for r, by_width in enumerate(coeffs):
            b = t.fresh("b")
            t.add(depth, f"{b} = {load} %B[{k_from} + {r}, {j}] : {tb}{b_suffix}")
            b = widened(t, depth, b, it, etype, width)
            nc = t.fresh("c")
            t.add(depth, f"{nc} = math.fma {by_width[width]}, {b}, {c} : {typ}"
                  if width == 1 else f"{nc} = vector.fma {by_width[width]}, {b}, {c} : {typ}")
            c = nc
        t.add(depth, f"{store} {c}, %C[0, {j}] : {tc}{suffix}")

    def over_k(depth: int, body) -> None:
        """``body(depth, k_from, rows)`` for the groups of ``u`` rows of B, then the rest."""
        if k_full:
            t.add(depth, f"affine.for %k = 0 to {k_full} step {u} {{")
            body(depth + 1, "%k", u)
            t.add(depth, "}")
        if k % u:
            t.add(depth, f"affine.for %k = {k_full} to {k} {{")
            body(depth + 1, "%k", 1)
            t.add(depth, "}")

    if f.aligned:
        t.add(1, f"%Baddr = memref.extract_aligned_pointer_as_index %B : {tb} -> index")
        aligned_axpy(t, 1, n, etype, w, f.block, f.threads, tb, tc, "%Baddr",
                     lambda d, k_from, rows: [c[w] for c in coefficients(d, k_from, rows, [w])],
                     over_k, it)
        return
    if n_vec:
        j0 = None
        depth = 1
        if f.threads > 1:
            t.add(1, f"affine.parallel (%j0) = (0) to ({n_vec}) step ({f.block}) {{")
            depth, j0 = 2, "%j0"
        elif n_vec > f.block:
            t.add(1, f"affine.for %j0 = 0 to {n_vec} step {f.block} {{")
            depth, j0 = 2, "%j0"

        def full_vectors(d: int, k_from: str, rows: int) -> None:
            coeffs = coefficients(d, k_from, rows, [w])
            bounds = f"0 to {n_vec}" if j0 is None else (
                f"affine_map<(d0) -> (d0)>({j0}) to "
                f"min affine_map<(d0) -> (d0 + {f.block}, {n_vec})>({j0})")
            t.add(d, f"affine.for %j = {bounds} step {w} {{")
            update(d + 1, "%j", w, k_from, coeffs)
            t.add(d, "}")
        over_k(depth, full_vectors)
        if j0 is not None:
            t.add(1, "}")
    # the columns past the last full vector: halves, quarters, ... of a vector, then one
    # element, each as straight-line code per group of rows of B
    pieces = _pieces(n_vec, n, w)
    if pieces:
        def tail(d: int, k_from: str, rows: int) -> None:
            coeffs = coefficients(d, k_from, rows, sorted({wd for _, wd in pieces}))
            for off, wd in pieces:
                update(d, str(off), wd, k_from, coeffs)
        over_k(1, tail)


def aligned_axpy(t: MlirLines, depth: int, n: int | str, etype: str, w: int, block: int,
                 threads: int, tb: str, tc: str, address: str, coefficients, over_k,
                 itype: Optional[str] = None) -> None:
    """The axpy form with its vectors aligned on B's rows (every row of B starts at the same
    offset from a vector boundary; ``address``: B's aligned pointer as an index, a value of
    the function's top level; ``n``: a number or the name of a symbol): the blocks of
    columns from B's first boundary to its last; the block that starts there also updates
    the masked head (the columns before the first boundary) and the block that ends there
    the masked tail (those past the last whole vector), in the same pass over the rows of B,
    whose lines they continue.  ``coefficients(depth, k, rows)``: the broadcast A[0, k + r]
    (times alpha) of each row; ``over_k(depth, body)``: ``body(depth, k, rows)`` over the
    groups of rows of B; ``itype``: B's elements where narrower than C's ``etype``."""
    it = itype or etype
    elem = ELEMENT_BYTES[it]
    vt, mt, lt = f"vector<{w}x{etype}>", f"vector<{w}xi1>", f"vector<{w}x{it}>"
    head, nvec, ntail = t.fresh("head"), t.fresh("nvec"), t.fresh("ntail")
    syms, n_sym, n_ops = ("()[s0]", str(n), "") if isinstance(n, int) else \
        ("()[s0, s1]", "s1", f", {n}")
    t.add(depth, f"{head} = affine.apply affine_map<()[s0] -> ((s0 * -1) mod {w * elem} "
                 f"floordiv {elem})>()[{address}]")
    t.add(depth, f"{nvec} = affine.apply affine_map<{syms} -> (s0 + ((s0 * -1 + {n_sym}) "
                 f"floordiv {w}) * {w})>()[{head}{n_ops}]")
    t.add(depth, f"{ntail} = affine.apply affine_map<{syms} -> (s0 * -1 + {n_sym})>()"
                 f"[{nvec}{n_ops}]")
    head_mask, tail_mask = t.fresh("headmask"), t.fresh("tailmask")
    c0, zero = t.fresh("c"), t.fresh("zero")
    t.add(depth, f"{head_mask} = vector.create_mask {head} : {mt}")
    t.add(depth, f"{tail_mask} = vector.create_mask {ntail} : {mt}")
    t.add(depth, f"{c0} = arith.constant 0 : index")
    t.add(depth, f"{zero} = arith.constant dense<0.000000e+00> : {vt}")
    zero_in = zero
    if it != etype:
        zero_in = t.fresh("zero")
        t.add(depth, f"{zero_in} = arith.constant dense<0.000000e+00> : {lt}")
    loop = f"affine.parallel (%j0) = ({head}) to ({nvec}) step ({block})" if threads > 1 \
        else f"affine.for %j0 = {head} to {nvec} step {block}"
    t.add(depth, f"{loop} {{")

    def masked_update(d: int, k_from: str, coeffs: list[str], column: str, mask: str) -> None:
        c = t.fresh("c")
        t.add(d, f"{c} = vector.maskedload %C[{c0}, {column}], {mask}, {zero} : {tc}, {mt}, "
                 f"{vt} into {vt}")
        for r, coeff in enumerate(coeffs):
            row, b, nc = t.fresh("row"), t.fresh("b"), t.fresh("c")
            t.add(d, f"{row} = affine.apply affine_map<(d0) -> (d0 + {r})>({k_from})")
            t.add(d, f"{b} = vector.maskedload %B[{row}, {column}], {mask}, {zero_in} : {tb}, "
                     f"{mt}, {lt} into {lt}")
            b = widened(t, d, b, it, etype, w)
            t.add(d, f"{nc} = vector.fma {coeff}, {b}, {c} : {vt}")
            c = nc
        t.add(d, f"vector.maskedstore %C[{c0}, {column}], {mask}, {c} : {tc}, {mt}, {vt}")

    def one_block(d: int, k_from: str, rows: int) -> None:
        coeffs = coefficients(d, k_from, rows)
        t.add(d, f"affine.if affine_set<(d0)[s0] : (d0 - s0 == 0)>(%j0)[{head}] {{")
        masked_update(d + 1, k_from, coeffs, c0, head_mask)
        t.add(d, "}")
        t.add(d, f"affine.for %j = affine_map<(d0) -> (d0)>(%j0) to min "
                 f"affine_map<(d0)[s0] -> (d0 + {block}, s0)>(%j0)[{nvec}] step {w} {{")
        c = t.fresh("c")
        t.add(d + 1, f"{c} = affine.vector_load %C[0, %j] : {tc}, {vt}")
        for r, coeff in enumerate(coeffs):
            b, nc = t.fresh("b"), t.fresh("c")
            t.add(d + 1, f"{b} = affine.vector_load %B[{k_from} + {r}, %j] : {tb}, {lt}")
            b = widened(t, d + 1, b, it, etype, w)
            t.add(d + 1, f"{nc} = vector.fma {coeff}, {b}, {c} : {vt}")
            c = nc
        t.add(d + 1, f"affine.vector_store {c}, %C[0, %j] : {tc}, {vt}")
        t.add(d, "}")
        t.add(d, f"affine.if affine_set<(d0)[s0] : (d0 - s0 + {block} >= 0)>(%j0)[{nvec}] {{")
        masked_update(d + 1, k_from, coeffs, nvec, tail_mask)
        t.add(d, "}")
    over_k(depth + 1, one_block)
    t.add(depth, "}")


def _dot(t: MlirLines, m: int, k: int, etype: str, f: GemvForm, alpha: bool, ta, tb, tc,
         it: str, column_type: Optional[str] = None) -> None:
    w, p, pairs = f.lanes, f.accumulators, f.pairs
    vt = f"vector<{w // 2 if pairs else w}x{etype}>"      # an accumulator
    k_vec = k - k % (w * p)
    pieces = _pieces(k_vec, k, w)
    zero = "0.000000e+00"
    tv = column_type or f"memref<{k}x{it}>"
    if f.aligned:
        k_vec, pieces = 0, []
    if k_vec or f.aligned or any(width > 1 for _, width in pieces):
        t.add(1, f"%Bv = memref.collapse_shape %B [[0, 1]] : {tb} into {tv}")
    if k_vec or f.aligned:
        t.add(1, f"%zero = arith.constant dense<{zero}> : {vt}")
    edges = None
    if f.aligned:
        t.add(1, f"%Aaddr = memref.extract_aligned_pointer_as_index %A : {ta} -> index")
        edges = aligned_edges(t, 1, k, etype, w, p, ta, tv, "%Aaddr", "%zero", it, pairs)

    def rows_loop(lo: int, hi: int, rows: int) -> None:
        if hi <= lo:
            return
        if f.threads > 1 and rows == f.rows:
            t.add(1, f"affine.parallel (%i) = ({lo}) to ({hi}) step ({rows}) {{")
        else:
            t.add(1, f"affine.for %i = {lo} to {hi} step {rows} {{")
        if edges is not None:
            totals = aligned_dot_rows(t, 2, rows, p, w, etype, ta, tv, edges, it, pairs)
        elif k_vec:
            totals = dot_rows(t, 2, rows, p, w, etype, ta, tv, str(k_vec), "%zero", it, pairs)
        else:
            totals = []
        # the k past the last group of accumulators: full vectors into the accumulator,
        # then halves, quarters, ... reduced on their own, then single elements
        b_pieces, b_raw = {}, {}
        for off, width in pieces:
            b = t.fresh("b")
            if width == 1:
                t.add(2, f"{b} = affine.load %B[{off}, 0] : {tb}")
            else:
                t.add(2, f"{b} = affine.vector_load %Bv[{off}] : {tv}, vector<{width}x{it}>")
            b_raw[off] = b
            b_pieces[off] = widened(t, 2, b, it, etype, width)
        sums = []
        for r in range(rows):
            acc = totals[r] if totals else None
            for off, width in pieces:
                if width == w and acc is not None:
                    a = t.fresh("a")
                    t.add(2, f"{a} = affine.vector_load %A[%i + {r}, {off}] : {ta}, "
                             f"vector<{w}x{it}>")
                    acc = _mac(t, 2, acc, a, b_raw[off] if pairs else b_pieces[off], w, etype,
                               it, pairs)
            s = None
            if acc is not None:
                s = t.fresh("s")
                t.add(2, f"{s} = vector.reduction <add>, {acc} : {vt} into {etype}")
            for off, width in pieces:
                if width == w and totals:
                    continue
                a = t.fresh("a")
                prod = t.fresh("p")
                if width == 1:
                    t.add(2, f"{a} = affine.load %A[%i + {r}, {off}] : {ta}")
                    a = widened(t, 2, a, it, etype)
                    if s is None:
                        s = t.fresh("s")
                        t.add(2, f"{s} = arith.mulf {a}, {b_pieces[off]} : {etype}")
                    else:
                        t.add(2, f"{prod} = math.fma {a}, {b_pieces[off]}, {s} : {etype}")
                        s = prod
                    continue
                nt = f"vector<{width}x{etype}>"
                t.add(2, f"{a} = affine.vector_load %A[%i + {r}, {off}] : {ta}, "
                         f"vector<{width}x{it}>")
                a = widened(t, 2, a, it, etype, width)
                t.add(2, f"{prod} = arith.mulf {a}, {b_pieces[off]} : {nt}")
                ns = t.fresh("s")
                t.add(2, f"{ns} = vector.reduction <add>, {prod}"
                         + (f", {s}" if s is not None else "") + f" : {nt} into {etype}")
                s = ns
            sums.append(s)
        for r, s in enumerate(sums):
            if alpha:
                scaled = t.fresh("sa")
                t.add(2, f"{scaled} = arith.mulf %alpha, {s} : {etype}")
                s = scaled
            c = t.fresh("c")
            t.add(2, f"{c} = affine.load %C[%i + {r}, 0] : {tc}")
            nc = t.fresh("c")
            t.add(2, f"{nc} = arith.addf {c}, {s} : {etype}")
            t.add(2, f"affine.store {nc}, %C[%i + {r}, 0] : {tc}")
        t.add(1, "}")

    m_full = m - m % f.rows
    rows_loop(0, m_full, f.rows)
    rows_loop(m_full, m, 1)


@dataclass(frozen=True)
class _AlignedEdges:
    """The SSA names the aligned dot form's rows share: where the vector loops start and end
    (``head``: A's first vector boundary, in elements; ``main``: the end of the loop over
    groups of accumulators; ``vec``: the end of whole vectors) and B's masked head and tail."""

    head: str
    main: str
    vec: str
    head_mask: str
    tail_mask: str
    b_head: str
    b_tail: str
    c0: str
    zero: str
    zero_in: str      # the masked loads' pass-through, of A's and B's elements


def aligned_edges(t: MlirLines, depth: int, k: int | str, etype: str, w: int, p: int,
                  ta: str, tv: str, address: str, zero: str,
                  itype: Optional[str] = None, pairs: bool = False) -> _AlignedEdges:
    """The ops in front of the aligned dot form's rows loop: where A's rows reach a vector
    boundary (``address``: A's aligned pointer as an index, a value of the function's top
    level) and where their vector loops end for ``k`` elements (a number, or the name of a
    symbol), and B's masked head and tail (the lanes past the row's ends are masked off and
    read as zero); ``itype``: A's and B's elements where narrower than the sums' ``etype``;
    ``pairs``: B's head and tail stay bf16 for the dot engine (:func:`_mac`)."""
    it = itype or etype
    elem, wp = ELEMENT_BYTES[it], w * p
    vt, mt, lt = f"vector<{w}x{etype}>", f"vector<{w}xi1>", f"vector<{w}x{it}>"
    head, main, vec, tail = (t.fresh(h) for h in ("head", "kmain", "kvec", "ktail"))
    if isinstance(k, int):
        syms, k_sym = "()[s0]", str(k)
        operands = lambda first: f"[{first}]"
    else:
        syms, k_sym = "()[s0, s1]", "s1"
        operands = lambda first: f"[{first}, {k}]"
    t.add(depth, f"{head} = affine.apply affine_map<()[s0] -> ((s0 * -1) mod {w * elem} "
                 f"floordiv {elem})>()[{address}]")
    t.add(depth, f"{main} = affine.apply affine_map<{syms} -> (s0 + ((s0 * -1 + {k_sym}) "
                 f"floordiv {wp}) * {wp})>(){operands(head)}")
    t.add(depth, f"{vec} = affine.apply affine_map<{syms} -> (s0 + ((s0 * -1 + {k_sym}) "
                 f"floordiv {w}) * {w})>(){operands(head)}")
    t.add(depth, f"{tail} = affine.apply affine_map<{syms} -> (s0 * -1 + {k_sym})>()"
                 f"{operands(vec)}")
    head_mask, tail_mask, c0 = t.fresh("headmask"), t.fresh("tailmask"), t.fresh("c")
    t.add(depth, f"{head_mask} = vector.create_mask {head} : {mt}")
    t.add(depth, f"{tail_mask} = vector.create_mask {tail} : {mt}")
    t.add(depth, f"{c0} = arith.constant 0 : index")
    zero_in = zero
    if it != etype:
        zero_in = t.fresh("zero")
        t.add(depth, f"{zero_in} = arith.constant dense<0.000000e+00> : {lt}")
    b_head, b_tail = t.fresh("bhead"), t.fresh("btail")
    t.add(depth, f"{b_head} = vector.maskedload %Bv[{c0}], {head_mask}, {zero_in} : {tv}, "
                 f"{mt}, {lt} into {lt}")
    t.add(depth, f"{b_tail} = vector.maskedload %Bv[{vec}], {tail_mask}, {zero_in} : {tv}, "
                 f"{mt}, {lt} into {lt}")
    if not pairs:
        b_head, b_tail = (widened(t, depth, b, it, etype, w) for b in (b_head, b_tail))
    return _AlignedEdges(head, main, vec, head_mask, tail_mask, b_head, b_tail, c0, zero,
                         zero_in)


def aligned_dot_rows(t: MlirLines, depth: int, rows: int, p: int, w: int, etype: str,
                      ta: str, tv: str, e: _AlignedEdges,
                      itype: Optional[str] = None, pairs: bool = False) -> list[str]:
    """The aligned dot form's rows ``%i + r``: the masked head into each row's first
    accumulator, the loop over groups of ``p`` aligned vectors from ``e.head``, the whole
    vectors left into the first accumulator, the masked tail; one vector per row."""
    it = itype or etype
    vt, mt, lt = f"vector<{w // 2 if pairs else w}x{etype}>", f"vector<{w}xi1>", \
        f"vector<{w}x{it}>"
    firsts, row_index = [], []
    for r in range(rows):
        ir, a = "%i" if r == 0 else t.fresh("ir"), t.fresh("ah")
        if r:
            t.add(depth, f"{ir} = affine.apply affine_map<(d0) -> (d0 + {r})>(%i)")
        t.add(depth, f"{a} = vector.maskedload %A[{ir}, {e.c0}], {e.head_mask}, {e.zero_in} : "
                     f"{ta}, {mt}, {lt} into {lt}")
        acc = _mac(t, depth, e.zero, a, e.b_head, w, etype, it, pairs)
        row_index.append(ir)
        firsts.append(acc)
    inits = [firsts[n // p] if n % p == 0 else e.zero for n in range(rows * p)]
    accs = _dot_loop(t, depth, rows, p, w, etype, ta, tv, e.head, e.main, inits, it, pairs)
    totals = []
    for r in range(rows):
        first = accs[r * p]
        if p > 1:    # the whole vectors past the last group of p
            left, acc = t.fresh("left"), t.fresh("acc")
            t.add(depth, f"{left} = affine.for %k = {e.main} to {e.vec} step {w} "
                         f"iter_args({acc} = {first}) -> ({vt}) {{")
            a = t.fresh("a")
            t.add(depth + 1, f"{a} = affine.vector_load %A[%i + {r}, %k] : {ta}, {lt}")
            b = t.fresh("b")
            t.add(depth + 1, f"{b} = affine.vector_load %Bv[%k] : {tv}, {lt}")
            if not pairs:
                b = widened(t, depth + 1, b, it, etype, w)
            na = _mac(t, depth + 1, acc, a, b, w, etype, it, pairs)
            t.add(depth + 1, f"affine.yield {na} : {vt}")
            t.add(depth, "}")
            first = left
        a = t.fresh("at")
        t.add(depth, f"{a} = vector.maskedload %A[{row_index[r]}, {e.vec}], {e.tail_mask}, "
                     f"{e.zero_in} : {ta}, {mt}, {lt} into {lt}")
        total = _mac(t, depth, first, a, e.b_tail, w, etype, it, pairs)
        for q in range(1, p):
            v = t.fresh("v")
            t.add(depth, f"{v} = arith.addf {total}, {accs[r * p + q]} : {vt}")
            total = v
        totals.append(total)
    return totals


#: Bytes of k per vector of the int8 dot form (one ``vpdpbusd`` zmm: 16 lanes of 4 bytes).
INT8_LANES = 64


def int8_dot_source(m: int, k: int, a_unsigned: bool, b_unsigned: bool,
                    threads: int = 1) -> Optional[str]:
    """``func.func @gemv(%A, %B, %C)``: ``C[i, 0] += sum_k A[i, k] * B[k, 0]`` for an i8 A
    (M x K), i8 B (K x 1) and i32 C, the dot form on AVX512-VNNI's ``vpdpbusd`` (u8 times s8,
    four bytes into each i32 lane): 4 rows of A at a time with 2 accumulators of 64 bytes
    each, one more 64-byte vector where K leaves one, the rest of K as one masked vector
    (zero bytes past K; element by element, 40 bytes a row took most of 1000x1x1000's time);
    the unsigned operand is the instruction's first (u8) one; both signed, A's bytes are
    offset by 128 (``xori`` 0x80) and 128 times the sum of B is taken off once.  Exact.
    With ``threads > 1`` the groups of rows are an ``affine.parallel`` (a matrix of at least
    :data:`PARALLEL_MIN_BYTES`).
    None when both are unsigned (``vpdpbusd`` takes a signed second operand)."""
    if a_unsigned and b_unsigned:
        return None
    w, rows = INT8_LANES, DOT_ROWS
    par = threads > 1 and m * k >= PARALLEL_MIN_BYTES and m >= 2 * rows
    ta, tb, tc = f"memref<{m}x{k}xi8>", f"memref<{k}x1xi8>", f"memref<{m}x1xi32>"
    vt, at = "vector<16xi32>", f"vector<{w}xi8>"
    k_pair, k_vec = k - k % (2 * w), k - k % w
    offset = not a_unsigned and not b_unsigned
    t = MlirLines()
    t.add(0, f"func.func @gemv(%A: {ta}, %B: {tb}, %C: {tc}) {{")
    t.add(1, f"%Bv = memref.collapse_shape %B [[0, 1]] : {tb} into memref<{k}xi8>")
    t.add(1, f"%zero = arith.constant dense<0> : {vt}")
    t.add(1, "%z32 = arith.constant 0 : i32")
    if k > k_vec:
        t.add(1, f"%zb = arith.constant dense<0> : {at}")
        t.add(1, f"%c{k_vec} = arith.constant {k_vec} : index")
        t.add(1, f"%tailmask = vector.constant_mask [{k - k_vec}] : vector<{w}xi1>")
        t.add(1, f"%btail = vector.maskedload %Bv[%c{k_vec}], %tailmask, %zb : memref<{k}xi8>, "
                 f"vector<{w}xi1>, {at} into {at}")
    if offset:
        t.add(1, f"%flip = arith.constant dense<-128> : {at}")
        t.add(1, "%m128 = arith.constant -128 : i32")
        t.add(1, f"%bsum = affine.for %k = 0 to {k} iter_args(%s = %z32) -> i32 {{")
        t.add(2, f"%b = affine.load %Bv[%k] : memref<{k}xi8>")
        t.add(2, "%be = arith.extsi %b : i8 to i32")
        t.add(2, "%ns = arith.addi %s, %be : i32")
        t.add(2, "affine.yield %ns : i32")
        t.add(1, "}")
        t.add(1, "%corr = arith.muli %bsum, %m128 : i32")

    def mac(d: int, acc: str, a: str, b: str) -> str:
        if offset:
            fa = t.fresh("fa")
            t.add(d, f"{fa} = arith.xori {a}, %flip : {at}")
            a = fa
        first, second = (b, a) if b_unsigned else (a, b)
        out = t.fresh("acc")
        t.add(d, f'{out} = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"({acc}, {first}, '
                 f'{second}) : ({vt}, {at}, {at}) -> {vt}')
        return out

    def rows_loop(lo: int, hi: int, r_count: int) -> None:
        if hi <= lo:
            return
        if par and r_count == rows:
            t.add(1, f"affine.parallel (%i) = ({lo}) to ({hi}) step ({r_count}) {{")
        else:
            t.add(1, f"affine.for %i = {lo} to {hi} step {r_count} {{")
        count = 2 * r_count
        accs = [f"%zero"] * count
        if k_pair:
            res, names = t.fresh("r"), [t.fresh("acc") for _ in range(count)]
            inits = ", ".join(f"{n} = %zero" for n in names)
            t.add(2, f"{_results(res, count)} = affine.for %k = 0 to {k_pair} step {2 * w} "
                     f"iter_args({inits}) -> ({', '.join([vt] * count)}) {{")
            bs = []
            for q in range(2):
                b = t.fresh("b")
                t.add(3, f"{b} = affine.vector_load %Bv[%k + {q * w}] : memref<{k}xi8>, {at}")
                bs.append(b)
            nexts = []
            for r in range(r_count):
                for q in range(2):
                    a = t.fresh("a")
                    t.add(3, f"{a} = affine.vector_load %A[%i + {r}, %k + {q * w}] : {ta}, {at}")
                    nexts.append(mac(3, names[r * 2 + q], a, bs[q]))
            t.add(3, f"affine.yield {', '.join(nexts)} : {', '.join([vt] * count)}")
            t.add(2, "}")
            accs = [_result(res, count, n) for n in range(count)]
        if k_vec > k_pair:       # one more vector of 64 bytes
            b = t.fresh("b")
            t.add(2, f"{b} = affine.vector_load %Bv[{k_pair}] : memref<{k}xi8>, {at}")
            for r in range(r_count):
                a = t.fresh("a")
                t.add(2, f"{a} = affine.vector_load %A[%i + {r}, {k_pair}] : {ta}, {at}")
                accs[r * 2] = mac(2, accs[r * 2], a, b)
        if k > k_vec:           # the last bytes of the rows, masked
            for r in range(r_count):
                row, a = t.fresh("row"), t.fresh("a")
                t.add(2, f"{row} = affine.apply affine_map<(d0) -> (d0 + {r})>(%i)")
                t.add(2, f"{a} = vector.maskedload %A[{row}, %c{k_vec}], %tailmask, %zb : {ta}, "
                         f"vector<{w}xi1>, {at} into {at}")
                accs[r * 2 + 1] = mac(2, accs[r * 2 + 1], a, "%btail")
        for r in range(r_count):
            tot, s = t.fresh("v"), t.fresh("s")
            t.add(2, f"{tot} = arith.addi {accs[r * 2]}, {accs[r * 2 + 1]} : {vt}")
            t.add(2, f"{s} = vector.reduction <add>, {tot} : {vt} into i32")
            if offset:
                sc = t.fresh("s")
                t.add(2, f"{sc} = arith.addi {s}, %corr : i32")
                s = sc
            c, nc = t.fresh("c"), t.fresh("c")
            t.add(2, f"{c} = affine.load %C[%i + {r}, 0] : {tc}")
            t.add(2, f"{nc} = arith.addi {c}, {s} : i32")
            t.add(2, f"affine.store {nc}, %C[%i + {r}, 0] : {tc}")
        t.add(1, "}")

    m_full = m - m % rows
    rows_loop(0, m_full, rows)
    rows_loop(m_full, m, 1)
    t.add(1, "return")
    t.add(0, "}")
    return "\n".join(t.lines) + "\n"


def _pieces(lo: int, hi: int, widest: int) -> list[tuple[int, int]]:
    """[lo, hi) as (offset, width) pieces: as many of ``widest`` as fit, then halves,
    quarters, ... down to single elements (``widest`` a power of two)."""
    pieces, width = [], widest
    while lo < hi:
        if hi - lo >= width:
            pieces.append((lo, width))
            lo += width
        else:
            width //= 2
    return pieces


def _results(name: str, count: int) -> str:
    """The result list of an op with ``count`` results: ``%r`` or ``%r:3``."""
    return name if count == 1 else f"{name}:{count}"


def _result(name: str, count: int, index: int) -> str:
    return name if count == 1 else f"{name}#{index}"


def _row_views(types) -> Optional[tuple]:
    """``()`` for static row-major operands; for views (a batch slice: ``strided<[K, 1],
    offset: ?>``) whose rows are contiguous and whose B column is too, the (A, B, C) type
    strings and B's column collapsed, for :func:`gemv_source`; None for anything else."""
    from ..affine.dialects.memref import strides_and_offset
    if not all(t.has_static_shape for t in types):
        return None
    if all(t.layout is None for t in types):
        return ()
    layouts = [strides_and_offset(t) for t in types]
    if any(x is None or x[0][-1] != 1 for x in layouts):
        return None
    (b_strides, b_offset), b = layouts[1], types[1]
    if b.shape[1] == 1 and b_strides[0] != 1:
        return None
    off = "?" if b_offset is None else b_offset
    column = f"memref<{b.shape[0]}x{b.element_type}, strided<[1], offset: {off}>>" \
        if b.layout is not None else f"memref<{b.shape[0]}x{b.element_type}>"
    return tuple(str(t) for t in types), column


def expand_gemv(con, lanes_of, remark=None, threads: int = 1,
                streams_past: Optional[int] = None,
                bf16_pairs: bool = False, int8_dots: bool = False) -> Optional[list[Operation]]:
    """Expand a matrix-form contraction with M = 1 or N = 1 into its GEMV nest, in front of
    ``con.anchor`` (after the ``C *= beta`` nest when there is one); returns the new top-level
    ops, or None (nothing built) when the product is not a matrix-vector one this path
    handles: dynamic or non-row-major operands, integer elements, operands sharing memory,
    a convolution's im2col stand-in (read only by the packing copies it is rewritten in).
    A and B may be bf16 or f16 with C f32 (a mixed contraction without alpha): their
    elements are widened to f32 as they are read; with ``bf16_pairs`` (the CPU has the bf16
    dot engine), bf16 rows in the dot form are multiplied in pairs on it instead.  With
    ``int8_dots`` (the CPU has AVX512-VNNI), an i8 matrix times an i8 column into i32 runs
    :func:`int8_dot_source`.
    ``lanes_of(elem_bytes)``: the vector width; ``threads > 1``: the outer loop runs on the
    team when the matrix is large enough (:data:`PARALLEL_MIN_BYTES`); ``streams_past``: see
    :func:`dot_shape`."""
    from ..memref_layout.data_copy import alias_root
    from .expand import _is_one, _scalar, expand_matmul
    operands = con.operands
    types = [v.type for v in operands]
    etype, itype = types[2].element_type, types[0].element_type
    mixed = itype != etype
    int8 = (str(itype), str(types[1].element_type), str(etype)) == ("i8", "i8", "i32")
    if int8 and not (int8_dots and con.alpha is None):
        return None
    if mixed and not int8 and not (str(etype) == "f32" and str(itype) in ("bf16", "f16")
                                   and types[1].element_type == itype and con.alpha is None):
        return None
    views = _row_views(types)
    if views is None or int8 and any(t.layout is not None for t in types):
        return None
    if not ((int8 or isinstance(etype, FloatType) and etype.width in (32, 64))
            and len({id(alias_root(v)) for v in operands}) == 3):
        return None
    from .contraction import STAND_IN_ATTR
    roots = [alias_root(v).defining_op for v in operands[:2]]
    if any(op is not None and STAND_IN_ATTR in op.attributes for op in roots):
        return None     # a convolution's im2col: its rows are read by the packing copies
    (m, k), n = types[0].shape, types[1].shape[1]
    if k < 1:
        return None
    if int8:
        text = int8_dot_source(m, k, con.a_unsigned, con.b_unsigned, threads) \
            if n == 1 else None
        if text is None:
            return None
        described = (f"the int8 dot form: {DOT_ROWS} rows of A per step, 2 accumulators of "
                     f"{INT8_LANES} bytes per row on vpdpbusd")
        if not con.a_unsigned and not con.b_unsigned:
            described += ", A offset by 128"
        if "affine.parallel" in text:
            described += f", rows split over {threads} threads"
    else:
        at_top = con.anchor.parent_op is not None and \
            con.anchor.parent_op.name == "func.func" and views == ()
        form = gemv_form(m, n, k, ELEMENT_BYTES[str(itype)], lanes_of(etype.width // 8),
                         threads, streams_past, can_align=at_top,
                         pairs=bf16_pairs and str(itype) == "bf16" and mixed)
        if form is None:
            return None
        widen = f", {itype} widened to {etype} as read" if mixed and not form.pairs else ""
        described = form.describe() + widen
    loops = expand_matmul(con)
    product = loops[0]
    b = Builder.before(product)
    alpha = None
    if con.alpha is not None and not _is_one(con.alpha):
        alpha = _scalar(b, con.alpha, etype, con.loc)
    if not int8:
        text = gemv_source(m, n, k, str(etype), form, alpha and str(etype), str(itype),
                           *(views or ()))
    from .gemm_templates import splice_template
    new_ops = splice_template(b, text, "<gemv>", [*operands] + ([alpha] if alpha else []),
                              con.loc)
    product.erase()
    if remark is not None:
        remark(con.loc, f"{con.kind}: {m}x{n}x{k} is a matrix-vector product: no packing, "
                        f"{described}")
    return new_ops

