// A type error that appears only when the template is instantiated.
struct Opaque {};

template <typename T>
__device__ T twice(T x) {
  return x * 2;
}

template <typename T>
__global__ void apply(T* data) {
  data[threadIdx.x] = twice(data[threadIdx.x]);
}

void launch(Opaque* data) { apply<<<1, 32>>>(data); }

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v template_error.cu -o /tmp/x.so > template_error.log 2>&1
