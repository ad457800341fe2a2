// PolyBench/C 4.2 doitgen (kernel_doitgen), NR x NQ x NP = 5 x 7 x 9:
// for r, q { for p { sum[p] = 0; for s: sum[p] += A[r][q][s] * C4[s][p] } for p: A[r][q][p] = sum[p] }
func.func @kernel_doitgen(%A: memref<5x7x9xf64>, %C4: memref<9x9xf64>, %sum: memref<9xf64>) {
  %zero = arith.constant 0.0 : f64
  affine.for %r = 0 to 5 {
    affine.for %q = 0 to 7 {
      affine.for %p = 0 to 9 {
        affine.store %zero, %sum[%p] : memref<9xf64>
        affine.for %s = 0 to 9 {
          %a = affine.load %A[%r, %q, %s] : memref<5x7x9xf64>
          %c = affine.load %C4[%s, %p] : memref<9x9xf64>
          %m = arith.mulf %a, %c : f64
          %t = affine.load %sum[%p] : memref<9xf64>
          %n = arith.addf %t, %m : f64
          affine.store %n, %sum[%p] : memref<9xf64>
        }
      }
      affine.for %p = 0 to 9 {
        %v = affine.load %sum[%p] : memref<9xf64>
        affine.store %v, %A[%r, %q, %p] : memref<5x7x9xf64>
      }
    }
  }
  return
}
