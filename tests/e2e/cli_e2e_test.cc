// e2e tier: drives the real kernelpro binary as a user does, checking exit codes, messages and
// JSON. GPU cases skip without a GPU; the others run everywhere nvcc is.
#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;

class CliE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::create("kp-e2e-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(*d));
  }
  CliRun kernelpro(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    env.insert(env.begin(), {"XDG_CACHE_HOME", (dir_->path() / "cache").string()});
    return testing::run_kernelpro(args, env);
  }
  fs::path write_task(const std::string& toml) {
    fs::path t = dir_->path() / "task";
    fs::create_directories(t);
    EXPECT_TRUE(write_file((t / "task.toml").string(), toml).ok());
    fs::copy_file(testing::examples_dir() / "gelu" / "reference.cu", t / "reference.cu", fs::copy_options::overwrite_existing);
    return t;
  }
  fs::path bad(const std::string& name) { return testing::test_data_dir() / "candidates" / "gelu" / (name + ".cu"); }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CliE2e, MissingTaskIsBadInputThatNamesThePath) {
  CliRun r = kernelpro({"eval", "/nonexistent/task"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/task"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task.toml"), std::string::npos) << r.err;
}

TEST_F(CliE2e, MalformedTomlNamesTheLine) {
  fs::path t = write_task("name = \"x\"\n[[outputs]\nname = \"y\"\n");
  CliRun r = kernelpro({"eval", t.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task.toml"), std::string::npos) << r.err;
}

TEST_F(CliE2e, Stage1MetricsFileWithoutNamesIsBadInput) {
  fs::path list = dir_->path() / "metrics.txt";
  ASSERT_TRUE(write_file(list.string(), "# only a comment\n\n").ok());
  CliRun r = kernelpro({"profile", (testing::examples_dir() / "gelu").string(), "--stage1-metrics", list.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stage1-metrics " + list.string() + ": no metric names"), std::string::npos) << r.err;
}

// Without a GPU, analyze still reads the SASS and ptxas report: the spill flaw's own tool fires
// on flawed.cu and not on its fixed twin, and the exit code says the counters were not run.
TEST_F(CliE2e, AnalyzeWithoutGpuFindsSpillsFromPtxasAlone) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  if (!testing::gpu_missing()) GTEST_SKIP() << "a GPU is present; bench/flaws/run.sh covers analyze with counters";
  const fs::path flaw = testing::source_dir() / "bench" / "flaws" / "06_register_spills";
  auto tools_of = [&](const std::string& variant) {
    CliRun r = kernelpro({"analyze", flaw.string(), (flaw / (variant + ".cu")).string(), "--json"});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    std::vector<std::string> tools;
    if (j.is_object() && j.contains("findings"))
      for (const auto& f : j["findings"]) tools.push_back(f.value("tool", ""));
    EXPECT_TRUE(j.is_object() && j.value("outcome", "") == "not_run") << r.out;
    return tools;
  };
  EXPECT_EQ(tools_of("flawed"), std::vector<std::string>{"register_spills"});
  EXPECT_EQ(tools_of("fixed"), std::vector<std::string>{});
}

// Evidence recorded on the H200 (bench/flaws/run.sh --save-evidence) analyzed again without a
// GPU, all 21 flaws of bench/flaws: each flaw's own tool fires on its flawed variant and not on
// its fixed twin, and no flaw's tool fires on another flaw's variant (the suite's recall and
// precision, bench/results/h200-2026-12-04-{evidence,suite}/replay_score.txt); a fixed twin that is
// another flaw by construction (expected.toml's fixed_carries) may carry that flaw's tool.
// launch_overhead is judged on 2048 launches of which the first 256 were profiled (a sample).
std::string toml_string(const std::string& text, const std::string& key) {
  for (const auto& line : split(text, '\n'))
    if (line.rfind(key + " = \"", 0) == 0) return line.substr(key.size() + 4, line.size() - key.size() - 5);
  return "";
}

TEST_F(CliE2e, AnalyzeAgainFromEvidenceRecordedOnTheH200) {
  const fs::path results = testing::source_dir() / "bench" / "results";
  fs::path ev;
  auto tools_of = [&](const std::string& name) {
    CliRun r = kernelpro({"analyze", "--evidence", (ev / (name + ".json")).string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    std::set<std::string> tools;
    if (j.is_object() && j.contains("findings"))
      for (const auto& f : j["findings"]) tools.insert(f.value("tool", ""));
    return tools;
  };
  struct Flaw {
    std::string name, tool, carried;
  };
  std::vector<Flaw> flaws;
  for (const auto& d : fs::directory_iterator(testing::source_dir() / "bench" / "flaws")) {
    if (!fs::exists(d.path() / "expected.toml")) continue;
    auto text = read_file((d.path() / "expected.toml").string());
    ASSERT_TRUE(text.ok()) << d.path();
    Flaw f{d.path().filename().string(), toml_string(*text, "flaw"), ""};
    const auto carries = text->find("fixed_carries = [\"");
    if (carries != std::string::npos)
      f.carried = text->substr(carries + 18, text->find('"', carries + 18) - carries - 18);
    flaws.push_back(f);
  }
  ASSERT_EQ(flaws.size(), 21u);
  std::set<std::string> flaw_tools;
  for (const auto& f : flaws) flaw_tools.insert(f.tool);
  // Datasheet ceilings, rows of several sessions; then one build against calibrated ceilings.
  for (const char* run : {"h200-2026-12-04-evidence", "h200-2026-12-04-suite"}) {
    ev = results / run / "evidence";
    for (const auto& f : flaws)
      for (const std::string variant : {"flawed", "fixed"}) {
        const auto fired = tools_of(f.name + "-" + variant);
        EXPECT_EQ(fired.count(f.tool), variant == "flawed" ? 1u : 0u) << run << " " << f.name << "/" << variant;
        for (const auto& t : fired)
          if (t != f.tool && flaw_tools.count(t) && !(variant == "fixed" && t == f.carried))
            ADD_FAILURE() << run << " " << f.name << "/" << variant << ": " << t << " fired, another flaw's tool";
      }
  }

  CliRun both = kernelpro({"analyze", "some/task", "--evidence", (ev / "06_register_spills-fixed.json").string()});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("replaces TASK"), std::string::npos) << both.err;
  fs::path junk = dir_->path() / "junk.json";
  ASSERT_TRUE(write_file(junk.string(), "{\"format\": \"something else\"}").ok());
  CliRun bad = kernelpro({"analyze", "--evidence", junk.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not a kernelpro evidence file"), std::string::npos) << bad.err;
}

TEST_F(CliE2e, UnknownDtypeSaysWhichAreKnown) {
  fs::path t = write_task("name = \"x\"\n[[outputs]]\nname = \"y\"\ndtype = \"fp8\"\nshape = [4]\n");
  CliRun r = kernelpro({"eval", t.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown dtype \"fp8\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bf16"), std::string::npos) << r.err;
}

TEST_F(CliE2e, MissingCandidateFile) {
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), "/nonexistent/cand.cu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/cand.cu"), std::string::npos) << r.err;
}

TEST_F(CliE2e, CompileErrorIsAnOutcomeWithTheSourceLine) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("compile_error").string(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["outcome"], "compile_error");
  EXPECT_NE(j["reason"].get<std::string>().find("compile_error.cu:"), std::string::npos) << j["reason"];
  EXPECT_FALSE(j["build"]["diagnostics"].empty());
}

TEST_F(CliE2e, MissingEntryPointIsALoadErrorEvenWithoutAGpu) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("no_entry_point").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("load_error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KP_EXPORT int kp_run"), std::string::npos) << r.out;
}

