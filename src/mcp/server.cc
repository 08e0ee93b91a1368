#include "mcp/server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "campaign/scheduler.h"
#include "report/campaign_report.h"
#include "store/run_store.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kp::mcp {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Server::Call {
  json id;
  json args;
  std::string tool;
  json progress_token;  // null: none asked for
  std::atomic<bool> cancelled{false};
};

struct Server::Background {
  std::unique_ptr<sys::Process> process;
  fs::path run_dir;
  std::string task;
  std::optional<sys::Completed> ended;
};

namespace {

json schema(json properties, std::vector<std::string> required) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

json str(const std::string& d) { return {{"type", "string"}, {"description", d}}; }
json integer(const std::string& d) { return {{"type", "integer"}, {"description", d}}; }

const json kCandidate = {
    {"task", str("a task folder (task.toml) or a KernelBench problem .py")},
    {"candidate_path", str("the candidate file: a .cu for a task, a .py defining ModelNew for a KernelBench problem")},
    {"candidate_source", str("the candidate's text instead of a path (written into the workspace)")},
    {"cu_path", str("KernelBench: a .cu that kernelpro builds and the candidate .py loads")},
    {"cu_source", str("KernelBench: that .cu's text instead of a path")}};

json with(json base, const json& more) {
  for (auto it = more.begin(); it != more.end(); ++it) base[it.key()] = it.value();
  return base;
}

// Checks args against a tool's input schema (the subset these schemas use): an object, the
// required keys present, no unknown key, each value of its declared type. "" when it fits.
std::string check_args(const json& s, const json& args) {
  if (!args.is_object()) return "arguments must be an object";
  for (const auto& r : s.value("required", json::array()))
    if (!args.contains(r.get<std::string>())) return fmt::format("missing required argument '{}'", r.get<std::string>());
  const json& props = s["properties"];
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (!props.contains(it.key())) return fmt::format("unknown argument '{}'", it.key());
    const std::string type = props[it.key()].value("type", "");
    const json& v = it.value();
    const bool fits = (type == "string" && v.is_string()) || (type == "integer" && v.is_number_integer()) ||
                      (type == "number" && v.is_number()) || (type == "boolean" && v.is_boolean()) ||
                      (type == "array" && v.is_array() &&
                       std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); }));
    if (!fits) return fmt::format("argument '{}' must be of type {}", it.key(), type == "array" ? "array of strings" : type);
  }
  return "";
}

