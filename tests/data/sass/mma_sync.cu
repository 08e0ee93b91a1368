// One warp-level tensor-core MMA, m16n8k16 with bf16 inputs and f32 accumulators, written as
// inline PTX (mma.sync): HMMA.16816.F32.BF16 in SASS. Built (sass_toolchain_test.cc, and
// mma_sync.sass here) with
//   nvcc -O3 -cubin -gencode=arch=compute_90,code=sm_90 mma_sync.cu
#include <cstdint>

__global__ void mma_bf16_16816(const uint32_t* a, const uint32_t* b, float* d) {
  int lane = threadIdx.x & 31;
  uint32_t a0 = a[lane * 4 + 0], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
  uint32_t b0 = b[lane * 2 + 0], b1 = b[lane * 2 + 1];
  float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[lane * 4 + 0] = c0;
  d[lane * 4 + 1] = c1;
  d[lane * 4 + 2] = c2;
  d[lane * 4 + 3] = c3;
}
