// Seed candidate for the row_sum task: y[i] = sum_j x[i, j], fp32.
// Correct but naive: one block per row; each thread sums its own contiguous segment of the row
// (COLS / BLOCK elements) with scalar 4-byte loads, then a shared-memory tree reduction with a
// barrier per level. The segments make every load instruction of a warp touch 32 different
// cache lines (threads are COLS / BLOCK * 4 bytes apart), so the loads are uncoalesced and
// lean on L1 instead of streaming. Left on the table: coalesced (block-strided) 16-byte vector
// loads with several in flight per thread (the kernel is DRAM-bound), warp-shuffle reductions.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

KP_TUNE(BLOCK, 256, 128, 512, 1024)

static_assert((BLOCK & (BLOCK - 1)) == 0, "the tree reduction needs a power-of-two BLOCK");

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

__global__ void __launch_bounds__(BLOCK) row_sum_seed(const float* x, float* y, int64_t cols) {
  __shared__ float red[BLOCK];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;

  // Each thread sums its own contiguous segment of the row.
  const int64_t per_thread = (cols + BLOCK - 1) / BLOCK;
  const int64_t begin = tid * per_thread;
  const int64_t end = begin + per_thread < cols ? begin + per_thread : cols;
  float sum = 0.0f;
  for (int64_t j = begin; j < end; ++j) sum += xr[j];
  red[tid] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) y[blockIdx.x] = red[0];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "row_sum: expected 1 input and 1 output, got %d and %d", args->num_inputs,
                args->num_outputs);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (x.dtype != KP_FP32 || y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "row_sum: x and y must be fp32 (dtypes %d, %d)",
                x.dtype, y.dtype);
  }
  if (x.rank != 2 || y.rank != 1) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "row_sum: need x of rank 2, y of rank 1 (got %d, %d)", x.rank, y.rank);
  }
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (rows <= 0 || cols <= 0 || y.shape[0] != rows) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: x is [%lld, %lld] but y is [%lld]",
                (long long)rows, (long long)cols, (long long)y.shape[0]);
  }
  if (!is_contiguous(x) || !is_contiguous(y)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: x and y must be contiguous");
  }
  if (rows > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: %lld rows is too many",
                (long long)rows);
  }

  row_sum_seed<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "row_sum: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
