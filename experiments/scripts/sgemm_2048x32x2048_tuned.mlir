// The tuner's best for the skinny SGEMM 2048x32x2048 (experiments/results/
// 2026-11-27-tune-acceptance.md, trial 371, confirmed 1.418x the model's choice on Zen 4),
// written by hand: no packing, an 8x64 register tile with K_U 8, B's block in L2.
//   polyopt opt --script experiments/scripts/sgemm_2048x32x2048_tuned.mlir experiments/inputs/sgemm_2048x32x2048.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["hop.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.polyopt.blis_tile %mm {M_C = 192, K_C = 256, N_C = 4096, M_R = 8, N_R = 64, K_U = 8, l2_block = "B"} : !transform.any_op
    transform.polyopt.unroll_and_jam %mm : !transform.any_op
    transform.polyopt.scalar_replace %mm : !transform.any_op
    transform.polyopt.vectorize %mm : !transform.any_op
    %nest = transform.polyopt.expand %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