bool under(const fs::path& p, const fs::path& root) {
  auto rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

// The tool result: text a model reads, and the JSON a program reads.
json tool_result(const std::string& text, const json& structured, bool is_error) {
  json r = {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
  if (structured.is_object()) r["structuredContent"] = structured;
  return r;
}

std::string exit_meaning(int code) {
  switch (code) {
    case 0: return "ok";
    case 1: return "the candidate failed (see the outcome)";
    case 2: return "bad input";
    case 3: return "not run: no GPU on this machine (the build was checked)";
    case 4: return "an internal or tool failure";
    case 5: return "pending";
    default: return fmt::format("exit code {}", code);
  }
}

// A one-paragraph summary of an eval/profile/analyze JSON for the model.
std::string summarize(const std::string& tool, const json& j, int code) {
  std::string s = fmt::format("{}: {}", tool, exit_meaning(code));
  if (!j.is_object()) return s;
  if (j.contains("outcome")) s += fmt::format("; outcome {}", j.value("outcome", ""));
  if (j.contains("reason") && !j.value("reason", "").empty()) s += fmt::format(" ({})", j.value("reason", ""));
  if (j.contains("time") && j["time"].is_object())
    s += fmt::format("; median {}", format_seconds(j["time"].value("median_s", 0.0)));
  if (j.contains("speedup_vs_reference")) s += fmt::format("; {:.2f}x the reference", j.value("speedup_vs_reference", 0.0));
  if (j.contains("energy") && j["energy"].is_object() && j["energy"].contains("joules_per_call"))
    s += fmt::format("; {:.3g} J per call", j["energy"].value("joules_per_call", 0.0));
  return s;
}

// What a run's store says of it, added to `result`: its candidates, best time and speedup, and
// with `history` its tree, diagnosis and lessons. Nothing when it has no store (yet).
void add_run_progress(json& result, const fs::path& run_dir, bool history) {
  if (!fs::exists(run_dir / "store.db")) return;
  auto p = report::read_run(run_dir, run_dir.filename().string(), "native", 0);
  if (!p.ok()) return;
  result["candidates"] = p->candidates;
  result["best_s"] = p->best_s;
  result["speedup"] = p->speedup;
  if (!history) return;
  json tree = json::array();
  for (const auto& t : p->tree)
    tree.push_back({{"id", t.id}, {"parent", t.parent}, {"outcome", t.outcome}, {"seconds", t.seconds},
                    {"direction", t.direction}, {"best_path", t.on_best_path}});
  result["tree"] = tree;
  result["diagnosis"] = p->diagnosis;
  auto s = store::RunStore::open(run_dir / "store.db", store::RunStore::Access::kReader);
  json lessons = json::array();
  if (s.ok())
    if (auto ls = s->lessons_in_order(); ls.ok())
      for (const auto& l : *ls)
        lessons.push_back({{"direction", l.direction}, {"outcome", l.outcome}, {"time_ratio", l.time_ratio},
                           {"evidence", l.evidence}});
  result["lessons"] = lessons;
}

}  // namespace

json Server::tool_list() {
  json tools = json::array();
  auto add = [&](const char* name, const char* title, const char* description, json input) {
    tools.push_back({{"name", name}, {"title", title}, {"description", description}, {"inputSchema", std::move(input)}});
  };
  add("build", "Build a candidate",
      "Compile a candidate with nvcc as kernelpro does (no GPU needed): diagnostics with file:line and the ptxas "
      "resource report (registers, shared memory, spills) per kernel.",
      schema(with(kCandidate, json::object()), {"task"}));
  add("evaluate", "Evaluate a candidate",
      "Build, check and time a candidate on the GPU with kernelpro's judge: the verdict (ok, incorrect, rejected "
      "with the cheat, crash, timeout...), median time, speedup over the reference timed in the same run, energy per "
      "call. The same checks as `kernelpro optimize`.",
      schema(with(kCandidate, {{"seed", integer("input seed, to reproduce an evaluation")}}), {"task"}));
  add("profile", "Profile a candidate",
      "Counters (CUPTI), SASS and ptxas report, the system trace and the roofline class of a candidate.",
      schema(with(kCandidate, {{"stage", integer("1: stage-1 metrics; 2: also the families the class calls for")}}),
             {"task"}));
  add("analyze", "Diagnose a candidate",
      "The main bottleneck and what to change, with the numbers: the roofline class, then the tools the evidence "
      "calls for (or those named).",
      schema(with(kCandidate, {{"tools", {{"type", "array"}, {"items", {{"type", "string"}}},
                                          {"description", "run these stage-2 tools by name instead"}}}}),
             {"task"}));
  add("search_code", "Search CUTLASS/CuTe",
      "BM25 search over the CUTLASS and CuTe headers, examples and docs: ranked path:lines with snippets.",
      schema({{"query", str("words, e.g. 'TMA load of a tile from global to shared memory'")},
              {"limit", integer("hits to return (default 5)")}},
             {"query"}));
  add("read_code", "Read CUTLASS/CuTe code", "A file of the CUTLASS checkout by line range.",
      schema({{"path", str("a path under the CUTLASS root, e.g. include/cute/tensor.hpp")},
              {"start", integer("first line")},
              {"end", integer("last line")}},
             {"path", "start", "end"}));
  add("list_tasks", "List tasks",
      "The tasks of a folder: kernelpro's examples by default, or a KernelBench folder (level1/...).",
      schema({{"folder", str("a folder of task folders, a KernelBench folder, or a list file")},
              {"levels", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "KernelBench levels, e.g. [\"1\"]"}}}},
             {}));
  add("show_task", "Show a task", "A task's definition, reference and seed (or a KernelBench problem's source).",
      schema({{"task", str("a task folder or a KernelBench problem .py")}}, {"task"}));
  add("optimize_start", "Start an optimization",
      "Start `kernelpro optimize` in the background: the offline tuner over the seed's KP_TUNE parameters, or a model "
      "when a provider is named. Returns a run id for optimize_status and optimize_stop.",
      schema({{"task", str("a task folder, or (with a provider) a KernelBench problem .py")},
              {"budget", integer("candidates to evaluate (default 12)")},
              {"search", str("mcts (default), greedy or beam")},
              {"provider", str("openai, anthropic or command (its key from the server's environment)")},
              {"model", str("the model's name at the provider")}},
             {"task"}));
  add("optimize_status", "Optimization status", "A background run's state: running or how it ended, candidates, best.",
      schema({{"run_id", str("as optimize_start returned it")}}, {"run_id"}));
  add("optimize_stop", "Stop an optimization",
      "Stop a background run after the evaluation in flight, as Ctrl-C does; it can be resumed.",
      schema({{"run_id", str("as optimize_start returned it")}}, {"run_id"}));
  add("run_history", "A run's history",
      "A run store's search tree (every node's verdict and time), the best candidate and the lessons learnt.",
      schema({{"run_id", str("as optimize_start returned it")}, {"run_dir", str("or an optimize run folder")}}, {}));
  return tools;
}

