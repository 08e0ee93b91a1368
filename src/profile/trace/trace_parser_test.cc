#include "profile/trace/trace_parser.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/paths.h"

#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

std::string kernel_line(int call, const std::string& name, uint32_t stream, uint64_t start, uint64_t end,
                        uint32_t correlation = 1) {
  return "{\"type\":\"kernel\",\"call\":" + std::to_string(call) + ",\"name\":\"" + name +
         "\",\"stream\":" + std::to_string(stream) +
         ",\"grid\":[256,1,1],\"block\":[128,2,1],\"registers\":32,\"static_smem\":1024,\"dynamic_smem\":0,"
         "\"start\":" +
         std::to_string(start) + ",\"end\":" + std::to_string(end) + ",\"correlation\":" + std::to_string(correlation) +
         ",\"device\":0}\n";
}

std::string copy_line(int call, const std::string& type, const std::string& direction, uint64_t bytes, uint32_t stream,
                      uint64_t start, uint64_t end) {
  std::string dir = type == "memcpy" ? ",\"direction\":\"" + direction + "\"" : "";
  return "{\"type\":\"" + type + "\",\"call\":" + std::to_string(call) + dir + ",\"bytes\":" + std::to_string(bytes) +
         ",\"stream\":" + std::to_string(stream) + ",\"start\":" + std::to_string(start) +
         ",\"end\":" + std::to_string(end) + ",\"correlation\":9}\n";
}

std::string api_line(int call, const std::string& domain, const std::string& name, uint64_t count, bool launch) {
  return "{\"type\":\"api\",\"call\":" + std::to_string(call) + ",\"domain\":\"" + domain +
         "\",\"cbid\":211,\"name\":\"" + name + "\",\"count\":" + std::to_string(count) +
         ",\"total_ns\":5000,\"launch\":" + (launch ? "true" : "false") + "}\n";
}

// Two calls as libkp_trace writes them: records out of time order, a warm-up kernel outside,
// API totals split over two lines, a footer.
std::string two_calls() {
  std::string s = "{\"type\":\"header\",\"version\":1,\"pid\":42,\"cupti_api_version\":130001}\n";
  s += kernel_line(-1, "_Z13warmup_kernelPi", 7, 100, 200);
  s += "{\"type\":\"begin\",\"call\":0,\"t\":1000}\n";
  s += kernel_line(0, "_Z13square_kernelPfi", 8, 1500, 1700);
  s += kernel_line(0, "_Z12scale_kernelPfif", 7, 1100, 1300);
  s += kernel_line(0, "_Z13offset_kernelILi3EEvPfi", 7, 1300, 1400);
  s += copy_line(0, "memcpy", "DtoH", 4096, 7, 1800, 2000);
  s += copy_line(0, "memset", "", 1024, 7, 1400, 1450);
  s += api_line(0, "runtime", "cudaLaunchKernel_v7000", 2, true);
  s += api_line(0, "runtime", "cudaLaunchKernel_v7000", 1, true);
  s += api_line(0, "driver", "cuLaunchKernel", 3, true);
  s += api_line(0, "runtime", "cudaMemsetAsync_v3020", 1, false);
  s += "{\"type\":\"end\",\"call\":0,\"t\":2100}\n";
  s += "{\"type\":\"begin\",\"call\":1,\"t\":3000}\n";
  s += kernel_line(1, "_Z12scale_kernelPfif", 7, 3100, 3200);
  s += kernel_line(1, "_Z12scale_kernelPfif", 7, 3500, 3600);
  s += api_line(1, "driver", "cuLaunchKernel", 2, true);
  s += "{\"type\":\"end\",\"call\":1,\"t\":3700}\n";
  s += api_line(-1, "runtime", "cudaLaunchKernel_v7000", 1, true);
  s += "{\"type\":\"footer\",\"dropped\":5,\"records\":40}\n";
  return s;
}

