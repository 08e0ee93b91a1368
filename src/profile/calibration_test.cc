#include "profile/calibration.h"

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

eval::DeviceInfo h200() {
  eval::DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150109880320;  // as CUDA reports it on the H200 machine
  d.l2_bytes = 62914560;
  d.sm_clock_khz = 1980000;
  d.dram_bytes_per_s = 4.1e12;
  return d;
}

// Every field set to a value of its own, so a field that is dropped or swapped shows.
Ceilings sample_calibration() {
  Ceilings c;
  c.gpu = "NVIDIA H200";
  c.cc_major = 9;
  c.cc_minor = 0;
  c.sm_count = 132;
  c.source = CeilingSource::kCalibrated;
  c.measured_at = "2025-01-02T03:04:05Z";
  double v = 1.5e12;
  for (const CeilingField& f : ceiling_fields()) {
    c.*f.member = v;
    c.method[f.key] = std::string("measured ") + f.key;
    v *= 1.7;
  }
  c.sm_clock_mhz = 1755;
  return c;
}

void expect_same(const Ceilings& a, const Ceilings& b) {
  EXPECT_EQ(a.gpu, b.gpu);
  EXPECT_EQ(a.cc_major, b.cc_major);
  EXPECT_EQ(a.cc_minor, b.cc_minor);
  EXPECT_EQ(a.sm_count, b.sm_count);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.measured_at, b.measured_at);
  for (const CeilingField& f : ceiling_fields()) EXPECT_DOUBLE_EQ(a.*f.member, b.*f.member) << f.key;
  EXPECT_DOUBLE_EQ(a.sm_clock_mhz, b.sm_clock_mhz);
  EXPECT_EQ(a.method, b.method);
}

TEST(CeilingsJson, RoundTripKeepsEveryField) {
  Ceilings c = sample_calibration();
  auto back = ceilings_from_json(to_json(c));
  ASSERT_TRUE(back.ok()) << back.error().message;
  expect_same(c, *back);
  EXPECT_EQ(to_json(c)["source"], "calibrated");
}

TEST(CeilingsJson, AbsentRateIsUnknownAndUnknownKeysAreIgnored) {
  auto c = ceilings_from_json(json{{"gpu", "X"}, {"source", "datasheet"}, {"fp32_flops", 2e13}, {"future_field", 1}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_DOUBLE_EQ(c->fp32_flops, 2e13);
  EXPECT_EQ(c->dram_bytes_per_s, 0);
  EXPECT_EQ(c->source, CeilingSource::kDatasheet);
}

TEST(CeilingsJson, MalformedInputNamesTheKey) {
  struct Case {
    json j;
    std::string needle;
  };
  const Case cases[] = {
      {json::array(), "object"},
      {json{{"source", "calibrated"}}, "\"gpu\""},
      {json{{"gpu", "X"}}, "\"source\""},
      {json{{"gpu", "X"}, {"source", "guessed"}}, "guessed"},
      {json{{"gpu", "X"}, {"source", "calibrated"}, {"fp32_flops", "fast"}}, "\"fp32_flops\""},
      {json{{"gpu", "X"}, {"source", "calibrated"}, {"l2_bytes_per_s", -1.0}}, "\"l2_bytes_per_s\""},
      {json{{"gpu", "X"}, {"source", "calibrated"}, {"method", {{"fp32_flops", 3}}}}, "fp32_flops"},
  };
  for (const Case& c : cases) {
    auto r = ceilings_from_json(c.j);
    ASSERT_FALSE(r.ok()) << c.j.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos) << r.error().message;
  }
}

TEST(GpuKey, SlugOfNameSmCountAndMemory) {
  EXPECT_EQ(gpu_key(h200()), "nvidia-h200-132sm-140gib");
  eval::DeviceInfo a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.sm_count = 108;
  a100.memory_bytes = 85899345920;  // 80 GiB
  EXPECT_EQ(gpu_key(a100), "nvidia-a100-sxm4-80gb-108sm-80gib");
  eval::DeviceInfo odd;
  odd.name = "  (weird) / name!! ";
  odd.sm_count = 4;
  EXPECT_EQ(gpu_key(odd), "weird-name-4sm-0gib");
  odd.name = "";
  EXPECT_EQ(gpu_key(odd), "gpu-4sm-0gib");
}

TEST(GpuKey, DiffersBetweenGpusThatDiffer) {
  eval::DeviceInfo other = h200();
  other.sm_count = 114;
  EXPECT_NE(gpu_key(other), gpu_key(h200()));
  other = h200();
  other.name = "NVIDIA H200 NVL";
  EXPECT_NE(gpu_key(other), gpu_key(h200()));
}

class CalibrationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-cal-").value()); }
  fs::path store_dir() const { return dir_->path() / "nested" / "calibration"; }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CalibrationStoreTest, MissingFileIsNoCalibration) {
  CalibrationStore store(store_dir());
  auto r = store.load(h200());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->has_value());
}

TEST_F(CalibrationStoreTest, SaveThenLoadGivesTheSameCeilings) {
  CalibrationStore store(store_dir());
  Ceilings c = sample_calibration();
  ASSERT_TRUE(store.save(h200(), c).ok());
  EXPECT_TRUE(fs::exists(store_dir() / "nvidia-h200-132sm-140gib.json"));
  EXPECT_EQ(store.path_for(h200()), store_dir() / "nvidia-h200-132sm-140gib.json");
  auto back = store.load(h200());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->has_value());
  expect_same(c, **back);
  // Only the file itself is left (the temporary was renamed), and it says its format.
  int files = 0;
  for (const auto& e : fs::directory_iterator(store_dir())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  json j = json::parse(read_file(store.path_for(h200()).string()).value());
  EXPECT_EQ(j["format"], 1);
  EXPECT_EQ(j["gpu_key"], "nvidia-h200-132sm-140gib");
}

