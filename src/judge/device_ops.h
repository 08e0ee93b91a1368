// Device-side helpers of the worker: input generation, output poisoning, input checksums.
// Every function launches on the given stream and returns the launch's cudaError_t.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "task/task.h"

namespace kp::judge {

// Fills n elements of dtype with values drawn from dist by a counter-based generator:
// element i of a tensor depends only on (seed, stream_id, i), so the same seed reproduces the
// same inputs on any GPU and launch shape.
cudaError_t fill_random(void* data, task::DType dtype, int64_t n, const task::Distribution& dist, uint64_t seed,
                        uint64_t stream_id, cudaStream_t stream);

// Writes the low `elem_size` bytes of `pattern` into each of n elements.
cudaError_t fill_pattern(void* data, size_t elem_size, int64_t n, uint64_t pattern, cudaStream_t stream);

// A 64-bit checksum of `bytes` bytes at `data` (any alignment; position-dependent, so swapped or
// moved data changes it).
// Synchronizes the stream; *out receives the value. `scratch` is 8 bytes of device memory.
cudaError_t checksum(const void* data, size_t bytes, uint64_t* scratch, uint64_t* out, cudaStream_t stream);

// A 64-bit sum over the 16-byte blocks of `bytes` bytes at `data` (blocks counted from data, any
// alignment), each hashed by its contents alone: moving or swapping whole blocks leaves it as it
// was, any other write changes it. The tail shorter than a block counts with its position.
// Synchronizes the stream; *out receives the value. `scratch` is 8 bytes of device memory.
cudaError_t block_multiset(const void* data, size_t bytes, uint64_t* scratch, uint64_t* out, cudaStream_t stream);

// Swaps `bytes` bytes at a with those at b (the two ranges must not overlap).
cudaError_t swap_bytes(void* a, void* b, size_t bytes, cudaStream_t stream);

// Flips every bit of `bytes` bytes at `data` (any alignment): a checked output a candidate kept
// can no longer pass for a right one.
cudaError_t flip_bits(void* data, size_t bytes, cudaStream_t stream);

// Evicts L2 by reading all of `flush` (bytes, a multiple of 16, at least 2x the L2): reads,
// not writes, so that L2 is left holding clean lines and the next kernel does not pay for
// writing back the flush's own dirty lines (a memset flush cost a 180 us layernorm 3-5% on the
// H200 against ncu's cache control). Dirty lines of earlier work are written back here.
cudaError_t evict_l2(const void* flush, size_t bytes, cudaStream_t stream);

}  // namespace kp::judge
