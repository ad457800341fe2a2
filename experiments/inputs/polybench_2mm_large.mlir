// PolyBench/C 4.2 2mm (linear-algebra/kernels): D := alpha*A*B*C + beta*D, written as affine
// MLIR with kernel_2mm's loop structure and statement order, DATA_TYPE double.
// PolyBench/C: Copyright (c) 2010-2016, Ohio State University (../LICENSE-PolyBench.txt).
func.func @kernel_2mm(%alpha: f64, %beta: f64, %tmp: memref<800x900xf64>,
                      %A: memref<800x1100xf64>, %B: memref<1100x900xf64>,
                      %C: memref<900x1200xf64>, %D: memref<800x1200xf64>) {
  %zero = arith.constant 0.000000e+00 : f64
  affine.for %i = 0 to 800 {
    affine.for %j = 0 to 900 {
      affine.store %zero, %tmp[%i, %j] : memref<800x900xf64>
      affine.for %k = 0 to 1100 {
        %a = affine.load %A[%i, %k] : memref<800x1100xf64>
        %b = affine.load %B[%k, %j] : memref<1100x900xf64>
        %t = affine.load %tmp[%i, %j] : memref<800x900xf64>
        %0 = arith.mulf %alpha, %a : f64
        %1 = arith.mulf %0, %b : f64
        %2 = arith.addf %t, %1 : f64
        affine.store %2, %tmp[%i, %j] : memref<800x900xf64>
      }
    }
  }
  affine.for %i = 0 to 800 {
    affine.for %j = 0 to 1200 {
      %d = affine.load %D[%i, %j] : memref<800x1200xf64>
      %db = arith.mulf %d, %beta : f64
      affine.store %db, %D[%i, %j] : memref<800x1200xf64>
      affine.for %k = 0 to 900 {
        %t = affine.load %tmp[%i, %k] : memref<800x900xf64>
        %c = affine.load %C[%k, %j] : memref<900x1200xf64>
        %dd = affine.load %D[%i, %j] : memref<800x1200xf64>
        %0 = arith.mulf %t, %c : f64
        %1 = arith.addf %dd, %0 : f64
        affine.store %1, %D[%i, %j] : memref<800x1200xf64>
      }
    }
  }
  return
}
