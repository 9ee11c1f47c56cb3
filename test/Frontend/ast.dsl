// RUN: strata-compile %s --compile-to=ast | FileCheck %s

// Tests the AST dump: items, params with types and defaults, statements,
// interpolated strings and operator precedence.

// CHECK-LABEL: Module
// CHECK:       Def norm @ast.dsl:[[@LINE+4]]:1
// CHECK-NEXT:    Param x : [?, cfg.hidden_size] bf16
// CHECK-NEXT:    Param eps
// CHECK-NEXT:      Default
def norm(x: [?, cfg.hidden_size] bf16, eps = 1.0e-5) {
  // CHECK:       Let y : [?, 8] f32
  // CHECK-NEXT:    Call
  // CHECK-NEXT:      Member .rms_norm
  // CHECK-NEXT:        Var llm
  // CHECK-NEXT:      Var x
  // CHECK-NEXT:      Keyword eps
  let y: [?, 8] f32 = llm.rms_norm(x, eps = eps);
  // CHECK:       Return
  // CHECK-NEXT:    Tuple
  return (y, x);
}

// CHECK:       Entry main
entry main(ids: [?] i32) {
  // CHECK:       For i
  // CHECK-NEXT:    Int 0
  // CHECK-NEXT:    Member .num_hidden_layers
  for i in 0 .. cfg.num_hidden_layers {
    // CHECK:       Scope
    // CHECK-NEXT:    String "layer{i}"
    // CHECK-NEXT:      Var i
    scope "layer{i}" {
      // CHECK:       If
      // CHECK-NEXT:    Binary '||'
      // CHECK-NEXT:      Binary '=='
      // CHECK-NEXT:        Index
      // CHECK:           Binary '<'
      // CHECK-NEXT:        Binary '+'
      // CHECK-NEXT:          Int 1
      // CHECK-NEXT:          Binary '*'
      if cfg.layer_types[i] == "a" || 1 + 2 * i < 4 {
        // CHECK:       Assert
        assert true, "ok";
      } else {
        // CHECK:       Else
        // CHECK-NEXT:    ExprStmt
        // CHECK-NEXT:      Unary '-'
        -1;
      }
    }
  }
  // CHECK:       String "a{b}c"
  let s = "a\{b\}c";
  return;
}
