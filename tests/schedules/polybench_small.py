"""PolyBench/C 4.2 kernels written as affine MLIR, following each kernel's loop structure
(``kernel_*`` in PolyBench's ``*.c``), at sizes the tests choose: the programs the automatic
scheduler must leave computing exactly what they computed.  ``KERNELS[name](**sizes)`` is
``(mlir text, function name, argument builder)``; ``args(rng)`` gives fresh numpy arrays and
scalars in the function's argument order (arrays are updated in place).

Scalars that PolyBench initializes in ``init_array`` (alpha, beta, float_n) are function
arguments; constants of the kernels (0.33333, 0.2, 0.125, 9.0, ...) are ``arith.constant``s.
"""

from __future__ import annotations

import numpy as np

F = "f64"


def _m(*dims) -> str:
    return f"memref<{'x'.join(str(d) for d in dims)}x{F}>"


def jacobi_1d(n=30, tsteps=5):
    v = _m(n)
    text = f"""
func.func @jacobi_1d(%A: {v}, %B: {v}) {{
  %c = arith.constant 0.33333 : f64
  affine.for %t = 0 to {tsteps} {{
    affine.for %i = 1 to {n - 1} {{
      %a = affine.load %A[%i - 1] : {v}
      %b = affine.load %A[%i] : {v}
      %d = affine.load %A[%i + 1] : {v}
      %s = arith.addf %a, %b : f64
      %s2 = arith.addf %s, %d : f64
      %r = arith.mulf %c, %s2 : f64
      affine.store %r, %B[%i] : {v}
    }}
    affine.for %i = 1 to {n - 1} {{
      %a = affine.load %B[%i - 1] : {v}
      %b = affine.load %B[%i] : {v}
      %d = affine.load %B[%i + 1] : {v}
      %s = arith.addf %a, %b : f64
      %s2 = arith.addf %s, %d : f64
      %r = arith.mulf %c, %s2 : f64
      affine.store %r, %A[%i] : {v}
    }}
  }}
  return
}}"""
    return text, "jacobi_1d", lambda rng: [rng.random(n), rng.random(n)]


def _jacobi_2d_sweep(src, dst, n, m):
    return f"""
    affine.for %i = 1 to {n - 1} {{
      affine.for %j = 1 to {n - 1} {{
        %a = affine.load {src}[%i, %j] : {m}
        %b = affine.load {src}[%i, %j - 1] : {m}
        %c = affine.load {src}[%i, %j + 1] : {m}
        %d = affine.load {src}[%i + 1, %j] : {m}
        %e = affine.load {src}[%i - 1, %j] : {m}
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.addf %s2, %d : f64
        %s4 = arith.addf %s3, %e : f64
        %r = arith.mulf %cst, %s4 : f64
        affine.store %r, {dst}[%i, %j] : {m}
      }}
    }}"""


def jacobi_2d(n=20, tsteps=4):
    m = _m(n, n)
    text = f"""
func.func @jacobi_2d(%A: {m}, %B: {m}) {{
  %cst = arith.constant 2.000000e-01 : f64
  affine.for %t = 0 to {tsteps} {{{_jacobi_2d_sweep('%A', '%B', n, m)}{_jacobi_2d_sweep('%B', '%A', n, m)}
  }}
  return
}}"""
    return text, "jacobi_2d", lambda rng: [rng.random((n, n)), rng.random((n, n))]


def seidel_2d(n=20, tsteps=4):
    m = _m(n, n)
    loads = "\n".join(f"        %v{k} = affine.load %A[%i + {di}, %j + {dj}] : {m}"
                      for k, (di, dj) in enumerate((a, b) for a in (-1, 0, 1)
                                                    for b in (-1, 0, 1)))
    sums = "\n".join(f"        %s{k} = arith.addf %{'s' if k > 1 else 'v'}{k - 1 if k > 1 else 0}"
                     f", %v{k} : f64" for k in range(1, 9))
    text = f"""
func.func @seidel_2d(%A: {m}) {{
  %nine = arith.constant 9.000000e+00 : f64
  affine.for %t = 0 to {tsteps} {{
    affine.for %i = 1 to {n - 1} {{
      affine.for %j = 1 to {n - 1} {{
{loads}
{sums}
        %r = arith.divf %s8, %nine : f64
        affine.store %r, %A[%i, %j] : {m}
      }}
    }}
  }}
  return
}}"""
    return text, "seidel_2d", lambda rng: [rng.random((n, n))]


