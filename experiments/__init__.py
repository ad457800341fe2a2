"""Experiments that reproduce the paper's tables with polyopt's measurement harness.

Each module is one experiment and a script of its own (``python3 -m experiments.dgemm_ladder``
prints its table); ``python3 -m experiments.report`` runs them all and writes a report folder.
They use only the public API: ``polyopt``, ``polyopt.bench``, ``polyopt.codegen.peak`` and
``polyopt.codegen.target``.

Importing this package pins numpy's BLAS to one thread (with its native kernel) before anything
imports numpy, as the harness requires.
"""

from polyopt.bench import single_threaded_numpy

single_threaded_numpy()
