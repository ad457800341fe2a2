// The section 2.1 program in MLIR 22 syntax; `mlir-opt-22` accepts this file as is.
//   polyopt run examples/dgemm_modern.mlir
func.func @matmul(%A: memref<64x48xf64>, %B: memref<48x32xf64>, %C: memref<64x32xf64>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      affine.for %k = 0 to 48 {
        %a = affine.load %A[%i, %k] : memref<64x48xf64>
        %b = affine.load %B[%k, %j] : memref<48x32xf64>
        %ci = affine.load %C[%i, %j] : memref<64x32xf64>
        %p = arith.mulf %a, %b : f64
        %co = arith.addf %ci, %p : f64
        affine.store %co, %C[%i, %j] : memref<64x32xf64>
      }
    }
  }
  return
}

func.func @main() {
  %A = memref.alloc() : memref<64x48xf64>
  %B = memref.alloc() : memref<48x32xf64>
  %C = memref.alloc() : memref<64x32xf64>
  %one = arith.constant 1.0 : f64
  linalg.fill ins(%one : f64) outs(%A : memref<64x48xf64>)
  linalg.fill ins(%one : f64) outs(%B : memref<48x32xf64>)
  linalg.fill ins(%one : f64) outs(%C : memref<64x32xf64>)
  %t0 = call @rtclock() : () -> f64
  call @matmul(%A, %B, %C) : (memref<64x48xf64>, memref<48x32xf64>, memref<64x32xf64>) -> ()
  %t1 = call @rtclock() : () -> f64
  %U = memref.cast %C : memref<64x32xf64> to memref<*xf64>
  call @printMemrefF64(%U) : (memref<*xf64>) -> ()
  memref.dealloc %A : memref<64x48xf64>
  memref.dealloc %B : memref<48x32xf64>
  memref.dealloc %C : memref<64x32xf64>
  return
}

func.func private @rtclock() -> f64
func.func private @printMemrefF64(memref<*xf64>)
