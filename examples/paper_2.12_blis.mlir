// The paper's section 2.12 experiment, "outer MLIR, inner BLIS": BLIS tiling with M_C = 174,
// K_C = 512 (M_R x N_R come from the micro-kernel) and packing, the M_R x N_R x K_C nest replaced
// by a call to BLIS's hand-written micro-kernel.
//   polyopt opt --hopt --hopt-blis --hopt-blis-kernel bli_dgemm_haswell_asm_6x8 examples/paper_2.12_blis.mlir
func.func @matmul(%A: memref<2088x2048xf64>, %B: memref<2048x2048xf64>, %C: memref<2088x2048xf64>) {
  hop.matmul %A, %B, %C { M_C = 174 : i32, K_C = 512 : i32 }
    : (memref<2088x2048xf64>, memref<2048x2048xf64>, memref<2088x2048xf64>)
  return
}
