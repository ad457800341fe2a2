func.func @matmul(%A: memref<128x768xf32>, %B: memref<768x3072xf32>, %C: memref<128x3072xf32>) {
  hop.matmul %A, %B, %C : (memref<128x768xf32>, memref<768x3072xf32>, memref<128x3072xf32>)
  return
}
