// `kernelpro mcp`: kernelpro as a Model Context Protocol server over stdio, for coding agents
// (Claude Code, Cursor, Codex, Gemini CLI...). JSON-RPC 2.0, one message per line on stdin and
// stdout (the MCP stdio transport), logs on stderr; the handshake revisions 2024-11-05 through
// 2025-11-25 (`initialize`). A client that probes the stateless revision first (`server/discover`)
// gets "method not found" and falls back to the handshake, as the SDKs do.
//
// Every tool that builds, runs or profiles code runs the kernelpro binary itself (`kernelpro eval
// --json`, `build`, `profile`, `analyze`, `cutlass`, `optimize`) as a child, so an agent gets the
// same judge, the same checks and the same verdicts as `kernelpro optimize`, and a crash costs
// one call, never the server. GPU tools (evaluate, profile, analyze) run one at a time. A long
// call sends `notifications/progress` when the request carries a progress token, and a
// `notifications/cancelled` kills its child and answers the request with an error.
//
// Paths: a task, candidate or run folder named by an agent must lie under an allowed root (the
// workspace, kernelpro's examples/, and the folders given with --allow); candidate source given as
// text is written into WORKSPACE/candidates. Candidates run in kernelpro's workers, which keep API
// keys out of their environment.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::mcp {

// The revisions this server speaks, oldest first; the last is answered to a client asking for
// one it does not know.
inline const std::vector<std::string> kProtocolVersions = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};

// JSON-RPC error codes.
inline constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601,
                     kInvalidParams = -32602, kInternalError = -32603, kRequestCancelled = -32800;

struct ServerOptions {
  std::filesystem::path kernelpro;              // the binary the tools run
  std::filesystem::path workspace;              // candidates given as text, optimize runs
  std::vector<std::filesystem::path> allowed;   // more roots paths may lie under
  std::filesystem::path examples_dir;           // listed by list_tasks without a folder; allowed
  std::filesystem::path prompts_dir;            // the roles' templates, served as prompts
  std::string version = "0";                    // serverInfo.version
  std::vector<std::pair<std::string, std::string>> env;  // added to every child's environment
  double progress_every_s = 2.0;
};

class Server {
 public:
  // `write` receives each outgoing message (one JSON text, no newline); it is called from
  // several threads, never at once.
  Server(ServerOptions options, std::function<void(const std::string&)> write);
  ~Server();  // cancels what is in flight and waits for it
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // One incoming line. Requests that run a child are answered from a thread of their own; the
  // rest before this returns.
  void handle_line(const std::string& line);
  // Waits until no request is in flight (tests, and the end of input).
  void drain();

  // The tools' descriptions, as tools/list gives them.
  static nlohmann::json tool_list();

 private:
  struct Call;
  void reply(const nlohmann::json& id, const nlohmann::json& result);
  void reply_error(const nlohmann::json& id, int code, const std::string& message,
                   const nlohmann::json& data = nullptr);
  void notify(const std::string& method, const nlohmann::json& params);
  void handle_request(const nlohmann::json& id, const std::string& method, const nlohmann::json& params);
  void call_tool(const std::shared_ptr<Call>& call);
  Result<nlohmann::json> run_tool(const std::shared_ptr<Call>& call);
  // run_tool's tools, one function each, or one for a family of tools that share their steps:
  // build, evaluate, profile and analyze (on a candidate); optimize_status, optimize_stop and
  // run_history (on a run).
  Result<nlohmann::json> tool_on_candidate(const std::shared_ptr<Call>& call);
  Result<nlohmann::json> tool_search_code(const std::shared_ptr<Call>& call);
  Result<nlohmann::json> tool_read_code(const std::shared_ptr<Call>& call);
  Result<nlohmann::json> tool_list_tasks(const nlohmann::json& args);
  Result<nlohmann::json> tool_show_task(const nlohmann::json& args);
  Result<nlohmann::json> tool_optimize_start(const nlohmann::json& args);
  Result<nlohmann::json> tool_on_run(const std::string& tool, const nlohmann::json& args);
  // Runs `kernelpro ARGS` for a call: stdout (JSON) and the exit code; progress while it runs;
  // killed on cancellation (kTimeout "cancelled").
  struct ChildRun {
    int exit_code = -1;
    std::string out, err;
  };
  Result<ChildRun> run_kernelpro(const std::shared_ptr<Call>& call, const std::vector<std::string>& args,
                                 const std::string& what);
  Result<std::filesystem::path> allowed_path(const std::string& p, const char* what) const;
  Result<std::filesystem::path> candidate_file(const nlohmann::json& args, const char* path_key,
                                               const char* source_key, const std::string& ext);
  nlohmann::json list_resources();
  Result<nlohmann::json> read_resource(const std::string& uri);
  nlohmann::json list_prompts();
  Result<nlohmann::json> get_prompt(const std::string& name);

  ServerOptions options_;
  std::function<void(const std::string&)> write_;
  std::mutex write_mu_;
  std::mutex gpu_mu_;  // one GPU request at a time
  std::mutex calls_mu_;
  std::map<std::string, std::shared_ptr<Call>> calls_;  // in flight, by request id (dumped)
  // The calls' threads, each with a flag it sets when done; a new call joins the finished ones.
  std::vector<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> threads_;
  bool initialized_ = false;
  std::string protocol_version_;
  // optimize_start's runs: id -> process (pid), run folder
  struct Background;
  std::mutex runs_mu_;
  std::map<std::string, std::shared_ptr<Background>> runs_;
};

// Serves stdin/stdout until stdin closes; returns the exit code.
int serve_stdio(const ServerOptions& options);

}  // namespace kp::mcp
