// `kernelpro doctor`: which of the tools, libraries and permissions kernelpro uses are here,
// each with the fix when it is missing.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "util/resource_root.h"
#include "eval/worker_client.h"
#include "profile/ncu/ncu_runner.h"
#include "profile/sass/cuobjdump.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_doctor(const CommonFlags& common) {
  int problems = 0;
  auto line = [&](bool ok, const std::string& what, const std::string& detail, const std::string& fix) {
    std::printf("%-6s %-10s %s\n", ok ? "ok" : "MISSING", what.c_str(), detail.c_str());
    if (!ok) {
      std::printf("       %-10s fix: %s\n", "", fix.c_str());
      ++problems;
    }
  };
  auto probe = [](std::vector<std::string> argv) -> std::optional<std::string> {
    sys::Command c;
    c.argv = std::move(argv);
    c.timeout = std::chrono::milliseconds(30000);
    auto r = sys::run(c);
    if (!r.ok() || !r->success()) return std::nullopt;
    auto lines = split_lines(r->stdout_text);
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (!trim(*it).empty()) return std::string(trim(*it));
    return std::string();
  };

  auto nvcc = probe({common.nvcc, "--version"});
  line(nvcc.has_value(), "nvcc", nvcc.value_or("not found"), "install the CUDA toolkit (12.4+) and put nvcc on PATH, or pass --nvcc");

  auto scratch = sys::TempDir::create("kernelpro-doctor-");
  eval::WorkerOptions wo;
  wo.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  wo.scratch_dir = scratch.ok() ? scratch->path() : fs::temp_directory_path();
  eval::WorkerClient worker(wo);
  auto dev = worker.device();
  if (dev.ok()) {
    line(true, "gpu", fmt::format("{} (compute {}.{}, {} SMs, {} L2, {})", dev->name, dev->cc_major, dev->cc_minor,
                                  dev->sm_count, format_bytes(static_cast<double>(dev->l2_bytes)),
                                  format_bytes(static_cast<double>(dev->memory_bytes))),
         "");
    line(true, "driver", fmt::format("CUDA driver API {}.{}, runtime {}.{}", dev->driver_version / 1000,
                                     (dev->driver_version % 1000) / 10, dev->runtime_version / 1000,
                                     (dev->runtime_version % 1000) / 10),
         "");
    line(dev->nvml, "nvml", dev->nvml ? "energy counter readable" : dev->nvml_error,
         "energy needs libnvidia-ml.so.1 from the NVIDIA driver; without it evaluations report no energy");
  } else {
    line(false, "gpu", dev.error().message, "run on a machine with an NVIDIA GPU and driver; without one, eval builds and reports resources only");
  }
  worker.stop();

  std::string python = resolve_python("");
  auto torch = probe({python, "-c", "import torch; print(torch.__version__, 'with CUDA' if torch.cuda.is_available() else 'without a CUDA device')"});
  line(torch.has_value(), "torch", torch ? fmt::format("{} ({})", *torch, python) : fmt::format("not importable by {}", python),
       "pip install torch (KernelBench problems and `kernelpro baseline` need it), or set KERNELPRO_PYTHON to a Python that has it");

  profile::NcuOptions ncu_options;
  auto ncu_path = profile::find_ncu(ncu_options);
  auto ncu = ncu_path.ok() ? profile::ncu_version(*ncu_path) : Result<std::string>(ncu_path.error());
  line(ncu.ok(), "ncu", ncu.ok() ? fmt::format("{} ({})", *ncu, ncu_path->string()) : ncu.error().message,
       "install Nsight Compute (ships with the CUDA toolkit): `profile --collector ncu` and --compare-ncu need it; the "
       "default in-process collector does not");
  profile::SassToolOptions sass_options;
  sass_options.search_dirs = {fs::path(KP_SOURCE_DIR) / ".kp-tools" / "python"};
  auto cuobjdump = profile::find_cuobjdump(sass_options);
  line(cuobjdump.ok(), "cuobjdump", cuobjdump.ok() ? cuobjdump->string() : cuobjdump.error().message,
       "bash scripts/setup.sh installs the nvidia-cuda-cuobjdump wheel; `profile` needs it for the SASS level");
  fs::path worker_dir = (common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker)).parent_path();
  for (auto [label, lib] : {std::pair{"rangeprof", "libkp_rangeprof.so"}, std::pair{"trace", "libkp_trace.so"},
                             std::pair{"judge", "libkp_judge.so"}})
    line(fs::exists(worker_dir / lib), label, (worker_dir / lib).string(),
         "build it (cmake --build build); `profile` needs it for in-process counters and the system trace");
  auto params = read_file("/proc/driver/nvidia/params");
  if (params.ok()) {
    bool admin_only = params->find("RmProfilingAdminOnly: 1") != std::string::npos;
    bool root = geteuid() == 0;
    line(!admin_only || root, "counters",
         admin_only ? (root ? "restricted to admin users; running as root" : "restricted to admin users (ERR_NVGPUCTRPERM)")
                    : "open to all users",
         "run as root, or set NVreg_RestrictProfilingToAdminUsers=0 for the nvidia module");
  } else {
    line(false, "counters", "cannot read /proc/driver/nvidia/params (no NVIDIA driver)", "install the NVIDIA driver");
  }

  auto cutlass = locate_cutlass(common);
  line(cutlass.ok(), "cutlass",
       cutlass.ok() ? fmt::format("{} at {} ({})", cutlass->version.empty() ? "version unknown" : cutlass->version,
                                  cutlass->root.string(), cutlass->found_by)
                    : cutlass.error().message,
       "run scripts/setup.sh (installs nvidia-cutlass), pass --cutlass DIR, or set CUTLASS_PATH to a CUTLASS "
       "checkout (needed for CuTe candidates and `kernelpro cutlass` only)");
  const fs::path files = resource_root();
  std::error_code ec;
  line(fs::is_directory(files / "prompts", ec) && fs::is_directory(files / "rules", ec), "files",
       files.string() + " (prompts, rules, examples, include, python)",
       "reinstall kernelpro: its prompts/ and rules/ are missing beside the binary");
  std::printf("\n%s\n", problems == 0 ? "ready" : fmt::format("{} item(s) missing; see the fixes above", problems).c_str());
  return dev.ok() && nvcc ? kExitOk : (nvcc ? kExitNotRun : kExitInternal);
}

}  // namespace kp::cli
