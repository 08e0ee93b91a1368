// e2e tier: `kernelpro calibrate` as a user runs it. Without a GPU it must say why and exit 3;
// with the fake calibrating worker (tests/data/calibration/fake_worker.sh) the store, the table
// and the JSON are checked on any machine; with a GPU the real worker calibrates.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile/calibration.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::CliRun;

class CalibrateE2e : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-e2e-cal-").value()); }
  CliRun kernelpro(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    args.insert(args.begin(), "calibrate");
    env.insert(env.begin(), {{"XDG_DATA_HOME", (dir_->path() / "data").string()},
                             {"XDG_CACHE_HOME", (dir_->path() / "cache").string()}});
    return testing::run_kernelpro(args, env, std::chrono::minutes(5));
  }
  std::string fake_worker() const { return (testing::test_data_dir() / "calibration" / "fake_worker.sh").string(); }
  fs::path store() const { return dir_->path() / "store"; }
  static int files_in(const fs::path& dir) {
    if (!fs::exists(dir)) return 0;
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
    return n;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CalibrateE2e, WithoutAGpuExitsThreeWithTheWorkersReason) {
  auto missing = testing::gpu_missing();
  if (!missing) GTEST_SKIP() << "a GPU is present: this case is about machines without one";
  CliRun r = kernelpro({"--store", store().string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // The worker's own words (gpu_missing() prefixes them with "no GPU: ").
  const std::string reason = missing->substr(missing->find(": ") + 2);
  EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("needs an NVIDIA GPU"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(store()), 0);

  r = kernelpro({"--json", "--store", store().string()});
  EXPECT_EQ(r.exit_code, 3);
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["calibrated"], false);
  EXPECT_NE(j["reason"].get<std::string>().find(reason), std::string::npos);
}

TEST_F(CalibrateE2e, StoresTheMeasurementAndComparesItWithTheDatasheet) {
  CliRun r = kernelpro({"--json", "--worker", fake_worker(), "--store", store().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["gpu_key"], "nvidia-h200-132sm-140gib");
  EXPECT_EQ(j["datasheet_product"], "NVIDIA H200 SXM");
  EXPECT_NEAR(j["ratio_to_datasheet"]["dram_bytes_per_s"].get<double>(), 4.2 / 4.8, 1e-9);
  EXPECT_TRUE(j["ratio_to_datasheet"]["l2_bytes_per_s"].is_null());  // on no datasheet
  EXPECT_EQ(j["saved"], true);

  // The file is where the JSON says, and profile's store reads it back as a calibration.
  const fs::path file = store() / "nvidia-h200-132sm-140gib.json";
  EXPECT_EQ(j["file"], file.string());
  eval::DeviceInfo h200;
  h200.name = "NVIDIA H200";
  h200.sm_count = 132;
  h200.memory_bytes = 150109880320;
  auto loaded = profile::CalibrationStore(store()).load(h200);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->source, profile::CeilingSource::kCalibrated);
  EXPECT_DOUBLE_EQ((*loaded)->tensor_bf16_flops, 7.5e14);

  // The table: measured, datasheet, ratio, per ceiling.
  r = kernelpro({"--worker", fake_worker(), "--store", store().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("datasheet NVIDIA H200 SXM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4.20 TB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4.80 TB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.88"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(file.string()), std::string::npos) << r.out;
}

TEST_F(CalibrateE2e, DefaultStoreIsUnderXdgDataHome) {
  CliRun r = kernelpro({"--worker", fake_worker()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_->path() / "data" / "kernelpro" / "calibration" / "nvidia-h200-132sm-140gib.json"));
}

TEST_F(CalibrateE2e, UnwritableStoreStillPrintsTheMeasurementAndExitsFour) {
  const fs::path blocker = dir_->path() / "a-file";
  ASSERT_TRUE(write_file(blocker.string(), "x").ok());
  CliRun r = kernelpro({"--worker", fake_worker(), "--store", (blocker / "store").string()});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.out.find("NOT saved"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(blocker.string()), std::string::npos) << r.err;
}

TEST_F(CalibrateE2e, RealWorkerCalibratesThisGpu) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"--json", "--quick", "--store", store().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const profile::CeilingField& f : profile::ceiling_fields())
    EXPECT_GT(j["ceilings"][f.key].get<double>(), 0) << f.key << ": " << j["ceilings"]["method"][f.key];
  EXPECT_EQ(files_in(store()), 1);
}

}  // namespace
}  // namespace kp
