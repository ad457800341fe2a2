// A ResNet-style 3x3 convolution (NHWC input, HWCF filter) as upstream MLIR writes it:
//   polyopt opt --hopt --hopt-copy --hopt-vect examples/conv2d_nhwc.mlir   # its implicit GEMM
func.func @conv(%I: memref<1x30x30x32xf32>, %F: memref<3x3x32x64xf32>, %O: memref<1x28x28x64xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%I, %F : memref<1x30x30x32xf32>, memref<3x3x32x64xf32>) outs(%O : memref<1x28x28x64xf32>)
  return
}
