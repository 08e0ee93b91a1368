// Prompt templates, reply parsing and the four roles. The roles talk to a real loopback server
// in the OpenAI wire format (tests/support/fake_llm_server.h) through the real provider and
// client; the canned replies stand in for the model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "agent/agents.h"
#include "llm/client.h"
#include "tests/support/fake_llm_server.h"
#include "tests/support/paths.h"

namespace kp::agent {
namespace {

using nlohmann::json;
using testing::FakeLlmServer;
using testing::openai_completion;

const char* kNativeCandidate =
    "Here it is.\n```cuda\n#include <kernelpro/kp_abi.h>\n__global__ void k(float* y) {}\n"
    "KP_EXPORT int kp_run(kp_args* args) { return 0; }\n```\nVectorized loads.\n";

struct Rig {
  FakeLlmServer server;
  std::unique_ptr<llm::HttpTransport> transport = llm::make_curl_transport();
  std::unique_ptr<llm::Provider> provider;
  std::unique_ptr<llm::LlmClient> client;
  PromptLibrary prompts = PromptLibrary::load((kp::testing::source_dir() / "prompts").string()).value();
  Rig() {
    llm::HttpProviderOptions o;
    o.base_url = server.base_url();
    provider = llm::make_openai_provider(o, *transport);
    client = std::make_unique<llm::LlmClient>(*provider, llm::ClientOptions{},
                                              llm::ClientHooks{[](double) {}, [] { return 0.5; }, nullptr});
  }
  json request(size_t i) { return json::parse(server.requests().at(i).body); }
};

TaskBrief gelu() {
  TaskBrief t;
  t.name = "gelu";
  t.description = "y = gelu(x), fp32, 2^26 elements";
  t.interface = "inputs: x fp32 [N]; outputs: y fp32 [N]";
  t.reference = "KP_EXPORT int kp_run(kp_args* args) { /* reference */ return 0; }";
  t.gpu = "NVIDIA H200";
  return t;
}

TEST(AgentPrompts, SectionsVariablesAndErrors) {
  auto ok =
      render_template("a {{x}}{{#y}} [y={{y}}]{{/y}}{{#z}} [z={{missing}}]{{/z}}.", {{"x", "1"}, {"y", "2"}}, "t");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "a 1 [y=2].");
  auto hole = render_template("a {{x}} {{y}}", {{"x", "1"}}, "coder.md");
  ASSERT_FALSE(hole.ok());
  EXPECT_NE(hole.error().message.find("coder.md: no value for {{y}}"), std::string::npos) << hole.error().message;
  EXPECT_FALSE(render_template("{{#a}}open", {{"a", "1"}}, "t").ok());
  EXPECT_FALSE(render_template("{{/a}}", {}, "t").ok());
}

TEST(AgentPrompts, EveryShippedTemplateRendersWithItsRolesVariables) {
  Rig rig;  // loads prompts/ from the source tree
  const Vars task = {{"task_name", "t"}, {"task_kind", "native"}, {"description", "d"}, {"interface", "i"},
                     {"reference", "r"}, {"current", ""},         {"gpu", "g"}};
  auto with = [&](Vars extra) {
    Vars v = task;
    v.insert(extra.begin(), extra.end());
    return v;
  };
  for (const auto& [name, vars] : std::vector<std::pair<std::string, Vars>>{
           {"system", {}},
           {"coder_native", with({{"direction", "x"}, {"feedback", ""}})},
           {"coder_kernelbench", with({{"direction", ""}, {"feedback", "f"}})},
           {"debugger_native", with({{"failed", "f"}, {"failure", "compile_error"}, {"diagnostics", "d"}})},
           {"debugger_kernelbench", with({{"failed", "f"}, {"failure", "incorrect"}, {"diagnostics", "d"}})},
           {"planner", with({{"feedback", "f"}, {"lessons", ""}, {"history", ""}})},
           {"analyst", with({{"feedback", "f"}, {"tools", "- a\n"}})},
           {"repair", {{"reason", "r"}}},
           {"tool_rounds_over", {}}}) {
    auto text = rig.prompts.render(name, vars);
    EXPECT_TRUE(text.ok()) << name << ": " << text.error().message;
  }
}

TEST(AgentReplies, NativeCandidateAndItsRepairReasons) {
  auto files = extract_candidate(kNativeCandidate, TaskKind::kNative);
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_NE(files->cuda.find("kp_run"), std::string::npos);
  auto reason = [](std::string_view reply, TaskKind kind = TaskKind::kNative) {
    auto r = extract_candidate(reply, kind);
    return r.ok() ? std::string("(ok)") : r.error().message;
  };
  EXPECT_NE(reason("I would vectorize the loads.").find("no code block"), std::string::npos);
  EXPECT_NE(reason("```cuda\n__global__ void k() {}\n```").find("defines no kp_run"), std::string::npos);
  EXPECT_NE(reason("```cuda\nKP_EXPORT int kp_run(kp_args* a) {\n  for (;;\n")
                .find("not closed: the reply was cut off after 2 lines"),
            std::string::npos);
  EXPECT_NE(reason("```cuda\nint kp_run();\n```\n```cuda\nint kp_run();\n```").find("2 CUDA blocks"),
            std::string::npos);
}

TEST(AgentReplies, KernelBenchFastFormAndLoadInline) {
  const std::string fast =
      "```python\nimport kernelpro_torch\nlib = kernelpro_torch.load()\nclass ModelNew(nn.Module):\n    pass\n```\n"
      "```cuda\nextern \"C\" void relu(const float* x, float* y, int64_t n, cudaStream_t s) {}\n```\n";
  auto f = extract_candidate(fast, TaskKind::kKernelBench);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_NE(f->python.find("ModelNew"), std::string::npos);
  EXPECT_NE(f->cuda.find("extern \"C\""), std::string::npos);
  auto inl =
      extract_candidate("```python\nfrom torch.utils.cpp_extension import load_inline\nclass ModelNew: pass\n```",
                        TaskKind::kKernelBench);
  ASSERT_TRUE(inl.ok()) << inl.error().message;
  EXPECT_TRUE(inl->cuda.empty());
  auto no_cu = extract_candidate("```python\nclass ModelNew: pass\n```", TaskKind::kKernelBench);
  ASSERT_FALSE(no_cu.ok());
  EXPECT_NE(no_cu.error().message.find("extern \"C\" launchers"), std::string::npos);
}

TEST(AgentReplies, JsonObjectsAndLogCutting) {
  EXPECT_EQ(extract_json_object("Plan:\n```json\n{\"direction\": \"x\"}\n```").value()["direction"], "x");
  EXPECT_EQ(extract_json_object("sure: {\"tools\": [\"a\"], \"note\": \"{braces}\"} done").value()["tools"][0], "a");
  EXPECT_FALSE(extract_json_object("{\"direction\": \"cut").ok());
  std::string log;
  for (int i = 0; i < 300; ++i)
    log += "/tmp/c.cu(12): warning #177-D: variable \"v\" was declared but never referenced\n";
  log += "/tmp/c.cu(40): error: identifier \"floaat4\" is undefined\n    floaat4 v = x4[i];\n    ^\n";
  for (int i = 0; i < 20; ++i) log += "/tmp/c.cu(40): error: identifier \"floaat4\" is undefined\n";
  const std::string cut = cut_log(log, 1500);
  EXPECT_LE(cut.size(), 1700u);
  EXPECT_EQ(cut.rfind("/tmp/c.cu(40): error: identifier \"floaat4\" is undefined\n    floaat4 v = x4[i];", 0), 0u)
      << cut;
  EXPECT_NE(cut.find("left out"), std::string::npos);
  EXPECT_EQ(cut_log("short log\n"), "short log\n");
}

TEST(AgentRoles, CoderRepairsAReplyWithoutCode) {
  Rig rig;
  rig.server.push({.body = openai_completion("I would use float4 loads and a grid-stride loop.")});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  Agents agents(*rig.client, rig.prompts, "m", {.tools = false});
  auto r = agents.write(gelu(), "vectorize the loads", "memory-bound, DRAM 71%", nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->repairs, 1);
  EXPECT_NE(r->files.cuda.find("kp_run"), std::string::npos);
  json second = rig.request(1);
  const auto& msgs = second["messages"];
  EXPECT_EQ(msgs[0]["role"], "system");
  EXPECT_NE(msgs[1]["content"].get<std::string>().find("## What to change this time\nvectorize the loads"),
            std::string::npos);
  EXPECT_EQ(msgs[2]["role"], "assistant");
  EXPECT_NE(msgs[3]["content"].get<std::string>().find("could not be used: the reply has no code block"),
            std::string::npos);
}

TEST(AgentRoles, KernelBenchCoderSeesTheDirectionAndTheReferencesProfile) {
  Rig rig;
  rig.server.push({.body = openai_completion(
                       "```python\nimport kernelpro_torch\nlib = kernelpro_torch.load()\nclass ModelNew: pass\n"
                       "```\n```cuda\nextern \"C\" void f(cudaStream_t s) {}\n```\n")});
  Agents agents(*rig.client, rig.prompts, "m", {.tools = false});
  TaskBrief kb = gelu();
  kb.kind = TaskKind::kKernelBench;
  kb.interface = kb.reference = "class Model(nn.Module): ...";
  auto r = agents.write(kb, "fuse the 14 kernels into one", "MEASURED  11.5 ms per call", nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string prompt = rig.request(0)["messages"][1]["content"].get<std::string>();
  EXPECT_NE(prompt.find("## What to change this time\nfuse the 14 kernels into one"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("before any candidate)\nMEASURED  11.5 ms per call"), std::string::npos) << prompt;
}

TEST(AgentRoles, CoderCallsToolsThenAnswers) {
  Rig rig;
  rig.server.push({.body = openai_completion(
                       "", json::array({{{"id", "call_1"},
                                         {"type", "function"},
                                         {"function",
                                          {{"name", "compile_check"},
                                           {"arguments", R"({"source":"__global__ void draft() {}"})"}}}}}))});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  std::string compiled;
  CoderTools tools;
  tools.compile_check = [&](const std::string& source) {
    compiled = source;
    return std::string("ptxas info: Used 18 registers, 0 bytes spill stores");
  };
  Agents agents(*rig.client, rig.prompts, "m");
  auto r = agents.write(gelu(), "", "", &tools);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(compiled, "__global__ void draft() {}");
  EXPECT_EQ(r->tool_calls, 1);
  json first = rig.request(0), second = rig.request(1);
  ASSERT_EQ(first["tools"].size(), 1u);  // only the tools the caller provided
  EXPECT_EQ(first["tools"][0]["function"]["name"], "compile_check");
  const auto& msgs = second["messages"];
  EXPECT_EQ(msgs[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_EQ(msgs[3]["tool_call_id"], "call_1");
  EXPECT_NE(msgs[3]["content"].get<std::string>().find("18 registers"), std::string::npos);
}

// The CUTLASS tools: the coder searches, reads a range (the model may write numbers as
// strings), lists a directory and calls a tool it was not offered; the prompt says CuTe is
// there only when the tools are.
TEST(AgentRoles, CoderSearchesReadsAndListsCutlass) {
  Rig rig;
  auto call = [](const char* id, const char* name, const char* args) {
    return json{{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
  };
  rig.server.push({.body = openai_completion(
                       "", json::array({call("c1", "search_code", R"({"query":"TMA load of a tile"})"),
                                        call("c2", "read_code",
                                             R"({"path":"include/cute/atom/copy_traits_sm90_tma.hpp","start_line":10,"end_line":"20"})"),
                                        call("c3", "list_code", R"({"dir":"include/cute/arch"})"),
                                        call("c4", "run_analysis_tool", R"({"name":"x"})")}))});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  std::vector<std::string> seen;
  CoderTools tools;
  tools.cutlass_version = "4.2.0";
  tools.search_code = [&](const std::string& q) {
    seen.push_back("search " + q);
    return std::string("include/cute/atom/copy_traits_sm90_tma.hpp:10-40  function make_tma_copy");
  };
  tools.read_code = [&](const std::string& path, int start, int end) {
    seen.push_back(fmt::format("read {} {}-{}", path, start, end));
    return std::string("   10  auto make_tma_copy(...)");
  };
  tools.list_code = [&](const std::string& dir) {
    seen.push_back("list " + dir);
    return std::string("mma_sm90.hpp");
  };
  Agents agents(*rig.client, rig.prompts, "m");
  auto r = agents.write(gelu(), "", "", &tools);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(seen, (std::vector<std::string>{"search TMA load of a tile",
                                            "read include/cute/atom/copy_traits_sm90_tma.hpp 10-20",
                                            "list include/cute/arch"}));
  EXPECT_EQ(r->tool_calls, 4);
  json first = rig.request(0), second = rig.request(1);
  std::vector<std::string> offered;
  for (const auto& t : first["tools"]) offered.push_back(t["function"]["name"]);
  EXPECT_EQ(offered, (std::vector<std::string>{"search_code", "read_code", "list_code"}));
  EXPECT_EQ(first["tools"][1]["function"]["parameters"]["properties"]["start_line"]["type"], "integer");
  const std::string prompt = first["messages"][1]["content"];
  EXPECT_NE(prompt.find("CuTe and CUTLASS (CUTLASS 4.2.0) are on the include path"), std::string::npos) << prompt;
  const auto& msgs = second["messages"];
  EXPECT_NE(msgs[3]["content"].get<std::string>().find("make_tma_copy"), std::string::npos);
  EXPECT_EQ(msgs[4]["content"], "   10  auto make_tma_copy(...)");
  EXPECT_EQ(msgs[5]["content"], "mma_sm90.hpp");
  EXPECT_EQ(msgs[6]["content"],
            "unknown tool \"run_analysis_tool\"; the tools offered are: search_code, read_code, list_code");

  // Without the code tools the prompt says nothing of CuTe.
  Rig plain;
  plain.server.push({.body = openai_completion(kNativeCandidate)});
  CoderTools compile_only;
  compile_only.compile_check = [](const std::string&) { return std::string("compiled"); };
  ASSERT_TRUE(Agents(*plain.client, plain.prompts, "m").write(gelu(), "", "", &compile_only).ok());
  EXPECT_EQ(plain.request(0)["messages"][1]["content"].get<std::string>().find("CuTe"), std::string::npos);
}

TEST(AgentRoles, CoderWithToolsOfferedStillRepairsWithinItsLimit) {
  Rig rig;
  rig.server.push({.body = openai_completion("Let me think about coalescing.")});
  rig.server.push({.body = openai_completion("Still thinking.")});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  CoderTools tools;
  tools.compile_check = [](const std::string&) { return std::string("compiled"); };
  Agents agents(*rig.client, rig.prompts, "m", {.max_repairs = 2});
  auto r = agents.write(gelu(), "", "", &tools);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->repairs, 2);
  EXPECT_EQ(r->tool_calls, 0);
  EXPECT_EQ(rig.server.requests().size(), 3u);
}

TEST(AgentRoles, ToolRoundsRunOutAndTheModelIsToldToAnswer) {
  Rig rig;
  rig.server.push({.body = openai_completion(
                       "", json::array({{{"id", "c1"},
                                         {"type", "function"},
                                         {"function", {{"name", "compile_check"}, {"arguments", "not json"}}}}}))});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  CoderTools tools;
  int calls = 0;
  tools.compile_check = [&](const std::string&) {
    ++calls;
    return std::string("compiled");
  };
  Agents agents(*rig.client, rig.prompts, "m", {.max_tool_rounds = 1});
  auto r = agents.write(gelu(), "", "", &tools);
  ASSERT_TRUE(r.ok()) << r.error().message;
  json second = rig.request(1);
  EXPECT_EQ(second.count("tools"), 0u) << "no tools offered after the last round";
  EXPECT_NE(second["messages"][3]["content"].get<std::string>().find("arguments were not JSON"), std::string::npos);
  EXPECT_EQ(calls, 0) << "a tool is not run on arguments that are not JSON";
  EXPECT_NE(second["messages"].back()["content"].get<std::string>().find("last round of tool calls"),
            std::string::npos);
}

TEST(AgentRoles, PlannerAnalystAndDebugger) {
  Rig rig;
  rig.server.push({.body = openai_completion("```json\n{\"direction\": \"online softmax: one pass\", \"actions\": "
                                             "[\"reuse_data\"], \"why\": \"DRAM 1.9x ideal\"}\n```")});
  rig.server.push({.body = openai_completion("{\"tools\": [\"bank_conflict\"]}")});
  rig.server.push({.body = openai_completion("{\"tools\": [\"bank_conflicts\"]}")});
  rig.server.push({.body = openai_completion(kNativeCandidate)});
  Agents agents(*rig.client, rig.prompts, "m", {.tools = false});
  auto plan = agents.plan(gelu(), "memory-bound", "", "vectorize: 1.2x");
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->direction, "online softmax: one pass");
  EXPECT_EQ(plan->actions, std::vector<std::string>{"reuse_data"});
  EXPECT_NE(rig.request(0)["messages"][1]["content"].get<std::string>().find("## The task\n"), std::string::npos)
      << "the planner knows what the task is";
  auto tools = agents.choose_tools(gelu(), "memory-bound",
                                   {{"bank_conflicts", "shared-memory bank conflicts"},
                                    {"warp_stalls", "stall reasons"},
                                    {"roofline_headroom", "the roof", true}});
  ASSERT_TRUE(tools.ok()) << tools.error().message;
  EXPECT_EQ(*tools, std::vector<std::string>{"bank_conflicts"});
  const std::string analyst = rig.request(1)["messages"][1]["content"].get<std::string>();
  EXPECT_NE(analyst.find("- bank_conflicts: shared-memory bank conflicts\n- warp_stalls: stall reasons\n"),
            std::string::npos)
      << analyst;
  EXPECT_NE(analyst.find("Tools that produced this analysis: roofline_headroom."), std::string::npos) << analyst;
  EXPECT_EQ(analyst.find("- roofline_headroom"), std::string::npos) << "a tool that ran is not offered again";
  EXPECT_NE(
      rig.request(2)["messages"].back()["content"].get<std::string>().find("\"bank_conflict\" is not one of the tools"),
      std::string::npos);
  std::string log = "c.cu(3): error: expected a \";\"\n";
  auto fixed = agents.debug(gelu(), {"bad source\n", ""}, "compile_error", log);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  const std::string prompt = rig.request(3)["messages"][1]["content"].get<std::string>();
  EXPECT_NE(prompt.find("failed: compile_error"), std::string::npos);
  EXPECT_NE(prompt.find("```cuda\nbad source\n```"), std::string::npos);
  EXPECT_NE(prompt.find("expected a \";\""), std::string::npos);
}

TEST(AgentRoles, GivesUpAfterTheRepairsWithTheLastReason) {
  Rig rig;
  for (int i = 0; i < 3; ++i) rig.server.push({.body = openai_completion("no code, sorry")});
  Agents agents(*rig.client, rig.prompts, "m", {.max_repairs = 2, .tools = false});
  auto r = agents.write(gelu(), "", "", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("after 2 repair prompts: the reply has no code block"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(rig.server.requests().size(), 3u);
}

}  // namespace
}  // namespace kp::agent
