// `kernelpro calibrate`, the worker's half: microbenchmarks that measure this GPU's ceilings
// (memory bandwidths, arithmetic rates per precision) with kernelpro's own kernels and with
// cuBLAS, inside kp-worker, which owns the CUDA context.
//
// Every figure is the best of several repetitions after warm-up, each timed with a CUDA event
// pair on a private stream; the work per launch is scaled so that one launch lasts about 2 ms
// (full) or 1 ms (quick). The whole run takes a few seconds on an H200 (most of it the cuBLAS
// GEMMs and loading cuBLAS).
//
//  dram_bytes_per_s   128-bit grid-stride copy kernel over max(2 GiB, 8 x L2) (bytes read plus
//                     bytes written); cudaMemcpy device-to-device of the same size is reported
//                     in the method for reference
//  l2_bytes_per_s     128-bit ld.global.cg reads (L1 bypassed) of a buffer of L2 / 4, resident
//                     in L2, many passes per launch
//  fp32_flops         FFMA chains, 8 independent accumulators per thread, FMA = 2 FLOP
//  fp64_flops         DFMA, the same
//  fp16_flops         HFMA2 on half2, 4 FLOP per instruction
//  tensor_*           the larger of an own mma.sync kernel on registers only (m16n8k16 fp16 and
//                     bf16 with fp32 accumulate, m16n8k8 tf32, m8n8k4 fp64, m16n8k32 int8) and a
//                     cuBLAS 8192^3 GEMM (cublasGemmEx; cublasDgemm for fp64) on random
//                     non-zero data; the method names which, with both numbers.
// cuBLAS is loaded with dlopen("libcublas.so.13") (then from the CUDA toolkit's usual folders),
// RTLD_LOCAL, never linked: without it the tensor figures come from the own kernels alone and
// the method says "cuBLAS not measured: libcublas.so.13 not found".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"

namespace kp::eval {
struct DeviceInfo;
}

namespace kp::worker {

enum class CalibrationDepth {
  kFull,   // 2 warm-up and 7 timed launches per figure, ~2 ms each
  kQuick,  // 1 warm-up and 3 timed launches, ~1 ms each (tests)
};

struct CalibrateOptions {
  CalibrationDepth depth = CalibrationDepth::kFull;
  int device = 0;  // CUDA device ordinal (the worker's current device)
  // The SM clock in MHz right now (NVML), read after each compute microbenchmark; empty when
  // NVML is absent (the peak clock, cudaDevAttrClockRate, is then reported instead).
  std::function<unsigned()> read_sm_clock_mhz;
};

// One measured ceiling. value 0: not measured, and method says why.
struct CalibrationFigure {
  double value = 0;    // per second, whole GPU
  std::string method;  // how it was obtained, for people
};

struct Calibration {
  // By the field name of profile::Ceilings: "dram_bytes_per_s", "l2_bytes_per_s", "fp32_flops",
  // "fp64_flops", "fp16_flops", "tensor_fp16_flops", "tensor_bf16_flops", "tensor_tf32_flops",
  // "tensor_fp64_flops", "tensor_int8_ops". Every one of them is present.
  std::map<std::string, CalibrationFigure> figures;
  double sm_clock_mhz = 0;      // lowest NVML reading after a compute benchmark, else the peak clock
  std::string sm_clock_method;  // which of the two
  double seconds = 0;           // wall time of the whole calibration
};

// Runs every microbenchmark on the current device. A figure that cannot be measured (not
// enough memory, no cuBLAS, a cuBLAS error) is 0 with the reason in its method. An Error
// (kTool, naming the benchmark and the CUDA error) only when a CUDA call fails in a way that may
// have lost the context; the worker must then exit.
Result<Calibration> run_calibration(const CalibrateOptions& options);

// The whole "calibrate" op: {"op":"calibrate","id":N,"quick":B} ->
// {"ok":true,"id":N,"ceilings":{the JSON of profile::Ceilings, source "calibrated"},
//  "seconds":S,"exiting":false}, or {"ok":false,"id":N,"error":E,"exiting":true} after a CUDA
// failure (the worker then exits with status 3). `device` is the worker's open device.
nlohmann::json calibrate_reply(const nlohmann::json& request, const eval::DeviceInfo& device);

}  // namespace kp::worker