def _heat_sweep(src, dst, n, m):
    def axis(k):
        off = ["%i", "%j", "%k"]
        up, down = list(off), list(off)
        up[k] += " + 1"
        down[k] += " - 1"
        return up, down
    lines = [f"          %c0 = affine.load {src}[%i, %j, %k] : {m}",
             f"          %c2 = arith.mulf %two, %c0 : f64"]
    acc = None
    for k in range(3):
        up, down = axis(k)
        lines += [f"          %u{k} = affine.load {src}[{', '.join(up)}] : {m}",
                  f"          %d{k} = affine.load {src}[{', '.join(down)}] : {m}",
                  f"          %x{k} = arith.subf %u{k}, %c2 : f64",
                  f"          %y{k} = arith.addf %x{k}, %d{k} : f64",
                  f"          %z{k} = arith.mulf %eighth, %y{k} : f64"]
        if acc is None:
            acc = f"%z{k}"
        else:
            lines.append(f"          %a{k} = arith.addf {acc}, %z{k} : f64")
            acc = f"%a{k}"
    lines += [f"          %r = arith.addf {acc}, %c0 : f64",
              f"          affine.store %r, {dst}[%i, %j, %k] : {m}"]
    body = "\n".join(lines)
    return f"""
    affine.for %i = 1 to {n - 1} {{
      affine.for %j = 1 to {n - 1} {{
        affine.for %k = 1 to {n - 1} {{
{body}
        }}
      }}
    }}"""


def heat_3d(n=10, tsteps=3):
    m = _m(n, n, n)
    text = f"""
func.func @heat_3d(%A: {m}, %B: {m}) {{
  %two = arith.constant 2.000000e+00 : f64
  %eighth = arith.constant 1.250000e-01 : f64
  affine.for %t = 1 to {tsteps + 1} {{{_heat_sweep('%A', '%B', n, m)}{_heat_sweep('%B', '%A', n, m)}
  }}
  return
}}"""
    return text, "heat_3d", lambda rng: [rng.random((n, n, n)), rng.random((n, n, n))]


def fdtd_2d(nx=13, ny=11, tmax=4):
    mx, f = _m(nx, ny), _m(tmax)
    text = f"""
func.func @fdtd_2d(%ex: {mx}, %ey: {mx}, %hz: {mx}, %fict: {f}) {{
  %half = arith.constant 5.000000e-01 : f64
  %c07 = arith.constant 7.000000e-01 : f64
  affine.for %t = 0 to {tmax} {{
    affine.for %j = 0 to {ny} {{
      %v = affine.load %fict[%t] : {f}
      affine.store %v, %ey[0, %j] : {mx}
    }}
    affine.for %i = 1 to {nx} {{
      affine.for %j = 0 to {ny} {{
        %e = affine.load %ey[%i, %j] : {mx}
        %h = affine.load %hz[%i, %j] : {mx}
        %h1 = affine.load %hz[%i - 1, %j] : {mx}
        %d = arith.subf %h, %h1 : f64
        %p = arith.mulf %half, %d : f64
        %r = arith.subf %e, %p : f64
        affine.store %r, %ey[%i, %j] : {mx}
      }}
    }}
    affine.for %i = 0 to {nx} {{
      affine.for %j = 1 to {ny} {{
        %e = affine.load %ex[%i, %j] : {mx}
        %h = affine.load %hz[%i, %j] : {mx}
        %h1 = affine.load %hz[%i, %j - 1] : {mx}
        %d = arith.subf %h, %h1 : f64
        %p = arith.mulf %half, %d : f64
        %r = arith.subf %e, %p : f64
        affine.store %r, %ex[%i, %j] : {mx}
      }}
    }}
    affine.for %i = 0 to {nx - 1} {{
      affine.for %j = 0 to {ny - 1} {{
        %h = affine.load %hz[%i, %j] : {mx}
        %a = affine.load %ex[%i, %j + 1] : {mx}
        %b = affine.load %ex[%i, %j] : {mx}
        %c = affine.load %ey[%i + 1, %j] : {mx}
        %d = affine.load %ey[%i, %j] : {mx}
        %s1 = arith.subf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.subf %s2, %d : f64
        %p = arith.mulf %c07, %s3 : f64
        %r = arith.subf %h, %p : f64
        affine.store %r, %hz[%i, %j] : {mx}
      }}
    }}
  }}
  return
}}"""
    return text, "fdtd_2d", lambda rng: [rng.random((nx, ny)), rng.random((nx, ny)),
                                         rng.random((nx, ny)), rng.random(tmax)]


