#include "profile/datasheets.h"

#include <gtest/gtest.h>

#include "profile/calibration.h"

namespace kp::profile {
namespace {

eval::DeviceInfo device(const std::string& name, int cc_major, int cc_minor, int sms, int clock_mhz) {
  eval::DeviceInfo d;
  d.name = name;
  d.cc_major = cc_major;
  d.cc_minor = cc_minor;
  d.sm_count = sms;
  d.sm_clock_khz = clock_mhz * 1000;
  return d;
}

TEST(Datasheets, NamesAsCudaReportsThemFindTheirProduct) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA H200", "NVIDIA H200 SXM"},
      {"NVIDIA H200 NVL", "NVIDIA H200 NVL"},
      {"NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"},
      {"NVIDIA H100 PCIe", "NVIDIA H100 PCIe"},
      {"NVIDIA H100 NVL", "NVIDIA H100 NVL"},
      {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM 80GB"},
      {"NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM 40GB"},
      {"NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"},
      {"NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"},
      {"NVIDIA L40S", "NVIDIA L40S"},
  };
  for (const auto& [name, product] : cases) {
    const Datasheet* d = find_datasheet(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_STREQ(d->product, product) << name;
  }
  EXPECT_EQ(find_datasheet("NVIDIA GH200 480GB"), nullptr);  // "h200" is not a word of it
  EXPECT_EQ(find_datasheet("NVIDIA GeForce RTX 4090"), nullptr);
  EXPECT_EQ(find_datasheet(""), nullptr);
}

TEST(Datasheets, H200CeilingsAreTheDatasheetsDenseFigures) {
  eval::DeviceInfo d = device("NVIDIA H200", 9, 0, 132, 1980);
  Ceilings c = datasheet_ceilings(d);
  EXPECT_EQ(c.source, CeilingSource::kDatasheet);
  EXPECT_EQ(c.gpu, "NVIDIA H200");
  EXPECT_EQ(c.sm_count, 132);
  EXPECT_TRUE(c.measured_at.empty());
  EXPECT_DOUBLE_EQ(c.dram_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(c.fp32_flops, 67e12);
  EXPECT_DOUBLE_EQ(c.fp64_flops, 34e12);
  EXPECT_DOUBLE_EQ(c.tensor_fp64_flops, 67e12);
  EXPECT_DOUBLE_EQ(c.tensor_tf32_flops, 495e12);
  EXPECT_DOUBLE_EQ(c.tensor_bf16_flops, 990e12);
  EXPECT_DOUBLE_EQ(c.tensor_fp16_flops, 990e12);
  EXPECT_DOUBLE_EQ(c.tensor_int8_ops, 1979e12);
  EXPECT_EQ(c.method["dram_bytes_per_s"], "datasheet: NVIDIA H200 SXM");
  EXPECT_NE(c.method["fp16_flops"].find("derived"), std::string::npos) << c.method["fp16_flops"];
  // Not on any datasheet: unknown, and the method says how to get it.
  EXPECT_EQ(c.l2_bytes_per_s, 0);
  EXPECT_NE(c.method["l2_bytes_per_s"].find("kernelpro calibrate"), std::string::npos);
  // Every rate has a method.
  for (const CeilingField& f : ceiling_fields()) EXPECT_FALSE(c.method[f.key].empty()) << f.key;
}

TEST(Datasheets, AUnitTheProductLacksIsZeroAndSaysSo) {
  Ceilings c = datasheet_ceilings(device("NVIDIA L40S", 8, 9, 142, 2520));
  EXPECT_EQ(c.tensor_fp64_flops, 0);
  EXPECT_NE(c.method["tensor_fp64_flops"].find("no such unit"), std::string::npos) << c.method["tensor_fp64_flops"];
  EXPECT_GT(c.tensor_bf16_flops, 0);
}

// The CUDA-core figures of every row agree with SMs x boost clock x the architecture's rate per
// clock, which is also what the estimate for an unknown product uses: a typo in the table, or
// a wrong per-clock rate, shows here.
TEST(Datasheets, EveryRowAgreesWithTheArchitectureEstimate) {
  for (const Datasheet& row : datasheets()) {
    eval::DeviceInfo unknown =
        device("Unnamed GPU", row.cc_major, row.cc_minor, row.sm_count, static_cast<int>(row.boost_clock_mhz));
    Ceilings estimate = datasheet_ceilings(unknown);
    EXPECT_NEAR(estimate.fp32_flops / row.fp32_flops, 1.0, 0.05) << row.product;
    EXPECT_NEAR(estimate.fp64_flops / row.fp64_flops, 1.0, 0.05) << row.product;
    EXPECT_NEAR(estimate.fp16_flops / row.fp16_flops, 1.0, 0.05) << row.product;
    // Tensor figures on datasheets assume a lower clock than the CUDA-core ones; within 20%.
    EXPECT_NEAR(estimate.tensor_bf16_flops / row.tensor_bf16_flops, 1.0, 0.2) << row.product;
    EXPECT_NEAR(estimate.tensor_int8_ops / row.tensor_int8_ops, 1.0, 0.2) << row.product;
  }
}

TEST(Datasheets, UnknownProductIsEstimatedFromItsArchitecture) {
  eval::DeviceInfo d = device("NVIDIA Hopper Prototype", 9, 0, 100, 2000);
  d.dram_bytes_per_s = 3.0e12;
  Ceilings c = datasheet_ceilings(d);
  EXPECT_EQ(c.source, CeilingSource::kDatasheet);
  EXPECT_DOUBLE_EQ(c.fp32_flops, 256.0 * 100 * 2e9);
  EXPECT_DOUBLE_EQ(c.fp64_flops, 128.0 * 100 * 2e9);
  EXPECT_DOUBLE_EQ(c.tensor_bf16_flops, 4096.0 * 100 * 2e9);
  EXPECT_DOUBLE_EQ(c.tensor_fp64_flops, 256.0 * 100 * 2e9);
  EXPECT_DOUBLE_EQ(c.dram_bytes_per_s, 3.0e12);
  EXPECT_DOUBLE_EQ(c.sm_clock_mhz, 2000);
  EXPECT_EQ(c.method["fp32_flops"].rfind("estimate:", 0), 0u) << c.method["fp32_flops"];
  EXPECT_NE(c.method["fp32_flops"].find("NVIDIA Hopper Prototype"), std::string::npos);
  EXPECT_NE(c.method["dram_bytes_per_s"].find("copy bandwidth"), std::string::npos);
}

TEST(Datasheets, UnknownArchitectureLeavesRatesUnknown) {
  eval::DeviceInfo d = device("NVIDIA Future", 12, 0, 100, 2000);
  Ceilings c = datasheet_ceilings(d);
  EXPECT_EQ(c.fp32_flops, 0);
  EXPECT_EQ(c.tensor_bf16_flops, 0);
  EXPECT_EQ(c.dram_bytes_per_s, 0);
  EXPECT_NE(c.method["fp32_flops"].find("12.0"), std::string::npos) << c.method["fp32_flops"];
}

}  // namespace
}  // namespace kp::profile
