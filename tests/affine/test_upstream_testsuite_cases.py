"""Cases taken from MLIR's own test files (``mlir/test/Dialect/{Affine,ControlFlow,Func,MemRef,
Vector,Linalg}`` and ``mlir/test/IR``) on which polyopt and mlir-opt-22 disagreed.

Each invalid case carries its ``expected-error`` comments: both tools must pass
``--verify-diagnostics`` on it (same message, same line).  Each valid case must print as
mlir-opt-22 prints it.  The cases are the upstream ones, cut down to what they test."""

from __future__ import annotations

import pytest

import polyopt
from polyopt.affine.printer import print_module
from polyopt.cli import main
from upstream_mlir import mlir_opt, run_mlir_opt

INVALID = {
    # a missing token at the end of a line is reported there, not at the next line's token
    "region_brace_after_line_end": """
func.func @incomplete_for() {
  affine.for %i = 1 to 10 step 2
}        // expected-error @-1 {{expected '{' to begin a region}}
""",
    "list_bracket_after_line_end": """
func.func @switch_missing_comma(%flag : i32, %caseOperand : i32) {
  cf.switch %flag : i32, [
    default: ^bb1(%caseOperand : i32),
    // expected-error@+1 {{expected ']'}}
    45: ^bb2(%caseOperand : i32)
    43: ^bb3(%caseOperand : i32)
  ]
  ^bb1(%bb1arg : i32):
    return
  ^bb2(%bb2arg : i32):
    return
  ^bb3(%bb3arg : i32):
    return
}
""",
    # ... but a missing keyword is reported at the token found instead
    "keyword_at_next_token": """
func.func @switch_missing_default(%flag : i32, %caseOperand : i32) {
  cf.switch %flag : i32, [
    // expected-error@+1 {{expected 'default'}}
    45: ^bb2(%caseOperand : i32)
  ]
  ^bb2(%bb2arg : i32):
    return
}
""",
    "for_to_between_bounds": """
func.func @malformed_for_to() {
  affine.for %i = 1 too 10 { // expected-error {{expected 'to' between bounds}}
  }
  return
}
""",
    "for_step_not_a_constant": """
func.func @nonconstant_step(%1 : index) {
  affine.for %2 = 1 to 5 step %1 { // expected-error {{expected attribute value}}
  }
  return
}
""",
    "for_step_typo": """
func.func @step_typo() {
  affine.for %i = 1 to 100 step -- 1 { //expected-error {{expected constant integer}}
  }
  return
}
""",
    "for_step_float": """
func.func @step_float() {
  // expected-error@+1 {{floating point value not valid for specified type}}
  affine.for %i = 1 to 100 step 1.5 {
  }
  return
}
""",
    "for_bound_out_of_range": """
func.func @large_bound() {
  affine.for %i = 1 to 9223372036854775810 {
  // expected-error@-1 {{integer constant out of range for attribute}}
  }
  return
}
""",
    "for_upper_bound_with_max": """
func.func @max_in_upper_bound(%N : index) {
  affine.for %i = 1 to max affine_map<(i)->(N, 100)> { //expected-error {{expected attribute value}}
  }
  return
}
""",
    "set_constraint_without_relation": """
func.func @invalid_if_conditional6() {
  affine.for %i = 1 to 10 {
    affine.if affine_set<(i) : (i)> // expected-error {{expected '== affine-expr' or '>= affine-expr' at end of affine constraint}}
  }
  return
}
""",
    "set_constraint_list_paren": """
// expected-error @+1 {{expected '(' in integer set constraint list}}
#set0 = affine_set<(i)[N, M] : )i >= 0)>
""",
    "map_empty_parentheses": """
#hello_world = affine_map<(i, j) -> ((), j)> // expected-error {{no expression inside parentheses}}
""",
    "map_missing_right_operand": """
#hello_world = affine_map<(i, j) [s0] -> (2*i*, 3*j*i*2 + 5)> // expected-error {{missing right operand of binary op}}
""",
    "map_missing_left_operand": """
#hello_world = affine_map<(i, j) [s0, s1] -> (i, *j+5)> // expected-error {{missing left operand of binary op}}
""",
    "map_range_open_paren": """
// expected-error @+1 {{expected '(' in affine map range}}
#hello_world = affine_map<(i, j) [s0] -> i + s0, j)>
""",
    "map_range_close_paren": """
// expected-error @+1 {{expected ')' in affine map range}}
#hello_world = affine_map<(i, j) [s0, s1] -> (-1*i j, j)>
""",
    "alias_without_equal": """
#hello_world affine_map<(i, j) [s0] -> (i, j)> // expected-error {{expected '=' in attribute alias definition}}
""",
    "apply_result_not_index": """
func.func @affine_apply_resul_non_index(%arg0 : index) {
  // expected-error@+1 {{op result #0 must be index, but got 'i32'}}
  %0 = "affine.apply"(%arg0) {map = affine_map<(d0) -> (d0)>} : (index) -> (i32)
  return
}
""",
    "scf_for_two_regions": """
func.func @loop_for_one_region(%arg0: index) {
  // expected-error@+1 {{requires one region}}
  "scf.for"(%arg0, %arg0, %arg0) (
    {scf.yield},
    {scf.yield}
  ) : (index, index, index) -> ()
  return
}
""",
    "affine_if_three_regions": """
func.func @f() {
  // expected-error@+1 {{expected 2 regions}}
  "affine.if"() ({affine.yield}, {}, {}) {condition = affine_set<() : (0 == 0)>} : () -> ()
  return
}
""",
    "call_result_count": """
func.func private @return_i32_f32() -> (i32, f32)

func.func @call() {
  // expected-error @+1 {{op incorrect number of results for callee}}
  %0 = call @return_i32_f32() : () -> (i32)
  return
}
""",
    "global_of_scalar_type": """
// expected-error @+1 {{type should be static shaped memref}}
memref.global @foo : i32 = 5
""",
    "global_of_dynamic_type": """
// expected-error @+1 {{type should be static shaped memref}}
memref.global @foo : memref<?x?xf32>
""",
    "global_string_initializer": """
// expected-error @+1 {{initial value should be a unit or elements attribute}}
memref.global @foo : memref<2x2xf32>  = "foo"
""",
    "global_integer_initializer": """
// expected-error @+1 {{integer literal not valid for specified type}}
memref.global @foo : memref<2xf32>  = 5
""",
    "global_two_visibilities": """
// expected-error @+1 {{expected valid '@'-identifier for symbol name}}
memref.global "private" "public" @foo : memref<2x2xf32>  = "foo"
""",
    "function_name_not_identifier": """
// expected-error @+1 {{@ identifier expected to start with letter or '_'}}
func.func @$invalid_function_name()
""",
    "function_variadic": """
// expected-error@+1 {{expected non-function type}}
func.func @func_variadic(...)
""",
    "function_mixed_arguments": """
func.func @mixed_named_arguments(f32,
                               %a : i32) -> () { // expected-error {{expected type instead of SSA identifier}}
  return
}
""",
    "reinterpret_cast_memory_space_first": """
func.func @memref_reinterpret_cast_incompatible_memory_space(%in: memref<*xf32>) {
  // expected-error @+1 {{different memory spaces specified}}
  %out = memref.reinterpret_cast %in to
           offset: [0], sizes: [10], strides: [1]
         : memref<*xf32> to memref<10xi32, strided<[1], offset: 0>, 2>
  return
}
""",
    "broadcast_to_scalar": """
func.func @broadcast_to_scalar(%arg0: f32) -> f32 {
  // expected-error@+1 {{custom op 'vector.broadcast' invalid kind of type specified: expected builtin.vector, but found 'f32'}}
  %0 = vector.broadcast %arg0 : f32 to f32
  return %0 : f32
}
""",
    "assume_alignment_not_power_of_2": """
func.func @f(%m: memref<4x4xf16>) {
  // expected-error@+1 {{alignment must be power of 2}}
  %r = memref.assume_alignment %m, 12 : memref<4x4xf16>
  return
}
""",
    "realloc_missing_size": """
func.func @f(%m: memref<2xf32>) {
  // expected-error@+1 {{missing dimension operand for result type 'memref<?xf32>'}}
  %r = memref.realloc %m : memref<2xf32> to memref<?xf32>
  return
}
""",
    "prefetch_locality": """
func.func @f(%m: memref<4x4xf16>, %i: index) {
  // expected-error@+1 {{'memref.prefetch' op attribute 'localityHint' failed to satisfy constraint}}
  memref.prefetch %m[%i, %i], read, locality<5>, data : memref<4x4xf16>
  return
}
""",
    "prefetch_cache": """
func.func @f(%m: memref<4x4xf16>, %i: index) {
  // expected-error@+1 {{cache type has to be 'data' or 'instr'}}
  memref.prefetch %m[%i, %i], read, locality<1>, dat : memref<4x4xf16>
  return
}
""",
    "memory_space_cast_of_other_shape": """
func.func @f(%m: memref<?xf32>) {
  // expected-error@+1 {{are cast incompatible}}
  %r = memref.memory_space_cast %m : memref<?xf32> to memref<4xf32, 1>
  return
}
""",
    "outerproduct_scalar_lhs": """
func.func @outerproduct_non_vector_operand(%arg0: f32) {
  // expected-error@+1 {{expected vector type for operand #1}}
  %1 = vector.outerproduct %arg0, %arg0 : f32, f32
  return
}
""",
    "outerproduct_result_dim": """
func.func @outerproduct_operand_2_dim_generic(%arg0: vector<4xf32>, %arg1: vector<8xf32>) {
  // expected-error@+1 {{expected #2 operand dim to match result dim #2}}
  %1 = "vector.outerproduct" (%arg0, %arg1) : (vector<4xf32>, vector<8xf32>) -> (vector<4x16xf32>)
  return
}
""",
    "outerproduct_kind": """
func.func @f(%i: vector<4xi32>) {
  // expected-error@+1 {{unsupported outerproduct type}}
  %1 = vector.outerproduct %i, %i {kind = #vector.kind<maxnumf>} : vector<4xi32>, vector<4xi32>
  return
}
""",
    "transpose_duplicate": """
func.func @f(%a: vector<3x7xf32>) {
  // expected-error@+1 {{duplicate position index: 1}}
  %0 = vector.transpose %a, [1, 1] : vector<3x7xf32> to vector<7x3xf32>
  return
}
""",
    "transpose_sizes": """
func.func @f(%a: vector<3x7xf32>) {
  // expected-error@+1 {{dimension size mismatch at: 0}}
  %0 = vector.transpose %a, [1, 0] : vector<3x7xf32> to vector<7x4xf32>
  return
}
""",
    "gather_indices_dim": """
func.func @f(%base: memref<?xf32>, %mask: vector<16xi1>, %pass: vector<16xf32>, %v8: vector<8xi32>) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{expected result dim to match indices dim}}
  %0 = vector.gather %base[%c0][%v8], %mask, %pass : memref<?xf32>, vector<8xi32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
  return
}
""",
    "maskedload_pass_thru": """
func.func @f(%base: memref<?xf32>, %mask: vector<16xi1>, %pass: vector<16xf16>) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{expected pass_thru of same type as result type}}
  %0 = vector.maskedload %base[%c0], %mask, %pass : memref<?xf32>, vector<16xi1>, vector<16xf16> into vector<16xf32>
  return
}
""",
    "maskedstore_mask_type": """
func.func @f(%base: memref<?xf32>, %v: vector<16xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{operand #2 must be vector of 1-bit signless integer values}}
  vector.maskedstore %base[%c0], %v, %v : memref<?xf32>, vector<16xf32>, vector<16xf32>
  return
}
""",
    "subview_negative_offset": """
func.func @invalid_subview(%input: memref<4x1024xf32>) -> memref<2x256xf32, strided<[1024, 1], offset: 2304>> {
  // expected-error@+1 {{expected offsets to be non-negative, but got -1}}
  %0 = memref.subview %input[-1, 256] [2, 256] [1, 1] : memref<4x1024xf32> to memref<2x256xf32, strided<[1024, 1], offset: 2304>>
  return %0 : memref<2x256xf32, strided<[1024, 1], offset: 2304>>
}
""",
    "subview_negative_size": """
func.func @invalid_subview(%input: memref<4x1024xf32>) -> memref<2x256xf32, strided<[1024, 1], offset: 2304>> {
  // expected-error@+1 {{expected sizes to be non-negative, but got -1}}
  %0 = memref.subview %input[2, 256] [-1, 256] [1, 1] : memref<4x1024xf32> to memref<2x256xf32, strided<[1024, 1], offset: 2304>>
  return %0 : memref<2x256xf32, strided<[1024, 1], offset: 2304>>
}
""",
    "subview_list_ranks": """
func.func @invalid_subview(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = memref.alloc() : memref<8x16x4xf32>
  // expected-error@+1 {{expected mixed offsets rank to match mixed sizes rank (2 vs 3) so the rank of the result type is well-formed}}
  %1 = memref.subview %0[0, 0][2, 2, 2][1, 1, 1]
    : memref<8x16x4xf32> to memref<8x16x4xf32>
  return
}
""",
    "reinterpret_cast_list_ranks": """
func.func @invalid_subview(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = memref.alloc() : memref<8x16x4xf32>
  // expected-error@+1 {{expected mixed sizes rank to match mixed strides rank (3 vs 2) so the rank of the result type is well-formed}}
  %1 = memref.reinterpret_cast %0 to offset: [0], sizes: [2, 2, 2], strides:[1, 1]
    : memref<8x16x4xf32> to memref<8x16x4xf32>
  return
}
""",
    "subview_rank_too_large": """
func.func @invalid_subview(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = memref.alloc() : memref<8x16x4xf32>
  // expected-error@+1 {{expected result rank to be smaller or equal to the source rank, but got 'memref<8x16x4x3xi32>'}}
  %1 = memref.subview %0[0, 0, 0][8, 16, 4][1, 1, 1]
    : memref<8x16x4xf32> to
      memref<8x16x4x3xi32>
  return
}
""",
    "subview_result_type_before_bounds": """
func.func @invalid_rank_reducing_subview(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = memref.alloc() : memref<8x16x4xf32>
  // expected-error@+1 {{expected result type to be 'memref<8x16x4xf32, strided<[64, 4, 1], offset: 8>>' or a rank-reduced version. (mismatch of result sizes)}}
  %1 = memref.subview %0[0, 2, 0][8, 16, 4][1, 1, 1]
    : memref<8x16x4xf32> to memref<16x4xf32>
  return
}
""",
    "view_without_shift": """
func.func @invalid_view(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = memref.alloc() : memref<2048xi8>
  // expected-error@+1 {{expected SSA operand}}
  %1 = memref.view %0[][%arg0, %arg1]
    : memref<2048xi8> to memref<?x?xf32>
  return
}
""",
    "alloca_outside_allocation_scope": """
"alloca_without_scoped_alloc_parent"() ({
  memref.alloca() : memref<1xf32>
  // expected-error@-1 {{requires an ancestor op with AutomaticAllocationScope trait}}
  func.return
}) : () -> ()
""",
    "constant_of_string": """
func.func @constant() {
^bb:
  %x = "arith.constant"(){value = "xyz"} : () -> i32 // expected-error {{'arith.constant' op failed to verify that all of {value, result} have same type}}
  return
}
""",
    "constant_of_unit": """
func.func @constant() {
  // expected-error@+1 {{attribute 'value' failed to satisfy constraint: TypedAttr instance}}
  %x = "arith.constant"(){value = unit} : () -> i32
  return
}
""",
    "elementwise_scalar_result": """
func.func @func_with_ops(%a: vector<8xi32>) {
  // expected-error@+1 {{'arith.addui_extended' op if an operand is non-scalar, then all results must be non-scalar}}
  %r:2 = arith.addui_extended %a, %a : vector<8xi32>, i1
  return
}
""",
    "broadcast_of_memref": """
func.func @broadcast_unknown(%arg0: memref<4x8xf32>) {
  // expected-error@+1 {{'vector.broadcast' op source type is not a vector}}
  %1 = vector.broadcast %arg0 : memref<4x8xf32> to vector<1x8xf32>
  return
}
""",
    "transfer_write_vector_type_first": """
func.func @test_vector.transfer_write(%arg0: memref<vector<4x3xf32>>) {
  %c3 = arith.constant 3 : index
  // expected-error@+1 {{ requires vector type}}
  vector.transfer_write %arg0, %arg0[%c3, %c3] : memref<vector<4x3xf32>>, vector<4x3xf32>
  return
}
""",
    "contract_map_count": """
func.func @contraction(%arg0: vector<7x8x16x15xf32>, %arg1: vector<8x16x7x5xf32>, %arg2: vector<8x15x5xf32>) {
  // expected-error@+1 {{expected an indexing map for each vector operand}}
  %0 = vector.contract {indexing_maps = [affine_map<(b0, f0, f1, c0, c1) -> (c0, b0, c1, f0)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, c1, c0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} %arg0, %arg1, %arg2
      : vector<7x8x16x15xf32>, vector<8x16x7x5xf32> into vector<8x15x5xf32>
  return
}
""",
    "contract_map_symbols": """
func.func @contraction(%arg0: vector<7x8x16x15xf32>, %arg1: vector<8x16x7x5xf32>, %arg2: vector<8x15x5xf32>) {
  // expected-error@+1 {{op expected indexing map 1 to have no symbols}}
  %0 = vector.contract {indexing_maps = [affine_map<(b0, f0, f1, c0, c1) -> (c0, b0, c1, f0)>, affine_map<(b0, f0, f1, c0, c1)[s0] -> (b0, s0, c0, f1)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} %arg0, %arg1, %arg2
      : vector<7x8x16x15xf32>, vector<8x16x7x5xf32> into vector<8x15x5xf32>
  return
}
""",
    "contract_accumulator_shape": """
func.func @contraction(%arg0: vector<7x8x16x15xf32>, %arg1: vector<8x16x7x5xf32>, %arg2: vector<8x15x5xf32>) {
  // expected-error@+1 {{invalid accumulator/result vector shape, expected: 'vector<8x5x15xf32>'}}
  %0 = vector.contract {indexing_maps = [affine_map<(b0, f0, f1, c0, c1) -> (c0, b0, c1, f0)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, c1, c0, f1)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, f1, f0)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} %arg0, %arg1, %arg2
      : vector<7x8x16x15xf32>, vector<8x16x7x5xf32> into vector<8x15x5xf32>
  return
}
""",
    "contract_contracting_dims": """
func.func @contraction(%arg0: vector<7x8x16x15xf32>, %arg1: vector<8x16x7x5xf32>, %arg2: vector<8x15x5xf32>) {
  // expected-error@+1 {{invalid contracting dimension map}}
  %0 = vector.contract {indexing_maps = [affine_map<(b0, f0, f1, c0, c1) -> (c0, b0, c1, f0)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, c0, c1, f1)>, affine_map<(b0, f0, f1, c0, c1) -> (b0, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} %arg0, %arg1, %arg2
      : vector<7x8x16x15xf32>, vector<8x16x7x5xf32> into vector<8x15x5xf32>
  return
}
""",
    "function_empty_body": """
func.func @foo() {} // expected-error {{expected non-empty function body}}
""",
    "transfer_read_one_type": """
func.func @test_vector.transfer_read(%arg0: memref<?x?xf32>) {
  %c3 = arith.constant 3 : index
  %cst = arith.constant 3.0 : f32
  // expected-error@+1 {{requires two types}}
  %0 = vector.transfer_read %arg0[%c3, %c3], %cst { permutation_map = affine_map<()->(0)> } : memref<?x?xf32>
  return
}
""",
}