Server::Server(ServerOptions options, std::function<void(const std::string&)> write)
    : options_(std::move(options)), write_(std::move(write)) {
  std::error_code ec;
  fs::create_directories(options_.workspace, ec);
  options_.workspace = fs::absolute(options_.workspace).lexically_normal();
}

Server::~Server() {
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    for (auto& [id, c] : calls_) c->cancelled = true;
  }
  drain();
  std::lock_guard<std::mutex> lock(runs_mu_);
  for (auto& [id, b] : runs_)
    if (b->process && b->process->running()) ::kill(b->process->pid(), SIGINT);
}

void Server::drain() {
  std::vector<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> ts;
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    ts.swap(threads_);
  }
  for (auto& t : ts) t.first.join();
}

void Server::reply(const json& id, const json& result) {
  json m = {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
  std::lock_guard<std::mutex> lock(write_mu_);
  write_(m.dump());
}

void Server::reply_error(const json& id, int code, const std::string& message, const json& data) {
  json e = {{"code", code}, {"message", message}};
  if (!data.is_null()) e["data"] = data;
  json m = {{"jsonrpc", "2.0"}, {"id", id}, {"error", e}};
  std::lock_guard<std::mutex> lock(write_mu_);
  write_(m.dump());
}

void Server::notify(const std::string& method, const json& params) {
  json m = {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
  std::lock_guard<std::mutex> lock(write_mu_);
  write_(m.dump());
}

void Server::handle_line(const std::string& line) {
  if (trim(line).empty()) return;
  json m = json::parse(line, nullptr, false);
  if (m.is_discarded()) return reply_error(nullptr, kParseError, "parse error: the line is not JSON");
  if (m.is_array())
    return reply_error(nullptr, kInvalidRequest, "batches are not part of MCP since 2025-06-18: send one message a line");
  if (!m.is_object() || m.value("jsonrpc", "") != "2.0")
    return reply_error(m.is_object() && m.contains("id") ? m["id"] : json(), kInvalidRequest,
                       "invalid request: not a JSON-RPC 2.0 object");
  if (!m.contains("method")) return;  // a response to us: we send no requests
  if (!m["method"].is_string())
    return reply_error(m.contains("id") ? m["id"] : json(), kInvalidRequest, "invalid request: method is not a string");
  const std::string method = m["method"];
  const json params = m.contains("params") ? m["params"] : json::object();
  if (!m.contains("id")) {  // a notification
    if (method == "notifications/cancelled" && params.is_object() && params.contains("requestId")) {
      std::lock_guard<std::mutex> lock(calls_mu_);
      auto it = calls_.find(params["requestId"].dump());
      if (it != calls_.end()) it->second->cancelled = true;
    } else if (method == "notifications/initialized") {
      initialized_ = true;
    }
    return;
  }
  const json id = m["id"];
  if (!(id.is_string() || id.is_number_integer()))
    return reply_error(nullptr, kInvalidRequest, "invalid request: id must be a string or an integer");
  handle_request(id, method, params.is_object() ? params : json::object());
}

void Server::handle_request(const json& id, const std::string& method, const json& params) {
  if (method == "initialize") {
    const std::string asked = params.value("protocolVersion", "");
    protocol_version_ = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), asked) != kProtocolVersions.end()
                            ? asked
                            : kProtocolVersions.back();
    return reply(id, {{"protocolVersion", protocol_version_},
                      {"capabilities",
                       {{"tools", {{"listChanged", false}}},
                        {"resources", {{"listChanged", false}, {"subscribe", false}}},
                        {"prompts", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "kernelpro"}, {"title", "kernelpro"}, {"version", options_.version}}},
                      {"instructions",
                       "kernelpro builds, checks, times, profiles and diagnoses CUDA kernels honestly. Start with "
                       "list_tasks and show_task, write a candidate, then build (no GPU), evaluate and analyze it."}});
  }
  if (method == "ping") return reply(id, json::object());
  if (method == "tools/list") return reply(id, {{"tools", tool_list()}});
  if (method == "resources/list") return reply(id, list_resources());
  if (method == "resources/templates/list") return reply(id, {{"resourceTemplates", json::array()}});
  if (method == "resources/read") {
    if (!params.contains("uri") || !params["uri"].is_string())
      return reply_error(id, kInvalidParams, "resources/read needs a string 'uri'");
    auto r = read_resource(params["uri"]);
    if (!r.ok()) return reply_error(id, -32002, r.error().message, {{"uri", params["uri"]}});
    return reply(id, *r);
  }
  if (method == "prompts/list") return reply(id, list_prompts());
  if (method == "prompts/get") {
    if (!params.contains("name") || !params["name"].is_string())
      return reply_error(id, kInvalidParams, "prompts/get needs a string 'name'");
    auto r = get_prompt(params["name"]);
    if (!r.ok()) return reply_error(id, kInvalidParams, r.error().message);
    return reply(id, *r);
  }
  if (method == "logging/setLevel") return reply(id, json::object());
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string())
      return reply_error(id, kInvalidParams, "tools/call needs a string 'name'");
    const std::string name = params["name"];
    json tool;
    for (const auto& t : tool_list())
      if (t["name"] == name) tool = t;
    if (tool.is_null()) return reply_error(id, kInvalidParams, fmt::format("unknown tool '{}'", name));
    const json args = params.contains("arguments") ? params["arguments"] : json::object();
    if (std::string why = check_args(tool["inputSchema"], args); !why.empty())
      return reply_error(id, kInvalidParams, fmt::format("{}: {}", name, why));
    auto call = std::make_shared<Call>();
    call->id = id;
    call->args = args;
    call->tool = name;
    if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken"))
      call->progress_token = params["_meta"]["progressToken"];
    std::lock_guard<std::mutex> lock(calls_mu_);
    for (auto it = threads_.begin(); it != threads_.end();) {  // the calls that ended
      if (it->second->load()) {
        it->first.join();
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
    calls_[id.dump()] = call;
    auto done = std::make_shared<std::atomic<bool>>(false);
    threads_.emplace_back(std::thread([this, call, done] {
                            call_tool(call);
                            done->store(true);
                          }),
                          done);
    return;
  }
  reply_error(id, kMethodNotFound, fmt::format("method not found: {}", method));
}

