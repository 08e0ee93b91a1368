// Inline PTX with an instruction that does not exist: the front end passes it through and
// ptxas rejects the generated PTX, naming the temporary .ptx file and line.
__global__ void bad_asm(float* out) {
  float v;
  asm volatile("mov.f32x %0, 1.0;" : "=f"(v));
  out[threadIdx.x] = v;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v inline_ptx_error.cu -o /tmp/x.so > inline_ptx_error.log 2>&1
