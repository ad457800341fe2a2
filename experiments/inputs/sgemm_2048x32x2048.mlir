func.func @matmul(%A: memref<2048x2048xf32>, %B: memref<2048x32xf32>, %C: memref<2048x32xf32>) {
  hop.matmul %A, %B, %C : (memref<2048x2048xf32>, memref<2048x32xf32>, memref<2048x32xf32>)
  return
}
