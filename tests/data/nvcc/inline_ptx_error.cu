// Inline PTX with an instruction that does not exist: the front end passes it through and
// ptxas rejects the generated PTX, naming the temporary .ptx file and line.
__global__ void bad_asm(float* out) {
  float v;
  asm volatile("mov.f32x %0, 1.0;" : "=f"(v));
  out[threadIdx.x] = v;
}
