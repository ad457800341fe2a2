"""ISL's scheduler on a scop: Pluto-style bands from the dependences (what PPCG does with
``isl_schedule_constraints_compute_schedule``, and Polly with ``-polly-opt-isl``).

    S0[t, i, j] (seidel-2d)   validity = coincidence = proximity = RAW + WAR + WAW
      --compute_isl_schedule-->
    band [t, t + i, 2t + i + j]  permutable: 1     (skewed: every dependence distance >= 0,
                                                     so the band can be tiled)

The constraints, as Pluto and PPCG set them:

* validity: every dependence (RAW, WAR, WAW) -- the schedule must run its source first;
* proximity: every dependence as well (Pluto minimizes the distance of all of them: RAW for
  reuse of produced values, WAR/WAW for reuse of the memory they share);
* coincidence: every dependence (a band member whose distance is zero on all of them that
  are not carried yet is a parallel loop).

ISL options (set around the call and restored): permutable bands as deep as possible
(``schedule_maximize_band_depth``), no requirement that the outermost member be parallel
(``schedule_outer_coincidence = 0``: time-tiling of stencils needs a skewed permutable band
first, the parallel loop comes from a wavefront or inside the tiles), fusion decided by
ISL's clustering of strongly connected components (``schedule_whole_component = 0``,
``schedule_serialize_sccs = 0``: producer-consumer statements are fused where the
dependences allow a common band).

The dependences are given to ISL as computed, one basic relation per source and sink access
(:attr:`~polyopt.schedules.dependences.Dependences.by_memref`), not coalesced: the coalesced
form of a 3-d stencil's seven reads is one octahedron whose Farkas constraints make ISL's
integer tableau run for minutes (heat-3d: 0.5 s uncoalesced, > 400 s coalesced).

Time-out: ISL counts operations (``max_operations``), but some of its LP solves do not
check the count, so the scheduler also runs in a forked child with a wall-clock limit (POSIX);
both raise :class:`SchedulerTimeout`, which the caller turns into a remark and the original
order.
"""

from __future__ import annotations

from collections import OrderedDict

import contextlib
import os
import select
import signal
import time
from dataclasses import dataclass
from typing import Iterator, Optional

import islpy as isl

from .dependences import Dependences
from .model import PolyhedralModel

__all__ = ["SchedulerOptions", "SchedulerTimeout", "compute_isl_schedule", "dependence_union"]


@dataclass(frozen=True)
class SchedulerOptions:
    """Options of :func:`compute_isl_schedule`.

    ``max_operations``: ISL's operation budget (0: none); ``time_limit``: wall-clock seconds
    for the scheduler in a forked child (``None``: run in this process, bounded by
    ``max_operations`` only); ``outer_coincidence``, ``whole_component``, ``serialize_sccs``,
    ``max_coefficient``, ``max_constant_term`` (-1: unbounded): the ISL options of the same
    names.  The bounds on coefficients and constant terms are Polly's (20 each): without
    them the ILP searches constants up to the static sizes of the arrays and takes seconds
    (gemver at N = 2000: 9.8 s, and 0.01 s with them)."""

    max_operations: int = 20_000_000
    time_limit: Optional[float] = 4.0
    outer_coincidence: bool = False
    whole_component: bool = False
    serialize_sccs: bool = False
    max_coefficient: int = 20
    max_constant_term: int = 20


class SchedulerTimeout(Exception):
    """ISL's scheduler did not finish within its budget (operations or wall-clock time)."""


def dependence_union(model: PolyhedralModel, deps: Dependences, kinds=("RAW", "WAR", "WAW")
                     ) -> isl.UnionMap:
    """The dependences of ``kinds`` as ISL computed them (not coalesced, see the module
    docstring)."""
    index = {"RAW": 0, "WAR": 1, "WAW": 2}
    out = isl.UnionMap(model.param_space() + "{ }")
    for triple in deps.by_memref.values():
        for kind in kinds:
            out = out.union(triple[index[kind]])
    return out


@contextlib.contextmanager
def _isl_options(ctx: isl.Context, options: SchedulerOptions) -> Iterator[None]:
    wanted = {
        "schedule_outer_coincidence": int(options.outer_coincidence),
        "schedule_maximize_band_depth": 1,
        "schedule_whole_component": int(options.whole_component),
        "schedule_serialize_sccs": int(options.serialize_sccs),
        "schedule_max_coefficient": int(options.max_coefficient),
        "schedule_max_constant_term": int(options.max_constant_term),
    }
    saved = {name: getattr(ctx, "get_" + name)() for name in wanted}
    try:
        for name, value in wanted.items():
            getattr(ctx, "set_" + name)(value)
        ctx.set_max_operations(options.max_operations)
        ctx.reset_operations()
        yield
    finally:
        ctx.set_max_operations(0)
        for name, value in saved.items():
            getattr(ctx, "set_" + name)(value)


