// GPU tier: tests/data/trace/traced_app.cu, built with nvcc, runs under libkp_trace.so (from
// the build directory); its trace file goes through parse_trace. Skipped without nvcc or a GPU.
#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "profile/trace/trace_parser.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMemsetBytes = 1 << 20;  // as in traced_app.cu
constexpr uint64_t kCopyBytes = 256 << 10;
const char* const kKernelNames[] = {"scale_kernel(float*, int, float)", "void offset_kernel<3>(float*, int)",
                                    "square_kernel(float*, int)"};
const char* const kWarmup = "warmup_kernel(int*)";

class TraceGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::nvcc_missing() || testing::gpu_missing()) return;
    scratch_ = new sys::TempDir(sys::TempDir::create("kp-trace-gpu-").value());
    sys::Command c;
    c.argv = {"nvcc",
              "-std=c++17",
              "-O2",
              "-gencode=arch=compute_80,code=compute_80",
              "-I" + (testing::source_dir() / "src").string(),
              (testing::test_data_dir() / "trace" / "traced_app.cu").string(),
              "-o",
              (scratch_->path() / "traced_app").string(),
              "-ldl"};
    c.timeout = std::chrono::seconds(300);
    auto r = sys::run(c);
    if (!r.ok()) {
      build_error_ = r.error().message;
    } else if (!r->success()) {
      build_error_ = "nvcc failed on traced_app.cu: " + r->stderr_text;
    }
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
    ASSERT_TRUE(build_error_.empty()) << build_error_;
    ASSERT_TRUE(fs::exists(library())) << library() << " is missing: build the kp_trace target";
  }
  static fs::path library() { return testing::binary_dir() / "libkp_trace.so"; }

  // Runs traced_app with args under the library; returns the raw trace text.
  static std::string run_traced(const std::vector<std::string>& args, const std::string& name) {
    fs::path out = scratch_->path() / (name + ".jsonl");
    sys::Command c;
    c.argv = {(scratch_->path() / "traced_app").string()};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.env_set = trace_environment(library(), out);
    c.timeout = std::chrono::seconds(120);
    auto r = sys::run(c);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return "";
    EXPECT_TRUE(r->success()) << "traced_app " << join(args, " ") << " exited " << r->exit_code << ": "
                              << r->stderr_text;
    EXPECT_NE(r->stdout_text.find("traced_app: ok"), std::string::npos) << r->stdout_text;
    auto text = read_file(out.string());
    EXPECT_TRUE(text.ok()) << "no trace file " << out << ": " << r->stderr_text;
    return text.ok() ? *text : "";
  }

  static int count_named(const TraceCall& c, const std::string& name) {
    return static_cast<int>(
        std::count_if(c.kernels.begin(), c.kernels.end(), [&](const TraceKernel& k) { return k.name == name; }));
  }

  static sys::TempDir* scratch_;
  static std::string build_error_;
};
sys::TempDir* TraceGpu::scratch_ = nullptr;
std::string TraceGpu::build_error_;

TEST_F(TraceGpu, ScopedCallsHoldTheirKernelsCopiesAndStreams) {
  std::string text = run_traced({}, "scoped");
  auto trace = parse_trace(text);
  ASSERT_TRUE(trace.ok()) << trace.error().message << "\n" << text.substr(0, 2000);
  ASSERT_TRUE(trace->error.empty()) << trace->error;
  EXPECT_TRUE(trace->finished) << "no footer: the library's atexit handler did not run";
  EXPECT_EQ(trace->dropped_records, 0u);
  ASSERT_EQ(trace->calls.size(), 3u) << text.substr(0, 2000);
  for (size_t i = 0; i < trace->calls.size(); ++i) {
    const TraceCall& c = trace->calls[i];
    SCOPED_TRACE("call " + std::to_string(i));
    EXPECT_EQ(c.index, static_cast<int>(i));
    ASSERT_EQ(c.kernels.size(), 3u);
    for (const char* name : kKernelNames) EXPECT_EQ(count_named(c, name), 1) << name;
    EXPECT_EQ(count_named(c, kWarmup), 0);
    for (const auto& k : c.kernels) {
      EXPECT_EQ(k.mangled_name.rfind("_Z", 0), 0u) << k.mangled_name;
      EXPECT_EQ(k.block[0], 256);
      EXPECT_EQ(k.grid[0], 256);
      EXPECT_GT(k.end_ns, k.start_ns);
    }
    for (size_t j = 1; j < c.kernels.size(); ++j) EXPECT_LE(c.kernels[j - 1].start_ns, c.kernels[j].start_ns);
    ASSERT_EQ(c.copies.size(), 2u);
    auto memset = std::find_if(c.copies.begin(), c.copies.end(), [](const TraceCopy& x) { return x.kind == "memset"; });
    auto memcpy = std::find_if(c.copies.begin(), c.copies.end(), [](const TraceCopy& x) { return x.kind == "memcpy"; });
    ASSERT_NE(memset, c.copies.end());
    ASSERT_NE(memcpy, c.copies.end());
    EXPECT_EQ(memset->bytes, kMemsetBytes);
    EXPECT_EQ(memcpy->bytes, kCopyBytes);
    EXPECT_EQ(memcpy->direction, "DtoH");
    EXPECT_EQ(c.streams, 2);
    EXPECT_EQ(c.launch_api_calls, 3u);
    EXPECT_GT(c.span_s, 0);
    EXPECT_GT(c.busy_s, 0);
    EXPECT_GE(c.gaps_s, 0);
    EXPECT_LE(c.busy_s, c.span_s + 1e-12);
  }
  // The warm-up kernel ran before the first begin: it is outside every call.
  EXPECT_EQ(count_named(trace->outside, kWarmup), 1);

  TraceSummary s = summarize(*trace);
  EXPECT_EQ(s.calls, 3);
  EXPECT_DOUBLE_EQ(s.mean_kernels_per_call, 3.0);
  EXPECT_EQ(s.memcpy_bytes["DtoH"], 3 * kCopyBytes);
  EXPECT_EQ(s.memset_bytes, 3 * kMemsetBytes);
  EXPECT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.kernel_stats.size(), 3u);
}

TEST_F(TraceGpu, UnscopedProgramStillWritesAValidTrace) {
  std::string text = run_traced({"--no-scope"}, "unscoped");
  auto trace = parse_trace(text);
  ASSERT_TRUE(trace.ok()) << trace.error().message << "\n" << text.substr(0, 2000);
  ASSERT_TRUE(trace->error.empty()) << trace->error;
  EXPECT_TRUE(trace->finished);
  EXPECT_TRUE(trace->calls.empty());
  EXPECT_EQ(count_named(trace->outside, kWarmup), 1);
  for (const char* name : kKernelNames) EXPECT_EQ(count_named(trace->outside, name), 3) << name;
  EXPECT_EQ(trace->outside.copies.size(), 6u);
  EXPECT_GE(trace->outside.launch_api_calls, 10u);
}

}  // namespace
}  // namespace kp::profile
