// gpu tier: the real kp-worker's calibrate op through WorkerClient. Every measured ceiling must
// lie within [0.4, 1.15] of this GPU's datasheet figure (a kernel that was optimized away
// measures far above it, a broken one far below), in well under 20 s.
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "profile/calibration.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"

namespace kp::profile {
namespace {

TEST(CalibrationGpu, MeasuredCeilingsAreNearTheDatasheet) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  auto scratch = sys::TempDir::create("kp-cal-gpu-");
  ASSERT_TRUE(scratch.ok());
  eval::WorkerOptions o;
  o.worker_path = testing::worker_binary();
  o.scratch_dir = scratch->path();
  eval::WorkerClient worker(o);
  auto dev = worker.device();
  ASSERT_TRUE(dev.ok()) << dev.error().message;

  const auto t0 = std::chrono::steady_clock::now();
  auto c = calibrate(worker, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_LT(seconds, 20) << "calibration took too long";
  EXPECT_EQ(c->source, CeilingSource::kCalibrated);
  EXPECT_EQ(c->gpu, dev->name);
  EXPECT_FALSE(c->measured_at.empty());
  EXPECT_GT(c->sm_clock_mhz, 0);

  const Ceilings sheet = datasheet_ceilings(*dev);
  for (const CeilingField& f : ceiling_fields()) {
    const double measured = (*c).*f.member, expected = sheet.*f.member;
    const std::string method = c->method.count(f.key) ? c->method.at(f.key) : "(no method)";
    EXPECT_GT(measured, 0) << f.key << ": " << method;
    if (expected <= 0) continue;  // the L2, and units the product lacks
    const double ratio = measured / expected;
    EXPECT_GE(ratio, 0.4) << f.key << " " << measured << " vs datasheet " << expected << ": " << method;
    EXPECT_LE(ratio, 1.15) << f.key << " " << measured << " vs datasheet " << expected << ": " << method;
    std::printf("%-18s %10.4g  datasheet %10.4g  ratio %.2f  %s\n", f.key, measured, expected, ratio, method.c_str());
  }
  EXPECT_GT(c->l2_bytes_per_s, c->dram_bytes_per_s) << "L2 hits must be faster than DRAM";

  // The worker is still there for the next request, and a saved calibration is what profile uses.
  EXPECT_TRUE(worker.device().ok());
  CalibrationStore store(scratch->path() / "calibration");
  ASSERT_TRUE(store.save(*dev, *c).ok());
  std::string warning;
  Ceilings used = resolve_ceilings(store, *dev, &warning);
  EXPECT_EQ(used.source, CeilingSource::kCalibrated);
  EXPECT_EQ(warning, "");
  EXPECT_DOUBLE_EQ(used.dram_bytes_per_s, c->dram_bytes_per_s);
  worker.stop();
}

TEST(CalibrationGpu, QuickCalibrationMeasuresEveryCeiling) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  auto scratch = sys::TempDir::create("kp-cal-gpu-");
  ASSERT_TRUE(scratch.ok());
  eval::WorkerOptions o;
  o.worker_path = testing::worker_binary();
  o.scratch_dir = scratch->path();
  eval::WorkerClient worker(o);
  auto c = calibrate(worker, 120, CalibrationDepth::kQuick);
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (const CeilingField& f : ceiling_fields()) EXPECT_GT((*c).*f.member, 0) << f.key << ": " << c->method[f.key];
  // The own mma.sync kernels ran (the build has sm_80+ code) and cuBLAS was found.
  EXPECT_EQ(c->method["tensor_bf16_flops"].find("not measured"), std::string::npos) << c->method["tensor_bf16_flops"];
  worker.stop();
}

}  // namespace
}  // namespace kp::profile
