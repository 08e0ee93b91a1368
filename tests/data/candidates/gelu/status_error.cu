// Test candidate for examples/gelu: refuses the shapes with KP_ERR_UNSUPPORTED_SHAPE and a message: runtime_error
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

#include <cstdio>
KP_EXPORT int kp_run(kp_args* a) {
  std::snprintf(a->message, sizeof a->message, "only n <= 1024 supported, got %lld", (long long)a->inputs[0].shape[0]);
  return KP_ERR_UNSUPPORTED_SHAPE;
}
