// Reference for flaw_bank_conflicts: naive transpose.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void ref(const float* x, float* y, int r, int c) {
  const int j = blockIdx.x * 32 + threadIdx.x;
  for (int i = blockIdx.y * 32 + threadIdx.y; i < blockIdx.y * 32 + 32; i += 8) y[(int64_t)j * r + i] = x[(int64_t)i * c + j];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_bank_conflicts", {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 2, 2}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t r = x.shape[0], c = x.shape[1];
  if (int rc = kp_expect_shape(args, "flaw_bank_conflicts", args->outputs[0], "y", {c, r})) return rc;
  if (r % 32 || c % 32) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "dims must be multiples of 32");
  dim3 grid((unsigned)(c / 32), (unsigned)(r / 32));
  ref<<<grid, dim3(32, 8), 0, (cudaStream_t)args->stream>>>(static_cast<const float*>(x.data), static_cast<float*>(args->outputs[0].data), (int)r, (int)c);
  return kp_check_launch(args, "flaw_bank_conflicts");
}
