#include "verdict/protocol.h"

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
  r.io_bytes = 12884901888;  // a KernelBench worker's compulsory traffic
  auto back = worker_report_from_json(json::parse(to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->outcome, Outcome::kRejected);
  EXPECT_EQ(back->reason, r.reason);
  EXPECT_EQ(back->timing->samples_s, r.timing->samples_s);
  EXPECT_EQ(back->timing->l2_flush_bytes, 268435456);
  EXPECT_DOUBLE_EQ(back->energy->joules_per_call, 0.4);
  EXPECT_DOUBLE_EQ(back->checks[0].rel_norm_error, 3e-8);
  EXPECT_DOUBLE_EQ(back->phase_seconds.at("timing"), 0.6);
  EXPECT_DOUBLE_EQ(back->io_bytes, 12884901888);
}

TEST(Protocol, MalformedReportsAreProtocolErrors) {
  auto missing = worker_report_from_json(json::parse(R"({"reason":"x"})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kProtocol);
  auto unknown = worker_report_from_json(json::parse(R"({"outcome":"great"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown outcome"), std::string::npos);
}

TEST(Protocol, KernelBenchTaskIsItsProblemFile) {
  task::Task t;
  t.kind = task::TaskKind::kKernelBench;
  t.name = "23_Softmax.py";
  t.reference_path = "/suite/level1/23_Softmax.py";
  t.level = 1;
  t.problem_id = 23;
  json j = to_json(t);
  EXPECT_EQ(j, json::parse(R"({"kind":"kernelbench","name":"23_Softmax.py","problem":"/suite/level1/23_Softmax.py",
                               "level":1,"problem_id":23})"));
  auto back = task_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kind, task::TaskKind::kKernelBench);
  EXPECT_EQ(back->reference_path, t.reference_path);
  EXPECT_EQ(back->category, "level1");
  EXPECT_EQ(back->problem_id, 23);
}

TEST(Protocol, BaselineReplyKeepsEveryModeAndItsError) {
  auto r = baseline_reply_from_json(json::parse(R"({"ok":true,"id":3,"hardware":"NVIDIA H200","device":"cuda:0",
      "torch_version":"2.11.0","results":{"eager":{"ok":true,"mean_ms":1.5,"std_ms":0.1,"min_ms":1.4,"max_ms":1.9,
      "median_ms":1.45,"num_trials":100,"warmup_s":0.2},"compile":{"ok":false,"error":"Unsupported: x"}},"exiting":false})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->hardware, "NVIDIA H200");
  EXPECT_EQ(r->torch_version, "2.11.0");
  ASSERT_EQ(r->results.size(), 2u);
  EXPECT_TRUE(r->results["eager"].ok);
  EXPECT_DOUBLE_EQ(r->results["eager"].median_ms, 1.45);
  EXPECT_EQ(r->results["eager"].num_trials, 100);
  EXPECT_FALSE(r->results["compile"].ok);
  EXPECT_EQ(r->results["compile"].error, "Unsupported: x");
  // Back to JSON: a failure carries only its error.
  EXPECT_EQ(to_json(r->results["compile"]), json::parse(R"({"ok":false,"error":"Unsupported: x"})"));
  EXPECT_DOUBLE_EQ(to_json(r->results["eager"])["mean_ms"].get<double>(), 1.5);
}

TEST(Protocol, ProfileRequestRoundTripKeepsTheReplay) {
  ProfileRequest r;
  EXPECT_EQ(r.replay, "auto");  // user replay unless the candidate's passes differ
  r.mode = ProfileMode::kCupti;
  r.metrics = {"dram__bytes_read.sum"};
  r.replay = "kernel";
  r.check = false;
  ProfileRequest back = profile_request_from_json(to_json(r));
  EXPECT_EQ(back.replay, "kernel");
  EXPECT_EQ(back.metrics, r.metrics);
  EXPECT_FALSE(back.check);
  // A request from an older driver has no replay: auto.
  EXPECT_EQ(profile_request_from_json(json::parse(R"({"mode":"cupti","metrics":["a.sum"]})")).replay, "auto");
}

TEST(Protocol, MalformedBaselineRepliesAreProtocolErrors) {
  auto no_results = baseline_reply_from_json(json::parse(R"({"ok":true,"id":1})"));
  ASSERT_FALSE(no_results.ok());
  EXPECT_EQ(no_results.error().code, ErrorCode::kProtocol);
  auto no_mean = baseline_reply_from_json(json::parse(R"({"ok":true,"results":{"eager":{"ok":true}}})"));
  ASSERT_FALSE(no_mean.ok());
  EXPECT_NE(no_mean.error().message.find("eager"), std::string::npos) << no_mean.error().message;
}

TEST(Outcome, NamesRoundTrip) {
  for (Outcome o : {Outcome::kOk, Outcome::kCompileError, Outcome::kLoadError, Outcome::kRuntimeError, Outcome::kCrash,
                    Outcome::kTimeout, Outcome::kIncorrect, Outcome::kRejected, Outcome::kNotRun})
    EXPECT_EQ(outcome_from_string(to_string(o)), o);
  EXPECT_FALSE(outcome_from_string("fine"));
}

}  // namespace
}  // namespace kp::eval
