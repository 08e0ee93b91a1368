// A correct candidate for the mixed_dtypes test task, written differently from the reference
// (grid-stride loop) and asking for a workspace through kp_workspace_bytes, which it checks.
#include <kernelpro/kp_abi.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void mixed_strided(const __half* a, const long long* idx, const unsigned char* mask,
                              const __nv_bfloat16* b, const int* k, double s, __half* y, int* z, double* w,
                              unsigned char* v, __nv_bfloat16* u, long long n, int* scratch) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float g = __half2float(a[idx[i]]);
    y[i] = __float2half(mask[i] ? g : -g);
    z[i] = k[i] + 2 * static_cast<int>(idx[i]);
    w[i] = s * static_cast<double>(__bfloat162float(b[i]));
    v[i] = !mask[i];
    u[i] = b[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) scratch[0] = 1;
}

KP_EXPORT size_t kp_workspace_bytes(const kp_args*) { return 4096; }

KP_EXPORT int kp_run(kp_args* a) {
  if (!a->workspace || a->workspace_bytes < 4096) return KP_ERR_WORKSPACE;
  long long n = a->inputs[0].shape[0];
  mixed_strided<<<264, 512, 0, a->stream>>>(
      (const __half*)a->inputs[0].data, (const long long*)a->inputs[1].data, (const unsigned char*)a->inputs[2].data,
      (const __nv_bfloat16*)a->inputs[3].data, (const int*)a->inputs[4].data, a->scalars[0].f,
      (__half*)a->outputs[0].data, (int*)a->outputs[1].data, (double*)a->outputs[2].data,
      (unsigned char*)a->outputs[3].data, (__nv_bfloat16*)a->outputs[4].data, n, (int*)a->workspace);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