void Server::call_tool(const std::shared_ptr<Call>& call) {
  Result<json> r = make_error(ErrorCode::kInternal, "not run");
  try {
    r = run_tool(call);
  } catch (const std::exception& e) {
    r = make_error(ErrorCode::kInternal, e.what());
  }
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    calls_.erase(call->id.dump());
  }
  if (call->cancelled) return reply_error(call->id, kRequestCancelled, "request cancelled");
  if (!r.ok()) {
    // Bad input is the caller's to fix: a tool result with isError, which the model reads.
    return reply(call->id, tool_result(fmt::format("{}: {}", call->tool, r.error().message),
                                       json{{"error", r.error().message}, {"kind", to_string(r.error().code)}}, true));
  }
  reply(call->id, *r);
}

Result<fs::path> Server::allowed_path(const std::string& p, const char* what) const {
  const fs::path abs = fs::weakly_canonical(fs::absolute(p));
  std::vector<fs::path> roots = {options_.workspace};
  if (!options_.examples_dir.empty()) roots.push_back(options_.examples_dir);
  for (const auto& a : options_.allowed) roots.push_back(a);
  for (const auto& r : roots)
    if (under(abs, fs::weakly_canonical(fs::absolute(r)))) return abs;
  std::vector<std::string> names;
  for (const auto& r : roots) names.push_back(r.string());
  return make_error(ErrorCode::kInvalidInput,
                    fmt::format("{} '{}' is outside the folders this server may read ({}); start `kernelpro mcp` with "
                                "--allow DIR to add one",
                                what, p, join(names, ", ")));
}

