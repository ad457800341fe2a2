#map = affine_map<(d0) -> (d0 * 16)>
#map1 = affine_map<(d0) -> (37, d0 * 16 + 16)>
module {
  func.func @matmul(%arg0: memref<1x37xf64>, %arg1: memref<37x45xf64>, %arg2: memref<1x45xf64>) {
    affine.for %arg3 = 0 to 3 {
      affine.for %arg4 = 0 to 9 {
        affine.for %arg5 = #map(%arg3) to min #map1(%arg3) {
          affine.for %arg6 = 0 to 5 {
            %0 = affine.load %arg0[0, %arg5] : memref<1x37xf64>
            %1 = affine.load %arg1[%arg5, %arg4 * 5 + %arg6] : memref<37x45xf64>
            %2 = affine.load %arg2[0, %arg4 * 5 + %arg6] : memref<1x45xf64>
            %3 = arith.mulf %0, %1 : f64
            %4 = arith.addf %2, %3 : f64
            affine.store %4, %arg2[0, %arg4 * 5 + %arg6] : memref<1x45xf64>
          }
        }
      }
    }
    return
  }
}