TEST(TraceParser, GroupsRecordsByCallSortedByStartAndDemangled) {
  auto t = parse_trace(two_calls());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->calls.size(), 2u);
  const TraceCall& c0 = t->calls[0];
  EXPECT_EQ(c0.index, 0);
  ASSERT_EQ(c0.kernels.size(), 3u);
  EXPECT_EQ(c0.kernels[0].name, "scale_kernel(float*, int, float)");
  EXPECT_EQ(c0.kernels[0].mangled_name, "_Z12scale_kernelPfif");
  EXPECT_EQ(c0.kernels[1].name, "void offset_kernel<3>(float*, int)");
  EXPECT_EQ(c0.kernels[2].name, "square_kernel(float*, int)");
  EXPECT_EQ(c0.kernels[2].stream, 8u);
  EXPECT_EQ(c0.kernels[0].grid, (std::array<int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(c0.kernels[0].block, (std::array<int64_t, 3>{128, 2, 1}));
  EXPECT_EQ(c0.kernels[0].registers_per_thread, 32);
  EXPECT_EQ(c0.kernels[0].static_shared_bytes, 1024);
  ASSERT_EQ(c0.copies.size(), 2u);
  EXPECT_EQ(c0.copies[0].kind, "memset");
  EXPECT_EQ(c0.copies[0].bytes, 1024u);
  EXPECT_EQ(c0.copies[1].kind, "memcpy");
  EXPECT_EQ(c0.copies[1].direction, "DtoH");
  EXPECT_EQ(c0.copies[1].bytes, 4096u);
  // The runtime's 3 launches also appear as 3 driver launches: 3, not 6; cudaMemsetAsync is no launch.
  EXPECT_EQ(c0.launch_api_calls, 3u);
  EXPECT_EQ(t->calls[1].launch_api_calls, 2u);  // driver-only launches count too
  // The warm-up kernel stays outside any call.
  ASSERT_EQ(t->outside.kernels.size(), 1u);
  EXPECT_EQ(t->outside.kernels[0].name, "warmup_kernel(int*)");
  EXPECT_EQ(t->outside.index, -1);
  EXPECT_EQ(t->outside.launch_api_calls, 1u);
  EXPECT_EQ(t->dropped_records, 5u);
  EXPECT_TRUE(t->finished);
  EXPECT_TRUE(t->error.empty());
}

// A real trace: libkp_trace.so injected into tests/data/trace/traced_app.cu on the H200.
TEST(TraceParser, ReadsTheTraceCapturedOnTheH200) {
  auto text = read_file((testing::test_data_dir() / "trace" / "traced_app_h200.jsonl").string());
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto t = parse_trace(*text);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->error.empty()) << t->error;
  EXPECT_TRUE(t->finished);
  EXPECT_EQ(t->dropped_records, 0u);
  ASSERT_EQ(t->calls.size(), 3u);
  for (const auto& c : t->calls) {
    ASSERT_EQ(c.kernels.size(), 3u);
    EXPECT_EQ(c.kernels[0].name, "scale_kernel(float*, int, float)");
    EXPECT_EQ(c.streams, 2);
    EXPECT_GE(c.gaps_s, 0.0);
    EXPECT_LE(c.busy_s, c.span_s);
    ASSERT_FALSE(c.copies.empty());
  }
  bool warmup_outside = false;
  for (const auto& k : t->outside.kernels) warmup_outside |= k.name == "warmup_kernel(int*)";
  EXPECT_TRUE(warmup_outside);
}

TEST(TraceParser, FillsDerivedTimesOfEachCall) {
  auto t = parse_trace(two_calls());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const TraceCall& c0 = t->calls[0];
  // Activity 1100..2000: busy [1100,1450] + [1500,1700] + [1800,2000] = 350 + 200 + 200 ns.
  EXPECT_NEAR(c0.span_s, 900e-9, 1e-15);
  EXPECT_NEAR(c0.busy_s, 750e-9, 1e-15);
  EXPECT_NEAR(c0.gaps_s, 150e-9, 1e-15);
  EXPECT_EQ(c0.streams, 2);
  EXPECT_EQ(t->calls[1].streams, 1);
}

