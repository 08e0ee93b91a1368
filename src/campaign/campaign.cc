#include "campaign/campaign.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "campaign/baseline.h"
#include "task/kernelbench_loader.h"
#include "util/strings.h"

namespace kp::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_native_task_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "task.toml", ec);
}

bool is_kernelbench_suite(const fs::path& p) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p, ec))
    if (e.is_directory() && starts_with(e.path().filename().string(), "level")) return true;
  return false;
}

// A KernelBench problem file as a campaign problem: "levelN/STEM" when it sits in a levelN folder.
Result<CampaignProblem> kernelbench_problem(const fs::path& py) {
  KP_TRY(task::Task t, task::load_kernelbench_problem(py));
  CampaignProblem p;
  p.kind = "kernelbench";
  p.path = fs::absolute(py).lexically_normal();
  p.level = t.level;
  const std::string parent = p.path.parent_path().filename().string();
  p.id = starts_with(parent, "level") ? parent + "/" + p.path.stem().string() : p.path.stem().string();
  return p;
}

CampaignProblem native_problem(const fs::path& dir) {
  CampaignProblem p;
  p.kind = "native";
  p.path = fs::absolute(dir).lexically_normal();
  p.id = p.path.filename().string();
  return p;
}

}  // namespace

std::string CampaignProblem::folder() const {
  std::string f = id;
  std::replace(f.begin(), f.end(), '/', '-');
  return f;
}

Result<std::vector<CampaignProblem>> list_campaign_problems(const fs::path& suite, const std::vector<int>& levels,
                                                            const std::vector<std::string>& only) {
  std::error_code ec;
  std::vector<CampaignProblem> out;
  const fs::path abs = fs::absolute(suite).lexically_normal();
  auto keep = [&](const CampaignProblem& p) {
    if (only.empty()) return true;
    const std::string stem = fs::path(p.id).filename().string();
    for (const auto& o : only)
      if (o == p.id || o == stem || o == p.path.filename().string()) return true;
    return false;
  };
  if (fs::is_regular_file(abs, ec) && abs.extension() != ".py") {
    KP_TRY(std::string text, read_file(abs.string()));
    int line_no = 0;
    for (const auto& raw : split_lines(text)) {
      ++line_no;
      std::string line(trim(raw.substr(0, raw.find('#'))));
      if (line.empty()) continue;
      fs::path p = fs::path(line).is_absolute() ? fs::path(line) : abs.parent_path() / line;
      if (p.extension() == ".py" && fs::is_regular_file(p, ec)) {
        auto kb = kernelbench_problem(p);
        if (!kb.ok()) return std::move(kb).error().wrap(fmt::format("{}:{}", abs.string(), line_no));
        out.push_back(*kb);
      } else if (is_native_task_dir(p)) {
        out.push_back(native_problem(p));
      } else {
        return make_error(ErrorCode::kInvalidInput,
                          fmt::format("{}:{}: '{}' is neither a native task folder (with task.toml) nor a KernelBench "
                                      "problem .py; fix or remove the line",
                                      abs.string(), line_no, line));
      }
    }
  } else if (abs.extension() == ".py") {
    KP_TRY(CampaignProblem p, kernelbench_problem(abs));
    out.push_back(p);
  } else if (is_native_task_dir(abs)) {
    out.push_back(native_problem(abs));
  } else if (fs::is_directory(abs, ec) && is_kernelbench_suite(abs)) {
    KP_TRY(SuiteListing listing, list_suite(abs, levels, only));
    for (const auto& sp : listing.problems) {
      KP_TRY(CampaignProblem p, kernelbench_problem(sp.path));
      out.push_back(p);
    }
  } else if (fs::is_directory(abs, ec)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(abs, ec))
      if (e.is_directory() && is_native_task_dir(e.path())) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) out.push_back(native_problem(d));
    if (out.empty())
      return make_error(ErrorCode::kNotFound,
                        fmt::format("{}: no task folders (with task.toml) and no level1/, level2/... of KernelBench in it",
                                    abs.string()));
  } else {
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no such suite (a KernelBench folder, a folder of task folders, a task folder, "
                                  "a problem .py, or a list file of these)",
                                  suite.string()));
  }
  std::vector<CampaignProblem> kept;
  std::set<std::string> matched, ids;
  for (const auto& p : out) {
    if (!keep(p)) continue;
    if (!ids.insert(p.id).second)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("{}: two problems have the id '{}'; name each once", suite.string(), p.id));
    for (const auto& o : only)
      if (o == p.id || o == fs::path(p.id).filename().string() || o == p.path.filename().string()) matched.insert(o);
    kept.push_back(p);
  }
  for (const auto& o : only)
    if (!matched.count(o))
      return make_error(ErrorCode::kInvalidInput, fmt::format("--only {}: no problem of {} has that name", o, suite.string()));
  if (kept.empty()) return make_error(ErrorCode::kInvalidInput, fmt::format("{}: no problem to run", suite.string()));
  return kept;
}

json CampaignSpec::to_json() const {
  json probs = json::array();
  for (const auto& p : problems)
    probs.push_back({{"id", p.id}, {"kind", p.kind}, {"path", p.path.string()}, {"level", p.level}});
  return {{"format", "kernelpro-campaign"}, {"version", 1},     {"suite", suite},   {"problems", probs},
          {"optimize_args", optimize_args}, {"python", python}, {"created", created}};
}

Result<CampaignSpec> CampaignSpec::from_json(const json& j) {
  if (!j.is_object() || j.value("format", "") != "kernelpro-campaign")
    return make_error(ErrorCode::kInvalidInput, "not a kernelpro campaign (no \"format\": \"kernelpro-campaign\")");
  if (j.value("version", 0) != 1)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("campaign version {} is not one this kernelpro reads (1)", j.value("version", 0)));
  CampaignSpec s;
  try {
    s.suite = j.at("suite").get<std::string>();
    for (const auto& p : j.at("problems"))
      s.problems.push_back(CampaignProblem{p.at("id").get<std::string>(), p.at("kind").get<std::string>(),
                                           p.at("path").get<std::string>(), p.value("level", 0)});
    s.optimize_args = j.value("optimize_args", std::vector<std::string>{});
    s.python = j.value("python", "");
    s.created = j.value("created", "");
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kInvalidInput, fmt::format("campaign.json: {}", e.what()));
  }
  return s;
}

Status save_campaign(const fs::path& dir, const CampaignSpec& spec) {
  std::error_code ec;
  fs::create_directories(dir / "runs", ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", (dir / "runs").string(), ec.message()));
  return write_file_atomic((dir / kCampaignFile).string(), spec.to_json().dump(2) + "\n");
}

Result<CampaignSpec> load_campaign(const fs::path& dir) {
  const fs::path f = dir / kCampaignFile;
  std::error_code ec;
  if (!fs::exists(f, ec))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no campaign here (no {}); start one with `kernelpro bench run {} --suite SUITE`",
                                  dir.string(), kCampaignFile, dir.string()));
  KP_TRY(std::string text, read_file(f.string()));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error(ErrorCode::kInvalidInput, fmt::format("{}: not JSON; fix or remove it", f.string()));
  auto spec = CampaignSpec::from_json(j);
  if (!spec.ok()) return std::move(spec).error().wrap(f.string());
  return spec;
}

}  // namespace kp::campaign
