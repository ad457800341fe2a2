"""Shared by every test folder: pytest's default (prepend) import mode puts the folder of this
file, tests/, on ``sys.path``, so test modules anywhere below import the helpers that live here
(``import upstream_mlir``, the upstream MLIR 22 oracle)."""
