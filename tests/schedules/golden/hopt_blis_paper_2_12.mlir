#map = affine_map<(d0) -> (d0 * 174)>
#map1 = affine_map<(d0) -> (d0 * 174 + 174)>
#map2 = affine_map<(d0) -> (d0 * 512)>
#map3 = affine_map<(d0) -> (d0 * 512 + 512)>
#map4 = affine_map<(d0, d1) -> (d0 * 174, d1 * 174 + 174)>
#map5 = affine_map<(d0) -> (d0 * 8)>
#map6 = affine_map<(d0) -> (d0 * 8 + 8)>
#map7 = affine_map<(d0) -> (d0 * 3072)>
#map8 = affine_map<(d0, d1, d2) -> (d0 * 356352 + d1 * 12288 + d2 * 8)>
#map9 = affine_map<(d0) -> (d0 * 3072 + 6)>
module {
  func.func @matmul(%arg0: memref<2088x2048xf64>, %arg1: memref<2048x2048xf64>, %arg2: memref<2088x2048xf64>) {
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<29x512x6xf64>
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<512x8xf64>
    affine.for %arg3 = 0 to 4 {
      affine.for %arg4 = 0 to 12 {
        affine.for %arg5 = #map(%arg4) to #map1(%arg4) step 6 {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            %0 = affine.load %arg0[%arg5, %arg6] : memref<2088x2048xf64>
            affine.store %0, %alloc[%arg4 * -29 + %arg5 floordiv 6, %arg3 * -512 + %arg6, %arg5 mod 6] : memref<29x512x6xf64>
            %1 = affine.load %arg0[%arg5 + 1, %arg6] : memref<2088x2048xf64>
            affine.store %1, %alloc[(%arg4 * -174 + %arg5 + 1) floordiv 6, %arg3 * -512 + %arg6, (%arg4 * -174 + %arg5 + 1) mod 6] : memref<29x512x6xf64>
            %2 = affine.load %arg0[%arg5 + 2, %arg6] : memref<2088x2048xf64>
            affine.store %2, %alloc[(%arg4 * -174 + %arg5 + 2) floordiv 6, %arg3 * -512 + %arg6, (%arg4 * -174 + %arg5 + 2) mod 6] : memref<29x512x6xf64>
            %3 = affine.load %arg0[%arg5 + 3, %arg6] : memref<2088x2048xf64>
            affine.store %3, %alloc[(%arg4 * -174 + %arg5 + 3) floordiv 6, %arg3 * -512 + %arg6, (%arg4 * -174 + %arg5 + 3) mod 6] : memref<29x512x6xf64>
            %4 = affine.load %arg0[%arg5 + 4, %arg6] : memref<2088x2048xf64>
            affine.store %4, %alloc[(%arg4 * -174 + %arg5 + 4) floordiv 6, %arg3 * -512 + %arg6, (%arg4 * -174 + %arg5 + 4) mod 6] : memref<29x512x6xf64>
            %5 = affine.load %arg0[%arg5 + 5, %arg6] : memref<2088x2048xf64>
            affine.store %5, %alloc[(%arg4 * -174 + %arg5 + 5) floordiv 6, %arg3 * -512 + %arg6, (%arg4 * -174 + %arg5 + 5) mod 6] : memref<29x512x6xf64>
          }
        }
        affine.for %arg5 = max #map4(%arg4, %arg4) to #map1(%arg4) {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            %0 = affine.load %arg0[%arg5, %arg6] : memref<2088x2048xf64>
            affine.store %0, %alloc[%arg4 * -29 + %arg5 floordiv 6, %arg3 * -512 + %arg6, %arg5 mod 6] : memref<29x512x6xf64>
          }
        }
        affine.for %arg5 = 0 to 256 {
          affine.for %arg6 = #map2(%arg3) to #map3(%arg3) {
            affine.for %arg7 = #map5(%arg5) to #map6(%arg5) {
              %0 = affine.load %arg1[%arg6, %arg7] : memref<2048x2048xf64>
              affine.store %0, %alloc_0[%arg3 * -512 + %arg6, %arg5 * -8 + %arg7] : memref<512x8xf64>
            }
          }
          affine.for %arg6 = 0 to 29 {
            %0 = affine.apply #map7(%arg6)
            %c0 = arith.constant 0 : index
            %1 = affine.apply #map8(%arg4, %arg6, %arg5)
            %c2048 = arith.constant 2048 : index
            %c1 = arith.constant 1 : index
            %c512 = arith.constant 512 : index
            %c6 = arith.constant 6 : index
            %c8 = arith.constant 8 : index
            %2 = affine.apply #map9(%arg6)
            %cst = arith.constant 1.000000e+00 : f64
            func.call @polyopt_bli_dgemm_haswell_asm_6x8(%alloc, %0, %alloc_0, %c0, %arg2, %1, %c2048, %c1, %c512, %c6, %c8, %2, %c0, %cst) : (memref<29x512x6xf64>, index, memref<512x8xf64>, index, memref<2088x2048xf64>, index, index, index, index, index, index, index, index, f64) -> ()
          }
        }
      }
    }
    memref.dealloc %alloc_0 : memref<512x8xf64>
    memref.dealloc %alloc : memref<29x512x6xf64>
    return
  }
  func.func private @polyopt_bli_dgemm_haswell_asm_6x8(memref<29x512x6xf64>, index, memref<512x8xf64>, index, memref<2088x2048xf64>, index, index, index, index, index, index, index, index, f64) attributes {polyopt.blis_kernel = "bli_dgemm_haswell_asm_6x8"}
}
