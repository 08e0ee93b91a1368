// One warpgroup MMA (Hopper wgmma, sm_90a only), m64n8k16 with bf16 operands read from shared
// memory through matrix descriptors and f32 accumulators: HGMMA.64x8x16.F32.BF16 in SASS, with
// WARPGROUP.ARRIVE before it and WARPGROUP.DEPBAR after. The values are not meaningful (the
// descriptors only give the shared-memory addresses, no swizzle); the kernel exists for its SASS.
// Built (sass_toolchain_test.cc, and wgmma.sass here) with
//   nvcc -O3 -cubin -gencode=arch=compute_90a,code=sm_90a wgmma.cu
#include <cstdint>

__device__ uint64_t smem_descriptor(const void* p) {
  uint64_t addr = static_cast<uint64_t>(__cvta_generic_to_shared(p));
  uint64_t desc = (addr & 0x3FFFF) >> 4;  // start address, 16-byte units
  desc |= uint64_t(1) << 16;              // leading-dimension byte offset (16 B)
  desc |= uint64_t(8) << 32;              // stride-dimension byte offset (128 B)
  return desc;
}

__global__ void wgmma_bf16_64x8x16(const uint16_t* a, const uint16_t* b, float* d) {
  __shared__ alignas(128) uint16_t sa[64 * 16];
  __shared__ alignas(128) uint16_t sb[8 * 16];
  for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) sa[i] = a[i];
  for (int i = threadIdx.x; i < 8 * 16; i += blockDim.x) sb[i] = b[i];
  __syncthreads();
  uint64_t da = smem_descriptor(sa), db = smem_descriptor(sb);
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3}, %4, %5, 0, 1, 1, 0, 0;\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  int t = threadIdx.x;
  d[t * 4 + 0] = c0;
  d[t * 4 + 1] = c1;
  d[t * 4 + 2] = c2;
  d[t * 4 + 3] = c3;
}
