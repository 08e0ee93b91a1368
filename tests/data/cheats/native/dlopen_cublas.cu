// Cheat candidate for examples/gemm_fp32: loads cuBLAS itself with dlopen and calls SGEMM through
// dlsym, so that nothing is linked and the build sees no cuBLAS symbol: rejected
// (forbidden_library), because its own code imports dlopen.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace {
// The few cuBLAS declarations needed, written out so that no cuBLAS header is included.
typedef int (*create_fn)(void** handle);
typedef int (*set_stream_fn)(void* handle, cudaStream_t stream);
typedef int (*sgemm_fn)(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* A,
                        int lda, const float* B, int ldb, const float* beta, float* C, int ldc);
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  static void* lib = nullptr;
  static void* handle = nullptr;
  static set_stream_fn set_stream = nullptr;
  static sgemm_fn sgemm = nullptr;
  if (!lib) {
    lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return KP_ERR_OTHER;
    create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
    set_stream = (set_stream_fn)dlsym(lib, "cublasSetStream_v2");
    sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
    if (!create || !set_stream || !sgemm || create(&handle) != 0) return KP_ERR_OTHER;
  }
  set_stream(handle, (cudaStream_t)a->stream);
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const float alpha = 1.0f, beta = 0.0f;
  // CUBLAS_OP_N is 0. Row-major C = A B is column-major C^T = B^T A^T.
  int st = sgemm(handle, 0, 0, n, m, k, &alpha, (const float*)a->inputs[1].data, n, (const float*)a->inputs[0].data, k,
                 &beta, (float*)a->outputs[0].data, n);
  return st == 0 ? KP_OK : KP_ERR_CUDA;
}
