#map = affine_map<(d0) -> (d0 * 64)>
#map1 = affine_map<(d0) -> (2088, d0 * 64 + 64)>
#map2 = affine_map<(d0) -> (d0 * 256)>
#map3 = affine_map<(d0) -> (d0 * 256 + 256)>
#map4 = affine_map<(d0, d1) -> (d0 * 64, 2088)>
#map5 = affine_map<(d0) -> (d0 * -64 + 2088)>
#map6 = affine_map<(d0) -> (d0 * 8)>
#map7 = affine_map<(d0) -> (d0 * 8 + 8)>
#map8 = affine_map<(d0) -> (d0 * 16)>
#map9 = affine_map<(d0) -> (522, d0 * 16 + 16)>
module {
  func.func @matmul(%arg0: memref<2088x2048xf64>, %arg1: memref<2048x2048xf64>, %arg2: memref<2088x2048xf64>) {
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x256x4xf64>
    %cst = arith.constant 0.000000e+00 : f64
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<256x8xf64>
    affine.for %arg3 = 0 to 8 {
      affine.for %arg4 = 0 to 33 {
        affine.for %arg5 = #map(%arg4) to min #map1(%arg4) step 4 {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            %0 = affine.load %arg0[%arg5, %arg6] : memref<2088x2048xf64>
            affine.store %0, %alloc[%arg4 * -16 + %arg5 floordiv 4, %arg3 * -256 + %arg6, %arg5 mod 4] : memref<16x256x4xf64>
            %1 = affine.load %arg0[%arg5 + 1, %arg6] : memref<2088x2048xf64>
            affine.store %1, %alloc[(%arg4 * -64 + %arg5 + 1) floordiv 4, %arg3 * -256 + %arg6, (%arg4 * -64 + %arg5 + 1) mod 4] : memref<16x256x4xf64>
            %2 = affine.load %arg0[%arg5 + 2, %arg6] : memref<2088x2048xf64>
            affine.store %2, %alloc[(%arg4 * -64 + %arg5 + 2) floordiv 4, %arg3 * -256 + %arg6, (%arg4 * -64 + %arg5 + 2) mod 4] : memref<16x256x4xf64>
            %3 = affine.load %arg0[%arg5 + 3, %arg6] : memref<2088x2048xf64>
            affine.store %3, %alloc[(%arg4 * -64 + %arg5 + 3) floordiv 4, %arg3 * -256 + %arg6, (%arg4 * -64 + %arg5 + 3) mod 4] : memref<16x256x4xf64>
          }
        }
        affine.for %arg5 = max #map4(%arg4, %arg4) to min #map1(%arg4) {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            %0 = affine.load %arg0[%arg5, %arg6] : memref<2088x2048xf64>
            affine.store %0, %alloc[%arg4 * -16 + %arg5 floordiv 4, %arg3 * -256 + %arg6, %arg5 mod 4] : memref<16x256x4xf64>
          }
        }
        affine.for %arg5 = #map5(%arg4) to 64 {
          affine.for %arg6 = 0 to 256 {
            affine.store %cst, %alloc[%arg5 floordiv 4, %arg6, %arg5 mod 4] : memref<16x256x4xf64>
          }
        }
        affine.for %arg5 = 0 to 256 {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            affine.for %arg7 = #map6(%arg5) to #map7(%arg5) {
              %0 = affine.load %arg1[%arg6, %arg7] : memref<2048x2048xf64>
              affine.store %0, %alloc_0[%arg3 * -256 + %arg6, %arg5 * -8 + %arg7] : memref<256x8xf64>
            }
          }
          affine.for %arg6 = #map8(%arg4) to min #map9(%arg4) {
            affine.for %arg7 = 0 to 256 {
              affine.for %arg8 = 0 to 8 {
                affine.for %arg9 = 0 to 4 {
                  %0 = affine.load %alloc[%arg4 * -16 + %arg6, %arg7, %arg9] : memref<16x256x4xf64>
                  %1 = affine.load %alloc_0[%arg7, %arg8] : memref<256x8xf64>
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
    memref.dealloc %alloc_0 : memref<256x8xf64>
    memref.dealloc %alloc : memref<16x256x4xf64>
    return
  }
}
