#map = affine_map<(d0) -> (d0 * 32)>
#map1 = affine_map<(d0) -> (80, d0 * 32 + 32)>
#map2 = affine_map<(d0) -> (d0 * 3)>
#map3 = affine_map<(d0) -> (12, d0 * 3 + 3)>
#map4 = affine_map<(d0, d1) -> (8, d1 * -8 + 90)>
#map5 = affine_map<(d0) -> (d0 * -32 + 80)>
#map6 = affine_map<(d0) -> (32, d0 * -32 + 80)>
#map7 = affine_map<(d0) -> (d0 * -24 + 90)>
#map8 = affine_map<(d0) -> (d0 * 15)>
#map9 = affine_map<(d0) -> (99, d0 * 15 + 15)>
#map10 = affine_map<(d0, d1) -> (d0 * 15, 99)>
#map11 = affine_map<(d0) -> (100, d0 * 15 + 15)>
#map12 = affine_map<(d0) -> (d0 * -15 + 100)>
#map13 = affine_map<(d0) -> (15, d0 * -15 + 100)>
#map14 = affine_map<(d0) -> (d0 * 5)>
#map15 = affine_map<(d0) -> (34, d0 * 5 + 5)>
#map16 = affine_map<(d0, d1) -> (d0 * 24 + d1 * 8)>
#map17 = affine_map<(d0, d1) -> (90, d0 * 24 + d1 * 8 + 8)>
#map18 = affine_map<(d0) -> (100, d0 * 3 + 3)>
module {
  func.func @matmul(%arg0: memref<100x80xf64>, %arg1: memref<80x90xf64>, %arg2: memref<100x90xf64>) {
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<5x32x3xf64>
    %cst = arith.constant 0.000000e+00 : f64
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<3x32x8xf64>
    %cst_1 = arith.constant 0.000000e+00 : f64
    affine.for %arg3 = 0 to 4 {
      affine.for %arg4 = 0 to 3 {
        affine.for %arg5 = #map(%arg4) to min #map1(%arg4) {
          affine.for %arg6 = #map2(%arg3) to min #map3(%arg3) {
            affine.for %arg7 = 0 to min #map4(%arg3, %arg6) {
              %0 = affine.load %arg1[%arg5, %arg6 * 8 + %arg7] : memref<80x90xf64>
              affine.store %0, %alloc_0[%arg3 * -3 + %arg6, %arg4 * -32 + %arg5, %arg7] : memref<3x32x8xf64>
            }
          }
        }
        affine.for %arg5 = #map5(%arg4) to 32 {
          affine.for %arg6 = 0 to 24 {
            affine.store %cst_1, %alloc_0[%arg6 floordiv 8, %arg5, %arg6 mod 8] : memref<3x32x8xf64>
          }
        }
        affine.for %arg5 = 0 to min #map6(%arg4) {
          affine.for %arg6 = #map7(%arg3) to 24 {
            affine.store %cst_1, %alloc_0[2, %arg5, %arg6 - 16] : memref<3x32x8xf64>
          }
        }
        affine.for %arg5 = 0 to 7 {
          affine.for %arg6 = #map8(%arg5) to min #map9(%arg5) step 3 {
            affine.for %arg7 = #map(%arg4) to min #map1(%arg4) {
              %0 = affine.load %arg0[%arg6, %arg7] : memref<100x80xf64>
              affine.store %0, %alloc[%arg5 * -5 + %arg6 floordiv 3, %arg4 * -32 + %arg7, %arg6 mod 3] : memref<5x32x3xf64>
              %1 = affine.load %arg0[%arg6 + 1, %arg7] : memref<100x80xf64>
              affine.store %1, %alloc[(%arg5 * -15 + %arg6 + 1) floordiv 3, %arg4 * -32 + %arg7, (%arg5 * -15 + %arg6 + 1) mod 3] : memref<5x32x3xf64>
              %2 = affine.load %arg0[%arg6 + 2, %arg7] : memref<100x80xf64>
              affine.store %2, %alloc[(%arg5 * -15 + %arg6 + 2) floordiv 3, %arg4 * -32 + %arg7, (%arg5 * -15 + %arg6 + 2) mod 3] : memref<5x32x3xf64>
            }
          }
          affine.for %arg6 = max #map10(%arg5, %arg5) to min #map11(%arg5) {
            affine.for %arg7 = #map(%arg4) to min #map1(%arg4) {
              %0 = affine.load %arg0[%arg6, %arg7] : memref<100x80xf64>
              affine.store %0, %alloc[%arg5 * -5 + 33, %arg4 * -32 + %arg7, %arg6 - 99] : memref<5x32x3xf64>
            }
          }
          affine.for %arg6 = #map12(%arg5) to 15 {
            affine.for %arg7 = 0 to 32 {
              affine.store %cst, %alloc[%arg6 floordiv 3, %arg7, %arg6 mod 3] : memref<5x32x3xf64>
            }
          }
          affine.for %arg6 = 0 to min #map13(%arg5) {
            affine.for %arg7 = #map5(%arg4) to 32 {
              affine.store %cst, %alloc[%arg6 floordiv 3, %arg7, %arg6 mod 3] : memref<5x32x3xf64>
            }
          }
          affine.for %arg6 = 0 to 3 {
            affine.for %arg7 = #map14(%arg5) to min #map15(%arg5) {
              affine.for %arg8 = #map(%arg4) to min #map1(%arg4) {
                affine.for %arg9 = #map16(%arg3, %arg6) to min #map17(%arg3, %arg6) {
                  affine.for %arg10 = #map2(%arg7) to min #map18(%arg7) {
                    %0 = affine.load %alloc[%arg5 * -5 + %arg10 floordiv 3, %arg4 * -32 + %arg8, %arg10 mod 3] : memref<5x32x3xf64>
                    %1 = affine.load %alloc_0[%arg3 * -3 + %arg9 floordiv 8, %arg4 * -32 + %arg8, %arg9 mod 8] : memref<3x32x8xf64>
                    %2 = affine.load %arg2[%arg10, %arg9] : memref<100x90xf64>
                    %3 = arith.mulf %0, %1 : f64
                    %4 = arith.addf %2, %3 : f64
                    affine.store %4, %arg2[%arg10, %arg9] : memref<100x90xf64>
                  }
                }
              }
            }
          }
        }
      }
    }
    memref.dealloc %alloc_0 : memref<3x32x8xf64>
    memref.dealloc %alloc : memref<5x32x3xf64>
    return
  }
}
