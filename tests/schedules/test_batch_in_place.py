"""Products whose K is one K_C block in either loop order (BLIS's GEBP or GEPB) run in GEPB's
order when that lets the register tile read A's rows where they are: B's block is packed, A
is not copied at all.  The slices of a ``linalg.batch_matmul`` (contiguous views at a
run-time offset) are plain matrices for this and for BLIS's small, unpacked path.  Results
equal numpy's on whole tiles and on edges."""

import dataclasses

import numpy as np
import pytest

import polyopt
import polyopt.pipeline
from polyopt.schedules.blis_schedule import MachineModel

# Emerald Rapids as polyopt measures it (two 512-bit FMAs a cycle, 46 bytes a cycle from L2)
XEON = MachineModel(512, 32, 48 << 10, 2 << 20, 300 << 20, l1d_ways=12, l2_ways=16,
                    fma_latency=4, fma_per_cycle=2, embedded_broadcast=True,
                    l2_bytes_per_cycle=46.0)


def _batch_source(batch: int, m: int, n: int, k: int, dtype: str) -> str:
    a, b, c = (f"memref<{batch}x{r}x{s}x{dtype}>" for r, s in ((m, k), (k, n), (m, n)))
    return (f"func.func @bmm(%A: {a}, %B: {b}, %C: {c}) {{\n"
            f"  linalg.batch_matmul ins(%A, %B : {a}, {b}) outs(%C : {c})\n"
            f"  return\n}}\n")


def _compile(source: str, name: str):
    remarks = []
    fn = polyopt.compile(source, threads=1, remark=lambda loc, msg: remarks.append(msg),
                         hopt=True, copy=True, unroll=True, scalrep=True, vect=True)[name]
    return fn, remarks


@pytest.mark.parametrize("batch,m,n,k,dtype,path", [
    (3, 128, 128, 128, "f32", "in place"),     # the acceptance's slices
    (2, 128, 100, 128, "f32", "in place"),     # N's edge: over B's zero-padded panel
    (2, 128, 128, 128, "f64", "in place"),
    (2, 96, 96, 96, "f32", "unpacked"),        # BLIS's small path: an 8x32 tile divides them
    (2, 97, 101, 103, "f32", "packed"),        # M's edge: only a packed, zero-padded A covers it
    (2, 128, 128, 1100, "f32", "packed")])     # more K_C blocks with GEPB's K_C than GEBP's
def test_batch_slices_read_a_in_place(monkeypatch, batch, m, n, k, dtype, path):
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: XEON)
    bmm, remarks = _compile(_batch_source(batch, m, n, k, dtype), "bmm")
    in_place = path == "in place"
    tie = "in either order, and GEPB reads A's rows in place (no copy of A)"
    assert any(tie in r for r in remarks) == in_place, remarks
    assert any("A not packed" in r for r in remarks) == in_place, remarks
    assert any(r.startswith("linalg.batch_matmul: packed A") for r in remarks) == \
        (path == "packed"), remarks
    assert any(r.startswith("linalg.batch_matmul: packed B") for r in remarks) == \
        (path != "unpacked"), remarks
    assert any("unpacked path" in r for r in remarks) == (path == "unpacked"), remarks
    t = np.float64 if dtype == "f64" else np.float32
    rng = np.random.default_rng(2)
    a, b, c = (rng.uniform(-1, 1, (batch, *s)).astype(t) for s in ((m, k), (k, n), (m, n)))
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    bmm(a, b, c)
    np.testing.assert_allclose(c, want, rtol=0,
                               atol=(1e-13 if t is np.float64 else 3e-6) * k * 4)


def test_a_single_product_takes_gepb_on_the_tie_too(monkeypatch):
    """A plain 128^3 matmul: the same tie, the same order, A read in place."""
    from polyopt.bench import matmul_source
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: XEON)
    mm, remarks = _compile(matmul_source(128, 128, 128, "f32"), "matmul")
    assert any("l2_block=B" in r and "GEPB reads A's rows in place" in r for r in remarks)
    assert any("A not packed" in r for r in remarks), remarks
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(-1, 1, (128, 128)).astype(np.float32) for _ in range(3))
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    mm(a, b, c)
    np.testing.assert_allclose(c, want, rtol=0, atol=3e-6 * 128 * 4)


@pytest.mark.parametrize("change,why", [
    ({"l2_bytes_per_cycle": 0.0}, "L2's bandwidth unknown: GEPB's stream of B unchecked"),
    ({"l2_bytes_per_cycle": 24.0}, "GEPB's 32 bytes a cycle of B exceed 3/4 of L2's 24")])
def test_gebp_stays_where_gepb_would_starve_on_b(monkeypatch, change, why):
    machine = dataclasses.replace(XEON, **change)
    monkeypatch.setattr(polyopt.pipeline, "machine_model", lambda target=None: machine)
    _, remarks = _compile(_batch_source(2, 128, 128, 128, "f32"), "bmm")
    assert any("l2_block=A" in r for r in remarks), (why, remarks)
    assert any(r.startswith("linalg.batch_matmul: packed A") for r in remarks), (why, remarks)