TEST_F(CliE2e, WithoutAGpuEvalBuildsAndSaysSoPlainly) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  if (!testing::gpu_missing()) GTEST_SKIP() << "a GPU is present; the GPU case below covers eval";
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "softmax").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("not_run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No GPU here"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("regs"), std::string::npos) << "the resource report is shown:\n" << r.out;
}

TEST_F(CliE2e, BuildShowsTheResourceReport) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"build", (testing::examples_dir() / "layernorm").string(), "--json", "--arch", "sm_90a"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_FALSE(j["build"]["kernels"].empty());
  EXPECT_GT(j["build"]["kernels"][0]["registers"].get<int>(), 0);
}

TEST_F(CliE2e, DoctorReportsEachItem) {
  CliRun r = kernelpro({"doctor"});
  for (const char* item : {"nvcc", "gpu", "ncu", "counters", "cutlass"})
    EXPECT_NE(r.out.find(item), std::string::npos) << item << " missing from:\n" << r.out;
  if (testing::gpu_missing()) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.out.find("fix:"), std::string::npos);
  }
}

TEST_F(CliE2e, OnAGpuEvalGivesAVerdictWithTimeAndEnergy) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["outcome"], "ok");
  EXPECT_GT(j["time"]["median_s"].get<double>(), 0);
  EXPECT_GT(j["speedup_vs_reference"].get<double>(), 0);
  auto e = j["worker"]["energy"];
  if (e["measured"].get<bool>()) {
    EXPECT_GT(e["joules_per_call"].get<double>(), 0);
    EXPECT_GT(e["average_watts"].get<double>(), e["idle_watts"].get<double>() * 0.5);
    EXPECT_LT(e["average_watts"].get<double>(), 1500);
  } else {
    ADD_FAILURE() << "energy not measured: " << e["unavailable_reason"];
  }
}

