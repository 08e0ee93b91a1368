// Reference for the gemm_fp32 task: C = A @ B, row-major, fp32, through cuBLAS SGEMM in the
// default math mode (fp32 arithmetic, no TF32).
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
  const char* step = "cublasCreate";
};

const Cublas& cublas() {
  static const Cublas state = [] {
    Cublas s;
    s.status = cublasCreate(&s.handle);
    if (s.status == CUBLAS_STATUS_SUCCESS) {
      s.step = "cublasSetMathMode";
      s.status = cublasSetMathMode(s.handle, CUBLAS_DEFAULT_MATH);  // plain fp32, no TF32
    }
    return s;
  }();
  return state;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gemm_fp32", {{"A", KP_FP32, 2, 2}, {"B", KP_FP32, 2, 2}},
                                 {{"C", KP_FP32, 2, 2}})) {
    return rc;
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (int rc = kp_expect_shape(args, "gemm_fp32", b, "B", {k, n})) return rc;
  if (int rc = kp_expect_shape(args, "gemm_fp32", c, "C", {m, n})) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_fp32", "M", m, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_fp32", "N", n, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "gemm_fp32", "K", k, INT_MAX)) return rc;

  const Cublas& cb = cublas();
  if (cb.status != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_fp32: %s failed: %s", cb.step,
                   cublasGetStatusString(cb.status));
  }
  cublasStatus_t st = cublasSetStream(cb.handle, (cudaStream_t)args->stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_fp32: cublasSetStream failed: %s",
                   cublasGetStatusString(st));
  }
  const float alpha = 1.0f, beta = 0.0f;  // beta = 0: C is not read
  // Column-major C^T [n x m] = B^T [n x k] * A^T [k x m].
  st = cublasSgemm(cb.handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha,
                   static_cast<const float*>(b.data), (int)n, static_cast<const float*>(a.data),
                   (int)k, &beta, static_cast<float*>(c.data), (int)n);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return kp_fail(args, KP_ERR_CUDA, "gemm_fp32: cublasSgemm failed: %s",
                   cublasGetStatusString(st));
  }
  return kp_check_launch(args, "gemm_fp32");
}
