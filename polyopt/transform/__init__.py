"""Transform scripts: apply one to payload IR (:mod:`.interpreter`, MLIR's
``-transform-interpreter``) and write the one a pass pipeline amounts to (:mod:`.emit`)."""
