#include "eval/protocol.h"

#include <gtest/gtest.h>

#include "task/native_task_loader.h"

namespace kp::eval {
namespace {

using nlohmann::json;

TEST(Protocol, TaskRoundTripKeepsShapesDtypesScalarsAndTolerances) {
  auto t = task::parse_native_task(R"(
name = "t"
[symbols]
N = 8
[[inputs]]
name = "x"
dtype = "bf16"
shape = ["N", 2]
init = { dist = "uniform", low = -2.0, high = 3.0 }
[[inputs]]
name = "m"
dtype = "bool"
shape = ["N"]
[[outputs]]
name = "y"
dtype = "fp32"
shape = ["N"]
[[outputs]]
name = "z"
dtype = "int64"
shape = [3]
[[scalars]]
name = "eps"
value = 0.5
)",
                                   "/tmp", "t.toml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  // Through the wire as the worker sees it.
  auto back = task_from_json(json::parse(to_json(*t).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->inputs.size(), 2u);
  EXPECT_EQ(back->inputs[0].dtype, task::DType::kBf16);
  EXPECT_EQ(back->inputs[0].shape, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(back->inputs[0].init.kind, task::DistKind::kUniform);
  EXPECT_DOUBLE_EQ(back->inputs[0].init.a, -2.0);
  EXPECT_EQ(back->inputs[1].dtype, task::DType::kBool);
  EXPECT_EQ(back->outputs[1].dtype, task::DType::kInt64);
  ASSERT_EQ(back->scalars.size(), 1u);
  EXPECT_DOUBLE_EQ(back->scalars[0].f, 0.5);
  // Per-output tolerances differ (fp32 and int64 defaults) and survive the trip.
  EXPECT_DOUBLE_EQ(back->tolerance_for(0).rel_norm, t->tolerance_for(0).rel_norm);
  EXPECT_DOUBLE_EQ(back->tolerance_for(1).atol, 0);
}

TEST(Protocol, ReportRoundTrip) {
  WorkerReport r;
  r.outcome = Outcome::kRejected;
  r.reason = "work escaped the stream";
  r.trials_run = 3;
  r.checks.push_back(OutputCheck{true, "", 10, 0, 0, 0, 0, -1, 1e-7, 2e-7, 3e-8, false});
  r.output_names = {"y"};
  r.timing = TimingReport{"events", {1e-3, 2e-3}, {1.1e-3, 2.1e-3}, 5, 3, 268435456};
  EnergyReport e;
  e.measured = true;
  e.joules_per_call = 0.4;
  r.energy = e;
  r.phase_seconds = {{"timing", 0.6}};
  auto back = worker_report_from_json(json::parse(to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->outcome, Outcome::kRejected);
  EXPECT_EQ(back->reason, r.reason);
  EXPECT_EQ(back->timing->samples_s, r.timing->samples_s);
  EXPECT_EQ(back->timing->l2_flush_bytes, 268435456);
  EXPECT_DOUBLE_EQ(back->energy->joules_per_call, 0.4);
  EXPECT_DOUBLE_EQ(back->checks[0].rel_norm_error, 3e-8);
  EXPECT_DOUBLE_EQ(back->phase_seconds.at("timing"), 0.6);
}

TEST(Protocol, MalformedReportsAreProtocolErrors) {
  auto missing = worker_report_from_json(json::parse(R"({"reason":"x"})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kProtocol);
  auto unknown = worker_report_from_json(json::parse(R"({"outcome":"great"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown outcome"), std::string::npos);
}

TEST(Outcome, NamesRoundTrip) {
  for (Outcome o : {Outcome::kOk, Outcome::kCompileError, Outcome::kLoadError, Outcome::kRuntimeError, Outcome::kCrash,
                    Outcome::kTimeout, Outcome::kIncorrect, Outcome::kRejected, Outcome::kNotRun})
    EXPECT_EQ(outcome_from_string(to_string(o)), o);
  EXPECT_FALSE(outcome_from_string("fine"));
}

}  // namespace
}  // namespace kp::eval
