// Reference of the mixed_dtypes test task: one thread per element.
#include <kernelpro/kp_abi.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void mixed(const __half* a, const long long* idx, const unsigned char* mask, const __nv_bfloat16* b,
                      const int* k, double s, __half* y, int* z, double* w, unsigned char* v, __nv_bfloat16* u,
                      long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i >= n) return;
  __half g = a[idx[i]];
  y[i] = mask[i] ? g : __hneg(g);
  z[i] = static_cast<int>(2 * idx[i]) + k[i];
  w[i] = static_cast<double>(__bfloat162float(b[i])) * s;
  v[i] = mask[i] ? 0 : 1;
  u[i] = b[i];
}

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 5 || a->num_outputs != 5 || a->num_scalars != 1) return KP_ERR_INVALID_ARGUMENT;
  long long n = a->inputs[0].shape[0];
  mixed<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const __half*)a->inputs[0].data, (const long long*)a->inputs[1].data, (const unsigned char*)a->inputs[2].data,
      (const __nv_bfloat16*)a->inputs[3].data, (const int*)a->inputs[4].data, a->scalars[0].f,
      (__half*)a->outputs[0].data, (int*)a->outputs[1].data, (double*)a->outputs[2].data,
      (unsigned char*)a->outputs[3].data, (__nv_bfloat16*)a->outputs[4].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
