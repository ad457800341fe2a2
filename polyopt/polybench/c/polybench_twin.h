/**
 * PolyBench/C 4.2 (the version stamped on May 10, 2016)
 *
 * Contact:
 *   Louis-Noel Pouchet <pouchet.ohio-state.edu>
 *   Tomofumi Yuki <tomofumi.yuki.fr>
 *
 * Web address: http://polybench.sourceforge.net
 *
 * Copyright (c) 2010-2016, Ohio State University. All rights reserved.
 * Redistributed under the Ohio State University Software Distribution License,
 * ../LICENSE-PolyBench.txt.
 */
/* polybench_twin.h: the part of PolyBench's polybench.h and <kernel>.h that the C twins of
   polyopt's PolyBench suite need, with PolyBench's defaults: DATA_TYPE as the kernel's header sets it, arrays of static
   sizes (POLYBENCH_C99_SELECT picks the macro), loop bounds the size macros (no
   POLYBENCH_USE_SCALAR_LB), no padding, no restrict.  The sizes come from -D flags (polyopt's
   polybench/suite.py holds PolyBench's table); nothing here times or prints. */
#ifndef POLYBENCH_TWIN_H
#define POLYBENCH_TWIN_H

#include <math.h>
#include <stdlib.h>

/* the kernel's element type, as PolyBench's <kernel>.h chooses it (ctwin.py passes
   -DDATA_TYPE_IS_<TYPE> from the suite's table; double by default) */
#if defined(DATA_TYPE_IS_INT)
#define DATA_TYPE int
#define SCALAR_VAL(x) x
#elif defined(DATA_TYPE_IS_FLOAT)
#define DATA_TYPE float
#define SCALAR_VAL(x) x##f
#define SQRT_FUN(x) sqrtf(x)
#define EXP_FUN(x) expf(x)
#define POW_FUN(x, y) powf(x, y)
#else
#define DATA_TYPE double
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x, y) pow(x, y)
#endif

#define POLYBENCH_1D(var, dim1, ddim1) var[dim1]
#define POLYBENCH_2D(var, dim1, dim2, ddim1, ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var, dim1, dim2, dim3, ddim1, ddim2, ddim3) var[dim1][dim2][dim3]

/* lu's init_array allocates a temporary as PolyBench does (a pointer to a static-size array) */
#define POLYBENCH_2D_ARRAY_DECL(var, type, dim1, dim2, ddim1, ddim2) \
  type (*var)[dim1][dim2] = (type (*)[dim1][dim2]) malloc(sizeof(type) * (dim1) * (dim2))
#define POLYBENCH_ARRAY(x) *x
#define POLYBENCH_FREE_ARRAY(x) free((void *) x)

#endif
