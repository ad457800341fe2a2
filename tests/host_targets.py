"""This CPU as a code-generation target, with some of its engines switched off: tests of the
vector templates (the dot engines, the emulation of the ``amx`` ops) compile for
:func:`without_amx` so that they test those templates on an AMX CPU too, where polyopt would
otherwise choose the tiles.  Importable from every test folder (see ``tests/conftest.py``)."""

from __future__ import annotations

import contextlib

from polyopt.codegen.target import Target, compiling_for, host_target

AMX_FEATURES = ("amx-tile", "amx-bf16", "amx-int8", "amx-fp16")


def without_amx() -> Target:
    """This host, told it has no AMX: LLVM's CPU name (``sapphirerapids``, ``emeraldrapids``)
    still implies the tile features, so they are switched off in the feature string."""
    host = host_target()
    kept = [f for f in host.features.split(",") if f and not f[1:].startswith("amx")]
    return Target.from_features(host.triple, host.cpu,
                                ",".join(kept + [f"-{f}" for f in AMX_FEATURES]),
                                (host.l1d_cache_bytes, host.l2_cache_bytes, host.l3_cache_bytes))


@contextlib.contextmanager
def vector_engines_only():
    """Within the block polyopt compiles for this host without its AMX tiles (unchanged on
    a CPU without AMX)."""
    with compiling_for(without_amx()) as target:
        yield target
