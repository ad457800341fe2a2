"""The ResNet pattern as MLIR text, for the fused-epilogue tests: an NHWC convolution into an
f32 output, then a nest over the output's four dimensions adding a bias along the filters and
a residual, then ReLU."""


def conv_bias_residual_relu(n: int, h: int, w: int, c: int, f: int, kh: int = 3,
                            stride: int = 1, elem: str = "f32") -> str:
    """``@f(%I, %K, %O, %bias, %res)``: ``linalg.conv_2d_nhwc_hwcf`` of ``elem`` input and
    filter (``kh x kh``, ``stride``), then ``O = relu(O + bias + res)``."""
    oh, ow = (h - kh) // stride + 1, (w - kh) // stride + 1
    ti, tk = f"memref<{n}x{h}x{w}x{c}x{elem}>", f"memref<{kh}x{kh}x{c}x{f}x{elem}>"
    to = f"memref<{n}x{oh}x{ow}x{f}xf32>"
    return f"""func.func @f(%I: {ti}, %K: {tk}, %O: {to}, %bias: memref<{f}xf32>, %res: {to}) {{
  linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}} ins(%I, %K : {ti}, {tk}) outs(%O : {to})
  %zero = arith.constant 0.0 : f32
  affine.for %a = 0 to {n} {{
    affine.for %b = 0 to {oh} {{
      affine.for %d = 0 to {ow} {{
        affine.for %e = 0 to {f} {{
          %x = affine.load %O[%a, %b, %d, %e] : {to}
          %y = affine.load %bias[%e] : memref<{f}xf32>
          %r = affine.load %res[%a, %b, %d, %e] : {to}
          %s = arith.addf %x, %y : f32
          %t = arith.addf %s, %r : f32
          %u = arith.maximumf %t, %zero : f32
          affine.store %u, %O[%a, %b, %d, %e] : {to}
        }}
      }}
    }}
  }}
  return
}}
"""
