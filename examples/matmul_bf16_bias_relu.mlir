// A bf16 layer: C = relu(A * B + bias), C in f32 (linalg.matmul casts A and B to f32).
// polyopt opt examples/matmul_bf16_bias_relu.mlir --hopt --hopt-copy --hopt-vect --remarks
// shows the register tile on AVX512-BF16 (x86vector.avx512.dot) with the bias and ReLU fused.
func.func @layer(%A: memref<128x256xbf16>, %B: memref<256x192xbf16>, %C: memref<128x192xf32>,
                 %bias: memref<192xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%C : memref<128x192xf32>)
  linalg.matmul ins(%A, %B : memref<128x256xbf16>, memref<256x192xbf16>)
                outs(%C : memref<128x192xf32>)
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 192 {
      %c = affine.load %C[%i, %j] : memref<128x192xf32>
      %b = affine.load %bias[%j] : memref<192xf32>
      %s = arith.addf %c, %b : f32
      %r = arith.maximumf %s, %zero : f32
      affine.store %r, %C[%i, %j] : memref<128x192xf32>
    }
  }
  return
}