TEST(TraceParser, MergesRecordsOfARepeatedCallIndex) {
  std::string s = kernel_line(4, "_Z12scale_kernelPfif", 7, 100, 200) +
                  kernel_line(2, "_Z12scale_kernelPfif", 7, 300, 400) +
                  kernel_line(4, "_Z12scale_kernelPfif", 7, 50, 60);
  auto t = parse_trace(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->calls.size(), 2u);
  EXPECT_EQ(t->calls[0].index, 2);
  EXPECT_EQ(t->calls[1].index, 4);
  ASSERT_EQ(t->calls[1].kernels.size(), 2u);
  EXPECT_EQ(t->calls[1].kernels[0].start_ns, 50u);
}

TEST(TraceParser, KeepsANameThatDoesNotDemangle) {
  auto t = parse_trace(kernel_line(0, "my_c_kernel", 7, 1, 2));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->calls[0].kernels[0].name, "my_c_kernel");
  EXPECT_EQ(t->calls[0].kernels[0].mangled_name, "my_c_kernel");
}

TEST(TraceParser, ReportsErrorRecordsAndAMissingFooter) {
  std::string s =
      "{\"type\":\"header\",\"version\":1,\"pid\":1,\"cupti_api_version\":1}\n"
      "{\"type\":\"error\",\"error\":\"CUPTI already has a subscriber\"}\n"
      "{\"type\":\"error\",\"error\":\"second\"}\n";
  auto t = parse_trace(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->error, "CUPTI already has a subscriber; second");
  EXPECT_FALSE(t->finished);
  EXPECT_TRUE(t->calls.empty());
}

TEST(TraceParser, CountsIncompleteRecordsAndLeavesThemOut) {
  std::string s = kernel_line(0, "_Z12scale_kernelPfif", 7, 100, 200) +
                  "{\"type\":\"kernel\",\"call\":0,\"name\":\"k\",\"stream\":7,\"grid\":[1,1,1],\"block\":[1,1,1],"
                  "\"registers\":8,\"static_smem\":0,\"dynamic_smem\":0,\"start\":0,\"end\":0,"
                  "\"correlation\":3,\"device\":0,\"incomplete\":true}\n" +
                  copy_line(0, "memset", "", 64, 7, 500, 0);
  auto t = parse_trace(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->incomplete_records, 2u);
  ASSERT_EQ(t->calls.size(), 1u);
  EXPECT_EQ(t->calls[0].kernels.size(), 1u);
  EXPECT_TRUE(t->calls[0].copies.empty());
}

TEST(TraceParser, SkipsBlankLinesUnknownTypesAndACutOffLastLine) {
  std::string s = "\n{\"type\":\"sync\",\"call\":0}\n" + kernel_line(0, "_Z12scale_kernelPfif", 7, 1, 2) +
                  "{\"type\":\"kernel\",\"call\":0,\"na";
  auto t = parse_trace(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->calls.size(), 1u);
  EXPECT_EQ(t->calls[0].kernels.size(), 1u);
}

TEST(TraceParser, RejectsALineThatIsNotJsonNamingItsNumber) {
  std::string s = kernel_line(0, "_Z12scale_kernelPfif", 7, 1, 2) + "garbage here\n" +
                  kernel_line(0, "_Z12scale_kernelPfif", 7, 3, 4);
  auto t = parse_trace(s);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kTool);
  EXPECT_NE(t.error().message.find("trace line 2"), std::string::npos) << t.error().message;
}

