// A per-thread array written and read at data-dependent indices: ptxas must keep it in
// local memory, so it shows up as stack frame, not as spill stores/loads.
__global__ void scatter_local(const int* idx, const float* in, float* out) {
  float table[64];
  for (int k = 0; k < 64; ++k) table[k] = 0.0f;
  for (int k = 0; k < 64; ++k) table[idx[threadIdx.x * 64 + k] & 63] += in[threadIdx.x * 64 + k];
  out[threadIdx.x] = table[idx[threadIdx.x] & 63];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v local_array.cu -o /tmp/x.so > local_array.log 2>&1