def lu(n=17):
    m = _m(n, n)
    text = f"""
func.func @lu(%A: {m}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {{
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%j) {{
        %a = affine.load %A[%i, %j] : {m}
        %b = affine.load %A[%i, %k] : {m}
        %c = affine.load %A[%k, %j] : {m}
        %p = arith.mulf %b, %c : f64
        %r = arith.subf %a, %p : f64
        affine.store %r, %A[%i, %j] : {m}
      }}
      %a = affine.load %A[%i, %j] : {m}
      %d = affine.load %A[%j, %j] : {m}
      %r = arith.divf %a, %d : f64
      affine.store %r, %A[%i, %j] : {m}
    }}
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to {n} {{
      affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) {{
        %a = affine.load %A[%i, %j] : {m}
        %b = affine.load %A[%i, %k] : {m}
        %c = affine.load %A[%k, %j] : {m}
        %p = arith.mulf %b, %c : f64
        %r = arith.subf %a, %p : f64
        affine.store %r, %A[%i, %j] : {m}
      }}
    }}
  }}
  return
}}"""

    def args(rng):   # diagonally dominant, as PolyBench makes it positive definite
        a = rng.random((n, n)) + n * np.eye(n)
        return [a]
    return text, "lu", args


def trmm(m_=13, n=11):
    a, b = _m(m_, m_), _m(m_, n)
    text = f"""
func.func @trmm(%alpha: f64, %A: {a}, %B: {b}) {{
  affine.for %i = 0 to {m_} {{
    affine.for %j = 0 to {n} {{
      affine.for %k = affine_map<(d0) -> (d0 + 1)>(%i) to {m_} {{
        %x = affine.load %A[%k, %i] : {a}
        %y = affine.load %B[%k, %j] : {b}
        %z = affine.load %B[%i, %j] : {b}
        %p = arith.mulf %x, %y : f64
        %s = arith.addf %z, %p : f64
        affine.store %s, %B[%i, %j] : {b}
      }}
      %z = affine.load %B[%i, %j] : {b}
      %r = arith.mulf %alpha, %z : f64
      affine.store %r, %B[%i, %j] : {b}
    }}
  }}
  return
}}"""
    return text, "trmm", lambda rng: [1.5, rng.random((m_, m_)), rng.random((m_, n))]


def syrk(n=13, m_=11):
    c, a = _m(n, n), _m(n, m_)
    text = f"""
func.func @syrk(%alpha: f64, %beta: f64, %C: {c}, %A: {a}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {{
      %x = affine.load %C[%i, %j] : {c}
      %r = arith.mulf %x, %beta : f64
      affine.store %r, %C[%i, %j] : {c}
    }}
    affine.for %k = 0 to {m_} {{
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {{
        %x = affine.load %A[%i, %k] : {a}
        %y = affine.load %A[%j, %k] : {a}
        %p = arith.mulf %alpha, %x : f64
        %q = arith.mulf %p, %y : f64
        %z = affine.load %C[%i, %j] : {c}
        %s = arith.addf %z, %q : f64
        affine.store %s, %C[%i, %j] : {c}
      }}
    }}
  }}
  return
}}"""
    return text, "syrk", lambda rng: [1.5, 1.2, rng.random((n, n)), rng.random((n, m_))]


def syr2k(n=13, m_=11):
    c, a = _m(n, n), _m(n, m_)
    text = f"""
func.func @syr2k(%alpha: f64, %beta: f64, %C: {c}, %A: {a}, %B: {a}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {{
      %x = affine.load %C[%i, %j] : {c}
      %r = arith.mulf %x, %beta : f64
      affine.store %r, %C[%i, %j] : {c}
    }}
    affine.for %k = 0 to {m_} {{
      affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {{
        %a1 = affine.load %A[%j, %k] : {a}
        %b1 = affine.load %B[%i, %k] : {a}
        %b2 = affine.load %B[%j, %k] : {a}
        %a2 = affine.load %A[%i, %k] : {a}
        %p1 = arith.mulf %a1, %alpha : f64
        %q1 = arith.mulf %p1, %b1 : f64
        %p2 = arith.mulf %b2, %alpha : f64
        %q2 = arith.mulf %p2, %a2 : f64
        %s1 = arith.addf %q1, %q2 : f64
        %z = affine.load %C[%i, %j] : {c}
        %s = arith.addf %z, %s1 : f64
        affine.store %s, %C[%i, %j] : {c}
      }}
    }}
  }}
  return
}}"""
    return text, "syr2k", lambda rng: [1.5, 1.2, rng.random((n, n)), rng.random((n, m_)),
                                       rng.random((n, m_))]


