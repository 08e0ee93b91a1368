// The output check on the GPU: the tallies of eval::check_output (eval/compare.h) gathered by one
// kernel over the candidate's and the reference's device buffers, so a check costs one read of
// both tensors instead of two copies to the host and a pass of the CPU. The verdict and its
// reason come from eval::conclude_check, the same code the host check uses.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "task/dtype.h"
#include "verdict/compare.h"

namespace kp::judge {

// Device scratch for device_tally: allocated once per worker, reused by every check.
class CompareScratch {
 public:
  CompareScratch() = default;
  ~CompareScratch();
  CompareScratch(const CompareScratch&) = delete;
  CompareScratch& operator=(const CompareScratch&) = delete;
  cudaError_t ensure();
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Tallies n elements of `out` against `ref` (device pointers of `dtype`) on `stream`, then
// synchronizes it and fills *tally, including first_out and the first bad element's detail
// (two elements copied back). Returns the first CUDA error.
cudaError_t device_tally(const void* out, const void* ref, task::DType dtype, int64_t n, const task::Tolerance& tol,
                         CompareScratch& scratch, cudaStream_t stream, eval::OutputTally* tally);

}  // namespace kp::judge
