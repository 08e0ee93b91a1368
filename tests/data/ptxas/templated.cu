// A templated kernel, instantiated twice: the mangled names demangle to the template.
template <typename T, int kBlock>
__global__ void tiled_copy(const T* in, T* out, int n) {
  __shared__ T tile[kBlock];
  int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) tile[threadIdx.x] = in[i];
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x];
}

template __global__ void tiled_copy<float, 256>(const float*, float*, int);
template __global__ void tiled_copy<double, 128>(const double*, double*, int);

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v templated.cu -o /tmp/x.so > templated.log 2>&1