TEST(TraceParser, RejectsAMissingOrMistypedFieldNamingIt) {
  auto missing = parse_trace(
      "{\"type\":\"header\"}\n{\"type\":\"memcpy\",\"call\":0,\"direction\":\"HtoD\","
      "\"stream\":1,\"start\":1,\"end\":2}\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kTool);
  EXPECT_NE(missing.error().message.find("trace line 2"), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("\"bytes\""), std::string::npos) << missing.error().message;

  auto mistyped = parse_trace(
      "{\"type\":\"kernel\",\"call\":0,\"name\":\"k\",\"stream\":1,\"grid\":[1,1],"
      "\"block\":[1,1,1],\"registers\":8,\"static_smem\":0,\"dynamic_smem\":0,"
      "\"start\":1,\"end\":2,\"correlation\":3}\n");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.error().message.find("\"grid\""), std::string::npos) << mistyped.error().message;

  auto no_type = parse_trace("{\"call\":0}\n");
  ASSERT_FALSE(no_type.ok());
  EXPECT_NE(no_type.error().message.find("trace line 1"), std::string::npos);
}

TEST(TraceSummarizeCall, WorkedExampleOfTheHeader) {
  TraceCall c;
  c.kernels.resize(2);
  c.kernels[0].start_ns = 0, c.kernels[0].end_ns = 10, c.kernels[0].stream = 7;
  c.kernels[1].start_ns = 5, c.kernels[1].end_ns = 20, c.kernels[1].stream = 7;
  c.copies.resize(1);
  c.copies[0].start_ns = 30, c.copies[0].end_ns = 40, c.copies[0].stream = 8;
  summarize_call(c);
  EXPECT_NEAR(c.span_s, 40e-9, 1e-18);
  EXPECT_NEAR(c.busy_s, 30e-9, 1e-18);
  EXPECT_NEAR(c.gaps_s, 10e-9, 1e-18);
  EXPECT_EQ(c.streams, 2);
}

TEST(TraceSummarizeCall, NestedIntervalsCountOnce) {
  TraceCall c;
  c.kernels.resize(3);
  c.kernels[0].start_ns = 100, c.kernels[0].end_ns = 1000;
  c.kernels[1].start_ns = 200, c.kernels[1].end_ns = 300;
  c.kernels[2].start_ns = 1000, c.kernels[2].end_ns = 1100;
  summarize_call(c);
  EXPECT_NEAR(c.busy_s, 1000e-9, 1e-18);
  EXPECT_NEAR(c.gaps_s, 0, 1e-18);
  EXPECT_EQ(c.streams, 1);
}

TEST(TraceSummarizeCall, EmptyCallIsAllZeros) {
  TraceCall c;
  summarize_call(c);
  EXPECT_EQ(c.span_s, 0);
  EXPECT_EQ(c.busy_s, 0);
  EXPECT_EQ(c.gaps_s, 0);
  EXPECT_EQ(c.streams, 0);
}

