#include "eval/gpu_census.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

namespace kp::eval {

std::vector<GpuProcess> other_processes(const std::vector<GpuProcess>& census, int worker_pid) {
  std::vector<GpuProcess> others;
  bool listed = false;
  for (const GpuProcess& p : census) {
    if (worker_pid > 0 && p.pid == static_cast<unsigned>(worker_pid))
      listed = true;
    else
      others.push_back(p);
  }
  // Not listed: the pids are another namespace's. One of them is the worker's, which we cannot
  // tell apart; the smallest holder is taken for it (a worker that timed a reference holds at
  // least its context), so that "others" is never empty when two processes hold the GPU.
  if (!listed && !others.empty()) {
    auto smallest = std::min_element(others.begin(), others.end(),
                                     [](const GpuProcess& a, const GpuProcess& b) { return a.used_bytes < b.used_bytes; });
    others.erase(smallest);
  }
  return others;
}

std::string describe(const std::vector<GpuProcess>& processes) {
  std::string s;
  for (const GpuProcess& p : processes) {
    if (!s.empty()) s += ", ";
    s += fmt::format("pid {} ({} MiB)", p.pid, p.used_bytes >> 20);
  }
  return s;
}

uint64_t sample_period_us(const std::vector<UtilSample>& samples) {
  // The largest gap, as a sample may stand for a period that long; never above NVML's longest.
  uint64_t period = 0;
  for (size_t i = 1; i < samples.size(); ++i)
    if (samples[i].time_us > samples[i - 1].time_us) period = std::max(period, samples[i].time_us - samples[i - 1].time_us);
  return std::min<uint64_t>(period, 1'000'000);
}

IdleVerdict judge_idle_window(const std::vector<UtilSample>& samples, uint64_t idle_from_us, uint64_t period_us) {
  const uint64_t seen = sample_period_us(samples);
  const uint64_t period = seen ? seen : period_us ? period_us : 1'000'000;
  IdleVerdict v;
  for (const UtilSample& s : samples) {
    if (s.time_us < idle_from_us + period) continue;  // its period began before the window
    ++v.judged;
    v.max_percent = std::max(v.max_percent, s.percent);
  }
  return v;
}

std::vector<unsigned> foreign_active_pids(const std::vector<ProcessSample>& samples, int worker_pid,
                                          const std::vector<GpuProcess>& census) {
  const bool listed = worker_pid > 0 && std::any_of(census.begin(), census.end(), [&](const GpuProcess& p) {
                        return p.pid == static_cast<unsigned>(worker_pid);
                      });
  std::vector<unsigned> active;
  for (const ProcessSample& s : samples)
    if (s.sm_percent > 0 && std::find(active.begin(), active.end(), s.pid) == active.end()) active.push_back(s.pid);
  if (listed) {
    active.erase(std::remove(active.begin(), active.end(), static_cast<unsigned>(worker_pid)), active.end());
    return active;
  }
  if (active.size() < 2) return {};
  std::sort(active.begin(), active.end());
  return active;
}

uint64_t epoch_us() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2 layout), as nvmlDeviceGetComputeRunningProcesses_v3 fills it
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
struct NvmlSample {  // nvmlSample_t: a CPU timestamp and an 8-byte union
  unsigned long long time_stamp;
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
  } value;
};
struct NvmlProcessUtilization {  // nvmlProcessUtilizationSample_t
  unsigned pid;
  unsigned long long time_stamp;
  unsigned sm_util;
  unsigned mem_util;
  unsigned enc_util;
  unsigned dec_util;
};
constexpr int kGpuUtilizationSamples = 1;  // NVML_GPU_UTILIZATION_SAMPLES
constexpr int kValueUnsignedInt = 1;       // NVML_VALUE_TYPE_UNSIGNED_INT
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kNotFound = 6;
}  // namespace

struct GpuWatch::Impl {
  void* lib = nullptr;
  nvmlDevice_t device = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, NvmlProcessInfo*) = nullptr;
  nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, int*, unsigned*, NvmlSample*) = nullptr;
  nvmlReturn_t (*process_samples)(nvmlDevice_t, NvmlProcessUtilization*, unsigned*, unsigned long long) = nullptr;
  std::string error(nvmlReturn_t r) const { return error_string ? error_string(r) : fmt::format("NVML error {}", r); }
};

