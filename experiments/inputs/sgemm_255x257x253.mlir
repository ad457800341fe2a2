func.func @matmul(%A: memref<255x253xf32>, %B: memref<253x257xf32>, %C: memref<255x257xf32>) {
  hop.matmul %A, %B, %C : (memref<255x253xf32>, memref<253x257xf32>, memref<255x257xf32>)
  return
}
