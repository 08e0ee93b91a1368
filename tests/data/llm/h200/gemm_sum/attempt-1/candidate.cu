// out[b] = scale * dot(x[b, :], colsum(W)), W [hidden, inp] row-major, fp32.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

// partial[c, k] = sum of W[j, k] over the rows j of chunk c. Threads run along k (coalesced).
__global__ void __launch_bounds__(256) colsum_partial_kernel(const float* __restrict__ w, float* __restrict__ partial,
                                                             int64_t hidden, int64_t inp, int64_t chunks) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= inp) return;
  const int64_t c = blockIdx.y;
  const int64_t per = (hidden + chunks - 1) / chunks;
  const int64_t j0 = c * per, j1 = j0 + per < hidden ? j0 + per : hidden;
  float s = 0.0f;
  for (int64_t j = j0; j < j1; ++j) s += __ldcs(w + j * inp + k);
  partial[c * inp + k] = s;
}

__global__ void __launch_bounds__(256) colsum_finish_kernel(const float* __restrict__ partial, float* __restrict__ wsum,
                                                            int64_t inp, int64_t chunks) {
  const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= inp) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * inp + k];
  wsum[k] = s;
}

// One block per row of x: out[b] = scale * sum_k x[b, k] * wsum[k].
__global__ void __launch_bounds__(256) row_dot_kernel(const float* __restrict__ x, const float* __restrict__ wsum,
                                                      float* __restrict__ out, int64_t inp, float scale) {
  __shared__ float red[8];
  const float* xr = x + (int64_t)blockIdx.x * inp;
  float s = 0.0f;
  for (int64_t k = threadIdx.x; k < inp; k += blockDim.x) s = fmaf(xr[k], wsum[k], s);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < 8 ? red[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) out[blockIdx.x] = s * scale;
  }
}

}  // namespace

extern "C" int colsum_partial(const float* w, float* partial, int64_t hidden, int64_t inp, int64_t chunks,
                              cudaStream_t stream) {
  if (inp == 0) return 0;
  colsum_partial_kernel<<<dim3((unsigned)((inp + 255) / 256), (unsigned)chunks), 256, 0, stream>>>(w, partial, hidden, inp,
                                                                                                 chunks);
  return (int)cudaGetLastError();
}

extern "C" int colsum_finish(const float* partial, float* wsum, int64_t inp, int64_t chunks, cudaStream_t stream) {
  if (inp == 0) return 0;
  colsum_finish_kernel<<<(unsigned)((inp + 255) / 256), 256, 0, stream>>>(partial, wsum, inp, chunks);
  return (int)cudaGetLastError();
}

extern "C" int row_dot(const float* x, const float* wsum, float* out, int64_t batch, int64_t inp, double scale,
                       cudaStream_t stream) {
  if (batch == 0) return 0;
  row_dot_kernel<<<(unsigned)batch, 256, 0, stream>>>(x, wsum, out, inp, (float)scale);
  return (int)cudaGetLastError();
}
