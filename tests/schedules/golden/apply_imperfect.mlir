#map = affine_map<(d0) -> (d0 * 8)>
#map1 = affine_map<(d0) -> (30, d0 * 8 + 8)>
module {
  func.func @g(%arg0: memref<30x20xf64>, %arg1: memref<20x25xf64>, %arg2: memref<30x25xf64>) {
    %cst = arith.constant 0.000000e+00 : f64
    affine.for %arg3 = 0 to 4 {
      affine.for %arg4 = 0 to 25 {
        affine.for %arg5 = #map(%arg3) to min #map1(%arg3) {
          affine.store %cst, %arg2[%arg5, %arg4] : memref<30x25xf64>
          affine.for %arg6 = 0 to 20 {
            %0 = affine.load %arg0[%arg5, %arg6] : memref<30x20xf64>
            %1 = affine.load %arg1[%arg6, %arg4] : memref<20x25xf64>
            %2 = affine.load %arg2[%arg5, %arg4] : memref<30x25xf64>
            %3 = arith.mulf %0, %1 : f64
            %4 = arith.addf %2, %3 : f64
            affine.store %4, %arg2[%arg5, %arg4] : memref<30x25xf64>
          }
        }
      }
    }
    return
  }
}