Result<fs::path> Server::candidate_file(const json& args, const char* path_key, const char* source_key,
                                        const std::string& ext) {
  if (args.contains(path_key) && args.contains(source_key))
    return make_error(ErrorCode::kInvalidInput, fmt::format("give {} or {}, not both", path_key, source_key));
  if (args.contains(path_key)) return allowed_path(args[path_key].get<std::string>(), path_key);
  if (!args.contains(source_key)) return fs::path();
  const std::string text = args[source_key];
  const fs::path dir = options_.workspace / "candidates";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path f = dir / (sha256_hex(text).substr(0, 16) + ext);
  KP_TRY_STATUS(write_file(f.string(), text));
  return f;
}

Result<Server::ChildRun> Server::run_kernelpro(const std::shared_ptr<Call>& call, const std::vector<std::string>& args,
                                               const std::string& what) {
  KP_TRY(sys::TempDir tmp, sys::TempDir::create("kernelpro-mcp-"));
  sys::Command c;
  c.argv = {options_.kernelpro.string()};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.env_set = options_.env;
  c.stdout_path = (tmp.path() / "out").string();
  c.stderr_path = (tmp.path() / "err").string();
  KP_TRY(auto child, sys::Process::spawn(c));
  const auto t0 = Clock::now();
  auto last = t0;
  int step = 0;
  while (child->running()) {
    if (call->cancelled) {
      child->kill();
      return make_error(ErrorCode::kTimeout, "cancelled");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!call->progress_token.is_null() &&
        std::chrono::duration<double>(Clock::now() - last).count() >= options_.progress_every_s) {
      last = Clock::now();
      notify("notifications/progress",
             {{"progressToken", call->progress_token},
              {"progress", ++step},
              {"message", fmt::format("{} ({:.0f} s)", what, std::chrono::duration<double>(last - t0).count())}});
    }
  }
  const sys::Completed done = child->wait(std::chrono::seconds(5));
  ChildRun r;
  r.exit_code = done.signal ? 128 + done.signal : done.exit_code;
  auto out = read_file(c.stdout_path);
  auto err = read_file(c.stderr_path);
  r.out = out.ok() ? *out : "";
  r.err = err.ok() ? *err : "";
  return r;
}

Result<json> Server::run_tool(const std::shared_ptr<Call>& call) {
  const json& a = call->args;
  const std::string& tool = call->tool;
  if (tool == "build" || tool == "evaluate" || tool == "profile" || tool == "analyze") return tool_on_candidate(call);
  if (tool == "search_code") return tool_search_code(call);
  if (tool == "read_code") return tool_read_code(call);
  if (tool == "list_tasks") return tool_list_tasks(a);
  if (tool == "show_task") return tool_show_task(a);
  if (tool == "optimize_start") return tool_optimize_start(a);
  if (tool == "optimize_status" || tool == "optimize_stop" || tool == "run_history") return tool_on_run(tool, a);
  return make_error(ErrorCode::kInternal, "no handler for " + tool);
}

