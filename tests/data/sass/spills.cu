// Register pressure under a small register cap: ptxas spills to local memory (STL/LDL), and its
// -v report says so (ptxas raises the cap of 16 to sm_90's lower bound of 24). Built for two
// architectures in one shared object (sass_toolchain_test.cc, and spills.sass/.log here) with
//   nvcc -O3 -shared -Xcompiler -fPIC -maxrregcount=16 -Xptxas -v
//        -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90a,code=sm_90a spills.cu
__global__ void pressure(const float* in, float* out) {
  float acc[32];
  int base = blockIdx.x * blockDim.x * 32 + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 32; ++k) acc[k] = in[base + k * blockDim.x];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      acc[k] = acc[k] * acc[(k + r + 1) % 32] + acc[(k * 7 + r) % 32];
    }
  }
#pragma unroll
  for (int k = 0; k < 32; ++k) s += acc[k] * (k + 1);
  out[base] = s;
}
