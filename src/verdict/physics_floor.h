// The physics floor: the shortest time in which any honest kernel can do a task's ideal work on
// a given GPU. A median below it means the timing did not measure the real work (results kept
// from an earlier call, work deferred past the end event), and the candidate is rejected.
//
// floor = max(bytes / (dram_bytes_per_s * margin), flops / (peak_flops_per_s * margin))
//
// Worked example, gelu (2^26 fp32 in, the same out) on an H200 whose copy bandwidth measures
// 4.0e12 B/s: bytes = 5.4e8, so the bytes term is 5.4e8 / (4.0e12 * 1.3) = 103 us; flops = 5.4e8
// against the TF32 peak (132 SMs * 1.98e9 Hz * 2048 = 5.35e14 FLOP/s), 0.8 us. The floor is 103 us,
// and the honest seed's ~213 us is twice that.
//
// Pure functions of the task, the device description and the timing method; no CUDA.
#pragma once

#include <string>

#include "task/task.h"
#include "verdict/protocol.h"

namespace kp::eval {

// The tensor-core peak a task's arithmetic is held to, chosen by its input dtypes.
enum class PrecisionClass {
  kTf32,     // fp32 inputs: TF32 tensor cores, the fastest an fp32 task can honestly use
  kBf16,     // fp16 and bf16 inputs
  kInt8Fp8,  // integer and bool inputs: the 8-bit tensor-core rate, the most lenient there is
  kFp64,     // fp64 inputs: FP64 tensor cores
};
// "TF32", "BF16/FP16", "INT8/FP8", "FP64".
const char* to_string(PrecisionClass c);

// The class of one dtype, and of a task: the most lenient (highest peak) class among its
// inputs, so that a task mixing bf16 and fp32 inputs is held to the bf16 rate. A task without
// inputs gets kInt8Fp8.
PrecisionClass precision_class(task::DType dtype);
PrecisionClass precision_class(const task::Task& task);

// Dense tensor-core FLOP per clock per SM for a compute capability, 0 where kernelpro has no
// table (then the FLOP term of the floor is not applied). sm_90 (H100, H200): TF32 2048,
// BF16/FP16 4096, INT8/FP8 8192, FP64 256 (66.9 TFLOPS on an H100 SXM at 1.98 GHz; 128 is
// the FP64 rate of the CUDA cores, not of the tensor cores, and would make the floor twice as
// strict as the hardware). sm_80 (A100): 1024, 2048, 4096, 128.
double flops_per_clock_per_sm(int cc_major, int cc_minor, PrecisionClass c);

// sm_count * sm_clock_khz * 1e3 * flops_per_clock_per_sm, FLOP/s; 0 when any factor is 0.
// The clock is the peak SM clock (cudaDevAttrClockRate), so the figure is an upper bound.
double peak_flops_per_s(const DeviceInfo& device, PrecisionClass c);

// The most bytes an SM's load and store path moves per clock, reads and writes together: 128,
// the width of its L1 data path (32 lanes of 4 bytes). No kernel moves data between the L2 and
// the SMs faster than sm_count of these at the peak clock: on an H100 SXM, 33 TB/s, several
// times what its L2 delivers. An upper bound, so that the floor built on it is never too strict.
inline constexpr double kSmPathBytesPerClock = 128;
// sm_count * sm_clock_khz * 1e3 * kSmPathBytesPerClock, bytes/s; 0 when a factor is unknown.
double sm_path_bytes_per_s(const DeviceInfo& device);

enum class TimingMethod {
  kEvents,       // one event pair per call, L2 flushed before each
  kGraphReplay,  // graph_calls calls replayed back to back, no flush in between
};

struct PhysicsFloor {
  double seconds = 0;        // 0 when neither term applies
  std::string basis;         // how it was derived, for people: "max(6.4e+08 B / (...), ...)"
  bool bytes_bound = false;  // the bytes term is the larger (or the only) one
};

// The floor for one call of `task` on `device`, timed with `method`, with `margin` (>= 1 makes
// the floor more lenient: EvalOptions::physics_margin, default 1.3).
//  - bytes: task.ideal_bytes when > 0, else task.io_bytes(); over device.dram_bytes_per_s. Not
//    applied when the bandwidth was not measured. Under graph replay nothing flushes the L2
//    between calls, so up to l2_bytes of the working set may be served from it: those bytes
//    count at sm_path_bytes_per_s (the SMs' data path, an upper bound on the L2's rate), the
//    rest at the DRAM bandwidth. A working set that fits in L2 keeps a bytes term.
//  - flops: task.ideal_flops over peak_flops_per_s(device, precision_class(task)). Not applied
//    when the task gives no FLOPs or the device has no peak table.
PhysicsFloor physics_floor(const task::Task& task, const DeviceInfo& device, TimingMethod method, double margin);

}  // namespace kp::eval
