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
