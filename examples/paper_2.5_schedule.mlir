// The paper's section 2.5 example: cache tiling only, given directly as a schedule over
// (d0, d1, d2) = (i, j, k).  polyopt opt --hopt shows the 8 x 33 x 2048 x i x 256 nest.
func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  hop.matmul %A, %B, %C {
    schedule = (d0, d1, d2) -> (d2 floordiv 256, d0 floordiv 64, d1, d0, d2)
  } : (memref<2088x2048xf64>, memref<2048x2048xf64>, memref<2088x2048xf64>)
  return
}
