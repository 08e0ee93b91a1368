// The ceilings of one GPU that the roofline compares achieved work against: memory bandwidths
// and arithmetic rates per precision, measured by `kernelpro calibrate` (profile/calibration.h)
// or taken from the datasheet when this GPU was never calibrated.
#pragma once

#include <map>
#include <string>

namespace kp::profile {

// Where the numbers come from.
enum class CeilingSource {
  kCalibrated,  // measured on this GPU by `kernelpro calibrate`
  kDatasheet,   // the vendor's figures for this product (a warning is printed)
};
const char* to_string(CeilingSource s);  // "calibrated", "datasheet"

// Rates are per second for the whole GPU; 0 means unknown (the roofline then skips that roof).
struct Ceilings {
  std::string gpu;                 // device name as CUDA reports it: "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  CeilingSource source = CeilingSource::kDatasheet;
  std::string measured_at;         // ISO-8601 UTC time of the calibration; empty for a datasheet
  double dram_bytes_per_s = 0;     // DRAM: bytes read plus bytes written per second
  double l2_bytes_per_s = 0;       // L2 hits: bytes per second
  double fp32_flops = 0;           // CUDA-core FP32 (FFMA counted as 2 FLOP)
  double fp64_flops = 0;           // CUDA-core FP64 (DFMA counted as 2 FLOP)
  double fp16_flops = 0;           // CUDA-core packed half (HFMA2 counted as 4 FLOP); 0 if unknown
  double tensor_fp16_flops = 0;    // dense tensor cores, fp16 inputs, fp32 accumulate
  double tensor_bf16_flops = 0;    // dense tensor cores, bf16 inputs, fp32 accumulate
  double tensor_tf32_flops = 0;    // dense tensor cores, tf32 inputs
  double tensor_fp64_flops = 0;    // FP64 tensor cores (DMMA)
  double tensor_int8_ops = 0;      // dense int8 tensor cores, ops per second
  // The SM clock the rates were measured at, MHz (NVML's lowest reading right after a compute
  // benchmark, else the peak clock); for a datasheet the clock its figures assume, 0 if unknown.
  double sm_clock_mhz = 0;
  double tensor_fp8_flops = 0;     // dense FP8 (e4m3/e5m2) tensor cores, fp32 accumulate; 0 if unknown
  // How each figure was obtained, by field name ("dram_bytes_per_s" -> "copy kernel, 2 GiB,
  // best of 10"; "tensor_bf16_flops" -> "cuBLAS 8192^3 bf16 GEMM"). For people, not parsed.
  std::map<std::string, std::string> method;
};

}  // namespace kp::profile
