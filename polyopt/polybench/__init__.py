"""PolyBench/C 4.2 as affine MLIR, with C twins compiled by clang-22 and Polly.

- :mod:`.suite`: the kernels (gemm, 2mm, 3mm, atax, bicg, doitgen, mvt, gemver, gesummv,
  syrk, syr2k, trmm, covariance, correlation, lu, cholesky, trisolv, ludcmp, durbin, jacobi-1d,
  jacobi-2d, seidel-2d, heat-3d, fdtd-2d), PolyBench's dataset sizes, and the MLIR text of each
  at a dataset (``kernels/<name>.mlir.in`` templates);
- :mod:`.init`: PolyBench's ``init_array`` formulas in numpy;
- :mod:`.ctwin`: each kernel's C twin (``c/<name>.c``, PolyBench's own C) built with
  ``clang-22 -O3 -march=native``, with or without Polly, and called through ctypes;
- :mod:`.harness`: ``polyopt bench polybench``: polyopt without passes, polyopt --hopt, clang
  and Polly timed in one run, outputs checked against each other.

PolyBench/C 4.2: Copyright (c) 2010-2016, Ohio State University. Redistributed with
attribution under its license (LICENSE-PolyBench.txt in this folder).
"""
