// The paper's section 2.6 example: BLIS tiling with K_C = 256, M_C = 64, M_R = 4, N_R = 8 and
// packing.  polyopt opt --hopt --hopt-copy shows A packed under the second loop and B under the
// third, into buffers allocated once before the nest.
func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  hop.matmul %A, %B, %C { M_C = 64 : i32, K_C = 256 : i32, M_R = 4 : i32, N_R = 8 : i32, K_U = 4 : i32}
    : (memref<2088x2048xf64>, memref<2048x2048xf64>, memref<2088x2048xf64>)
  return
}
