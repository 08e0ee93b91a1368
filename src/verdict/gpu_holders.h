// Who else holds the GPU: the kp-worker's reading of `nvidia-smi --query-compute-apps`, so that
// an out-of-memory caused by another process is the machine's failure (Outcome::kGpuUnavailable,
// retried by the judge, never the candidate's verdict) and says who holds how much. The
// KernelBench worker has its twin (kernelpro_torch/evaluate.py, out_of_memory). Pure: the
// worker runs the command; the parsing and the decision are tested here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kp::eval {

// More than this much device memory held by other processes makes an out-of-memory theirs
// (ELSEWHERE_BYTES in the KernelBench worker).
inline constexpr uint64_t kHeldElsewhereBytes = uint64_t{2} << 30;

// What a worker's own CUDA context takes besides its allocations (CONTEXT_BYTES in the
// KernelBench worker).
inline constexpr uint64_t kContextBytes = uint64_t{1} << 30;

struct GpuHolders {
  bool self_listed = false;   // the list has this process: its pids are ours (no other pid namespace)
  uint64_t others_bytes = 0;  // memory held by processes other than `self`
  std::string description;    // "pid name MiB" per process, "; "-separated, this one marked
};

// Parses the output of `nvidia-smi --query-compute-apps=pid,process_name,used_memory
// --format=csv,noheader,nounits` ("1234, /usr/bin/python3, 68000" per line; MiB). Lines it
// cannot read are skipped; at most eight processes are described.
GpuHolders parse_gpu_holders(std::string_view csv, int self_pid);

// Bytes held outside this worker: by the list when it names this process; else (a container,
// whose pids nvidia-smi gives as the host's) total - free - what the worker allocated - its
// context, as the KernelBench worker reckons it.
uint64_t bytes_held_elsewhere(const GpuHolders& h, uint64_t total, uint64_t free, uint64_t own_allocated);

// Whether an out-of-memory is the machine's: more than kHeldElsewhereBytes held elsewhere.
inline bool held_elsewhere(uint64_t elsewhere_bytes) { return elsewhere_bytes > kHeldElsewhereBytes; }

}  // namespace kp::eval
