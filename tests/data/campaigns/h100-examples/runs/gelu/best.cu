// Seed candidate for the gelu task: y = x * 0.5 * (1 + erf(x / sqrt(2))), fp32.
// Correct but naive: one element per thread, scalar 4-byte loads and stores, one block per
// BLOCK elements. Left on the table: 16-byte vector loads/stores, several elements per thread
// (more bytes in flight per thread, fewer blocks to schedule), a grid sized to the machine.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

KP_TUNE(BLOCK, 256, 128, 512, 1024)

namespace {

__global__ void __launch_bounds__(BLOCK) gelu_seed(const float* x, float* y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gelu", {{"x", KP_FP32, 0, KP_MAX_RANK}},
                                 {{"y", KP_FP32, 0, KP_MAX_RANK}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "gelu", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const int64_t blocks = (n + BLOCK - 1) / BLOCK;
  if (int rc = kp_expect_at_most(args, "gelu", "the block count", blocks, INT_MAX)) return rc;

  gelu_seed<<<(unsigned)blocks, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), n);
  return kp_check_launch(args, "gelu");
}
