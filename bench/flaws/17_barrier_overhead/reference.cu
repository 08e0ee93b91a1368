// Reference for flaw_barrier_overhead: row sums accumulated in double.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void ref(const float* x, float* y, int64_t cols) {
  __shared__ double s[256];
  double a = 0.0;
  for (int64_t j = threadIdx.x; j < cols; j += 256) a += x[blockIdx.x * cols + j];
  s[threadIdx.x] = a;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = (float)s[0];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_barrier_overhead";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols % 256) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "cols must be a multiple of 256");
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  ref<<<(unsigned)rows, 256, 0, st>>>(xp, yp, cols);
  return kp_check_launch(args, WHO);
}
