// PolyBench/C 4.2 gemm (kernel_gemm), NI x NJ x NK = 23 x 19 x 17:
// C := alpha*A*B + beta*C, the beta scaling inside the i loop before the k loop.
func.func @kernel_gemm(%alpha: f64, %beta: f64, %C: memref<23x19xf64>, %A: memref<23x17xf64>, %B: memref<17x19xf64>) {
  affine.for %i = 0 to 23 {
    affine.for %j = 0 to 19 {
      %c = affine.load %C[%i, %j] : memref<23x19xf64>
      %s = arith.mulf %c, %beta : f64
      affine.store %s, %C[%i, %j] : memref<23x19xf64>
    }
    affine.for %k = 0 to 17 {
      affine.for %j = 0 to 19 {
        %a = affine.load %A[%i, %k] : memref<23x17xf64>
        %t = arith.mulf %alpha, %a : f64
        %b = affine.load %B[%k, %j] : memref<17x19xf64>
        %p = arith.mulf %t, %b : f64
        %c = affine.load %C[%i, %j] : memref<23x19xf64>
        %r = arith.addf %c, %p : f64
        affine.store %r, %C[%i, %j] : memref<23x19xf64>
      }
    }
  }
  return
}
