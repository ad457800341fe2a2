"""For the tests whose sizes are chosen against a cache size: "A does not fit in L2" holds for
atax's 301 x 467 f64 matrix (1.07 MiB) on Zen 4 and Zen 5 (1 MiB L2), not on Emerald Rapids
(2 MiB).  Importable from every test folder (see ``tests/conftest.py``).

* A test of a scheduling decision pins the caches it reasons about: :func:`with_caches` is this
  CPU as a code-generation target (its instructions: the code still runs here) with the given
  cache sizes, for ``compiling_for``; :func:`machine_with_caches` is its schedule model.  The
  core's measured figures are not carried over: a target that is not the detected host gets
  MachineModel's defaults (FMA latency 4, two FMAs a cycle, which are Zen 5's, and L2's
  bandwidth unknown, so that the BLIS model never takes GEPB's order).
* A test that needs those measurements (GEPB's order, chosen from L2's measured bandwidth)
  scales its sizes with this CPU's L2 instead (:func:`l2_multiple`)."""

from __future__ import annotations

from polyopt.codegen.target import Target, host_target
from polyopt.pipeline import machine_model
from polyopt.schedules.blis_schedule import MachineModel

#: L1d, L2, L3 in bytes of the Zen 5 guest the suite was written on (48 KiB, 1 MiB, 32 MiB)
ZEN5_CACHES = (48 << 10, 1 << 20, 32 << 20)


def with_caches(caches: tuple[int, int, int] = ZEN5_CACHES) -> Target:
    """This host's triple, CPU name and features with the given ``(l1d, l2, l3)`` sizes."""
    host = host_target()
    return Target.from_features(host.triple, host.cpu, host.features, caches)


def machine_with_caches(caches: tuple[int, int, int] = ZEN5_CACHES) -> MachineModel:
    """The schedule model of :func:`with_caches`."""
    return machine_model(with_caches(caches))


def l2_multiple() -> int:
    """How many times this CPU's L2 holds the 1 MiB one of Zen 4 and Zen 5, against which the
    sizes of the tests were chosen (at least 1): 2 on Emerald Rapids (2 MiB)."""
    return max(1, host_target().l2_cache_bytes >> 20)