VALID = {
    # memory space 0 is the default one: MLIR drops it from the type
    "memory_space_zero": """
func.func @dealloc() {
  %0 = memref.alloc() : memref<1024x64xf32, affine_map<(d0, d1) -> (d0, d1)>, 0>
  memref.dealloc %0 : memref<1024x64xf32, affine_map<(d0, d1) -> (d0, d1)>, 0>
  return
}
func.func private @f(memref<4xf32, 0>, memref<*xf32, 0>, memref<4xf32, strided<[1]>, 0>)
""",
    # linalg.generic's attributes given as an alias of a dictionary
    "generic_trait_alias": """
#accesses_0 = [
  affine_map<(i, j, k) -> (j, i)>,
  affine_map<(i, j, k) -> ()>,
  affine_map<(i, j, k) -> (i, k, i + j)>
]
#trait_0 = {
  indexing_maps = #accesses_0,
  iterator_types = ["parallel", "parallel", "parallel"],
  library_call = "some_external_function_name_1"
}
func.func @generic(%arg0: memref<?x?xvector<3x4xi4>, strided<[?, 1]>>,
              %arg1: memref<?x?x?xf32, strided<[?, ?, 1]>>) {
  %cst = arith.constant 0.0 : f32
  linalg.generic #trait_0
       ins(%arg0, %cst : memref<?x?xvector<3x4xi4>, strided<[?, 1]>>, f32)
      outs(%arg1 : memref<?x?x?xf32, strided<[?, ?, 1]>>)
      attrs = {foo = 1} {
    ^bb(%0: vector<3x4xi4>, %1: f32, %2: f32) :
      linalg.yield %1 : f32
  }
  return
}
""",
    # memref ops about the buffer (MemRef/ops.mlir)
    "memref_meta_ops": """
func.func @f(%m: memref<4x4xf16>, %src: memref<?xf32>, %d: index, %s2: memref<2xf32>, %i: index) {
  %r = memref.assume_alignment %m, 16 : memref<4x4xf16>
  memref.assume_alignment %m, 16 : memref<4x4xf16>
  %0 = "memref.rank"(%m) : (memref<4x4xf16>) -> index
  %1 = memref.memory_space_cast %src : memref<?xf32> to memref<?xf32, 1>
  %2 = memref.extract_aligned_pointer_as_index %src : memref<?xf32> -> index
  %3 = memref.realloc %s2(%d) {alignment = 8} : memref<2xf32> to memref<?xf32>
  %4 = memref.realloc %s2 : memref<2xf32> to memref<4xf32>
  memref.prefetch %m[%i, %i], write, locality<1>, data : memref<4x4xf16>
  memref.prefetch %m[%i, %i], read, locality<3>, instr : memref<4x4xf16>
  %u = memref.cast %src : memref<?xf32> to memref<*xf32>
  %5 = memref.rank %u : memref<*xf32>
  %6 = memref.memory_space_cast %u : memref<*xf32> to memref<*xf32, 1>
  return
}
""",
    # Vector/ops.mlir: masked and indexed memory, transpose, outer products
    "vector_ops": """
func.func @f(%base: memref<?x?xf32>, %mask: vector<16xi1>, %pass: vector<16xf32>, %v: vector<16xi32>, %a: vector<3x7xf32>, %x: vector<4xf32>, %y: vector<8xf32>, %acc: vector<4x8xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %0 = vector.maskedload %base[%c0, %c0], %mask, %pass : memref<?x?xf32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
  vector.maskedstore %base[%c0, %c0], %mask, %0 {nontemporal = true} : memref<?x?xf32>, vector<16xi1>, vector<16xf32>
  %1 = vector.gather %base[%c0, %c0][%v], %mask, %pass {alignment = 8} : memref<?x?xf32>, vector<16xi32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
  vector.scatter %base[%c0, %c0][%v], %mask, %1 : memref<?x?xf32>, vector<16xi32>, vector<16xi1>, vector<16xf32>
  %2 = vector.transpose %a, [1, 0] : vector<3x7xf32> to vector<7x3xf32>
  %3 = vector.outerproduct %x, %y : vector<4xf32>, vector<8xf32>
  %4 = vector.outerproduct %x, %y, %acc {kind = #vector.kind<maxnumf>} : vector<4xf32>, vector<8xf32>
  %5 = vector.outerproduct %x, %s : vector<4xf32>, f32
  %6 = vector.outerproduct %x, %s, %x {kind = #vector.kind<mul>} : vector<4xf32>, f32
  %7 = vector.outerproduct %x, %y, %acc : vector<4xf32>, vector<8xf32>
  return
}
""",
    # Vector/ops.mlir: contractions, the attributes written or given by a #trait alias
    "vector_contract": """
#contraction_accesses0 = [
  affine_map<(b0, f0, f1, c0, c1) -> (c0, b0, c1, f0)>,
  affine_map<(b0, f0, f1, c0, c1) -> (b0, c1, c0, f1)>,
  affine_map<(b0, f0, f1, c0, c1) -> (b0, f0, f1)>
]
#contraction_trait0 = {
  indexing_maps = #contraction_accesses0,
  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
}
#acc1 = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>]
func.func @contraction(%arg0 : vector<7x8x16x15xf32>, %arg1 : vector<8x16x7x5xf32>,
                  %arg2 : vector<8x15x5xf32>, %a: vector<10xf32>, %f: f32) {
  %0 = vector.contract #contraction_trait0 %arg0, %arg1, %arg2
      : vector<7x8x16x15xf32>, vector<8x16x7x5xf32> into vector<8x15x5xf32>
  %1 = vector.contract {indexing_maps = #acc1, iterator_types = ["reduction"], kind = #vector.kind<maxnumf>} %a, %a, %f {foo = 1 : i32} : vector<10xf32>, vector<10xf32> into f32
  return
}
""",
    # loop bounds and steps MLIR reads as index attributes
    "for_bounds_and_step": """
func.func @f() {
  affine.for %i = -9223372036854775807 to 9223372036854775807 step 9223372036854775807 {
  }
  affine.for %i = 0x10 to 0x20 step 0x4 {
  }
  return
}
""",
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_both_report_the_expected_errors(name, tmp_path, capsys):
    text = INVALID[name]
    upstream = run_mlir_opt(text, "--verify-diagnostics", "--allow-unregistered-dialect")
    assert upstream.returncode == 0, upstream.stderr
    path = tmp_path / f"{name}.mlir"
    path.write_text(text)
    status = main(["opt", "--verify-diagnostics", str(path)])
    assert status == 0, capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(VALID))
def test_prints_what_mlir_opt_prints(name):
    text = VALID[name]
    assert str(polyopt.parse(text)) == mlir_opt(text)


@pytest.mark.parametrize("name", sorted(VALID))
def test_generic_form_is_mlir_opts(name):
    """The generic form (properties in ``<{...}>``) means to mlir-opt-22 what the input does,
    and polyopt reads mlir-opt-22's generic form back."""
    text = VALID[name]
    generic = print_module(polyopt.parse(text), generic=True)
    upstream = mlir_opt(text, "--mlir-print-op-generic")
    assert mlir_opt(generic, "--mlir-print-op-generic") == upstream
    assert str(polyopt.parse(upstream)) == mlir_opt(text)
