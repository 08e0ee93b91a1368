#include "analysis/evidence_json.h"

#include <gtest/gtest.h>

#include "analysis/registry.h"
#include "profile/datasheets.h"

namespace kp::analysis {
namespace {

// A spilling, uncoalesced kernel behind two host copies: enough for several tools to fire.
Evidence sample() {
  Evidence e;
  e.device.name = "NVIDIA H200";
  e.device.cc_major = 9;
  e.device.sm_count = 132;
  e.ceilings = profile::datasheet_ceilings(e.device);
  profile::KernelMetrics k;
  k.name = "gather(const float *, float *, int)";
  k.grid = {4096, 1, 1};
  k.block = {256, 1, 1};
  k.values = {{"gpu__time_duration.sum", 2.0e5},
              {"dram__bytes_read.sum", 4.0e8},
              {"dram__bytes_write.sum", 1.0e8},
              {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 3.2e7},
              {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1.0e6},
              {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 80},
              {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20}};
  k.units = {{"gpu__time_duration.sum", "ns"}};
  k.text = {{"launch__func_cache_config", "CachePreferNone"}};
  e.kernels.push_back(k);
  profile::KernelSass s;
  s.mangled_name = "_Z6gatherPKfPfi";
  s.name = "gather(float const*, float*, int)";
  s.sass.arch = "sm_90a";
  s.sass.instructions = 40;
  s.sass.by_class[static_cast<int>(profile::SassClass::kGlobalLoad)] = 2;
  s.sass.by_opcode = {{"LDG", 2}, {"STL", 3}, {"LDL", 3}};
  s.sass.global_load_bits = {{32, 2}};
  s.sass.global_store_bits = {{32, 1}};
  s.sass.local_loads = 3;
  s.sass.local_stores = 3;
  s.sass.fp32_fma = 4;
  s.sass.mufu = {{"RCP", 1}};
  build::KernelResources r;
  r.mangled_name = s.mangled_name;
  r.arch = "sm_90a";
  r.registers = 255;
  r.spill_store_bytes = 24;
  r.spill_load_bytes = 24;
  r.stack_frame_bytes = 24;
  s.resources = r;
  e.sass.push_back(s);
  profile::TraceCall c;
  profile::TraceKernel t;
  t.name = k.name;
  t.grid = k.grid;
  t.block = k.block;
  t.start_ns = 1000000;
  t.end_ns = 1200000;
  c.kernels.push_back(t);
  c.copies.push_back({"memcpy", "HtoD", 1 << 20, 7, 900000, 990000});
  c.launch_api_calls = 1;
  c.span_s = 300e-6;
  c.busy_s = 290e-6;
  c.gaps_s = 10e-6;
  c.streams = 1;
  e.trace = c;
  e.call_seconds = 310e-6;
  e.ideal_bytes = 1.0e8;
  e.ideal_flops = 1.0e6;
  e.unprofiled_launches = 0;
  return e;
}

TEST(EvidenceJson, RoundTripKeepsWhatTheToolsRead) {
  const Evidence e = sample();
  const nlohmann::json j = evidence_to_json(e);
  auto back = evidence_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(evidence_to_json(*back), j);
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].values, e.kernels[0].values);
  EXPECT_EQ(back->kernels[0].grid, e.kernels[0].grid);
  ASSERT_EQ(back->sass.size(), 1u);
  ASSERT_TRUE(back->sass[0].resources);
  EXPECT_EQ(back->sass[0].resources->spill_store_bytes, 24);
  EXPECT_EQ(back->sass[0].sass.count(profile::SassClass::kGlobalLoad), 2);
  EXPECT_EQ(back->sass[0].sass.global_load_bits.at(32), 2);
  ASSERT_TRUE(back->trace);
  EXPECT_EQ(back->trace->copies.at(0).direction, "HtoD");
  EXPECT_EQ(back->trace->kernels.at(0).end_ns, 1200000u);
  EXPECT_EQ(back->ceilings.dram_bytes_per_s, e.ceilings.dram_bytes_per_s);
  EXPECT_EQ(back->device.sm_count, 132);
  EXPECT_FALSE(back->roofline);  // computed again by whoever reads the file

  // The same evidence gives the same findings, tool by tool.
  const ToolRegistry registry = ToolRegistry::builtin();
  const auto before = run_tools(registry.all(), e);
  const auto after = run_tools(registry.all(), *back);
  ASSERT_EQ(before.size(), after.size());
  EXPECT_FALSE(before.empty()) << "the sample should make some tool fire (spills at least)";
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(to_json(before[i]), to_json(after[i]));
}

TEST(EvidenceJson, BadFilesNameWhatIsWrong) {
  auto not_object = evidence_from_json(nlohmann::json::array());
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().code, ErrorCode::kInvalidInput);

  nlohmann::json j = evidence_to_json(sample());
  j.erase("kernels");
  auto no_kernels = evidence_from_json(j);
  ASSERT_FALSE(no_kernels.ok());
  EXPECT_NE(no_kernels.error().message.find("kernels"), std::string::npos) << no_kernels.error().message;

  j = evidence_to_json(sample());
  j["sass"][0]["sass"]["by_class"]["warp_magic"] = 3;
  auto bad_class = evidence_from_json(j);
  ASSERT_FALSE(bad_class.ok());
  EXPECT_NE(bad_class.error().message.find("warp_magic"), std::string::npos) << bad_class.error().message;

  j = evidence_to_json(sample());
  j["kernels"][0]["values"]["dram__bytes_read.sum"] = "lots";
  auto bad_value = evidence_from_json(j);
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.error().message.find("kernels"), std::string::npos) << bad_value.error().message;
}

}  // namespace
}  // namespace kp::analysis
