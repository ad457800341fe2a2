// PolyBench/C 4.2 gemm (linear-algebra/blas): C := alpha*A*B + beta*C, written as affine MLIR
// with kernel_gemm's loop structure and statement order, DATA_TYPE double.
// PolyBench/C: Copyright (c) 2010-2016, Ohio State University (../LICENSE-PolyBench.txt).
func.func @kernel_gemm(%alpha: f64, %beta: f64, %C: memref<1000x1100xf64>,
                       %A: memref<1000x1200xf64>, %B: memref<1200x1100xf64>) {
  affine.for %i = 0 to 1000 {
    affine.for %j = 0 to 1100 {
      %c = affine.load %C[%i, %j] : memref<1000x1100xf64>
      %r = arith.mulf %c, %beta : f64
      affine.store %r, %C[%i, %j] : memref<1000x1100xf64>
    }
    affine.for %k = 0 to 1200 {
      affine.for %j = 0 to 1100 {
        %a = affine.load %A[%i, %k] : memref<1000x1200xf64>
        %b = affine.load %B[%k, %j] : memref<1200x1100xf64>
        %c = affine.load %C[%i, %j] : memref<1000x1100xf64>
        %0 = arith.mulf %alpha, %a : f64
        %1 = arith.mulf %0, %b : f64
        %2 = arith.addf %c, %1 : f64
        affine.store %2, %C[%i, %j] : memref<1000x1100xf64>
      }
    }
  }
  return
}
