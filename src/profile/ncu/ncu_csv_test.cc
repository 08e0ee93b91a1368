// The ncu CSV parsers on real Nsight Compute 2025.3.1 output captured on an H200
// (tests/data/ncu/README.md says how each file was made), and on small strings for the corners
// the captures do not show.
#include "profile/ncu/ncu_csv.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

std::string fixture(const std::string& name) {
  auto text = read_file((testing::test_data_dir() / "ncu" / name).string());
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message);
  return text.ok() ? *text : std::string();
}

std::vector<KernelMetrics> parse_raw(std::string_view text) {
  auto r = parse_ncu_raw_csv(text);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : std::vector<KernelMetrics>{};
}

using Dim3 = std::array<int64_t, 3>;

// `--set full` on main.cu, stdout with ==PROF== lines and the program's "done 0" before the CSV.
TEST(NcuRawCsv, FullSetOfSaxpyAndStrided) {
  auto kernels = parse_raw(fixture("ncu_full_raw.csv"));
  ASSERT_EQ(kernels.size(), 2u);
  const KernelMetrics& saxpy = kernels[0];
  const KernelMetrics& strided = kernels[1];
  EXPECT_EQ(saxpy.name, "saxpy(int, float, const float *, float *)");
  EXPECT_EQ(strided.name, "strided(int, const float *, float *)");
  EXPECT_EQ(saxpy.launch_index, 0);
  EXPECT_EQ(strided.launch_index, 1);
  EXPECT_EQ(saxpy.grid, (Dim3{262144, 1, 1}));
  EXPECT_EQ(saxpy.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(strided.grid, (Dim3{8192, 1, 1}));
  EXPECT_EQ(strided.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(saxpy.get("gpu__time_duration.sum"), 232192.0);
  EXPECT_EQ(strided.get("gpu__time_duration.sum"), 38592.0);
  EXPECT_EQ(saxpy.get("dram__bytes_read.sum"), 536907776.0);  // 2^26 floats of x, plus a little
  EXPECT_EQ(strided.get("dram__bytes_read.sum"), 134227200.0);
  EXPECT_EQ(saxpy.get("launch__grid_size"), 262144.0);
  EXPECT_EQ(saxpy.get("profiler__replayer_passes"), 38.0);
  EXPECT_EQ(saxpy.units.at("gpu__time_duration.sum"), "ns");
  EXPECT_EQ(saxpy.units.at("dram__bytes_read.sum"), "byte");
  EXPECT_EQ(saxpy.units.at("launch__grid_size"), "");
  // Words stay text; empty values (unsupported sub-unit metrics) are missing, not 0.
  EXPECT_EQ(saxpy.text.at("launch__cluster_scheduling_policy"), "PolicySpread");
  EXPECT_EQ(saxpy.text.at("device__attribute_display_name"), "NVIDIA H200");
  EXPECT_FALSE(saxpy.get("FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_EQ(saxpy.units.at("FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed"), "%");
  EXPECT_FALSE(saxpy.get("derived_tempMetric4")) << "\"nan\" is not a value";
  // Launch description columns are not metrics.
  EXPECT_EQ(saxpy.units.count("Kernel Name"), 0u);
  EXPECT_EQ(saxpy.units.count("Grid Size"), 0u);
  EXPECT_EQ(saxpy.units.count("CC"), 0u);
  // 2238 columns, 11 of them launch descriptions.
  EXPECT_EQ(saxpy.units.size(), 2238u - 11u);
  EXPECT_DOUBLE_EQ(saxpy.get_or("dram__bytes.sum.per_second", 0), 3389726571113.56);
  EXPECT_EQ(saxpy.units.at("dram__bytes.sum.per_second"), "byte/s");
  EXPECT_DOUBLE_EQ(strided.get_or("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0), 6.62);
  EXPECT_DOUBLE_EQ(strided.get_or("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 0), 77.16);
}

// --nvtx --nvtx-include "kp_candidate/" with 11 metrics, read from the --log-file.
TEST(NcuRawCsv, OnlyTheKernelInsideTheNvtxRange) {
  auto kernels = parse_raw(fixture("ncu_nvtx_small_raw.csv"));
  ASSERT_EQ(kernels.size(), 1u);
  const KernelMetrics& k = kernels[0];
  EXPECT_EQ(k.name, "rowsoftmax(const float *, float *, int)");
  EXPECT_EQ(k.launch_index, 0);
  EXPECT_EQ(k.grid, (Dim3{4096, 1, 1}));
  EXPECT_EQ(k.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(k.get("dram__bytes_read.sum"), 1610642688.0);
  EXPECT_EQ(k.get("dram__bytes_write.sum"), 517531392.0);
  EXPECT_EQ(k.get("gpu__time_duration.sum"), 800960.0);
  EXPECT_DOUBLE_EQ(k.get_or("sm__throughput.avg.pct_of_peak_sustained_elapsed", -1), 32.00);
  EXPECT_DOUBLE_EQ(k.get_or("sm__warps_active.avg.pct_of_peak_sustained_active", -1), 95.19);
  EXPECT_DOUBLE_EQ(k.get_or("dram__bytes_read.avg", -1), 33555056.0);
  EXPECT_EQ(k.get("profiler__replayer_passes"), 11.0);
  EXPECT_EQ(k.units.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), "%");
  EXPECT_EQ(k.text.at("nvtx"), "497  \"<default domain>:kp_candidate:none:none:none:none:none:none\"");
  EXPECT_EQ(k.text.at("launch__func_cache_config"), "CachePreferNone");
  for (const auto& [name, unit] : k.units) EXPECT_EQ(name.find(':'), std::string::npos) << name;
  EXPECT_EQ(k.units.size(), 307u - 13u);
}

TEST(NcuRawCsv, QuotedFieldsWithCommasAndDoubledQuotes) {
  auto kernels = parse_raw(
      "\"ID\",\"Kernel Name\",\"Grid Size\",\"a.sum\",\"b\"\n"
      "\"\",\"\",\"\",\"byte\",\"\"\n"
      "\"0\",\"k<\"\"x, y\"\">(int, float)\",\"(2, 3, 4)\",\"1,024\",\"say \"\"hi\"\", twice\"\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "k<\"x, y\">(int, float)");
  EXPECT_EQ(kernels[0].grid, (Dim3{2, 3, 4}));
  EXPECT_EQ(kernels[0].block, (Dim3{0, 0, 0})) << "no Block Size column";
  EXPECT_EQ(kernels[0].get("a.sum"), 1024.0);
  EXPECT_EQ(kernels[0].text.at("b"), "say \"hi\", twice");
}

TEST(NcuRawCsv, NotAvailableIsMissingAndRaggedRowsArePadded) {
  auto kernels = parse_raw(
      "\"ID\",\"Kernel Name\",\"x.sum\",\"y.pct\",\"z.sum\"\n"
      "\"\",\"\",\"inst\",\"%\",\"byte\"\n"
      "\"0\",\"a\",\"n/a\",\"50.5\",\"7\"\n"
      "\"1\",\"b\",\"3\"\n");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_FALSE(kernels[0].get("x.sum"));
  EXPECT_EQ(kernels[0].text.count("x.sum"), 0u);
  EXPECT_EQ(kernels[0].get("y.pct"), 50.5);
  EXPECT_EQ(kernels[1].get("x.sum"), 3.0);
  EXPECT_FALSE(kernels[1].get("y.pct"));
  EXPECT_FALSE(kernels[1].get("z.sum"));
  EXPECT_EQ(kernels[1].units.at("z.sum"), "byte");
}

TEST(NcuRawCsv, RowLongerThanTheHeaderIsAnErrorNamingTheLine) {
  auto r = parse_ncu_raw_csv(
      "==PROF== Connected to process 1 (/tmp/app)\n"
      "\"ID\",\"Kernel Name\",\"x.sum\"\n"
      "\"\",\"\",\"byte\"\n"
      "\"0\",\"a\",\"1\",\"2\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTool);
  EXPECT_NE(r.error().message.find("line 4"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("4 fields"), std::string::npos) << r.error().message;
}

TEST(NcuRawCsv, TrailingEmptyFieldIsNotAnExtraColumn) {
  auto kernels = parse_raw("\"ID\",\"Kernel Name\",\"x.sum\"\n\"\",\"\",\"byte\"\n\"0\",\"a\",\"5\",\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].get("x.sum"), 5.0);
}

TEST(NcuRawCsv, EuropeanSeparatorsWhenTheTableIsUnambiguous) {
  auto kernels = parse_raw(
      "\"ID\",\"Kernel Name\",\"a.sum\",\"b.pct\",\"c.sum\"\n"
      "\"\",\"\",\"byte\",\"%\",\"byte\"\n"
      "\"0\",\"k\",\"27.595.520\",\"70,79\",\"1.234\"\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].get("a.sum"), 27595520.0);
  EXPECT_DOUBLE_EQ(kernels[0].get_or("b.pct", 0), 70.79);
  EXPECT_EQ(kernels[0].get("c.sum"), 1234.0) << "ambiguous alone, European in this table";
}

TEST(NcuRawCsv, UsSeparatorsAndAmbiguousValuesReadAsUs) {
  auto kernels = parse_raw(
      "\"ID\",\"Kernel Name\",\"a.sum\",\"b.pct\",\"c.sum\",\"d\"\n"
      "\"\",\"\",\"byte\",\"%\",\"byte\",\"\"\n"
      "\"0\",\"k\",\"1,215,000,000.50\",\"70.79\",\"1,234\",\"4.0e-05\"\n");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].get("a.sum"), 1215000000.5);
  EXPECT_DOUBLE_EQ(kernels[0].get_or("b.pct", 0), 70.79);
  EXPECT_EQ(kernels[0].get("c.sum"), 1234.0);
  EXPECT_DOUBLE_EQ(kernels[0].get_or("d", 0), 4.0e-05);
}

TEST(NcuRawCsv, ProgramOutputBeforeAndBetweenRowsIsSkipped) {
  auto kernels = parse_raw(
      "hello from the program, 1, 2, 3\n"
      "==PROF== Profiling \"k\" - 0: 0%....50%....100% - 11 passes\n"
      "\"ID\",\"Kernel Name\",\"x.sum\"\n"
      "\"\",\"\",\"byte\"\n"
      "more program output\n"
      "\"0\",\"k\",\"1\"\n"
      "==PROF== Disconnected from process 1\n"
      "\"1\",\"k\",\"2\"\n");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[1].launch_index, 1);
  EXPECT_EQ(kernels[1].get("x.sum"), 2.0);
}

TEST(NcuRawCsv, EmptyInputAndMissingHeaderAreErrors) {
  auto empty = parse_ncu_raw_csv("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::kTool);
  EXPECT_NE(empty.error().message.find("empty"), std::string::npos);

  auto no_header = parse_ncu_raw_csv("==PROF== Connected to process 1\n==ERROR== Failed to profile \"k\"\ndone 0\n");
  ASSERT_FALSE(no_header.ok());
  EXPECT_EQ(no_header.error().code, ErrorCode::kTool);
  EXPECT_NE(no_header.error().message.find("no CSV header"), std::string::npos) << no_header.error().message;
  EXPECT_NE(no_header.error().message.find("Failed to profile"), std::string::npos) << no_header.error().message;

  auto details_page = parse_ncu_raw_csv("\"Kernel Name\",\"x\"\n");
  ASSERT_FALSE(details_page.ok());
}

TEST(NcuRawCsv, NoKernelsProfiledIsAnEmptyList) {
  auto r = parse_ncu_raw_csv(
      "==PROF== Connected to process 7 (/tmp/app)\ndone 0\n==PROF== Disconnected from process 7\n"
      "==WARNING== No kernels were profiled.\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->empty());
}

TEST(NcuRawCsv, CounterPermissionErrorSaysHowToFixIt) {
  auto r = parse_ncu_raw_csv(
      "==PROF== Connected to process 7 (/tmp/app)\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
      "to access NVIDIA GPU Performance Counters on the target device 0.\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
}

TEST(NcuRawCsv, UnterminatedQuoteIsAnError) {
  auto r = parse_ncu_raw_csv("\"ID\",\"Kernel Name\"\n\"0\",\"cut off");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTool);
  EXPECT_NE(r.error().message.find("never closed"), std::string::npos);
}

TEST(NcuDim3, ParsesThreeIntegersOnly) {
  EXPECT_EQ(parse_ncu_dim3("(256, 1, 1)"), (Dim3{256, 1, 1}));
  EXPECT_EQ(parse_ncu_dim3(" (4096,2,3) "), (Dim3{4096, 2, 3}));
  EXPECT_FALSE(parse_ncu_dim3("(256, 1)"));
  EXPECT_FALSE(parse_ncu_dim3("256, 1, 1"));
  EXPECT_FALSE(parse_ncu_dim3("(a, 1, 1)"));
  EXPECT_FALSE(parse_ncu_dim3(""));
}

// `--section SpeedOfLight --page details` on main.cu: 20 columns, metric rows cut short.
TEST(NcuDetailsCsv, SpeedOfLightMetricsAndTheSolBottleneckRule) {
  auto r = parse_ncu_details_csv(fixture("ncu_sol_details.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kernels.size(), 2u);
  const NcuKernelDetails& saxpy = r->kernels[0];
  EXPECT_EQ(saxpy.launch_index, 0);
  EXPECT_EQ(saxpy.name, "saxpy(int, float, const float *, float *)");
  EXPECT_EQ(saxpy.grid, (Dim3{262144, 1, 1}));
  EXPECT_EQ(saxpy.block, (Dim3{256, 1, 1}));
  ASSERT_EQ(saxpy.metrics.size(), 10u);
  const NcuDetailMetric* duration = nullptr;
  for (const auto& m : saxpy.metrics)
    if (m.name == "Duration") duration = &m;
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->section, "GPU Speed Of Light Throughput");
  EXPECT_EQ(duration->unit, "ns");
  EXPECT_EQ(duration->value, 231008.0);
  EXPECT_EQ(saxpy.metrics[0].name, "DRAM Frequency");
  EXPECT_DOUBLE_EQ(saxpy.metrics[0].value.value_or(0), 3199242739.07);

  ASSERT_EQ(saxpy.rules.size(), 1u);
  const NcuRuleResult& rule = saxpy.rules[0];
  EXPECT_EQ(rule.section, "SpeedOfLight");
  EXPECT_EQ(rule.rule, "SOLBottleneck");
  EXPECT_EQ(rule.type, NcuRuleType::kOptimization);
  EXPECT_EQ(rule.type_text, "OPT");
  EXPECT_EQ(rule.description.rfind("Memory is more heavily utilized than Compute", 0), 0u) << rule.description;
  EXPECT_NE(rule.description.find("(kernel fusion)"), std::string::npos);
  EXPECT_EQ(rule.speedup_type, "");
  EXPECT_FALSE(rule.estimated_speedup_pct);

  const NcuKernelDetails* strided = r->find(1);
  ASSERT_NE(strided, nullptr);
  EXPECT_EQ(strided->name, "strided(int, const float *, float *)");
  EXPECT_EQ(strided->grid, (Dim3{8192, 1, 1}));
  ASSERT_EQ(strided->rules.size(), 1u);
  EXPECT_EQ(strided->rules[0].rule, "SOLBottleneck");
  EXPECT_EQ(r->find(2), nullptr);
}

TEST(NcuDetailsCsv, FifteenColumnsAndRuleSpeedups) {
  const std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"";
  auto fifteen = parse_ncu_details_csv(
      header +
      "\n\"0\",\"1\",\"app\",\"h\",\"k\",\"1\",\"7\",\"(128, 1, 1)\",\"(10, 1, 1)\",\"0\",\"9.0\","
      "\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"byte\",\"1,610,642,688\"\n"
      "\"0\",\"1\",\"app\",\"h\",\"k\",\"1\",\"7\",\"(128, 1, 1)\",\"(10, 1, 1)\",\"0\",\"9.0\","
      "\"Command line profiler metrics\",\"launch__func_cache_config\",\"\",\"CachePreferNone\"\n");
  ASSERT_TRUE(fifteen.ok()) << fifteen.error().message;
  ASSERT_EQ(fifteen->kernels.size(), 1u);
  ASSERT_EQ(fifteen->kernels[0].metrics.size(), 2u);
  EXPECT_EQ(fifteen->kernels[0].metrics[0].value, 1610642688.0);
  EXPECT_FALSE(fifteen->kernels[0].metrics[1].value);
  EXPECT_EQ(fifteen->kernels[0].metrics[1].text, "CachePreferNone");
  EXPECT_TRUE(fifteen->kernels[0].rules.empty());

  auto twenty = parse_ncu_details_csv(
      header +
      ",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n"
      "\"3\",\"1\",\"app\",\"h\",\"k\",\"1\",\"7\",\"(128, 1, 1)\",\"(10, 1, 1)\",\"0\",\"9.0\","
      "\"LaunchStats\",\"\",\"\",\"\",\"LaunchConfiguration\",\"OPT\",\"The grid is small, \"\"10\"\" "
      "blocks.\",\"global\",\"92.42\"\n"
      "\"3\",\"1\",\"app\",\"h\",\"k\",\"1\",\"7\",\"(128, 1, 1)\",\"(10, 1, 1)\",\"0\",\"9.0\","
      "\"Occupancy\",\"\",\"\",\"\",\"Odd\",\"XYZ\",\"?\",\"\",\"n/a\"\n");
  ASSERT_TRUE(twenty.ok()) << twenty.error().message;
  ASSERT_EQ(twenty->kernels.size(), 1u);
  EXPECT_EQ(twenty->kernels[0].launch_index, 3);
  ASSERT_EQ(twenty->kernels[0].rules.size(), 2u);
  const NcuRuleResult& launch = twenty->kernels[0].rules[0];
  EXPECT_EQ(launch.type, NcuRuleType::kOptimization);
  EXPECT_EQ(launch.description, "The grid is small, \"10\" blocks.");
  EXPECT_EQ(launch.speedup_type, "global");
  EXPECT_DOUBLE_EQ(launch.estimated_speedup_pct.value_or(0), 92.42);
  EXPECT_FALSE(twenty->kernels[0].rules[1].type);
  EXPECT_EQ(twenty->kernels[0].rules[1].type_text, "XYZ");
  EXPECT_FALSE(twenty->kernels[0].rules[1].estimated_speedup_pct);
  EXPECT_TRUE(twenty->kernels[0].metrics.empty());
}

TEST(NcuDetailsCsv, RawPageIsNotTheDetailsPage) {
  auto r = parse_ncu_details_csv(fixture("ncu_nvtx_small_raw.csv"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTool);
  EXPECT_NE(r.error().message.find("Metric Value"), std::string::npos) << r.error().message;
}

TEST(NcuRuleType, RoundTrips) {
  for (auto t :
       {NcuRuleType::kOptimization, NcuRuleType::kWarning, NcuRuleType::kInfo, NcuRuleType::kError, NcuRuleType::kOk})
    EXPECT_EQ(ncu_rule_type_from_string(to_string(t)), t);
  EXPECT_FALSE(ncu_rule_type_from_string("opt"));
}

}  // namespace
}  // namespace kp::profile
