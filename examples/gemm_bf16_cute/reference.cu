// Reference for the gemm_bf16 task: C = A @ B, row-major, bf16 in and out, fp32 accumulation,
// through cublasGemmEx (CUDA_R_16BF operands, CUBLAS_COMPUTE_32F). The fp32 result is rounded
// once to bf16 when it is written.
//
// cuBLAS is column-major. A row-major [R, S] matrix is the column-major [S, R] matrix of its
// transpose, so computing C^T = B^T A^T in column-major needs no transposes: an (N x K) by
// (K x M) product with leading dimensions N (B), K (A) and N (C).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

// One cuBLAS handle for the life of the process, created on the first call (thread-safe
// static initialisation). It is never destroyed: destroying it at unload could run after the
// CUDA context is gone.
struct Cublas {
  cublasHandle_t handle = nullptr;
  cublasStatus_t status = CUBLAS_STATUS_NOT_INITIALIZED;
};

const Cublas& cublas() {
  static const Cublas state = [] {
    Cublas s;
    s.status = cublasCreate(&s.handle);
    return s;
  }();
  return state;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gemm_bf16", {{"A", KP_BF16, 2, 2}, {"B", KP_BF16, 2, 2}},
                                 {{"C", KP_BF16, 2, 2}})) {
    return rc;
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (int rc = kp_expect_shape(args, "gemm_bf16", b, "B", {k, n})) return rc;
  if (int rc = kp_expect_shape(args, "gemm_bf16", c, "C", {m, n})) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_bf16", "M", m, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_bf16", "N", n, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_bf16", "K", k, INT_MAX)) return rc;

  const Cublas& cb = cublas();
  if (cb.status != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_bf16: cublasCreate failed: %s",
                   cublasGetStatusString(cb.status));
  }
  cublasStatus_t st = cublasSetStream(cb.handle, (cudaStream_t)args->stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_bf16: cublasSetStream failed: %s",
                   cublasGetStatusString(st));
  }
  const float alpha = 1.0f, beta = 0.0f;  // fp32 scalars for CUBLAS_COMPUTE_32F; C is not read
  // Column-major C^T [n x m] = B^T [n x k] * A^T [k x m].
  st = cublasGemmEx(cb.handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b.data,
                    CUDA_R_16BF, (int)n, a.data, CUDA_R_16BF, (int)k, &beta, c.data, CUDA_R_16BF,
                    (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_bf16: cublasGemmEx failed: %s",
                   cublasGetStatusString(st));
  }
  return kp_check_launch(args, "gemm_bf16");
}