def atax(m_=13, n=11):
    a, vn, vm = _m(m_, n), _m(n), _m(m_)
    text = f"""
func.func @atax(%A: {a}, %x: {vn}, %y: {vn}, %tmp: {vm}) {{
  %zero = arith.constant 0.000000e+00 : f64
  affine.for %i = 0 to {n} {{
    affine.store %zero, %y[%i] : {vn}
  }}
  affine.for %i = 0 to {m_} {{
    affine.store %zero, %tmp[%i] : {vm}
    affine.for %j = 0 to {n} {{
      %t = affine.load %tmp[%i] : {vm}
      %aij = affine.load %A[%i, %j] : {a}
      %xj = affine.load %x[%j] : {vn}
      %p = arith.mulf %aij, %xj : f64
      %s = arith.addf %t, %p : f64
      affine.store %s, %tmp[%i] : {vm}
    }}
    affine.for %j = 0 to {n} {{
      %yj = affine.load %y[%j] : {vn}
      %aij = affine.load %A[%i, %j] : {a}
      %t = affine.load %tmp[%i] : {vm}
      %p = arith.mulf %aij, %t : f64
      %s = arith.addf %yj, %p : f64
      affine.store %s, %y[%j] : {vn}
    }}
  }}
  return
}}"""
    return text, "atax", lambda rng: [rng.random((m_, n)), rng.random(n), rng.random(n),
                                      rng.random(m_)]


def bicg(m_=11, n=13):
    a, vm, vn = _m(n, m_), _m(m_), _m(n)
    text = f"""
func.func @bicg(%A: {a}, %s: {vm}, %q: {vn}, %p: {vm}, %r: {vn}) {{
  %zero = arith.constant 0.000000e+00 : f64
  affine.for %i = 0 to {m_} {{
    affine.store %zero, %s[%i] : {vm}
  }}
  affine.for %i = 0 to {n} {{
    affine.store %zero, %q[%i] : {vn}
    affine.for %j = 0 to {m_} {{
      %sj = affine.load %s[%j] : {vm}
      %ri = affine.load %r[%i] : {vn}
      %aij = affine.load %A[%i, %j] : {a}
      %x = arith.mulf %ri, %aij : f64
      %y = arith.addf %sj, %x : f64
      affine.store %y, %s[%j] : {vm}
      %qi = affine.load %q[%i] : {vn}
      %pj = affine.load %p[%j] : {vm}
      %u = arith.mulf %aij, %pj : f64
      %w = arith.addf %qi, %u : f64
      affine.store %w, %q[%i] : {vn}
    }}
  }}
  return
}}"""
    return text, "bicg", lambda rng: [rng.random((n, m_)), rng.random(m_), rng.random(n),
                                      rng.random(m_), rng.random(n)]


def mvt(n=13):
    a, v = _m(n, n), _m(n)
    text = f"""
func.func @mvt(%x1: {v}, %x2: {v}, %y1: {v}, %y2: {v}, %A: {a}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %x = affine.load %x1[%i] : {v}
      %aij = affine.load %A[%i, %j] : {a}
      %y = affine.load %y1[%j] : {v}
      %p = arith.mulf %aij, %y : f64
      %s = arith.addf %x, %p : f64
      affine.store %s, %x1[%i] : {v}
    }}
  }}
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %x = affine.load %x2[%i] : {v}
      %aji = affine.load %A[%j, %i] : {a}
      %y = affine.load %y2[%j] : {v}
      %p = arith.mulf %aji, %y : f64
      %s = arith.addf %x, %p : f64
      affine.store %s, %x2[%i] : {v}
    }}
  }}
  return
}}"""
    return text, "mvt", lambda rng: [rng.random(n) for _ in range(4)] + [rng.random((n, n))]


