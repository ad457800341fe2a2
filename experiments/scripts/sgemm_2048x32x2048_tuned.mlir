// The tuner's best for the skinny SGEMM 2048x32x2048 (experiments/results/
// 2026-11-27-tune-acceptance.md, trial 125, confirmed 1.283x the model's choice on Zen 4),
// written by hand: no packing, K_C 384, N_C 256, B's block in L2; M_C, M_R, N_R and K_U are
// the model's.
//   polyopt opt --script experiments/scripts/sgemm_2048x32x2048_tuned.mlir experiments/inputs/sgemm_2048x32x2048.mlir
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["hop.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.polyopt.blis_tile %mm {K_C = 384, N_C = 256, register_form = "row", l2_block = "B"} : !transform.any_op
    transform.polyopt.unroll_and_jam %mm : !transform.any_op
    transform.polyopt.scalar_replace %mm : !transform.any_op
    transform.polyopt.vectorize %mm : !transform.any_op
    %nest = transform.polyopt.expand %mm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
