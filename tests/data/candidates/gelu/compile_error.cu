// Test candidate for examples/gelu: does not compile (an undeclared identifier): compile_error with parsed diagnostics
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

KP_EXPORT int kp_run(kp_args* a) {
  return undeclared_helper(a);
}