def gemver(n=13):
    a, v = _m(n, n), _m(n)
    text = f"""
func.func @gemver(%alpha: f64, %beta: f64, %A: {a}, %u1: {v}, %v1: {v}, %u2: {v}, %v2: {v},
                  %w: {v}, %x: {v}, %y: {v}, %z: {v}) {{
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %aij = affine.load %A[%i, %j] : {a}
      %a = affine.load %u1[%i] : {v}
      %b = affine.load %v1[%j] : {v}
      %c = affine.load %u2[%i] : {v}
      %d = affine.load %v2[%j] : {v}
      %p = arith.mulf %a, %b : f64
      %q = arith.mulf %c, %d : f64
      %s = arith.addf %aij, %p : f64
      %t = arith.addf %s, %q : f64
      affine.store %t, %A[%i, %j] : {a}
    }}
  }}
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %xi = affine.load %x[%i] : {v}
      %aji = affine.load %A[%j, %i] : {a}
      %yj = affine.load %y[%j] : {v}
      %p = arith.mulf %beta, %aji : f64
      %q = arith.mulf %p, %yj : f64
      %s = arith.addf %xi, %q : f64
      affine.store %s, %x[%i] : {v}
    }}
  }}
  affine.for %i = 0 to {n} {{
    %xi = affine.load %x[%i] : {v}
    %zi = affine.load %z[%i] : {v}
    %s = arith.addf %xi, %zi : f64
    affine.store %s, %x[%i] : {v}
  }}
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {n} {{
      %wi = affine.load %w[%i] : {v}
      %aij = affine.load %A[%i, %j] : {a}
      %xj = affine.load %x[%j] : {v}
      %p = arith.mulf %alpha, %aij : f64
      %q = arith.mulf %p, %xj : f64
      %s = arith.addf %wi, %q : f64
      affine.store %s, %w[%i] : {v}
    }}
  }}
  return
}}"""
    return text, "gemver", lambda rng: [1.5, 1.2, rng.random((n, n))] + \
        [rng.random(n) for _ in range(8)]


def gesummv(n=13):
    a, v = _m(n, n), _m(n)
    text = f"""
func.func @gesummv(%alpha: f64, %beta: f64, %A: {a}, %B: {a}, %tmp: {v}, %x: {v}, %y: {v}) {{
  %zero = arith.constant 0.000000e+00 : f64
  affine.for %i = 0 to {n} {{
    affine.store %zero, %tmp[%i] : {v}
    affine.store %zero, %y[%i] : {v}
    affine.for %j = 0 to {n} {{
      %aij = affine.load %A[%i, %j] : {a}
      %xj = affine.load %x[%j] : {v}
      %t = affine.load %tmp[%i] : {v}
      %p = arith.mulf %aij, %xj : f64
      %s = arith.addf %p, %t : f64
      affine.store %s, %tmp[%i] : {v}
      %bij = affine.load %B[%i, %j] : {a}
      %xj2 = affine.load %x[%j] : {v}
      %yi = affine.load %y[%i] : {v}
      %q = arith.mulf %bij, %xj2 : f64
      %u = arith.addf %q, %yi : f64
      affine.store %u, %y[%i] : {v}
    }}
    %t = affine.load %tmp[%i] : {v}
    %yi = affine.load %y[%i] : {v}
    %p = arith.mulf %alpha, %t : f64
    %q = arith.mulf %beta, %yi : f64
    %s = arith.addf %p, %q : f64
    affine.store %s, %y[%i] : {v}
  }}
  return
}}"""
    return text, "gesummv", lambda rng: [1.5, 1.2, rng.random((n, n)), rng.random((n, n))] + \
        [rng.random(n) for _ in range(3)]


def _mean(m_, n, data, mean):
    return f"""
  affine.for %j = 0 to {m_} {{
    affine.store %zero, {mean}[%j] : {_m(m_)}
    affine.for %i = 0 to {n} {{
      %a = affine.load {mean}[%j] : {_m(m_)}
      %d = affine.load {data}[%i, %j] : {_m(n, m_)}
      %s = arith.addf %a, %d : f64
      affine.store %s, {mean}[%j] : {_m(m_)}
    }}
    %a = affine.load {mean}[%j] : {_m(m_)}
    %r = arith.divf %a, %float_n : f64
    affine.store %r, {mean}[%j] : {_m(m_)}
  }}"""


