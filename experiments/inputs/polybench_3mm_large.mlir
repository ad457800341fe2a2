// PolyBench/C 4.2 3mm (linear-algebra/kernels): E := A*B, F := C*D, G := E*F, written as affine
// MLIR with kernel_3mm's loop structure and statement order, DATA_TYPE double.
// PolyBench/C: Copyright (c) 2010-2016, Ohio State University (../LICENSE-PolyBench.txt).
func.func @kernel_3mm(%E: memref<800x900xf64>, %A: memref<800x1000xf64>,
                      %B: memref<1000x900xf64>, %F: memref<900x1100xf64>,
                      %C: memref<900x1200xf64>, %D: memref<1200x1100xf64>,
                      %G: memref<800x1100xf64>) {
  %zero = arith.constant 0.000000e+00 : f64
  affine.for %i = 0 to 800 {
    affine.for %j = 0 to 900 {
      affine.store %zero, %E[%i, %j] : memref<800x900xf64>
      affine.for %k = 0 to 1000 {
        %a = affine.load %A[%i, %k] : memref<800x1000xf64>
        %b = affine.load %B[%k, %j] : memref<1000x900xf64>
        %e = affine.load %E[%i, %j] : memref<800x900xf64>
        %0 = arith.mulf %a, %b : f64
        %1 = arith.addf %e, %0 : f64
        affine.store %1, %E[%i, %j] : memref<800x900xf64>
      }
    }
  }
  affine.for %i = 0 to 900 {
    affine.for %j = 0 to 1100 {
      affine.store %zero, %F[%i, %j] : memref<900x1100xf64>
      affine.for %k = 0 to 1200 {
        %c = affine.load %C[%i, %k] : memref<900x1200xf64>
        %d = affine.load %D[%k, %j] : memref<1200x1100xf64>
        %f = affine.load %F[%i, %j] : memref<900x1100xf64>
        %0 = arith.mulf %c, %d : f64
        %1 = arith.addf %f, %0 : f64
        affine.store %1, %F[%i, %j] : memref<900x1100xf64>
      }
    }
  }
  affine.for %i = 0 to 800 {
    affine.for %j = 0 to 1100 {
      affine.store %zero, %G[%i, %j] : memref<800x1100xf64>
      affine.for %k = 0 to 900 {
        %e = affine.load %E[%i, %k] : memref<800x900xf64>
        %f = affine.load %F[%k, %j] : memref<900x1100xf64>
        %g = affine.load %G[%i, %j] : memref<800x1100xf64>
        %0 = arith.mulf %e, %f : f64
        %1 = arith.addf %g, %0 : f64
        affine.store %1, %G[%i, %j] : memref<800x1100xf64>
      }
    }
  }
  return
}