Result<std::unique_ptr<GpuWatch>> GpuWatch::open(const std::string& pci_bus_id) {
  auto unavailable = [](std::string why) { return make_error(ErrorCode::kUnavailable, "NVML: " + why); };
  std::unique_ptr<GpuWatch> w(new GpuWatch());
  w->impl_ = std::make_unique<Impl>();
  Impl& m = *w->impl_;
  m.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!m.lib) return unavailable(fmt::format("cannot load libnvidia-ml.so.1 ({}); it ships with the NVIDIA driver", dlerror()));
  auto sym = [&](const char* name) { return dlsym(m.lib, name); };
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlInit_v2"));
  auto by_pci = reinterpret_cast<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  m.shutdown = reinterpret_cast<decltype(m.shutdown)>(sym("nvmlShutdown"));
  m.error_string = reinterpret_cast<decltype(m.error_string)>(sym("nvmlErrorString"));
  m.processes = reinterpret_cast<decltype(m.processes)>(sym("nvmlDeviceGetComputeRunningProcesses_v3"));
  m.samples = reinterpret_cast<decltype(m.samples)>(sym("nvmlDeviceGetSamples"));
  m.process_samples = reinterpret_cast<decltype(m.process_samples)>(sym("nvmlDeviceGetProcessUtilization"));
  if (!init || !by_pci || !m.shutdown || !m.processes || !m.samples || !m.process_samples)
    return unavailable("libnvidia-ml.so.1 lacks a needed symbol (driver too old?)");
  if (nvmlReturn_t r = init(); r != 0) {
    m.shutdown = nullptr;  // nothing to shut down
    return unavailable(fmt::format("nvmlInit failed: {}", m.error(r)));
  }
  if (nvmlReturn_t r = by_pci(pci_bus_id.c_str(), &m.device); r != 0)
    return unavailable(fmt::format("no NVML device for PCI bus id {}: {}", pci_bus_id, m.error(r)));
  return w;
}

GpuWatch::~GpuWatch() {
  if (impl_ && impl_->lib) {
    if (impl_->shutdown) impl_->shutdown();
    dlclose(impl_->lib);
  }
}

Result<std::vector<GpuProcess>> GpuWatch::compute_processes() {
  std::vector<NvmlProcessInfo> infos(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t r = impl_->processes(impl_->device, &count, infos.data());
    if (r == kInsufficientSize) {
      infos.resize(count + 8);  // more started since: ask again with room
      continue;
    }
    if (r != 0) return make_error(ErrorCode::kUnavailable, "NVML process list: " + impl_->error(r));
    std::vector<GpuProcess> out;
    for (unsigned i = 0; i < count && i < infos.size(); ++i)
      out.push_back(GpuProcess{infos[i].pid, infos[i].used_gpu_memory});
    return out;
  }
  return make_error(ErrorCode::kUnavailable, "NVML process list: it kept growing");
}

Result<std::vector<UtilSample>> GpuWatch::utilization_since(uint64_t since_us) {
  int type = 0;
  unsigned count = 0;
  nvmlReturn_t r = impl_->samples(impl_->device, kGpuUtilizationSamples, since_us, &type, &count, nullptr);
  if (r == kNotFound) return std::vector<UtilSample>{};  // no sample newer than since_us yet
  if (r != 0 && r != kInsufficientSize) return make_error(ErrorCode::kUnavailable, "NVML samples: " + impl_->error(r));
  std::vector<NvmlSample> raw(count + 4);
  count = static_cast<unsigned>(raw.size());
  r = impl_->samples(impl_->device, kGpuUtilizationSamples, since_us, &type, &count, raw.data());
  if (r == kNotFound) return std::vector<UtilSample>{};
  if (r != 0) return make_error(ErrorCode::kUnavailable, "NVML samples: " + impl_->error(r));
  std::vector<UtilSample> out;
  for (unsigned i = 0; i < count && i < raw.size(); ++i) {
    const unsigned percent = type == kValueUnsignedInt ? raw[i].value.ui : static_cast<unsigned>(raw[i].value.ull);
    out.push_back(UtilSample{raw[i].time_stamp, percent});
  }
  std::sort(out.begin(), out.end(), [](const UtilSample& a, const UtilSample& b) { return a.time_us < b.time_us; });
  return out;
}

