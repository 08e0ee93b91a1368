// The MCP server's protocol: handshake, errors, argument checks, the allowed folders, progress and
// cancellation. The kernelpro it runs is a small script here; tests/e2e/mcp_client_test.py drives
// the real binary with the official SDK.
#include "mcp/server.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::mcp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class McpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-mcp-").value());
    // A stand-in kernelpro: `eval` sleeps when the task's path holds "slow", then prints a verdict.
    fake_ = dir_->path() / "kernelpro";
    ASSERT_TRUE(write_file(fake_.string(),
                           "#!/bin/sh\n"
                           "case \"$2\" in *slow*) sleep 30 ;; esac\n"
                           "echo \"$@\" > \"$(dirname \"$0\")/args\"\n"
                           "echo '{\"outcome\":\"ok\",\"time\":{\"median_s\":0.001},\"speedup_vs_reference\":2.5}'\n")
                    .ok());
    fs::permissions(fake_, fs::perms::owner_all);
    fs::create_directories(dir_->path() / "tasks" / "slow");
    fs::create_directories(dir_->path() / "tasks" / "quick");
  }
  ServerOptions options() {
    ServerOptions o;
    o.kernelpro = fake_;
    o.workspace = dir_->path() / "ws";
    o.allowed = {dir_->path() / "tasks"};
    o.examples_dir = testing::examples_dir();
    o.prompts_dir = testing::source_dir() / "prompts";
    o.progress_every_s = 0.1;
    return o;
  }
  std::vector<json> out() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<json> v;
    for (const auto& m : out_) v.push_back(json::parse(m));
    return v;
  }
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu_);
      out_.push_back(m);
    };
  }
  json last() { return out().back(); }
  static std::string req(int id, const std::string& method, const json& params = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
  }
  std::unique_ptr<sys::TempDir> dir_;
  fs::path fake_;
  std::mutex mu_;
  std::vector<std::string> out_;
};