TEST_F(CliE2e, OnAGpuShapesTheReferenceRejectsAreBadInput) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  // y is declared with another shape than x: gelu's reference refuses it.
  fs::path t = write_task(R"(name = "gelu_bad_shapes"
[[inputs]]
name = "x"
dtype = "fp32"
shape = [1024]
[[outputs]]
name = "y"
dtype = "fp32"
shape = [512]
)");
  CliRun r = kernelpro({"eval", t.string(), (testing::examples_dir() / "gelu" / "seed.cu").string(), "--no-energy"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the task is at fault"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KP_ERR_UNSUPPORTED_SHAPE"), std::string::npos) << r.err;
}

TEST_F(CliE2e, OnAGpuAWrongCandidateExitsOneWithTheReason) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("wrong_values").string(), "--no-energy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("incorrect"), std::string::npos) << r.out;
}

// KernelBench problems and `kernelpro baseline`, against tests/data/fake_workers/fake_torch_worker.sh
// passed as --python (it stands in for `python -m kernelpro_torch.worker`).
class KernelBenchE2e : public CliE2e {
 protected:
  static constexpr const char* kProblem =
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
      "def get_inputs():\n    return [torch.randn(8)]\n\ndef get_init_inputs():\n    return []\n";
  fs::path write(const std::string& rel, const std::string& text) {
    fs::path p = dir_->path() / rel;
    fs::create_directories(p.parent_path());
    EXPECT_TRUE(write_file(p.string(), text).ok());
    return p;
  }
  std::string fake() { return (testing::test_data_dir() / "fake_workers" / "fake_torch_worker.sh").string(); }
  fs::path log_path() { return dir_->path() / "worker_requests.log"; }
  std::vector<nlohmann::json> requests() {
    std::vector<nlohmann::json> out;
    auto text = read_file(log_path().string());
    if (text.ok())
      for (const auto& l : split_lines(*text)) out.push_back(nlohmann::json::parse(l));
    return out;
  }
  CliRun run(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    env.push_back({"FAKE_LOG", log_path().string()});
    return kernelpro(std::move(args), std::move(env));
  }
  nlohmann::json read_json(const fs::path& p) {
    auto text = read_file(p.string());
    EXPECT_TRUE(text.ok()) << p;
    return text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  }
};

