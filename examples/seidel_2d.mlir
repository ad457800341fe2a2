// seidel-2d in place: every point depends on its updated west/north neighbours.
// polyopt opt examples/seidel_2d.mlir --schedule 'S0=...' (see the README) tiles it after skewing;
// a rectangular tiling is refused with the violated dependence.
func.func @seidel(%A: memref<20x20xf64>, %T: index) {
  %cst = arith.constant 0.2 : f64
  affine.for %t = 0 to %T {
    affine.for %i = 1 to 19 {
      affine.for %j = 1 to 19 {
        %a = affine.load %A[%i - 1, %j] : memref<20x20xf64>
        %b = affine.load %A[%i, %j - 1] : memref<20x20xf64>
        %c = affine.load %A[%i, %j] : memref<20x20xf64>
        %d = affine.load %A[%i, %j + 1] : memref<20x20xf64>
        %e = affine.load %A[%i + 1, %j] : memref<20x20xf64>
        %s1 = arith.addf %a, %b : f64
        %s2 = arith.addf %s1, %c : f64
        %s3 = arith.addf %s2, %d : f64
        %s4 = arith.addf %s3, %e : f64
        %r = arith.mulf %s4, %cst : f64
        affine.store %r, %A[%i, %j] : memref<20x20xf64>
      }
    }
  }
  return
}
