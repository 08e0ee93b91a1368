// Flawed: the table is uploaded to the workspace on every call.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int64_t kTable = 1 << 22;
__global__ void k(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[i] * w[i & (kTable - 1)];
}
// The weight table, built on the host once (pinned, so the copy can be captured in a graph).
const float* host_table() {
  static float* table = [] {
    float* t = nullptr;
    if (cudaMallocHost(&t, kTable * sizeof(float)) != cudaSuccess) return (float*)nullptr;
    for (int64_t j = 0; j < kTable; ++j) t[j] = 1.0f + (float)j / (float)kTable;
    return t;
  }();
  return table;
}

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args* args) { return (size_t)(1 << 22) * sizeof(float); }

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_host_device_copies", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_host_device_copies", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  const float* table = host_table();
  if (!table) return kp_fail(args, KP_ERR_CUDA, "cudaMallocHost failed");
  if (args->workspace_bytes < kTable * sizeof(float)) return kp_fail(args, KP_ERR_WORKSPACE, "workspace too small");
  float* w = static_cast<float*>(args->workspace);
  if (cudaMemcpyAsync(w, table, kTable * sizeof(float), cudaMemcpyHostToDevice, st) != cudaSuccess) return kp_fail(args, KP_ERR_CUDA, "cudaMemcpyAsync failed");
  const unsigned grid = (unsigned)((n + 255) / 256 < 132 * 16 ? (n + 255) / 256 : 132 * 16);
  k<<<grid, 256, 0, st>>>(xp, w, yp, n);
  return kp_check_launch(args, "flaw_host_device_copies");
}