def _constraints(model: PolyhedralModel, deps: Dependences) -> isl.ScheduleConstraints:
    every = dependence_union(model, deps)
    sc = isl.ScheduleConstraints.on_domain(model.domains()).set_context(model.context())
    return sc.set_validity(every).set_coincidence(every).set_proximity(every)


def _compute(sc: isl.ScheduleConstraints, options: SchedulerOptions) -> isl.Schedule:
    ctx = sc.get_ctx()
    with _isl_options(ctx, options):
        try:
            return sc.compute_schedule()
        except isl.Error as err:
            if "maximal number of operations exceeded" in str(err):
                raise SchedulerTimeout(f"ISL's scheduler needs more than "
                                       f"{options.max_operations:,} operations") from None
            raise


def _compute_in_child(sc: isl.ScheduleConstraints, options: SchedulerOptions) -> isl.Schedule:
    """:func:`_compute` in a forked child, killed after ``options.time_limit`` seconds; the
    schedule comes back as ISL text.  Where no process can be made (``EAGAIN`` on a machine at
    its process limit, no file descriptors left), :func:`_compute` in this process, bounded by
    ISL's operation budget alone."""
    try:
        read, write = os.pipe()
    except OSError:
        return _compute(sc, options)
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return _compute(sc, options)
    if pid == 0:   # the child: compute, send, leave without running any Python cleanup
        status = 0
        try:
            os.close(read)
            try:
                text = "ok\n" + _compute(sc, options).to_str()
            except SchedulerTimeout as err:
                text = "timeout\n" + str(err)
            except Exception as err:   # noqa: BLE001 -- reported to the parent as text
                text = "error\n" + f"{type(err).__name__}: {err}"
            data = text.encode()
            while data:
                data = data[os.write(write, data):]
        except BaseException:   # noqa: BLE001
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    chunks: list[bytes] = []
    deadline = time.monotonic() + options.time_limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                raise SchedulerTimeout(f"ISL's scheduler takes more than "
                                       f"{options.time_limit:g} s")
            ready, _, _ = select.select([read], [], [], left)
            if not ready:
                continue
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    kind, _, body = b"".join(chunks).decode().partition("\n")
    if kind == "ok":
        return isl.Schedule.read_from_str(sc.get_ctx(), body)
    if kind == "timeout":
        raise SchedulerTimeout(body)
    raise RuntimeError(f"ISL's scheduler failed: {body or 'the child process died'}")


#: Schedules computed in this process, by their constraints and options (ISL's scheduler is
#: deterministic): compiling the same nest again, under other switches that do not change
#: the scheduling (--hopt-copy, -unroll, -scalrep, -vect), reads the tree back instead of
#: searching for it again.  A search that ran out of time is remembered as such, so that the
#: caller goes to its narrower search at once (PolyBench's adi spent its 4 s budget again on
#: every compile).
_SCHEDULES: "OrderedDict[tuple, tuple[str, str]]" = OrderedDict()
_MAX_SCHEDULES = 256


def _remember(key: tuple, outcome: tuple[str, str]) -> None:
    _SCHEDULES[key] = outcome
    if len(_SCHEDULES) > _MAX_SCHEDULES:
        _SCHEDULES.popitem(last=False)


def compute_isl_schedule(model: PolyhedralModel, deps: Dependences,
                         options: SchedulerOptions = SchedulerOptions()) -> isl.Schedule:
    """ISL's schedule tree for ``model`` under the constraints of the module docstring.
    Raises :class:`SchedulerTimeout` past the budget."""
    sc = _constraints(model, deps)
    key = (str(sc), options)
    known = _SCHEDULES.get(key)
    if known is not None:
        _SCHEDULES.move_to_end(key)
        kind, body = known
        if kind == "timeout":
            raise SchedulerTimeout(body)
        return isl.Schedule.read_from_str(sc.get_ctx(), body)
    try:
        if options.time_limit is not None and hasattr(os, "fork"):
            tree = _compute_in_child(sc, options)
        else:
            tree = _compute(sc, options)
    except SchedulerTimeout as err:
        _remember(key, ("timeout", str(err)))
        raise
    _remember(key, ("ok", tree.to_str()))
    return tree
