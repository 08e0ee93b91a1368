// A per-thread array indexed by data: ptxas keeps it in local memory, so the SASS has LDL/STL
// while the -v report shows a stack frame and no spills. Built (local_array.sass/.log here) with
//   nvcc -O3 -cubin -Xptxas -v -gencode=arch=compute_90a,code=sm_90a local_array.cu
__global__ void scatter_local(const int* idx, const float* in, float* out) {
  float table[64];
  for (int k = 0; k < 64; ++k) table[k] = 0.0f;
  for (int k = 0; k < 64; ++k) table[idx[threadIdx.x * 64 + k] & 63] += in[threadIdx.x * 64 + k];
  out[threadIdx.x] = table[idx[threadIdx.x] & 63];
}
