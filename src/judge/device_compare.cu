#include "judge/device_compare.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <cstring>

namespace kp::judge {

namespace {

// What the kernel accumulates; the layout of the device scratch.
struct DeviceTally {
  unsigned long long mismatches, unwritten, nonfinite, reference_nonfinite;
  unsigned long long first_bad;                // ULLONG_MAX: none
  unsigned long long max_abs_bits, max_rel_bits;  // non-negative doubles order like their bits
  double err_sq, ref_sq;
  unsigned long long ref_min_key, ref_max_key;    // ordered keys of signed doubles
  unsigned int out_varies;
};

// A double's bits mapped so that unsigned order is numeric order (negatives flipped).
__host__ __device__ inline unsigned long long order_key(double v) {
  unsigned long long b;
  memcpy(&b, &v, sizeof b);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
inline double from_order_key(unsigned long long k) {
  unsigned long long b = (k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFull) : ~k;
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

template <typename T> struct Storage { using Bits = T; };
template <> struct Storage<float> { using Bits = uint32_t; };
template <> struct Storage<double> { using Bits = unsigned long long; };
template <> struct Storage<__half> { using Bits = uint16_t; };
template <> struct Storage<__nv_bfloat16> { using Bits = uint16_t; };
template <> struct Storage<int32_t> { using Bits = uint32_t; };
template <> struct Storage<int64_t> { using Bits = unsigned long long; };
template <> struct Storage<uint8_t> { using Bits = uint8_t; };

__device__ __forceinline__ double as_double(uint32_t b, float*) { return static_cast<double>(__uint_as_float(b)); }
__device__ __forceinline__ double as_double(unsigned long long b, double*) { return __longlong_as_double(static_cast<long long>(b)); }
__device__ __forceinline__ double as_double(uint16_t b, __half*) { return static_cast<double>(__half2float(__ushort_as_half(b))); }
__device__ __forceinline__ double as_double(uint16_t b, __nv_bfloat16*) {
  return static_cast<double>(__uint_as_float(static_cast<uint32_t>(b) << 16));
}
__device__ __forceinline__ double as_double(uint32_t b, int32_t*) { return static_cast<double>(static_cast<int32_t>(b)); }
__device__ __forceinline__ double as_double(unsigned long long b, int64_t*) { return static_cast<double>(static_cast<long long>(b)); }
__device__ __forceinline__ double as_double(uint8_t b, uint8_t*) { return static_cast<double>(b); }

template <typename T>
__global__ void tally_kernel(const typename Storage<T>::Bits* out, const typename Storage<T>::Bits* ref, int64_t n,
                             unsigned long long poison, bool floating, double atol, double rtol, DeviceTally* acc) {
  using Bits = typename Storage<T>::Bits;
  unsigned long long mism = 0, unwr = 0, nonf = 0, refnf = 0, first = ULLONG_MAX;
  double max_abs = 0, max_rel = 0, err_sq = 0, ref_sq = 0, rmin = INFINITY, rmax = -INFINITY;
  unsigned int varies = 0;
  const Bits first_bits = out[0];
  const Bits pois = static_cast<Bits>(poison);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Bits ob = out[i], rb = ref[i];
    if (ob != first_bits) varies = 1;
    const double r = as_double(rb, static_cast<T*>(nullptr));
    if (!isfinite(r)) {
      ++refnf;
      continue;
    }
    rmin = fmin(rmin, r);
    rmax = fmax(rmax, r);
    if (ob == pois && rb != pois) {
      ++unwr;
      first = min(first, static_cast<unsigned long long>(i));
      continue;
    }
    const double o = as_double(ob, static_cast<T*>(nullptr));
    if (!isfinite(o)) {
      ++nonf;
      first = min(first, static_cast<unsigned long long>(i));
      continue;
    }
    const double diff = fabs(o - r);
    max_abs = fmax(max_abs, diff);
    if (r != 0) max_rel = fmax(max_rel, diff / fabs(r));
    err_sq += diff * diff;
    ref_sq += r * r;
    const double bound = floating ? atol + rtol * fabs(r) : 0.0;
    if (diff > bound) {
      ++mism;
      first = min(first, static_cast<unsigned long long>(i));
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    mism += __shfl_down_sync(0xFFFFFFFFu, mism, off);
    unwr += __shfl_down_sync(0xFFFFFFFFu, unwr, off);
    nonf += __shfl_down_sync(0xFFFFFFFFu, nonf, off);
    refnf += __shfl_down_sync(0xFFFFFFFFu, refnf, off);
    first = min(first, __shfl_down_sync(0xFFFFFFFFu, first, off));
    max_abs = fmax(max_abs, __shfl_down_sync(0xFFFFFFFFu, max_abs, off));
    max_rel = fmax(max_rel, __shfl_down_sync(0xFFFFFFFFu, max_rel, off));
    err_sq += __shfl_down_sync(0xFFFFFFFFu, err_sq, off);
    ref_sq += __shfl_down_sync(0xFFFFFFFFu, ref_sq, off);
    rmin = fmin(rmin, __shfl_down_sync(0xFFFFFFFFu, rmin, off));
    rmax = fmax(rmax, __shfl_down_sync(0xFFFFFFFFu, rmax, off));
    varies |= __shfl_down_sync(0xFFFFFFFFu, varies, off);
  }
  if ((threadIdx.x & 31) != 0) return;
  if (mism) atomicAdd(&acc->mismatches, mism);
  if (unwr) atomicAdd(&acc->unwritten, unwr);
  if (nonf) atomicAdd(&acc->nonfinite, nonf);
  if (refnf) atomicAdd(&acc->reference_nonfinite, refnf);
  if (first != ULLONG_MAX) atomicMin(&acc->first_bad, first);
  atomicMax(&acc->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  atomicMax(&acc->max_rel_bits, static_cast<unsigned long long>(__double_as_longlong(max_rel)));
  if (err_sq != 0) atomicAdd(&acc->err_sq, err_sq);
  if (ref_sq != 0) atomicAdd(&acc->ref_sq, ref_sq);
  if (rmin <= rmax) {
    atomicMin(&acc->ref_min_key, order_key(rmin));
    atomicMax(&acc->ref_max_key, order_key(rmax));
  }
  if (varies) atomicOr(&acc->out_varies, 1u);
}

__global__ void init_tally(DeviceTally* t) {
  *t = DeviceTally{};
  t->first_bad = ULLONG_MAX;
  t->ref_min_key = ULLONG_MAX;
  t->ref_max_key = 0;
}

template <typename T>
cudaError_t launch(const void* out, const void* ref, int64_t n, task::DType d, const task::Tolerance& tol,
                   DeviceTally* acc, cudaStream_t s) {
  using Bits = typename Storage<T>::Bits;
  int64_t blocks = (n + 255) / 256;
  const int grid = static_cast<int>(blocks < 132 * 8 ? (blocks < 1 ? 1 : blocks) : 132 * 8);
  tally_kernel<T><<<grid, 256, 0, s>>>(static_cast<const Bits*>(out), static_cast<const Bits*>(ref), n,
                                       eval::poison_bits(d), task::is_floating(d), tol.atol, tol.rtol, acc);
  return cudaGetLastError();
}

}  // namespace

CompareScratch::~CompareScratch() {
  if (data_) cudaFree(data_);
}

cudaError_t CompareScratch::ensure() {
  if (data_) return cudaSuccess;
  return cudaMalloc(&data_, sizeof(DeviceTally));
}

cudaError_t device_tally(const void* out, const void* ref, task::DType dtype, int64_t n, const task::Tolerance& tol,
                         CompareScratch& scratch, cudaStream_t stream, eval::OutputTally* tally) {
  *tally = eval::OutputTally{};
  tally->elements = n;
  if (n == 0) return cudaSuccess;
  cudaError_t e = scratch.ensure();
  if (e != cudaSuccess) return e;
  auto* acc = static_cast<DeviceTally*>(scratch.get());
  init_tally<<<1, 1, 0, stream>>>(acc);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  switch (dtype) {
    case task::DType::kFp32: e = launch<float>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kFp64: e = launch<double>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kFp16: e = launch<__half>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kBf16: e = launch<__nv_bfloat16>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kInt32: e = launch<int32_t>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kInt64: e = launch<int64_t>(out, ref, n, dtype, tol, acc, stream); break;
    case task::DType::kBool: e = launch<uint8_t>(out, ref, n, dtype, tol, acc, stream); break;
  }
  if (e != cudaSuccess) return e;
  DeviceTally h{};
  const size_t es = task::dtype_size(dtype);
  unsigned char first_out[8] = {};
  if ((e = cudaMemcpyAsync(&h, acc, sizeof h, cudaMemcpyDeviceToHost, stream)) != cudaSuccess) return e;
  if ((e = cudaMemcpyAsync(first_out, out, es, cudaMemcpyDeviceToHost, stream)) != cudaSuccess) return e;
  if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) return e;
  tally->mismatches = static_cast<int64_t>(h.mismatches);
  tally->unwritten = static_cast<int64_t>(h.unwritten);
  tally->nonfinite = static_cast<int64_t>(h.nonfinite);
  tally->reference_nonfinite = static_cast<int64_t>(h.reference_nonfinite);
  std::memcpy(&tally->max_abs_error, &h.max_abs_bits, sizeof(double));
  std::memcpy(&tally->max_rel_error, &h.max_rel_bits, sizeof(double));
  tally->err_sq = h.err_sq;
  tally->ref_sq = h.ref_sq;
  if (h.ref_min_key != ULLONG_MAX) tally->ref_min = from_order_key(h.ref_min_key);
  if (h.ref_max_key != 0) tally->ref_max = from_order_key(h.ref_max_key);
  tally->out_constant = h.out_varies == 0;
  tally->first_out = eval::element_as_double(first_out, dtype, 0);
  if (h.first_bad != ULLONG_MAX) {
    // The first bad element's message, from the host rule on that one element.
    const auto i = static_cast<int64_t>(h.first_bad);
    unsigned char o[8] = {}, r[8] = {};
    if ((e = cudaMemcpyAsync(o, static_cast<const unsigned char*>(out) + i * es, es, cudaMemcpyDeviceToHost, stream)) !=
        cudaSuccess)
      return e;
    if ((e = cudaMemcpyAsync(r, static_cast<const unsigned char*>(ref) + i * es, es, cudaMemcpyDeviceToHost, stream)) !=
        cudaSuccess)
      return e;
    if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) return e;
    tally->first_bad_index = i;
    tally->first_detail = eval::tally_output(o, r, dtype, 1, tol).first_detail;
  }
  return cudaSuccess;
}

}  // namespace kp::judge
