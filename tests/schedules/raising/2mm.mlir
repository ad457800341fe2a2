// PolyBench/C 4.2 2mm (kernel_2mm), NI x NJ x NK x NL = 13 x 11 x 17 x 19:
// tmp := alpha*A*B; D := alpha*... as PolyBench: D := beta*D + tmp*C.
func.func @kernel_2mm(%alpha: f32, %beta: f32, %tmp: memref<13x11xf32>, %A: memref<13x17xf32>, %B: memref<17x11xf32>, %C: memref<11x19xf32>, %D: memref<13x19xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 11 {
      affine.store %zero, %tmp[%i, %j] : memref<13x11xf32>
      affine.for %k = 0 to 17 {
        %a = affine.load %A[%i, %k] : memref<13x17xf32>
        %t = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<17x11xf32>
        %p = arith.mulf %t, %b : f32
        %c = affine.load %tmp[%i, %j] : memref<13x11xf32>
        %r = arith.addf %c, %p : f32
        affine.store %r, %tmp[%i, %j] : memref<13x11xf32>
      }
    }
  }
  affine.for %i = 0 to 13 {
    affine.for %j = 0 to 19 {
      %d = affine.load %D[%i, %j] : memref<13x19xf32>
      %s = arith.mulf %d, %beta : f32
      affine.store %s, %D[%i, %j] : memref<13x19xf32>
      affine.for %k = 0 to 11 {
        %a = affine.load %tmp[%i, %k] : memref<13x11xf32>
        %b = affine.load %C[%k, %j] : memref<11x19xf32>
        %p = arith.mulf %a, %b : f32
        %c = affine.load %D[%i, %j] : memref<13x19xf32>
        %r = arith.addf %c, %p : f32
        affine.store %r, %D[%i, %j] : memref<13x19xf32>
      }
    }
  }
  return
}
