"""Large heap buffers kept between calls (polyopt/codegen/buffer_cache.py): a static
``memref.alloc`` (or a heap-allocated ``memref.alloca``) of at least CACHED_MIN_BYTES reuses the
block its site freed in the previous call, so repeated calls touch no new pages; results are
those of fresh buffers, also when two Python threads or a thread team call at once; the blocks
are freed with the engine."""

import gc
import resource
import threading

import numpy as np
import pytest

import polyopt
from polyopt.codegen.buffer_cache import CACHED_MIN_BYTES, RELEASE_SYMBOL

# a 4 MiB temporary: t = 2 * a (row by row), then b = t + 1; the temporary is written fully
# before it is read, so a reused block gives the same results as a fresh one
TEMP = """\
func.func @twice_plus_one(%a: memref<512x1024xf64>, %b: memref<512x1024xf64>) {
  %t = memref.alloc() : memref<512x1024xf64>
  %two = arith.constant 2.0 : f64
  %one = arith.constant 1.0 : f64
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %x = affine.load %a[%i, %j] : memref<512x1024xf64>
      %y = arith.mulf %x, %two : f64
      affine.store %y, %t[%i, %j] : memref<512x1024xf64>
    }
  }
  affine.for %i = 0 to 512 {
    affine.for %j = 0 to 1024 {
      %y = affine.load %t[%i, %j] : memref<512x1024xf64>
      %z = arith.addf %y, %one : f64
      affine.store %z, %b[%i, %j] : memref<512x1024xf64>
    }
  }
  memref.dealloc %t : memref<512x1024xf64>
  return
}
"""


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_large_allocations_get_a_slot_and_small_ones_do_not():
    c = polyopt.compile(TEMP)
    assert "__polyopt_buffer.0" in c.llvm_ir and RELEASE_SYMBOL in c.llvm_ir
    # the block is returned as aligned_alloc's is, aliased by nothing (LLVM vectorizes the
    # code around it without alias checks), by a call LLVM keeps (inlined, it would forget)
    take = [l for l in c.optimized_llvm_ir().splitlines() if "@__polyopt_buffer_take(" in l]
    # (nonnull too since a failed allocation ends the process: `noalias nonnull ptr`)
    assert any(l.startswith("define internal") and " noalias " in l.split("@")[0]
               for l in take), take
    assert any(" call " in l for l in take)
    small = TEMP.replace("512x1024", "8x1024").replace("to 512", "to 8")
    assert 8 * 1024 * 8 < CACHED_MIN_BYTES
    assert "__polyopt_buffer" not in polyopt.compile(small).llvm_ir


def test_repeated_calls_reuse_the_block_and_touch_no_new_pages():
    f = polyopt.compile(TEMP)["twice_plus_one"]
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (512, 1024))
    b = np.empty_like(a)
    f(a, b)
    pages = 512 * 1024 * 8 // 4096
    before = _minor_faults()
    for _ in range(5):
        f(a, b)
    # a fresh 4 MiB block per call would fault on each of its 1024 pages
    assert _minor_faults() - before < pages // 4
    assert np.array_equal(b, 2 * a + 1)


def test_concurrent_calls_from_python_threads_stay_correct():
    f = polyopt.compile(TEMP)["twice_plus_one"]
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(-1, 1, (512, 1024)) for _ in range(2)]
    errors = []

    def work(a):
        b = np.empty_like(a)
        for _ in range(20):
            f(a, b)
            if not np.array_equal(b, 2 * a + 1):
                errors.append("mismatch")

    threads = [threading.Thread(target=work, args=(a,)) for a in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("threads", [2, 3])
def test_per_thread_packing_buffers_on_a_team(threads):
    # the BLIS nest's per-thread A blocks (heap allocas in the outlined body) share one slot
    from polyopt.bench import matmul_source
    src = matmul_source(1500, 96, 200, "f64", {"M_C": "300 : i32"})
    f = polyopt.compile(src, hopt=True, copy=True, threads=threads)["matmul"]
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (1500, 200)), rng.uniform(-1, 1, (200, 96))
    for _ in range(4):
        c = np.zeros((1500, 96))
        f(a, b, c)
        assert np.allclose(c, a @ b, rtol=1e-12, atol=1e-12)


def test_the_engine_frees_its_blocks_when_collected():
    c = polyopt.compile(TEMP)
    a = np.ones((512, 1024))
    c["twice_plus_one"](a, np.empty_like(a))
    release = c.engine._release_buffers
    assert release.alive
    del c
    gc.collect()
    assert not release.alive
