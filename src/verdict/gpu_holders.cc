#include "verdict/gpu_holders.h"

#include <charconv>

#include "util/strings.h"

namespace kp::eval {

GpuHolders parse_gpu_holders(std::string_view csv, int self_pid) {
  GpuHolders h;
  int described = 0;
  for (const auto& line : split_lines(csv)) {
    auto fields = split(line, ',');
    if (fields.size() < 3) continue;
    const std::string pid_text(trim(fields.front())), mib_text(trim(fields.back()));
    int pid = 0;
    uint64_t mib = 0;
    if (std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid).ec != std::errc{} ||
        std::from_chars(mib_text.data(), mib_text.data() + mib_text.size(), mib).ec != std::errc{})
      continue;  // "[N/A]" or a header
    std::string name;
    for (size_t i = 1; i + 1 < fields.size(); ++i) name += (i > 1 ? "," : "") + fields[i];
    name = std::string(trim(name));
    const bool self = pid == self_pid;
    h.self_listed = h.self_listed || self;
    if (!self) h.others_bytes += mib << 20;
    if (described++ < 8) {
      if (!h.description.empty()) h.description += "; ";
      h.description += std::to_string(pid) + " " + name + " " + std::to_string(mib) + " MiB" + (self ? " (this worker)" : "");
    }
  }
  return h;
}

uint64_t bytes_held_elsewhere(const GpuHolders& h, uint64_t total, uint64_t free, uint64_t own_allocated) {
  if (h.self_listed) return h.others_bytes;
  const uint64_t ours = free + own_allocated + kContextBytes;
  return total > ours ? total - ours : 0;
}

}  // namespace kp::eval
