"""Linux's permission to use AMX tile data, asked for once per process.

Since Linux 5.16 a process must request the AMX tile state (8 KiB more per thread in every
context switch) before it runs a tile instruction; without the request the first
``ldtilecfg``/``tileloadd`` raises ``SIGILL`` and the process dies.  The request is
``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`` (the kernel's
``Documentation/arch/x86/xstate.rst``) and holds for every thread of the process.

:class:`polyopt.codegen.jit.JITFunction` makes it when its engine's code uses AMX
(``JITEngine(..., uses_amx=True)``, which the lowering of ``amx.*`` for a CPU with AMX asks for);
code that emulates the tiles (:mod:`polyopt.codegen.lower_amx` on other CPUs) never does.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

__all__ = ["AMXPermissionError", "request_amx_permission"]

SYS_ARCH_PRCTL = 158            # x86-64 syscall number of arch_prctl
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18

_lock = threading.Lock()
_granted = False


class AMXPermissionError(RuntimeError):
    """Linux refused (or cannot grant) the AMX tile state: code using AMX cannot run here."""


def request_amx_permission() -> None:
    """Ask Linux for the AMX tile state (once per process; later calls return at once).

    Raises :class:`AMXPermissionError` when the request fails: not Linux on x86-64, a kernel
    older than 5.16, a CPU (or hypervisor) without AMX, or a seccomp filter refusing
    ``arch_prctl``."""
    global _granted
    if _granted:
        return
    with _lock:
        if _granted:
            return
        if platform.system() != "Linux" or platform.machine().lower() not in ("x86_64", "amd64"):
            raise AMXPermissionError(f"AMX code needs Linux on x86-64, this is "
                                     f"{platform.system()} on {platform.machine()}")
        libc = ctypes.CDLL(None, use_errno=True)
        ret = libc.syscall(ctypes.c_long(SYS_ARCH_PRCTL), ctypes.c_long(ARCH_REQ_XCOMP_PERM),
                           ctypes.c_long(XFEATURE_XTILEDATA))
        if ret != 0:
            err = ctypes.get_errno()
            raise AMXPermissionError(
                f"arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) failed: "
                f"{os.strerror(err)} (errno {err}); this kernel or CPU does not let the process "
                f"use AMX tiles, so code compiled for AMX cannot run here")
        _granted = True