Result<std::vector<ProcessSample>> GpuWatch::process_utilization_since(uint64_t since_us) {
  unsigned count = 0;
  nvmlReturn_t r = impl_->process_samples(impl_->device, nullptr, &count, since_us);
  if (r == kNotFound) return std::vector<ProcessSample>{};
  if (r != 0 && r != kInsufficientSize)
    return make_error(ErrorCode::kUnavailable, "NVML process utilization: " + impl_->error(r));
  std::vector<NvmlProcessUtilization> raw(count + 8);
  count = static_cast<unsigned>(raw.size());
  r = impl_->process_samples(impl_->device, raw.data(), &count, since_us);
  if (r == kNotFound) return std::vector<ProcessSample>{};
  if (r != 0) return make_error(ErrorCode::kUnavailable, "NVML process utilization: " + impl_->error(r));
  std::vector<ProcessSample> out;
  for (unsigned i = 0; i < count && i < raw.size(); ++i)
    out.push_back(ProcessSample{raw[i].pid, raw[i].time_stamp, raw[i].sm_util});
  return out;
}

ForeignWork check_foreign_work(GpuWatch& watch, int worker_pid, const std::vector<GpuProcess>& census_before,
                               uint64_t window_from_us, double max_wait_s) {
  ForeignWork f;
  auto census = watch.compute_processes();
  if (!census.ok()) {
    f.note = census.error().message;
    return f;
  }
  f.checked = true;
  std::vector<GpuProcess> others = other_processes(*census, worker_pid);
  for (const GpuProcess& p : other_processes(census_before, worker_pid))
    if (std::none_of(others.begin(), others.end(), [&](const GpuProcess& o) { return o.pid == p.pid; }))
      others.push_back(p);  // held the GPU when the timing began, gone now
  if (others.empty()) {
    f.note = "no other process held the GPU";
    return f;
  }
  // Others held contexts. Work they ran beside the reference's shows in their own samples.
  if (auto samples = watch.process_utilization_since(window_from_us); samples.ok()) {
    std::vector<GpuProcess> all = *census;
    all.insert(all.end(), census_before.begin(), census_before.end());
    if (auto foreign = foreign_active_pids(*samples, worker_pid, all); !foreign.empty()) {
      f.busy = true;
      std::string pids;
      for (unsigned pid : foreign) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
      f.note = fmt::format(
          "another process ran work on the GPU while the reference was timed: NVML saw kernels of pid {} beside the "
          "reference worker's; processes on the GPU besides the reference's worker: {}",
          pids, describe(others));
      return f;
    }
  }
  // Others hold contexts: did they run kernels while ours sat idle? Wait for two whole sample
  // periods inside the window (the period is learnt from the samples themselves).
  const uint64_t idle_from = epoch_us();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_wait_s);
  IdleVerdict v;
  std::vector<UtilSample> window;
  const uint64_t history_from = idle_from > 5'000'000 ? idle_from - 5'000'000 : 0;  // earlier samples: the period
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto samples = watch.utilization_since(history_from);
    if (!samples.ok()) {
      f.checked = false;
      f.note = fmt::format("other processes held the GPU ({}), and its utilization could not be read: {}",
                           describe(others), samples.error().message);
      return f;
    }
    window = std::move(*samples);
    v = judge_idle_window(window, idle_from);
    if (v.busy() || v.judged >= 2) break;
  }
  f.busy = v.busy();
  if (f.busy)
    f.note = fmt::format(
        "another process ran work on the GPU while the reference was timed: {}% busy over {} NVML sample{} in which "
        "this run was idle; processes on the GPU besides the reference's worker: {}",
        v.max_percent, v.judged, v.judged == 1 ? "" : "s", describe(others));
  else if (v.judged == 0)
    f.note = fmt::format("other processes held the GPU ({}); NVML gave no utilization sample within {:.1f} s to tell "
                         "whether they ran work",
                         describe(others), max_wait_s);
  else
    f.note = fmt::format("other processes held the GPU ({}) but ran no work over {} NVML samples", describe(others),
                         v.judged);
  return f;
}

}  // namespace kp::eval