TEST_F(KernelBenchE2e, EvalWithoutACandidateIsBadInputThatSaysWhatToPass) {
  fs::path p = write("level1/1_Double.py", kProblem);
  CliRun r = run({"eval", p.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("CANDIDATE.py"), std::string::npos) << r.err;
}

TEST_F(KernelBenchE2e, ProblemWithoutGetInputsIsBadInputNamingIt) {
  fs::path p = write("level1/1_Double.py", "class Model:\n    pass\ndef get_init_inputs():\n    return []\n");
  fs::path c = write("cand.py", "class ModelNew: pass\n");
  CliRun r = run({"eval", p.string(), c.string(), "--python", fake()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("get_inputs"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("get_init_inputs"), std::string::npos) << r.err;
}

TEST_F(KernelBenchE2e, MissingCandidateIsBadInputNamingIt) {
  fs::path p = write("level1/1_Double.py", kProblem);
  CliRun r = run({"eval", p.string(), "/nonexistent/cand.py", "--python", fake()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/cand.py"), std::string::npos) << r.err;
}

TEST_F(KernelBenchE2e, CuFlagOnANativeTaskIsBadInput) {
  CliRun r = run({"eval", (testing::examples_dir() / "gelu").string(), "--cu", "x.cu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--cu applies to KernelBench"), std::string::npos) << r.err;
}

TEST_F(KernelBenchE2e, UnknownPrecisionPolicyIsAUsageError) {
  fs::path p = write("level1/1_Double.py", kProblem);
  CliRun r = run({"eval", p.string(), p.string(), "--precision-policy", "fp16"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(KernelBenchE2e, LoadInlineCandidateIsEvaluatedByThePythonWorker) {
  fs::path p = write("level1/1_Double.py", kProblem);
  fs::path c = write("cands/double.py", "class ModelNew: pass\n");
  CliRun r = run({"eval", p.string(), c.string(), "--python", fake(), "--json", "--precision-policy", "fp64",
                  "--strict-kernels", "--precision", "bf16"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["kind"], "kernelbench");
  EXPECT_EQ(j["candidate_form"], "load_inline");
  EXPECT_EQ(j["problem"]["level"], 1);
  EXPECT_DOUBLE_EQ(j["speedup_vs_reference"].get<double>(), 2.0);
  EXPECT_EQ(j["kernels"].size(), 1u);
  auto reqs = requests();
  // The judge times the problem's Model alone first, where no candidate was loaded, then the
  // candidate without timing the reference again.
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0]["options"]["reference_only"], true);
  EXPECT_EQ(reqs[0]["candidate"], "");
  EXPECT_EQ(reqs[0]["reference"], p.string());
  EXPECT_EQ(reqs[0]["options"]["precision"], "bf16");
  EXPECT_EQ(reqs[1]["options"]["reference_only"], false);
  EXPECT_EQ(reqs[1]["options"]["time_reference"], false);
  EXPECT_EQ(reqs[1]["task"]["kind"], "kernelbench");
  EXPECT_EQ(reqs[1]["task"]["problem_id"], 1);
  EXPECT_EQ(reqs[1]["reference"], p.string());
  EXPECT_EQ(reqs[1]["candidate"], c.string());
  EXPECT_EQ(reqs[1]["build_dir"], (dir_->path() / "cache" / "kernelpro" / "build" / "torch_extensions").string());
  EXPECT_FALSE(reqs[1].contains("library"));
  EXPECT_EQ(reqs[1]["options"]["precision_policy"], "fp64");
  EXPECT_EQ(reqs[1]["options"]["strict_kernels"], true);
  EXPECT_EQ(reqs[1]["options"]["correctness_trials"], 5);  // KernelBench's scripts use 5
  EXPECT_EQ(reqs[1]["options"]["precision"], "bf16");
  EXPECT_EQ(reqs[1]["options"]["timeout_s"], 600);

  CliRun text = run({"eval", p.string(), c.string(), "--python", fake()});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("problem    1_Double.py  (KernelBench level 1, problem 1)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("speedup 2.00x"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("physics floor"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("softmax_kernel"), std::string::npos) << text.out;
}

TEST_F(KernelBenchE2e, WithoutGpuOrTorchEvalIsNotRun) {
  fs::path p = write("level1/1_Double.py", kProblem);
  fs::path c = write("double.py", "class ModelNew: pass\n");
  CliRun r = run({"eval", p.string(), c.string(), "--python", fake()}, {{"FAKE_MODE", "no_gpu"}});
  EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("not_run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fake machine without a GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PyTorch"), std::string::npos) << r.out;
}

TEST_F(KernelBenchE2e, PythonFromTheEnvironment) {
  fs::path p = write("level1/1_Double.py", kProblem);
  fs::path c = write("double.py", "class ModelNew: pass\n");
  CliRun r = run({"eval", p.string(), c.string()}, {{"KERNELPRO_PYTHON", fake()}});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(requests().size(), 2u);  // the reference alone, then the candidate
}

TEST_F(KernelBenchE2e, ACuBesideTheCandidateIsBuiltAndPassedAsALibrary) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  fs::path p = write("level1/1_Double.py", kProblem);
  fs::path c = write("cands/double.py", "class ModelNew: pass\n");
  fs::path cu = write("cands/double.cu",
                      "__global__ void double_kernel(const float* x, float* y, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2 * x[i];\n}\n"
                      "extern \"C\" void launch_double(const float* x, float* y, int n) {\n"
                      "  double_kernel<<<(n + 255) / 256, 256>>>(x, y, n);\n}\n");
  CliRun r = run({"eval", p.string(), c.string(), "--python", fake(), "--json", "--arch", "sm_90a"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["candidate_form"], "prebuilt");
  EXPECT_EQ(j["library_source"], cu.string());
  EXPECT_EQ(j["build"]["ok"], true);
  EXPECT_GT(j["seconds"]["build"].get<double>(), 0);
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);  // the reference alone, then the candidate
  EXPECT_FALSE(reqs[0].contains("library"));
  EXPECT_EQ(reqs[1]["library_source"], cu.string());
  EXPECT_EQ(reqs[1]["library"], j["build"]["artifact"]);
  EXPECT_FALSE(reqs[1].contains("build_dir"));

  // --cu names another file; one that does not compile is the candidate's compile_error.
  fs::path bad = write("other/broken.cu", "__global__ void k() { this is not C++ }\n");
  CliRun b = run({"eval", p.string(), c.string(), "--cu", bad.string(), "--python", fake(), "--json", "--arch", "sm_90a"});
  EXPECT_EQ(b.exit_code, 1) << b.err << b.out;
  auto bj = nlohmann::json::parse(b.out, nullptr, false);
  ASSERT_FALSE(bj.is_discarded()) << b.out;
  EXPECT_EQ(bj["outcome"], "compile_error");
  EXPECT_NE(bj["reason"].get<std::string>().find("broken.cu"), std::string::npos) << bj["reason"];
  EXPECT_EQ(requests().size(), 2u) << "a candidate that does not compile never reaches the worker";

  CliRun missing = run({"eval", p.string(), c.string(), "--cu", "/nonexistent/k.cu", "--python", fake()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/k.cu"), std::string::npos) << missing.err;
}

class BaselineE2e : public KernelBenchE2e {
 protected:
  void SetUp() override {
    KernelBenchE2e::SetUp();
    suite_ = dir_->path() / "KernelBench";
    write("KernelBench/level1/1_Square.py", kProblem);
    write("KernelBench/level1/2_crash.py", kProblem);
    write("KernelBench/level2/1_compile_fails.py", kProblem);
    out_ = dir_->path() / "out";
  }
  std::vector<std::string> args(std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"baseline", "--suite", suite_.string(), "--out", out_.string(), "--python", fake(),
                                  "--levels", "1,2", "--trials", "100"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  fs::path suite_, out_;
};

TEST_F(BaselineE2e, RecordsEveryProblemAFailureIsDataAndASecondRunResumes) {
  CliRun r = run(args());
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 3u);
  // Level by level, by problem id.
  EXPECT_NE(reqs[0]["problem"].get<std::string>().find("level1/1_Square.py"), std::string::npos);
  EXPECT_NE(reqs[1]["problem"].get<std::string>().find("level1/2_crash.py"), std::string::npos);
  EXPECT_NE(reqs[2]["problem"].get<std::string>().find("level2/1_compile_fails.py"), std::string::npos);
  EXPECT_EQ(reqs[0]["modes"], nlohmann::json::parse(R"(["eager","compile"])"));
  EXPECT_EQ(reqs[0]["warmup"], 5);
  EXPECT_EQ(reqs[0]["trials"], 100);
  EXPECT_NE(r.out.find("level1/2_crash.py  eager FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worker restarted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("level1: 1 measured, 1 failed; torch.compile beats eager on 1 of 1 (1 by >5%); geomean "
                       "eager/compile 2.000x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("level2: 0 measured, 1 failed"), std::string::npos) << r.out;

  auto doc = read_json(out_ / "kernelpro_baseline.json");
  EXPECT_EQ(doc["hardware"], "Fake H200");
  EXPECT_EQ(doc["torch_version"], "2.11.0");
  const auto& sq = doc["problems"]["level1"]["1_Square.py"];
  EXPECT_EQ(sq["results"]["eager"]["ok"], true);
  EXPECT_DOUBLE_EQ(sq["results"]["eager"]["mean_ms"].get<double>(), 2.00049);
  EXPECT_DOUBLE_EQ(sq["results"]["eager"]["median_ms"].get<double>(), 2.0);
  EXPECT_EQ(sq["results"]["compile"]["num_trials"], 100);
  EXPECT_FALSE(sq["date"].get<std::string>().empty());
  const auto& crash = doc["problems"]["level1"]["2_crash.py"];
  EXPECT_EQ(crash["results"]["eager"]["ok"], false);
  EXPECT_NE(crash["results"]["eager"]["error"].get<std::string>().find("SIGSEGV"), std::string::npos) << crash;
  EXPECT_EQ(doc["problems"]["level2"]["1_compile_fails.py"]["results"]["compile"]["error"],
            "torch._dynamo.exc.Unsupported: fake");

  auto eager = read_json(out_ / "baseline_time_torch.json");
  EXPECT_EQ(eager, nlohmann::json::parse(R"({
    "level1": {"1_Square.py": {"mean": 2.0, "std": 0.0123, "min": 1.98, "max": 2.1, "num_trials": 100,
                               "hardware": "Fake H200", "device": "cuda:0"}},
    "level2": {"1_compile_fails.py": {"mean": 2.0, "std": 0.0123, "min": 1.98, "max": 2.1, "num_trials": 100,
                                      "hardware": "Fake H200", "device": "cuda:0"}}})"))
      << eager.dump(2);
  auto compile = read_json(out_ / "baseline_time_torch_compile_inductor_default.json");
  EXPECT_EQ(compile.size(), 1u) << compile.dump(2);
  EXPECT_DOUBLE_EQ(compile["level1"]["1_Square.py"]["mean"].get<double>(), 1.0);

  // Resume: everything is recorded (failures included), nothing is measured again.
  CliRun again = run(args());
  EXPECT_EQ(again.exit_code, 0) << again.err << again.out;
  EXPECT_EQ(requests().size(), 3u) << again.out;
  EXPECT_NE(again.out.find("3 already recorded"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("--retry-failed"), std::string::npos) << again.out;

  // --retry-failed measures the failed modes again, and only those.
  CliRun retry = run(args({"--retry-failed"}));
  EXPECT_EQ(retry.exit_code, 0) << retry.err << retry.out;
  reqs = requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_NE(reqs[3]["problem"].get<std::string>().find("2_crash.py"), std::string::npos);
  EXPECT_EQ(reqs[3]["modes"], nlohmann::json::parse(R"(["eager","compile"])"));
  EXPECT_NE(reqs[4]["problem"].get<std::string>().find("1_compile_fails.py"), std::string::npos);
  EXPECT_EQ(reqs[4]["modes"], nlohmann::json::parse(R"(["compile"])"));
}

TEST_F(BaselineE2e, TimeBudgetStopsAndPrintsTheCommandThatContinues) {
  CliRun r = run(args({"--time-budget", "0.5"}), {{"FAKE_SLEEP", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(requests().size(), 1u) << r.out;
  EXPECT_NE(r.out.find("2 problem(s) remain"), std::string::npos) << r.out;
  auto lines = split_lines(r.out);
  std::string command;
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i].find("Continue with:") != std::string::npos) command = std::string(trim(lines[i + 1]));
  ASSERT_FALSE(command.empty()) << r.out;
  EXPECT_NE(command.find("--out " + out_.string()), std::string::npos) << command;
  sys::Command c;
  c.argv = {"/bin/sh", "-c", command};
  c.env_set = {{"FAKE_LOG", log_path().string()}};
  auto cont = sys::run(c);
  ASSERT_TRUE(cont.ok());
  EXPECT_EQ(cont->exit_code, 0) << cont->stdout_text << cont->stderr_text;
  EXPECT_EQ(requests().size(), 3u) << cont->stdout_text;
  auto doc = read_json(out_ / "kernelpro_baseline.json");
  EXPECT_EQ(doc["problems"]["level1"].size(), 2u);
  EXPECT_EQ(doc["problems"]["level2"].size(), 1u);
}

TEST_F(BaselineE2e, PrewarmCompilesEveryProblemInParallelWorkersBeforeTiming) {
  CliRun r = run(args({"--prewarm-jobs", "2"}));
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  std::vector<std::string> ops;
  std::set<std::string> warmed;
  for (const auto& q : requests()) {
    ops.push_back(q["op"].get<std::string>());
    if (q["op"] == "prewarm") warmed.insert(fs::path(q["problem"].get<std::string>()).filename().string());
  }
  // All three problems are warmed (one crashes its prewarm worker, one fails to compile), and
  // every warm-up comes before the first timed request.
  EXPECT_EQ(warmed, (std::set<std::string>{"1_Square.py", "2_crash.py", "1_compile_fails.py"}));
  auto first_baseline = std::find(ops.begin(), ops.end(), "baseline");
  ASSERT_NE(first_baseline, ops.end());
  EXPECT_EQ(std::count(first_baseline, ops.end(), "prewarm"), 0);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "baseline"), 3);
  EXPECT_NE(r.out.find("prewarmed torch.compile for 1 of 3 problem(s) with 2 worker(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 failed; they are measured anyway"), std::string::npos) << r.out;
  auto doc = read_json(out_ / "kernelpro_baseline.json");
  EXPECT_TRUE(doc["problems"]["level1"]["1_Square.py"]["results"]["compile"]["ok"].get<bool>());
}

TEST_F(BaselineE2e, OnlyPicksProblemsByName) {
  CliRun r = run(args({"--only", "1_Square,1_compile_fails.py", "--modes", "eager"}));
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0]["modes"], nlohmann::json::parse(R"(["eager"])"));
  auto doc = read_json(out_ / "kernelpro_baseline.json");
  EXPECT_FALSE(doc["problems"]["level1"]["1_Square.py"]["results"].contains("compile"));
}

TEST_F(BaselineE2e, WithoutGpuOrTorchExitsThree) {
  CliRun r = run(args(), {{"FAKE_MODE", "no_gpu"}});
  EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
  EXPECT_NE(r.err.find("fake machine without a GPU"), std::string::npos) << r.err;
}

TEST_F(BaselineE2e, MissingSuiteIsBadInput) {
  CliRun r = run({"baseline", "--suite", "/nonexistent/KernelBench", "--out", out_.string(), "--python", fake()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/KernelBench"), std::string::npos) << r.err;
}

TEST_F(BaselineE2e, AnotherGpusResultsAreNotMixed) {
  fs::create_directories(out_);
  ASSERT_TRUE(write_file((out_ / "kernelpro_baseline.json").string(),
                         R"({"format":"kernelpro-baseline","version":1,"hardware":"NVIDIA A100","problems":{}})")
                  .ok());
  CliRun r = run(args());
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("NVIDIA A100"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("another --out"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kp
