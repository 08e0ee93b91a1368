#include "build/ptxas_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace kp::build {
namespace {

// Logs captured with CUDA 13.0 nvcc -Xptxas -v for sm_90a; each .log sits beside its .cu.
std::string read_log(const std::string& relative) {
  std::ifstream in(std::string(KP_TEST_DATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing test data " << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

PtxasReport parse_file(const std::string& relative) {
  auto report = parse_ptxas_report(read_log(relative));
  EXPECT_TRUE(report.ok()) << relative << ": " << (report.ok() ? "" : report.error().message);
  return report.ok() ? *report : PtxasReport{};
}

TEST(PtxasReportTest, SimpleKernel) {
  PtxasReport r = parse_file("ptxas/simple.log");
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.mangled_name, "_Z10vector_addPfPKfS1_i");
  EXPECT_EQ(k.name, "vector_add(float*, float const*, float const*, int)");
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_TRUE(k.is_entry);
  EXPECT_EQ(k.registers, 12);
  EXPECT_EQ(k.register_limit, 0);
  EXPECT_EQ(k.barriers, 0);
  EXPECT_EQ(k.shared_bytes, 0);
  EXPECT_EQ(k.stack_frame_bytes, 0);
  EXPECT_EQ(k.cumulative_stack_bytes, 0);
  EXPECT_EQ(k.gmem_bytes, 0);
  EXPECT_FALSE(k.has_spills());
  EXPECT_TRUE(r.device_functions.empty());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(PtxasReportTest, SpillsUnderMaxrregcount) {
  PtxasReport r = parse_file("ptxas/spills.log");
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.name, "pressure(float const*, float*)");
  EXPECT_EQ(k.registers, 24);
  EXPECT_EQ(k.register_limit, 24);
  EXPECT_EQ(k.stack_frame_bytes, 1024);
  EXPECT_EQ(k.spill_store_bytes, 2212);
  EXPECT_EQ(k.spill_load_bytes, 2324);
  EXPECT_EQ(k.cumulative_stack_bytes, 1024);
  EXPECT_TRUE(k.has_spills());
}

TEST(PtxasReportTest, DynamicallyIndexedLocalArrayIsStackNotSpill) {
  PtxasReport r = parse_file("ptxas/local_array.log");
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.name, "scatter_local(int const*, float const*, float*)");
  EXPECT_EQ(k.registers, 20);
  EXPECT_EQ(k.stack_frame_bytes, 256);
  EXPECT_EQ(k.cumulative_stack_bytes, 256);
  EXPECT_FALSE(k.has_spills());
}

TEST(PtxasReportTest, StaticSharedMemoryAndBarriers) {
  PtxasReport r = parse_file("ptxas/smem_barriers.log");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].registers, 12);
  EXPECT_EQ(r.kernels[0].barriers, 1);
  EXPECT_EQ(r.kernels[0].shared_bytes, 1024);
}

TEST(PtxasReportTest, TwoKernelsInLogOrder) {
  PtxasReport r = parse_file("ptxas/two_kernels.log");
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "shift(float*, float, int)");
  EXPECT_EQ(r.kernels[1].name, "scale(float*, float, int)");
  EXPECT_EQ(r.kernels[0].registers, 8);
  EXPECT_EQ(r.kernels[1].registers, 8);
}

TEST(PtxasReportTest, TemplatedKernelsDemangleToTheTemplate) {
  PtxasReport r = parse_file("ptxas/templated.log");
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].mangled_name, "_Z10tiled_copyIdLi128EEvPKT_PS0_i");
  EXPECT_EQ(r.kernels[0].name, "void tiled_copy<double, 128>(double const*, double*, int)");
  EXPECT_EQ(r.kernels[0].registers, 12);
  EXPECT_EQ(r.kernels[1].name, "void tiled_copy<float, 256>(float const*, float*, int)");
  EXPECT_EQ(r.kernels[1].registers, 10);
  EXPECT_EQ(r.kernels[1].shared_bytes, 1024);
  EXPECT_EQ(r.kernels[1].barriers, 1);
}

TEST(PtxasReportTest, DeviceFunctionsKeptApartFromKernels) {
  PtxasReport r = parse_file("ptxas/device_function.log");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, "walk(float const*, float*, int)");
  EXPECT_EQ(r.kernels[0].registers, 24);
  EXPECT_EQ(r.kernels[0].gmem_bytes, 16);
  ASSERT_EQ(r.device_functions.size(), 1u);
  const KernelResources& f = r.device_functions[0];
  EXPECT_FALSE(f.is_entry);
  EXPECT_EQ(f.name, "depth_sum(float const*, int)");
  EXPECT_EQ(f.arch, "sm_90a");
  EXPECT_EQ(f.registers, 0);  // ptxas prints no "Used" line for it
  EXPECT_EQ(f.stack_frame_bytes, 16);
  EXPECT_EQ(f.spill_store_bytes, 16);
  EXPECT_EQ(f.spill_load_bytes, 16);
  EXPECT_EQ(f.gmem_bytes, 16);
}

