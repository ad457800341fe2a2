#map = affine_map<(d0) -> (d0 * 16)>
#map1 = affine_map<(d0) -> (522, d0 * 16 + 16)>
module {
  func.func @matmul(%arg0: memref<2088x2048xf64>, %arg1: memref<2048x2048xf64>, %arg2: memref<2088x2048xf64>) {
    affine.for %arg3 = 0 to 8 {
      affine.for %arg4 = 0 to 33 {
        affine.for %arg5 = 0 to 256 {
          affine.for %arg6 = #map(%arg4) to min #map1(%arg4) {
            affine.for %arg7 = 0 to 256 {
              affine.for %arg8 = 0 to 8 {
                affine.for %arg9 = 0 to 4 {
                  %0 = affine.load %arg0[%arg6 * 4 + %arg9, %arg3 * 256 + %arg7] : memref<2088x2048xf64>
                  %1 = affine.load %arg1[%arg3 * 256 + %arg7, %arg5 * 8 + %arg8] : memref<2048x2048xf64>
                  %2 = affine.load %arg2[%arg6 * 4 + %arg9, %arg5 * 8 + %arg8] : memref<2088x2048xf64>
                  %3 = arith.mulf %0, %1 : f64
                  %4 = arith.addf %2, %3 : f64
                  affine.store %4, %arg2[%arg6 * 4 + %arg9, %arg5 * 8 + %arg8] : memref<2088x2048xf64>
                }
              }
            }
          }
        }
      }
    }
    return
  }
}
