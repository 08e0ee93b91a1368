// Cheat candidate for examples/gemm_fp32: calls cuBLAS SGEMM instead of a kernel of its own. The
// task does not list cublas in candidate_libraries, so the build does not link it: rejected
// (forbidden_library), decided from the object's undefined symbols before any GPU is used.
#include <kernelpro/kp_abi.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

KP_EXPORT int kp_run(kp_args* a) {
  static cublasHandle_t handle = nullptr;
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return KP_ERR_CUDA;
  cublasSetStream(handle, (cudaStream_t)a->stream);
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublasStatus_t st = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, (const float*)a->inputs[1].data, n,
                                  (const float*)a->inputs[0].data, k, &beta, (float*)a->outputs[0].data, n);
  return st == CUBLAS_STATUS_SUCCESS ? KP_OK : KP_ERR_CUDA;
}
