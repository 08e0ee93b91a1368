// Reference for flaw_hopper_path_unused: cuBLAS GemmEx, bf16 in and out, fp32 compute.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cuda_bf16.h>
#include <mma.h>
#include <cublas_v2.h>

namespace {

#define KP_CUBLAS_GEMM(WHO)                                                                        \
  static cublasHandle_t handle = nullptr;                                                       \
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return kp_fail(args, KP_ERR_CUDA, "cublasCreate failed"); \
  cublasSetStream(handle, st);                                                                   \
  const float one = 1.0f, zero = 0.0f;                                                           \
  /* Row-major C = A B is column-major C^T = B^T A^T. */                                         \
  if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)kd, &one, bp, CUDA_R_16BF, (int)n, ap, CUDA_R_16BF, (int)kd, \
                   &zero, cp, CUDA_R_16BF, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)     \
    return kp_fail(args, KP_ERR_CUDA, "cublasGemmEx failed");

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_hopper_path_unused";
  if (int rc = kp_expect_tensors(args, WHO, {{"A", KP_BF16, 2, 2}, {"B", KP_BF16, 2, 2}}, {{"C", KP_BF16, 2, 2}})) return rc;
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const int64_t m = a.shape[0], kd = a.shape[1], n = b.shape[1];
  if (b.shape[0] != kd) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "A and B inner dims differ");
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "C", {m, n})) return rc;
  if (m % 64 || n % 64 || kd % 64) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "dims must be multiples of 64");
  const __nv_bfloat16* ap = static_cast<const __nv_bfloat16*>(a.data);
  const __nv_bfloat16* bp = static_cast<const __nv_bfloat16*>(b.data);
  __nv_bfloat16* cp = static_cast<__nv_bfloat16*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  KP_CUBLAS_GEMM(WHO)
  return kp_check_launch(args, WHO);
}
