// The vendor's figures per GPU product, and the ceilings kernelpro assumes for a GPU that was
// never calibrated: the datasheet of its product, else an estimate from its architecture.
// The tables live in datasheets.cc, one row per product and one per architecture.
#pragma once

#include <string_view>
#include <vector>

#include "profile/ceilings.h"
#include "verdict/protocol.h"

namespace kp::profile {

// One product's datasheet. Rates per second for the whole GPU, dense (without the 2:4
// structured sparsity that the marketing figures double); 0 where the product has no such unit.
struct Datasheet {
  const char* product = "";  // "NVIDIA H200 SXM"
  // Matching against the CUDA device name, split into lowercase words at every character that is
  // not a letter or digit ("NVIDIA A100-SXM4-80GB" -> nvidia a100 sxm4 80gb): every word of
  // all_of must be one of them and no word of none_of. Null-terminated lists.
  const char* all_of[4] = {};
  const char* none_of[4] = {};
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double boost_clock_mhz = 0;  // the clock the figures assume
  double dram_bytes_per_s = 0;
  double fp32_flops = 0, fp64_flops = 0, fp16_flops = 0;
  double tensor_fp16_flops = 0, tensor_bf16_flops = 0, tensor_tf32_flops = 0, tensor_fp64_flops = 0;
  double tensor_int8_ops = 0;
  // The figures (Ceilings field names) derived rather than printed on the datasheet, and how.
  const char* derived[4] = {};
  const char* derived_how = "";
};

// Every product in the table.
const std::vector<Datasheet>& datasheets();

// The datasheet of the product the device name names, or nullptr. Of several matching rows the
// one with the most all_of words wins. "NVIDIA H200" -> H200 SXM, "NVIDIA H200 NVL" -> H200
// NVL, "NVIDIA H100 80GB HBM3" -> H100 SXM, "NVIDIA A100 80GB PCIe" -> A100 PCIe 80GB;
// "NVIDIA GH200 480GB" -> nullptr (no row).
const Datasheet* find_datasheet(std::string_view device_name);

// The ceilings kernelpro assumes for `device` without a calibration (source kDatasheet, no
// measured_at; gpu, cc and sm_count are the device's):
//  - its product's datasheet when find_datasheet knows it; method "datasheet: NVIDIA H200 SXM";
//  - else an estimate from the architecture: FLOP per clock per SM of its compute capability
//    (sm_80, sm_86, sm_89, sm_90; the tensor rates of eval::flops_per_clock_per_sm where it has
//    them) x device.sm_count x the peak clock device.sm_clock_khz, and for DRAM the copy
//    bandwidth the worker measured at start (device.dram_bytes_per_s); each method says
//    "estimate: ...". A figure with no basis (another architecture, an unknown clock) is 0.
// The L2 bandwidth is on no datasheet: always 0, and its method says to run `kernelpro calibrate`.
Ceilings datasheet_ceilings(const eval::DeviceInfo& device);

}  // namespace kp::profile
