"""Scalar replacement of one BLIS nest's register tile stays inside that nest: the other
nests of the function are raised as they were written (PolyBench 2mm and 3mm: every product
of the chain goes through the BLIS pipeline, with every register-tile flag, and computes what
numpy computes)."""

import numpy as np
import pytest

import polyopt
from polyopt.pipeline import PipelineOptions, run_passes
from polyopt.polybench.suite import KERNELS, mlir_source

FLAGS = dict(hopt=True, copy=True, unroll=True, scalrep=True, vect=True)


def _remarks(text):
    messages = []
    module = polyopt.parse(text, "kernel.mlir")
    run_passes(module, PipelineOptions(**FLAGS), lambda loc, m: messages.append(m))
    return messages


@pytest.mark.parametrize("name,sizes,products", [
    ("2mm", dict(NI=37, NJ=41, NK=29, NL=43), 2),
    ("3mm", dict(NI=37, NJ=41, NK=29, NL=43, NM=31), 3)])
def test_every_product_of_a_chain_is_raised_and_correct(name, sizes, products):
    k = KERNELS[name]
    text = mlir_source(k, sizes)
    raised = [m for m in _remarks(text) if m.startswith("raised to a contraction")]
    assert len(raised) == products, raised
    rng = np.random.default_rng(11)
    values = {a.name: (rng.standard_normal(tuple(sizes[d] for d in a.dims)) if a.dims
                       else float(rng.standard_normal())) for a in k.args}
    want = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in values.items()}
    got = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in values.items()}
    polyopt.compile(text)[k.symbol](*[want[a.name] for a in k.args])
    polyopt.compile(text, **FLAGS)[k.symbol](*[got[a.name] for a in k.args])
    for a in k.arrays:
        np.testing.assert_allclose(got[a.name], want[a.name], rtol=1e-10, atol=1e-10)
