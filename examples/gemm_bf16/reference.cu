// Reference for the gemm_bf16 task: C = A @ B, row-major, bf16 in and out, fp32 accumulation,
// through cublasGemmEx (CUDA_R_16BF operands, CUBLAS_COMPUTE_32F). The fp32 result is rounded
// once to bf16 when it is written.
//
// cuBLAS is column-major. A row-major [R, S] matrix is the column-major [S, R] matrix of its
// transpose, so computing C^T = B^T A^T in column-major needs no transposes: an (N x K) by
// (K x M) product with leading dimensions N (B), K (A) and N (C).
#include <kernelpro/kp_abi.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace {

__attribute__((format(printf, 3, 4)))
int fail(kp_args* args, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args->message, sizeof(args->message), fmt, ap);
  va_end(ap);
  return code;
}

bool is_contiguous(const kp_tensor& t) {
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

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
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "gemm_bf16: expected 2 inputs (A, B) and 1 output (C), got %d and %d",
                args->num_inputs, args->num_outputs);
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  if (a.dtype != KP_BF16 || b.dtype != KP_BF16 || c.dtype != KP_BF16) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "gemm_bf16: A, B and C must be bf16 (%d, %d, %d)",
                a.dtype, b.dtype, c.dtype);
  }
  if (a.rank != 2 || b.rank != 2 || c.rank != 2) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_bf16: A, B and C must be 2-D (%d, %d, %d)",
                a.rank, b.rank, c.rank);
  }
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (m <= 0 || n <= 0 || k <= 0 || b.shape[0] != k || c.shape[0] != m || c.shape[1] != n) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "gemm_bf16: shapes A [%lld, %lld], B [%lld, %lld], C [%lld, %lld] do not match",
                (long long)a.shape[0], (long long)a.shape[1], (long long)b.shape[0],
                (long long)b.shape[1], (long long)c.shape[0], (long long)c.shape[1]);
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_bf16: a dimension exceeds INT_MAX");
  }
  if (!is_contiguous(a) || !is_contiguous(b) || !is_contiguous(c)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_bf16: A, B and C must be contiguous");
  }

  const Cublas& cb = cublas();
  if (cb.status != CUBLAS_STATUS_SUCCESS) {
    return fail(args, KP_ERR_CUDA, "gemm_bf16: cublasCreate failed: %s",
                cublasGetStatusString(cb.status));
  }
  cublasStatus_t st = cublasSetStream(cb.handle, (cudaStream_t)args->stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return fail(args, KP_ERR_CUDA, "gemm_bf16: cublasSetStream failed: %s",
                cublasGetStatusString(st));
  }
  const float alpha = 1.0f, beta = 0.0f;  // fp32 scalars for CUBLAS_COMPUTE_32F; C is not read
  // Column-major C^T [n x m] = B^T [n x k] * A^T [k x m].
  st = cublasGemmEx(cb.handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b.data,
                    CUDA_R_16BF, (int)n, a.data, CUDA_R_16BF, (int)k, &beta, c.data, CUDA_R_16BF,
                    (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return fail(args, KP_ERR_CUDA, "gemm_bf16: cublasGemmEx failed: %s",
                cublasGetStatusString(st));
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "gemm_bf16: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