def covariance(m_=11, n=13):
    d, c, v = _m(n, m_), _m(m_, m_), _m(m_)
    text = f"""
func.func @covariance(%float_n: f64, %data: {d}, %cov: {c}, %mean: {v}) {{
  %zero = arith.constant 0.000000e+00 : f64
  %one = arith.constant 1.000000e+00 : f64{_mean(m_, n, '%data', '%mean')}
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {m_} {{
      %a = affine.load %data[%i, %j] : {d}
      %b = affine.load %mean[%j] : {v}
      %r = arith.subf %a, %b : f64
      affine.store %r, %data[%i, %j] : {d}
    }}
  }}
  affine.for %i = 0 to {m_} {{
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to {m_} {{
      affine.store %zero, %cov[%i, %j] : {c}
      affine.for %k = 0 to {n} {{
        %a = affine.load %cov[%i, %j] : {c}
        %x = affine.load %data[%k, %i] : {d}
        %y = affine.load %data[%k, %j] : {d}
        %p = arith.mulf %x, %y : f64
        %s = arith.addf %a, %p : f64
        affine.store %s, %cov[%i, %j] : {c}
      }}
      %a = affine.load %cov[%i, %j] : {c}
      %nm1 = arith.subf %float_n, %one : f64
      %r = arith.divf %a, %nm1 : f64
      affine.store %r, %cov[%i, %j] : {c}
      %b = affine.load %cov[%i, %j] : {c}
      affine.store %b, %cov[%j, %i] : {c}
    }}
  }}
  return
}}"""
    return text, "covariance", lambda rng: [float(n), rng.random((n, m_)), rng.random((m_, m_)),
                                            rng.random(m_)]


def correlation(m_=11, n=13):
    d, c, v = _m(n, m_), _m(m_, m_), _m(m_)
    text = f"""
func.func @correlation(%float_n: f64, %data: {d}, %corr: {c}, %mean: {v}, %stddev: {v}) {{
  %zero = arith.constant 0.000000e+00 : f64
  %one = arith.constant 1.000000e+00 : f64
  %eps = arith.constant 1.000000e-01 : f64{_mean(m_, n, '%data', '%mean')}
  affine.for %j = 0 to {m_} {{
    affine.store %zero, %stddev[%j] : {v}
    affine.for %i = 0 to {n} {{
      %a = affine.load %stddev[%j] : {v}
      %x = affine.load %data[%i, %j] : {d}
      %mu = affine.load %mean[%j] : {v}
      %dx = arith.subf %x, %mu : f64
      %sq = arith.mulf %dx, %dx : f64
      %s = arith.addf %a, %sq : f64
      affine.store %s, %stddev[%j] : {v}
    }}
    %a = affine.load %stddev[%j] : {v}
    %b = arith.divf %a, %float_n : f64
    %r = math.sqrt %b : f64
    %le = arith.cmpf ole, %r, %eps : f64
    %sel = arith.select %le, %one, %r : f64
    affine.store %sel, %stddev[%j] : {v}
  }}
  affine.for %i = 0 to {n} {{
    affine.for %j = 0 to {m_} {{
      %a = affine.load %data[%i, %j] : {d}
      %mu = affine.load %mean[%j] : {v}
      %x = arith.subf %a, %mu : f64
      affine.store %x, %data[%i, %j] : {d}
      %y = affine.load %data[%i, %j] : {d}
      %sd = affine.load %stddev[%j] : {v}
      %sn = math.sqrt %float_n : f64
      %den = arith.mulf %sn, %sd : f64
      %r = arith.divf %y, %den : f64
      affine.store %r, %data[%i, %j] : {d}
    }}
  }}
  affine.for %i = 0 to {m_ - 1} {{
    affine.store %one, %corr[%i, %i] : {c}
    affine.for %j = affine_map<(d0) -> (d0 + 1)>(%i) to {m_} {{
      affine.store %zero, %corr[%i, %j] : {c}
      affine.for %k = 0 to {n} {{
        %a = affine.load %corr[%i, %j] : {c}
        %x = affine.load %data[%k, %i] : {d}
        %y = affine.load %data[%k, %j] : {d}
        %p = arith.mulf %x, %y : f64
        %s = arith.addf %a, %p : f64
        affine.store %s, %corr[%i, %j] : {c}
      }}
      %b = affine.load %corr[%i, %j] : {c}
      affine.store %b, %corr[%j, %i] : {c}
    }}
  }}
  affine.store %one, %corr[{m_ - 1}, {m_ - 1}] : {c}
  return
}}"""
    return text, "correlation", lambda rng: [float(n), rng.random((n, m_)), rng.random((m_, m_)),
                                             rng.random(m_), rng.random(m_)]


KERNELS = {f.__name__: f for f in (jacobi_1d, jacobi_2d, seidel_2d, heat_3d, fdtd_2d, lu, trmm,
                                    syrk, syr2k, atax, bicg, mvt, gemver, gesummv, covariance,
                                    correlation)}