// The tools on a task and a candidate: build, evaluate, profile, analyze.
Result<json> Server::tool_on_candidate(const std::shared_ptr<Call>& call) {
  const json& a = call->args;
  const std::string& tool = call->tool;
  KP_TRY(fs::path task, allowed_path(a["task"], "task"));
  const bool kb = task.extension() == ".py";
  KP_TRY(fs::path cand, candidate_file(a, "candidate_path", "candidate_source", kb ? ".py" : ".cu"));
  KP_TRY(fs::path cu, candidate_file(a, "cu_path", "cu_source", ".cu"));
  const std::string sub = tool == "evaluate" ? "eval" : tool;
  std::vector<std::string> args = {sub, task.string()};
  if (!cand.empty()) args.push_back(cand.string());
  if (!cu.empty()) args.insert(args.end(), {"--cu", cu.string()});
  if (a.contains("seed")) args.insert(args.end(), {"--seed", std::to_string(a["seed"].get<int64_t>())});
  if (a.contains("stage")) args.insert(args.end(), {"--stage", std::to_string(a["stage"].get<int64_t>())});
  if (a.contains("tools")) args.insert(args.end(), {"--tool", join(a["tools"].get<std::vector<std::string>>(), ",")});
  args.push_back("--json");
  std::unique_lock<std::mutex> gpu(gpu_mu_, std::defer_lock);
  if (tool != "build") gpu.lock();  // one GPU request at a time
  KP_TRY(ChildRun r, run_kernelpro(call, args, tool == "build" ? "building" : tool + " on the GPU"));
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded()) j = json::object();
  j["exit_code"] = r.exit_code;
  j["meaning"] = exit_meaning(r.exit_code);
  std::string text = summarize(tool, j, r.exit_code);
  if (tool == "build" && j.contains("diagnostics"))
    for (const auto& d : j["diagnostics"]) text += "\n" + d.value("message", d.dump());
  if (tool == "analyze" && j.contains("findings"))
    for (const auto& f : j["findings"])
      text += fmt::format("\n- {}: {}", f.value("tool", ""), f.value("text", f.value("summary", "")));
  const std::string err_tail(trim(tail_lines(r.err, 5)));
  if (r.exit_code == 2 || r.exit_code >= 4) text += "\n" + err_tail;
  return tool_result(text, j, r.exit_code == 2 || r.exit_code >= 4);
}

Result<json> Server::tool_search_code(const std::shared_ptr<Call>& call) {
  const json& a = call->args;
  std::vector<std::string> args = {"cutlass", "search", a["query"], "--json"};
  if (a.contains("limit")) args.insert(args.end(), {"--limit", std::to_string(a["limit"].get<int64_t>())});
  KP_TRY(ChildRun r, run_kernelpro(call, args, "searching"));
  json hits = json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || !hits.is_array())
    return tool_result(fmt::format("search_code: {}", std::string(trim(tail_lines(r.err, 5)))),
                       json{{"exit_code", r.exit_code}}, true);
  std::string text;
  for (const auto& h : hits)
    text += fmt::format("{}:{}-{} {}\n{}\n", h.value("path", ""), h.value("start_line", 0), h.value("end_line", 0),
                        h.value("name", ""), h.value("snippet", ""));
  return tool_result(text.empty() ? "no hit" : text, json{{"hits", hits}}, false);
}

Result<json> Server::tool_read_code(const std::shared_ptr<Call>& call) {
  const json& a = call->args;
  const std::string range =
      fmt::format("{}:{}-{}", a["path"].get<std::string>(), a["start"].get<int64_t>(), a["end"].get<int64_t>());
  KP_TRY(ChildRun r, run_kernelpro(call, {"cutlass", "show", range}, "reading"));
  if (r.exit_code != 0)
    return tool_result(fmt::format("read_code: {}", std::string(trim(tail_lines(r.err, 5)))),
                       json{{"exit_code", r.exit_code}}, true);
  return tool_result(r.out, json{{"path", a["path"]}, {"start", a["start"]}, {"end", a["end"]}, {"text", r.out}},
                     false);
}