TEST(TraceSummary, AggregatesOverCalls) {
  // Three calls with spans 10 us, 30 us and 20 us; two 1 us kernels and two 12 us kernels. (A
  // start of 0 would mean an incomplete record.)
  std::string s = kernel_line(-1, "_Z13warmup_kernelPi", 7, 1, 2);
  s += kernel_line(0, "_Z12scale_kernelPfif", 7, 1000, 2000) + copy_line(0, "memcpy", "HtoD", 100, 9, 10000, 11000);
  s += kernel_line(1, "_Z13square_kernelPfi", 8, 100000, 112000) +
       kernel_line(1, "_Z13square_kernelPfi", 8, 118000, 130000);
  s += kernel_line(2, "_Z12scale_kernelPfif", 7, 200000, 201000) +
       copy_line(2, "memcpy", "DtoH", 7, 7, 215000, 220000) + copy_line(2, "memcpy", "HtoD", 50, 7, 219000, 220000) +
       copy_line(2, "memset", "", 64, 7, 201000, 202000);
  s += api_line(0, "runtime", "cudaLaunchKernel_v7000", 1, true) +
       api_line(1, "runtime", "cudaLaunchKernel_v7000", 2, true) +
       api_line(2, "runtime", "cudaLaunchKernel_v7000", 1, true);
  auto t = parse_trace(s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  TraceSummary sum = summarize(*t);
  EXPECT_EQ(sum.calls, 3);
  EXPECT_NEAR(sum.median_span_s, 20e-6, 1e-12);
  EXPECT_NEAR(sum.mean_kernels_per_call, 4.0 / 3.0, 1e-12);
  EXPECT_NEAR(sum.mean_launch_api_calls, 4.0 / 3.0, 1e-12);
  EXPECT_EQ(sum.kernels, 4u);
  EXPECT_EQ(sum.short_kernels, 2u);  // the two 1 us scale_kernel runs
  EXPECT_EQ(sum.memcpy_bytes.at("HtoD"), 150u);
  EXPECT_EQ(sum.memcpy_bytes.at("DtoH"), 7u);
  EXPECT_EQ(sum.memset_bytes, 64u);
  // Call 2: busy until 202000, idle until 215000: 13 us, the largest single gap.
  EXPECT_NEAR(sum.largest_gap_s, 13e-6, 1e-12);
  ASSERT_EQ(sum.kernel_stats.size(), 2u);
  EXPECT_EQ(sum.kernel_stats[0].name, "square_kernel(float*, int)");
  EXPECT_EQ(sum.kernel_stats[0].count, 2u);
  EXPECT_NEAR(sum.kernel_stats[0].total_s, 24e-6, 1e-12);
  EXPECT_EQ(sum.kernel_stats[1].count, 2u);
  EXPECT_EQ(sum.streams, (std::vector<uint32_t>{7, 8, 9}));
  EXPECT_EQ(sum.outside_kernels, 1u);

  nlohmann::json j = to_json(sum);
  EXPECT_EQ(j["calls"], 3);
  EXPECT_EQ(j["memcpy_bytes"]["HtoD"], 150);
  EXPECT_EQ(j["kernel_stats"][0]["name"], "square_kernel(float*, int)");
  EXPECT_EQ(j["short_kernels"], 2);
  EXPECT_FALSE(j.contains("error"));

  std::string text = describe(sum);
  EXPECT_NE(text.find("3 calls: median span 20.0 us"), std::string::npos) << text;
  EXPECT_NE(text.find("largest 13.0 us"), std::string::npos) << text;
  EXPECT_NE(text.find("2 of 4 kernels under 10.0 us"), std::string::npos) << text;
  EXPECT_NE(text.find("memcpy HtoD 150 B"), std::string::npos) << text;
  EXPECT_NE(text.find("top kernels: square_kernel(float*, int) x2 24.0 us"), std::string::npos) << text;
}

TEST(TraceSummary, EmptyTraceHasNoCallsAndCarriesTheError) {
  Trace t;
  t.error = "CUPTI already has a subscriber";
  TraceSummary s = summarize(t);
  EXPECT_EQ(s.calls, 0);
  EXPECT_EQ(s.median_span_s, 0);
  EXPECT_EQ(s.mean_kernels_per_call, 0);
  EXPECT_EQ(to_json(s)["error"], "CUPTI already has a subscriber");
  EXPECT_NE(describe(s).find("no calls traced"), std::string::npos) << describe(s);
  EXPECT_NE(describe(s).find("CUPTI already has a subscriber"), std::string::npos) << describe(s);
}

TEST(TraceEnvironment, NamesTheLibraryAndTheOutputWithAbsolutePaths) {
  auto env = trace_environment("/opt/kp/libkp_trace.so", "rel/trace.jsonl");
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0].first, "CUDA_INJECTION64_PATH");
  EXPECT_EQ(env[0].second, "/opt/kp/libkp_trace.so");
  EXPECT_EQ(env[1].first, "KP_TRACE_OUT");
  EXPECT_EQ(fs::path(env[1].second), (fs::current_path() / "rel/trace.jsonl").lexically_normal());
}

}  // namespace
}  // namespace kp::profile
