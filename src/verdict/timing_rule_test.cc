#include "verdict/timing_rule.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/strings.h"
#include "verdict/protocol.h"

namespace kp::eval {
namespace {

using nlohmann::json;

TEST(TimingRule, TheSharedCasesHoldForTheCppRule) {
  // The rule is written once, here: the KernelBench worker samples through the judge core (src/judge/).
  auto text = read_file(std::string(KP_SOURCE_DIR) + "/tests/data/timing_rule_cases.json");
  ASSERT_TRUE(text.ok());
  const json cases = json::parse(*text).at("cases");
  ASSERT_GE(cases.size(), 8u);
  for (const auto& c : cases) {
    json options = to_json(EvalOptions{});
    options.update(c.at("options"));
    const EvalOptions o = eval_options_from_json(options);
    const auto samples = c.at("samples").get<std::vector<double>>();
    EXPECT_STREQ(to_string(sampling_decision(samples, c.at("loop_wall_s").get<double>(), o)),
                 c.at("expect").get<std::string>().c_str())
        << c.at("name");
    const MedianInterval m = median_interval95(samples);
    EXPECT_DOUBLE_EQ(m.median, c.at("median").get<double>()) << c.at("name");
    EXPECT_DOUBLE_EQ(m.lo, c.at("lo").get<double>()) << c.at("name");
    EXPECT_DOUBLE_EQ(m.hi, c.at("hi").get<double>()) << c.at("name");
  }
}

TEST(TimingRule, ThePythonWorkersDefaultsAreEvalOptions) {
  // The KernelBench worker fills what a request lacks from this file; EvalOptions is the one
  // place the thresholds live.
  auto text = read_file(std::string(KP_SOURCE_DIR) + "/python/kernelpro_torch/eval_defaults.json");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(json::parse(*text), to_json(EvalOptions{}))
      << "update python/kernelpro_torch/eval_defaults.json to:\n"
      << to_json(EvalOptions{}).dump(2);
}

TEST(TimingRule, TheIntervalNarrowsAsSamplesGrow) {
  // Samples spread evenly over [1.00, 1.02) in a scrambled order (the fractional parts of
  // i x the golden ratio): the 95% interval of 20 of them spans about half the spread; of 2000,
  // a tenth of that, as 1/sqrt(n) says.
  std::vector<double> s;
  for (int i = 0; i < 2000; ++i) {
    const double u = i * 0.6180339887498949;
    s.push_back(1.0 + 0.02 * (u - static_cast<double>(static_cast<long long>(u))));
  }
  std::vector<double> few(s.begin(), s.begin() + 20);
  EXPECT_GT(median_interval95(few).relative_half_width(), 0.003);
  EXPECT_GT(median_interval95(few).relative_half_width(), median_interval95(s).relative_half_width() * 5);
  EXPECT_LT(median_interval95(s).relative_half_width(), 0.001);
}

TEST(TimingRule, OneSlowOutlierDoesNotMoveTheStop) {
  std::vector<double> s(30, 1e-3);
  s[7] = 1.0;  // one preempted call
  EvalOptions o;
  EXPECT_EQ(sampling_decision(s, 0.01, o), SamplingStop::kPrecise);
}

}  // namespace
}  // namespace kp::eval
