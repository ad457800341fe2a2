// The paper's DGEMM as a program (sections 2.3-2.14): hop.matmul on 2088x2048x2048, timed with
// rtclock, printing GFLOPS like the paper's runs.  Try each step of the paper:
//   polyopt run examples/dgemm_hop_main.mlir --hopt
//   polyopt run examples/dgemm_hop_main.mlir --hopt --hopt-copy --hopt-unroll --hopt-scalrep --hopt-vect --reps 5
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  hop.matmul %A, %B, %C : (memref<2088x2048xf64>, memref<2048x2048xf64>, memref<2088x2048xf64>)
  return
}

func.func @main() {
  %A = memref.alloc() : memref<2088x2048xf64>
  %B = memref.alloc() : memref<2048x2048xf64>
  %C = memref.alloc() : memref<2088x2048xf64>
  %one = arith.constant 1.0 : f64
  linalg.fill ins(%one : f64) outs(%A : memref<2088x2048xf64>)
  linalg.fill ins(%one : f64) outs(%B : memref<2048x2048xf64>)
  linalg.fill ins(%one : f64) outs(%C : memref<2088x2048xf64>)
  %t0 = call @rtclock() : () -> f64
  call @matmul(%A, %B, %C) : (memref<2088x2048xf64>, memref<2048x2048xf64>, memref<2088x2048xf64>) -> ()
  %t1 = call @rtclock() : () -> f64
  // every element of C is 1 + 2048
  %c0 = arith.constant 0 : index
  %last = arith.constant 2087 : index
  %x = memref.load %C[%last, %c0] : memref<2088x2048xf64>
  vector.print %x : f64
  %t = arith.subf %t1, %t0 : f64
  %flops = arith.constant 17515413504.0 : f64
  %per_s = arith.divf %flops, %t : f64
  %giga = arith.constant 1.0e9 : f64
  %gflops = arith.divf %per_s, %giga : f64
  vector.print %gflops : f64
  memref.dealloc %A : memref<2088x2048xf64>
  memref.dealloc %B : memref<2048x2048xf64>
  memref.dealloc %C : memref<2088x2048xf64>
  return
}

func.func private @rtclock() -> f64