TEST_F(CalibrationStoreTest, SaveReplacesTheOldCalibration) {
  CalibrationStore store(store_dir());
  Ceilings c = sample_calibration();
  ASSERT_TRUE(store.save(h200(), c).ok());
  c.dram_bytes_per_s = 4.2e12;
  ASSERT_TRUE(store.save(h200(), c).ok());
  auto back = store.load(h200());
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_DOUBLE_EQ((*back)->dram_bytes_per_s, 4.2e12);
}

TEST_F(CalibrationStoreTest, AnotherGpuHasNoCalibration) {
  CalibrationStore store(store_dir());
  ASSERT_TRUE(store.save(h200(), sample_calibration()).ok());
  eval::DeviceInfo other = h200();
  other.name = "NVIDIA H100 80GB HBM3";
  auto r = store.load(other);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(CalibrationStoreTest, CorruptFileIsInvalidInputNamingTheFileAndTheFix) {
  CalibrationStore store(store_dir());
  fs::create_directories(store_dir());
  const fs::path path = store.path_for(h200());
  for (const std::string& text : {std::string("{\"gpu\": \"NVIDIA H2"),
                                  std::string("{\"gpu\":\"X\",\"source\":\"calibrated\",\"fp32_flops\":\"x\"}"),
                                  std::string("{\"gpu\":\"X\",\"source\":\"datasheet\"}")}) {
    ASSERT_TRUE(write_file(path.string(), text).ok());
    auto r = store.load(h200());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find(path.string()), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("kernelpro calibrate"), std::string::npos) << r.error().message;
  }
}

TEST_F(CalibrationStoreTest, UnwritableFolderIsAnIoErrorNamingIt) {
  const fs::path blocker = dir_->path() / "file";
  ASSERT_TRUE(write_file(blocker.string(), "x").ok());
  CalibrationStore store(blocker / "calibration");
  Status s = store.save(h200(), sample_calibration());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kIo);
  EXPECT_NE(s.error().message.find(blocker.string()), std::string::npos) << s.error().message;
}

TEST_F(CalibrationStoreTest, ResolveUsesTheDatasheetWithAWarningUntilCalibrated) {
  CalibrationStore store(store_dir());
  std::string warning = "stale";
  Ceilings c = resolve_ceilings(store, h200(), &warning);
  EXPECT_EQ(c.source, CeilingSource::kDatasheet);
  EXPECT_DOUBLE_EQ(c.dram_bytes_per_s, 4.8e12);
  EXPECT_EQ(warning,
            "this GPU was never calibrated; using datasheet ceilings for NVIDIA H200; run `kernelpro calibrate`");

  ASSERT_TRUE(store.save(h200(), sample_calibration()).ok());
  c = resolve_ceilings(store, h200(), &warning);
  EXPECT_EQ(c.source, CeilingSource::kCalibrated);
  EXPECT_DOUBLE_EQ(c.dram_bytes_per_s, sample_calibration().dram_bytes_per_s);
  EXPECT_EQ(warning, "");
  // No warning wanted: still the calibration.
  EXPECT_EQ(resolve_ceilings(store, h200(), nullptr).source, CeilingSource::kCalibrated);
}

TEST_F(CalibrationStoreTest, ResolveReportsACorruptFileAndFallsBack) {
  CalibrationStore store(store_dir());
  fs::create_directories(store_dir());
  ASSERT_TRUE(write_file(store.path_for(h200()).string(), "not json").ok());
  std::string warning;
  Ceilings c = resolve_ceilings(store, h200(), &warning);
  EXPECT_EQ(c.source, CeilingSource::kDatasheet);
  EXPECT_NE(warning.find(store.path_for(h200()).string()), std::string::npos) << warning;
  EXPECT_NE(warning.find("datasheet ceilings for NVIDIA H200"), std::string::npos) << warning;
}

TEST_F(CalibrationStoreTest, ResolveSaysWhenTheFiguresAreOnlyAnEstimate) {
  CalibrationStore store(store_dir());
  eval::DeviceInfo gh200 = h200();
  gh200.name = "NVIDIA GH200 480GB";
  std::string warning;
  Ceilings c = resolve_ceilings(store, gh200, &warning);
  EXPECT_EQ(c.source, CeilingSource::kDatasheet);
  EXPECT_NE(warning.find("never calibrated"), std::string::npos) << warning;
  EXPECT_NE(warning.find("estimated from the sm_90 architecture for NVIDIA GH200 480GB"), std::string::npos) << warning;
}

TEST(CalibrateReply, ReadsTheCeilingsOfTheWorker) {
  json reply = {{"ok", true}, {"id", 3}, {"ceilings", to_json(sample_calibration())}, {"seconds", 4.2}};
  auto c = ceilings_from_calibrate_reply(reply);
  ASSERT_TRUE(c.ok()) << c.error().message;
  expect_same(sample_calibration(), *c);
}

TEST(CalibrateReply, MalformedReplyIsAProtocolError) {
  Ceilings sheet = sample_calibration();
  sheet.source = CeilingSource::kDatasheet;
  for (const json& reply :
       {json{{"ok", true}}, json{{"ok", true}, {"ceilings", 5}}, json{{"ok", true}, {"ceilings", to_json(sheet)}}}) {
    auto c = ceilings_from_calibrate_reply(reply);
    ASSERT_FALSE(c.ok()) << reply.dump();
    EXPECT_EQ(c.error().code, ErrorCode::kProtocol);
    EXPECT_NE(c.error().message.find("calibrate reply"), std::string::npos);
  }
}

}  // namespace
}  // namespace kp::profile