Result<json> Server::tool_list_tasks(const json& a) {
  fs::path folder = options_.examples_dir;
  if (a.contains("folder")) {
    KP_TRY(folder, allowed_path(a["folder"], "folder"));
  }
  std::vector<int> levels = {1, 2, 3};
  if (a.contains("levels")) {
    levels.clear();
    for (const auto& l : a["levels"]) {
      try {
        levels.push_back(std::stoi(l.get<std::string>()));
      } catch (const std::exception&) {
        return make_error(ErrorCode::kInvalidInput, fmt::format("level '{}' is not a number", l.get<std::string>()));
      }
    }
  }
  KP_TRY(auto problems, campaign::list_campaign_problems(folder, levels, {}));
  json list = json::array();
  std::string text;
  for (const auto& p : problems) {
    list.push_back({{"id", p.id}, {"kind", p.kind}, {"path", p.path.string()}, {"level", p.level}});
    text += fmt::format("{} ({}): {}\n", p.id, p.kind, p.path.string());
  }
  return tool_result(text, json{{"tasks", list}}, false);
}

Result<json> Server::tool_show_task(const json& a) {
  KP_TRY(fs::path task, allowed_path(a["task"], "task"));
  json files = json::object();
  std::string text;
  std::vector<fs::path> shown;
  if (task.extension() == ".py") {
    shown = {task};
  } else {
    for (const char* f : {"task.toml", "reference.cu", "seed.cu", "README.md"})
      if (fs::exists(task / f)) shown.push_back(task / f);
    if (shown.empty())
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: not a task folder (no task.toml)", task.string()));
  }
  for (const auto& f : shown) {
    KP_TRY(std::string t, read_file(f.string()));
    files[f.filename().string()] = t;
    text += fmt::format("=== {} ===\n{}\n", f.filename().string(), t);
  }
  return tool_result(text, json{{"task", task.string()}, {"files", files}}, false);
}

Result<json> Server::tool_optimize_start(const json& a) {
  KP_TRY(fs::path task, allowed_path(a["task"], "task"));
  auto b = std::make_shared<Background>();
  std::string id;
  {
    std::lock_guard<std::mutex> lock(runs_mu_);
    for (int n = 1;; ++n) {
      id = fmt::format("{}-{}", task.stem().string(), n);
      if (!runs_.count(id) && !fs::exists(options_.workspace / "runs" / id)) break;
    }
    runs_[id] = b;
  }
  b->run_dir = options_.workspace / "runs" / id;
  b->task = task.string();
  std::error_code ec;
  fs::create_directories(b->run_dir, ec);
  sys::Command c;
  c.argv = {options_.kernelpro.string(), "optimize", task.string(), "--run-dir", b->run_dir.string(), "--json",
            "--budget", std::to_string(a.value("budget", 12))};
  if (a.contains("search")) c.argv.insert(c.argv.end(), {"--search", a["search"]});
  if (a.contains("provider")) c.argv.insert(c.argv.end(), {"--provider", a["provider"]});
  if (a.contains("model")) c.argv.insert(c.argv.end(), {"--model", a["model"]});
  c.env_set = options_.env;
  c.stdout_path = (b->run_dir / "optimize.json").string();
  c.stderr_path = (b->run_dir / "optimize.log").string();
  KP_TRY(b->process, sys::Process::spawn(c));
  return tool_result(fmt::format("started run {} on {} in {}; ask optimize_status for its progress", id,
                                 task.string(), b->run_dir.string()),
                     json{{"run_id", id}, {"run_dir", b->run_dir.string()}}, false);
}

