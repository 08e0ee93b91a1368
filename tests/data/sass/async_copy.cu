// Asynchronous global-to-shared copies, written as inline PTX:
//   cp_async_16: cp.async.cg (Ampere style) -> LDGSTS.E.BYPASS.128, LDGDEPBAR, DEPBAR
//   bulk_copy:   cp.async.bulk completed through an mbarrier (Hopper) -> UBLKCP, SYNCS.*
// Built (sass_toolchain_test.cc, and async_copy.sass here) with
//   nvcc -O3 -cubin -gencode=arch=compute_90a,code=sm_90a async_copy.cu
#include <cstdint>

__global__ void cp_async_16(const float4* in, float4* out) {
  __shared__ alignas(16) float4 buf[128];
  int t = threadIdx.x;
  uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[t]));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(in + blockIdx.x * 128 + t));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncthreads();
  out[blockIdx.x * 128 + t] = buf[127 - t];
}

__global__ void bulk_copy(const float* in, float* out) {
  __shared__ alignas(128) float buf[1024];
  __shared__ alignas(8) uint64_t bar;
  uint32_t bar_addr = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  uint32_t buf_addr = static_cast<uint32_t>(__cvta_generic_to_shared(buf));
  const uint32_t bytes = sizeof(buf);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_addr));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_addr), "r"(bytes));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(buf_addr),
        "l"(in + blockIdx.x * 1024), "r"(bytes), "r"(bar_addr)
        : "memory");
  }
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar_addr)
        : "memory");
  }
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) out[blockIdx.x * 1024 + i] = buf[i] * 2.f;
}
