"""The polyhedral model and schedules: affine nests <-> ISL, dependences, BLIS tiling, and the
expansion of high-level ops (``hop.matmul``, ``hop.conv2d``, ``linalg.matmul``) into affine nests."""