TEST(PtxasReportTest, OneKernelPerArchitecture) {
  PtxasReport r = parse_file("ptxas/multi_arch.log");  // sm_80 still prints "376 bytes cmem[0]"
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].arch, "sm_80");
  EXPECT_EQ(r.kernels[1].arch, "sm_90a");
  EXPECT_EQ(r.kernels[0].mangled_name, r.kernels[1].mangled_name);
  EXPECT_EQ(r.kernels[0].registers, 10);
  EXPECT_EQ(r.kernels[0].shared_bytes, 0);
}

TEST(PtxasReportTest, Warnings) {
  PtxasReport r = parse_file("ptxas/launch_bounds_warning.log");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "Value of minnctapersm for entry _Z7boundedPf is out of range. minnctapersm will be ignored");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].registers, 8);
}

TEST(PtxasReportTest, LinesOfOtherToolsAreSkipped) {
  PtxasReport warned = parse_file("nvcc/unused_variable.log");  // front-end warnings first
  ASSERT_EQ(warned.kernels.size(), 1u);
  EXPECT_EQ(warned.kernels[0].name, "copy(float*, float const*, int)");
  EXPECT_EQ(warned.kernels[0].registers, 10);

  PtxasReport rejected = parse_file("nvcc/too_much_smem.log");  // a ptxas error line first
  ASSERT_EQ(rejected.kernels.size(), 1u);
  EXPECT_EQ(rejected.kernels[0].shared_bytes, 262144);
  EXPECT_TRUE(rejected.warnings.empty());

  PtxasReport linked = parse_file("nvcc/undefined_reference.log");  // ld lines after it
  ASSERT_EQ(linked.kernels.size(), 1u);
  EXPECT_EQ(linked.kernels[0].name, "fill(float*, int)");
}

TEST(PtxasReportTest, NoReportIsAnEmptyReport) {
  for (const char* text :
       {"", "\n\n", "undefined_identifier.cu(4): error: identifier \"factor\" is undefined\n"}) {
    auto r = parse_ptxas_report(text);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->kernels.empty());
    EXPECT_TRUE(r->device_functions.empty());
    EXPECT_TRUE(r->warnings.empty());
  }
  EXPECT_TRUE(parse_file("nvcc/undefined_identifier.log").kernels.empty());
}

TEST(PtxasReportTest, Cuda12UsedLineAndCrLf) {
  auto r = parse_ptxas_report(
      "ptxas info    : 8 bytes gmem\r\n"
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90'\r\n"
      "ptxas info    : Function properties for gemm\r\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n"
      "ptxas info    : Used 64 registers, 32768 bytes smem, 368 bytes cmem[0]\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].name, "gemm");  // extern "C": nothing to demangle
  EXPECT_EQ(r->kernels[0].arch, "sm_90");
  EXPECT_EQ(r->kernels[0].registers, 64);
  EXPECT_EQ(r->kernels[0].barriers, 0);
  EXPECT_EQ(r->kernels[0].shared_bytes, 32768);
  EXPECT_EQ(r->kernels[0].gmem_bytes, 8);
}

TEST(PtxasReportTest, InconsistentReportsAreErrors) {
  auto orphan_frame = parse_ptxas_report(
      "ptxas info    : 0 bytes gmem\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n");
  ASSERT_FALSE(orphan_frame.ok());
  EXPECT_EQ(orphan_frame.error().code, ErrorCode::kTool);
  EXPECT_NE(orphan_frame.error().message.find("line 2"), std::string::npos);

  auto orphan_used = parse_ptxas_report("ptxas info    : Used 10 registers, used 0 barriers\n");
  ASSERT_FALSE(orphan_used.ok());
  EXPECT_EQ(orphan_used.error().code, ErrorCode::kTool);

  std::string twice = read_log("ptxas/simple.log") + "ptxas info    : Used 12 registers, used 0 barriers\n";
  EXPECT_FALSE(parse_ptxas_report(twice).ok());

  auto huge = parse_ptxas_report(
      "ptxas info    : Function properties for f\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 99999999999 registers\n");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace kp::build
