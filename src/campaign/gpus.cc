#include "campaign/gpus.h"

#include <chrono>
#include <cstdlib>

#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::campaign {

std::vector<std::string> host_gpus() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v) {
    std::vector<std::string> out;
    for (const auto& s : split(v, ','))
      if (!trim(s).empty()) out.emplace_back(trim(s));
    return out;
  }
  auto r = sys::run(sys::Command{.argv = {"nvidia-smi", "--query-gpu=index", "--format=csv,noheader"},
                                 .timeout = std::chrono::seconds(30)});
  std::vector<std::string> out;
  if (!r.ok() || !r->success()) return out;
  for (const auto& l : split_lines(r->stdout_text))
    if (!trim(l).empty()) out.emplace_back(trim(l));
  return out;
}

std::string gpu_name(const std::string& index) {
  std::vector<std::string> argv = {"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"};
  if (!index.empty()) argv.push_back("--id=" + index);
  auto r = sys::run(sys::Command{.argv = argv, .timeout = std::chrono::seconds(30)});
  if (!r.ok() || !r->success()) return "";
  auto lines = split_lines(r->stdout_text);
  return lines.empty() ? "" : std::string(trim(lines[0]));
}

}  // namespace kp::campaign