TEST_F(McpServerTest, TheHandshakeAgreesOnARevisionItKnows) {
  Server s(options(), sink());
  s.handle_line(req(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}}));
  EXPECT_EQ(last()["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(last()["result"]["capabilities"].contains("tools"));
  s.handle_line(req(2, "initialize", {{"protocolVersion", "2099-01-01"}}));
  EXPECT_EQ(last()["result"]["protocolVersion"], kProtocolVersions.back()) << "an unknown revision gets our latest";
  s.handle_line(req(3, "server/discover"));
  EXPECT_EQ(last()["error"]["code"], kMethodNotFound) << "the stateless probe falls back to the handshake";
}

TEST_F(McpServerTest, BadMessagesGetJsonRpcErrorsAndTheServerGoesOn) {
  Server s(options(), sink());
  s.handle_line("{not json");
  EXPECT_EQ(last()["error"]["code"], kParseError);
  EXPECT_TRUE(last()["id"].is_null());
  s.handle_line("[1,2]");
  EXPECT_EQ(last()["error"]["code"], kInvalidRequest);
  s.handle_line(R"({"jsonrpc":"1.0","id":4,"method":"ping"})");
  EXPECT_EQ(last()["error"]["code"], kInvalidRequest);
  s.handle_line(req(5, "tools/call", {{"name", "no_such_tool"}}));
  EXPECT_EQ(last()["error"]["code"], kInvalidParams);
  s.handle_line(req(6, "tools/call", {{"name", "evaluate"}, {"arguments", {{"task", 3}}}}));
  EXPECT_EQ(last()["error"]["code"], kInvalidParams);
  EXPECT_NE(last()["error"]["message"].get<std::string>().find("type string"), std::string::npos);
  s.handle_line(req(7, "tools/call", {{"name", "evaluate"}, {"arguments", json::object()}}));
  EXPECT_NE(last()["error"]["message"].get<std::string>().find("missing required argument 'task'"), std::string::npos);
  s.handle_line(req(8, "tools/call", {{"name", "evaluate"}, {"arguments", {{"task", "x"}, {"colour", "red"}}}}));
  EXPECT_NE(last()["error"]["message"].get<std::string>().find("unknown argument 'colour'"), std::string::npos);
  s.handle_line(req(9, "ping"));
  EXPECT_EQ(last()["id"], 9);
  EXPECT_TRUE(last()["result"].is_object());
}

TEST_F(McpServerTest, APathOutsideTheAllowedFoldersIsRefusedBeforeAnythingRuns) {
  Server s(options(), sink());
  s.handle_line(req(1, "tools/call", {{"name", "evaluate"}, {"arguments", {{"task", "/etc"}}}}));
  s.drain();
  EXPECT_TRUE(last()["result"]["isError"].get<bool>());
  EXPECT_NE(last()["result"]["content"][0]["text"].get<std::string>().find("outside the folders"), std::string::npos);
  s.handle_line(req(2, "tools/call",
                    {{"name", "evaluate"},
                     {"arguments", {{"task", (dir_->path() / "tasks" / ".." / ".." / "etc").string()}}}}));
  s.drain();
  EXPECT_TRUE(last()["result"]["isError"].get<bool>()) << "'..' must not climb out";
  EXPECT_FALSE(fs::exists(dir_->path() / "args")) << "kernelpro ran for a refused path";
}

TEST_F(McpServerTest, ACandidateGivenAsTextIsWrittenIntoTheWorkspaceAndJudged) {
  Server s(options(), sink());
  s.handle_line(req(1, "tools/call",
                    {{"name", "evaluate"},
                     {"arguments", {{"task", (dir_->path() / "tasks" / "quick").string()}, {"candidate_source", "k"}}}}));
  s.drain();
  const json r = last()["result"];
  EXPECT_FALSE(r["isError"].get<bool>());
  EXPECT_DOUBLE_EQ(r["structuredContent"]["speedup_vs_reference"].get<double>(), 2.5);
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("2.50x the reference"), std::string::npos);
  const std::string args = read_file((dir_->path() / "args").string()).value();
  EXPECT_NE(args.find("eval "), std::string::npos) << args;
  EXPECT_NE(args.find((dir_->path() / "ws" / "candidates").string()), std::string::npos) << args;
  EXPECT_NE(args.find("--json"), std::string::npos);
}

TEST_F(McpServerTest, ALongCallReportsProgressAndACancelKillsIt) {
  Server s(options(), sink());
  const auto t0 = std::chrono::steady_clock::now();
  s.handle_line(req(1, "tools/call",
                    {{"name", "evaluate"},
                     {"arguments", {{"task", (dir_->path() / "tasks" / "slow").string()}}},
                     {"_meta", {{"progressToken", "tok"}}}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  s.handle_line(json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}}.dump());
  s.drain();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "the child was not killed";
  int progress = 0;
  for (const auto& m : out()) progress += m.value("method", "") == "notifications/progress";
  EXPECT_GE(progress, 1);
  EXPECT_EQ(last()["id"], 1);
  EXPECT_EQ(last()["error"]["code"], kRequestCancelled);
}

TEST_F(McpServerTest, PromptsAreTheRolesTemplatesAndUnknownOnesAreRefused) {
  Server s(options(), sink());
  s.handle_line(req(1, "prompts/list"));
  bool planner = false;
  const json listed = last();
  for (const auto& p : listed["result"]["prompts"]) planner = planner || p["name"] == "planner";
  EXPECT_TRUE(planner);
  s.handle_line(req(2, "prompts/get", {{"name", "planner"}}));
  EXPECT_FALSE(last()["result"]["messages"][0]["content"]["text"].get<std::string>().empty());
  s.handle_line(req(3, "prompts/get", {{"name", "../../etc/passwd"}}));
  EXPECT_EQ(last()["error"]["code"], kInvalidParams);
  s.handle_line(req(4, "resources/read", {{"uri", "kernelpro://runs/../x/best.cu"}}));
  EXPECT_TRUE(last().contains("error"));
}

}  // namespace
}  // namespace kp::mcp
