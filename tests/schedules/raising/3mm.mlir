// PolyBench/C 4.2 3mm (kernel_3mm), NI x NJ x NK x NL x NM = 11 x 13 x 15 x 17 x 19:
// E := A*B; F := C*D; G := E*F.
func.func @kernel_3mm(%E: memref<11x13xf64>, %A: memref<11x15xf64>, %B: memref<15x13xf64>, %F: memref<13x17xf64>, %C: memref<13x19xf64>, %D: memref<19x17xf64>, %G: memref<11x17xf64>) {
  %zero = arith.constant 0.0 : f64
  affine.for %i = 0 to 11 {
    affine.for %j = 0 to 13 {
      affine.store %zero, %E[%i, %j] : memref<11x13xf64>
      affine.for %k = 0 to 15 {
        %a = affine.load %A[%i, %k] : memref<11x15xf64>
        %b = affine.load %B[%k, %j] : memref<15x13xf64>
        %p = arith.mulf %a, %b : f64
        %c = affine.load %E[%i, %j] : memref<11x13xf64>
        %r = arith.addf %c, %p : f64
        affine.store %r, %E[%i, %j] : memref<11x13xf64>
      }
    }
  }
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 17 {
      affine.store %zero, %F[%i, %j] : memref<13x17xf64>
      affine.for %k = 0 to 19 {
        %a = affine.load %C[%i, %k] : memref<13x19xf64>
        %b = affine.load %D[%k, %j] : memref<19x17xf64>
        %p = arith.mulf %a, %b : f64
        %c = affine.load %F[%i, %j] : memref<13x17xf64>
        %r = arith.addf %c, %p : f64
        affine.store %r, %F[%i, %j] : memref<13x17xf64>
      }
    }
  }
  affine.for %i = 0 to 11 {
    affine.for %j = 0 to 17 {
      affine.store %zero, %G[%i, %j] : memref<11x17xf64>
      affine.for %k = 0 to 13 {
        %a = affine.load %E[%i, %k] : memref<11x13xf64>
        %b = affine.load %F[%k, %j] : memref<13x17xf64>
        %p = arith.mulf %a, %b : f64
        %c = affine.load %G[%i, %j] : memref<11x17xf64>
        %r = arith.addf %c, %p : f64
        affine.store %r, %G[%i, %j] : memref<11x17xf64>
      }
    }
  }
  return
}