// The tools on a run: optimize_status, optimize_stop, run_history.
Result<json> Server::tool_on_run(const std::string& tool, const json& a) {
  fs::path run_dir;
  std::shared_ptr<Background> b;
  if (a.contains("run_id")) {
    std::lock_guard<std::mutex> lock(runs_mu_);
    auto it = runs_.find(a["run_id"].get<std::string>());
    if (it == runs_.end())
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("no run '{}' was started by this server", a["run_id"].get<std::string>()));
    b = it->second;
    run_dir = b->run_dir;
  } else if (a.contains("run_dir") && tool == "run_history") {
    KP_TRY(run_dir, allowed_path(a["run_dir"], "run_dir"));
  } else {
    return make_error(ErrorCode::kInvalidInput, "name the run: run_id (or run_dir for run_history)");
  }
  std::string state = "finished";
  if (b) {
    std::lock_guard<std::mutex> lock(runs_mu_);
    if (b->process && b->process->running()) {
      state = "running";
      if (tool == "optimize_stop") ::kill(b->process->pid(), SIGINT);
    } else if (b->process && !b->ended) {
      b->ended = b->process->wait(std::chrono::seconds(1));
    }
    if (b->ended) state = fmt::format("ended: {}", exit_meaning(b->ended->exit_code));
  }
  json result = {{"state", state}, {"run_dir", run_dir.string()}};
  add_run_progress(result, run_dir, tool == "run_history");
  if (auto summary = read_file((run_dir / "optimize.json").string()); summary.ok()) {
    json j = json::parse(*summary, nullptr, false);
    if (j.is_object()) result["summary"] = j;
  }
  std::string text = fmt::format("{}: {}", run_dir.filename().string(), state);
  if (result.contains("candidates"))
    text += fmt::format("; {} candidate(s); best {} ({:.2f}x the reference)", result["candidates"].get<int>(),
                        format_seconds(result["best_s"].get<double>()), result["speedup"].get<double>());
  if (tool == "optimize_stop") text += state == "running" ? "; asked to stop after the evaluation in flight" : "";
  return tool_result(text, result, false);
}

json Server::list_resources() {
  json list = json::array();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.workspace / "runs", ec)) {
    const std::string id = e.path().filename().string();
    if (fs::exists(e.path() / "best.cu"))
      list.push_back({{"uri", "kernelpro://runs/" + id + "/best.cu"}, {"name", id + " best kernel"},
                      {"mimeType", "text/x-cuda"}});
    if (fs::exists(e.path() / "store.db"))
      list.push_back({{"uri", "kernelpro://runs/" + id + "/report"}, {"name", id + " report"},
                      {"mimeType", "application/json"}});
  }
  return {{"resources", list}};
}

Result<json> Server::read_resource(const std::string& uri) {
  const std::string prefix = "kernelpro://runs/";
  if (!starts_with(uri, prefix)) return make_error(ErrorCode::kNotFound, "resource not found: " + uri);
  auto parts = split(uri.substr(prefix.size()), '/');
  if (parts.size() != 2 || parts[0].empty() || parts[0] == ".." || parts[0] == ".")
    return make_error(ErrorCode::kNotFound, "resource not found: " + uri);
  const fs::path run = options_.workspace / "runs" / parts[0];
  if (parts[1] == "best.cu") {
    KP_TRY(std::string t, read_file((run / "best.cu").string()));
    return json{{"contents", json::array({{{"uri", uri}, {"mimeType", "text/x-cuda"}, {"text", t}}})}};
  }
  if (parts[1] == "report") {
    KP_TRY(auto p, report::read_run(run, parts[0], "native", 0));
    report::CampaignReport r;
    r.title = parts[0];
    r.problems.push_back(p);
    report::summarize(r);
    return json{{"contents",
                 json::array({{{"uri", uri}, {"mimeType", "application/json"}, {"text", report::to_json(r).dump(1)}}})}};
  }
  return make_error(ErrorCode::kNotFound, "resource not found: " + uri);
}

json Server::list_prompts() {
  json list = json::array();
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(options_.prompts_dir, ec))
    if (e.path().extension() == ".md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    list.push_back({{"name", f.stem().string()},
                    {"description", fmt::format("kernelpro's {} template (the text its own loop renders)", f.stem().string())}});
  return {{"prompts", list}};
}

Result<json> Server::get_prompt(const std::string& name) {
  if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
    return make_error(ErrorCode::kInvalidInput, "unknown prompt: " + name);
  const fs::path f = options_.prompts_dir / (name + ".md");
  if (!fs::exists(f)) return make_error(ErrorCode::kInvalidInput, "unknown prompt: " + name);
  KP_TRY(std::string t, read_file(f.string()));
  return json{{"description", "kernelpro's " + name + " template"},
              {"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", t}}}}})}};
}

int serve_stdio(const ServerOptions& options) {
  Server server(options, [](const std::string& m) {
    std::fwrite(m.data(), 1, m.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  });
  std::string line;
  while (std::getline(std::cin, line)) server.handle_line(line);
  server.drain();
  return 0;
}

}  // namespace kp::mcp
