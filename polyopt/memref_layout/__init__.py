"""Memref layouts: their semantics for code generation (``layout``), normalization and packing."""
