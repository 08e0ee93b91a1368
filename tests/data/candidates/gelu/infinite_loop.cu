// Test candidate for examples/gelu: a kernel that never finishes: timeout (the watchdog kills the worker)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(volatile float* y) {
  while (y[0] == y[0] || true) { y[1] = y[0]; }
}
KP_EXPORT int kp_run(kp_args* a) {
  k<<<1, 1, 0, a->stream>>>((float*)a->outputs[0].data);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
