// The paper's section 2.1 listing, exactly as printed there (2020 MLIR syntax).
// C += A * B on 16x16 matrices of ones, C initialised to one: every element is 17.
// A shrunk copy of paper_2.1_dgemm.mlir (16x16) for a quick look and for the tests.
func @matmul(%A: memref<16x16xf64>, %B: memref<16x16xf64>, %C: memref<16x16xf64>) {
  affine.for %arg3 = 0 to 16 {
    affine.for %arg4 = 0 to 16 {
      affine.for %arg5 = 0 to 16 {
        %a = affine.load %A[%arg3, %arg5] : memref<16x16xf64>
        %b = affine.load %B[%arg5, %arg4] : memref<16x16xf64>
        %ci = affine.load %C[%arg3, %arg4] : memref<16x16xf64>
        %p = mulf %a, %b : f64
        %co = addf %ci, %p : f64
        affine.store %co, %C[%arg3, %arg4] : memref<16x16xf64>
      }
    }
  }
  return
}

func @main() {
  %A = alloc() : memref<16x16xf64>
  %B = alloc() : memref<16x16xf64>
  %C = alloc() : memref<16x16xf64>

  %cf1 = constant 1.00000e+00 : f64

  linalg.fill(%A, %cf1) : memref<16x16xf64>, f64
  linalg.fill(%B, %cf1) : memref<16x16xf64>, f64
  linalg.fill(%C, %cf1) : memref<16x16xf64>, f64

  call @matmul(%A, %B, %C) : (memref<16x16xf64>, memref<16x16xf64>, memref<16x16xf64>) -> ()
  call @print_memref_2d_f64(%C): (memref<16x16xf64>) -> ()
  return
}

func @print_memref_2d_f64(memref<16x16xf64>)
