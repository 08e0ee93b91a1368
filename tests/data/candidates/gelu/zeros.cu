// Test candidate for examples/gelu: writes zeros everywhere: incorrect (constant output against a varying reference)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->outputs[0].shape[0];
  return cudaMemsetAsync(a->outputs[0].data, 0, n * 4, a->stream) == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
