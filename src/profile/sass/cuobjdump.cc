#include "profile/sass/cuobjdump.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "profile/sass/sass_parser.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::profile {

namespace fs = std::filesystem;

namespace {

// Where, below a search directory, a cuobjdump may sit.
const char* const kLayouts[] = {
    "",                            // the directory itself
    "bin",                         // a toolkit root
    "nvidia/cu13/bin",             // wheel nvidia-cuda-cuobjdump 13.x
    "nvidia/cuda_cuobjdump/bin",   // wheel nvidia-cuda-cuobjdump 12.x
    "triton/backends/nvidia/bin",  // the triton wheel's bundled copy
};

}  // namespace

Result<fs::path> find_cuobjdump(const SassToolOptions& options) {
  if (!options.cuobjdump.empty()) {
    if (is_executable_file(options.cuobjdump)) return options.cuobjdump;
    return make_error(ErrorCode::kNotFound, "cuobjdump " + options.cuobjdump.string() +
                                                " is not an executable file; pass the path of cuobjdump "
                                                "(<CUDA toolkit>/bin/cuobjdump)");
  }
  std::vector<fs::path> candidates;
  // PATH is read the way execvp reads it: this is the process's own program search.
  if (const char* path = std::getenv("PATH"))
    for (const auto& dir : split(path, ':'))
      if (!dir.empty()) candidates.push_back(fs::path(dir) / "cuobjdump");
  candidates.push_back("/usr/local/cuda/bin/cuobjdump");
  for (const auto& dir : options.search_dirs)
    for (const char* layout : kLayouts) candidates.push_back((*layout ? dir / layout : dir) / "cuobjdump");
  for (const auto& c : candidates)
    if (is_executable_file(c)) return c;
  std::string searched = "PATH, /usr/local/cuda/bin";
  for (const auto& dir : options.search_dirs) searched += ", " + dir.string();
  return make_error(ErrorCode::kNotFound,
                    "cuobjdump not found (searched " + searched +
                        "); install the CUDA toolkit, or run scripts/setup.sh (or `python3 -m pip install "
                        "--target .kp-tools/python nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`), or pass "
                        "--cuobjdump PATH");
}

Result<SassListing> disassemble(const SassToolOptions& options, const fs::path& object) {
  std::error_code ec;
  if (!fs::exists(object, ec))
    return make_error(ErrorCode::kNotFound, "cannot disassemble " + object.string() + ": no such file");
  KP_TRY(fs::path tool, find_cuobjdump(options));
  sys::Command c;
  c.argv = {tool.string(), "-sass", object.string()};
  c.timeout = std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  c.max_capture_bytes = size_t(1) << 30;
  KP_TRY(sys::Completed done, sys::run(c));
  std::string what = tool.string() + " -sass " + object.string();
  if (done.timed_out)
    return make_error(ErrorCode::kTimeout,
                      what + " " + done.describe() + "; raise the timeout or disassemble a smaller object");
  if (done.output_truncated)
    return make_error(ErrorCode::kTool, what + ": the output exceeds 1 GiB; disassemble a smaller object");
  if (!done.success()) {
    if (done.stderr_text.find("does not contain device code") != std::string::npos) return SassListing{};
    std::string why(trim(done.stderr_text));
    if (why.empty()) why = std::string(trim(tail_lines(done.stdout_text, 5)));
    std::string fix;
    if (why.find("nvdisasm") != std::string::npos)
      fix =
          "; cuobjdump needs nvdisasm beside it or in PATH: install nvidia-cuda-nvdisasm of the same version "
          "into the same place, or the CUDA toolkit";
    return make_error(ErrorCode::kTool, what + " " + done.describe() + ": " + why + fix);
  }
  auto listing = parse_cuobjdump_sass(done.stdout_text);
  if (!listing.ok()) return std::move(listing).error().wrap("disassembling " + object.string());
  return listing;
}

}  // namespace kp::profile
