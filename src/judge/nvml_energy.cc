#include "judge/nvml_energy.h"

#include <dlfcn.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace kp::judge {

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
}  // namespace

struct Nvml::Impl {
  void* lib = nullptr;
  nvmlDevice_t device = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  // nvmlDeviceGetSamples(device, type, lastSeenTimeStamp, *valueType, *count, samples)
  nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, int*, unsigned*, void*) = nullptr;
};

namespace {
// nvmlSample_t: an unsigned long long time stamp and an 8-byte nvmlValue_t.
struct NvmlSample {
  unsigned long long time_stamp;
  unsigned long long value;
};
constexpr int kGpuUtilizationSamples = 1;  // NVML_GPU_UTILIZATION_SAMPLES
}  // namespace

Result<std::unique_ptr<Nvml>> Nvml::open(const std::string& pci_bus_id) {
  auto unavailable = [](std::string why) { return make_error(ErrorCode::kUnavailable, "NVML: " + why); };
  std::unique_ptr<Nvml> n(new Nvml());
  n->impl_ = std::make_unique<Impl>();
  Impl& m = *n->impl_;
  m.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!m.lib) return unavailable(fmt::format("cannot load libnvidia-ml.so.1 ({}); it ships with the NVIDIA driver", dlerror()));
  auto sym = [&](const char* name) { return dlsym(m.lib, name); };
  m.init = reinterpret_cast<decltype(m.init)>(sym("nvmlInit_v2"));
  m.shutdown = reinterpret_cast<decltype(m.shutdown)>(sym("nvmlShutdown"));
  m.error_string = reinterpret_cast<decltype(m.error_string)>(sym("nvmlErrorString"));
  m.by_pci = reinterpret_cast<decltype(m.by_pci)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  m.energy = reinterpret_cast<decltype(m.energy)>(sym("nvmlDeviceGetTotalEnergyConsumption"));
  m.clock = reinterpret_cast<decltype(m.clock)>(sym("nvmlDeviceGetClockInfo"));
  m.temperature = reinterpret_cast<decltype(m.temperature)>(sym("nvmlDeviceGetTemperature"));
  m.samples = reinterpret_cast<decltype(m.samples)>(sym("nvmlDeviceGetSamples"));
  if (!m.init || !m.shutdown || !m.by_pci || !m.energy || !m.error_string)
    return unavailable("libnvidia-ml.so.1 lacks a needed symbol (driver too old?)");
  if (int r = m.init(); r != 0) return unavailable(fmt::format("nvmlInit failed: {}", m.error_string(r)));
  if (int r = m.by_pci(pci_bus_id.c_str(), &m.device); r != 0)
    return unavailable(fmt::format("no NVML device for PCI bus id {}: {}", pci_bus_id, m.error_string(r)));
  unsigned long long mj = 0;
  if (int r = m.energy(m.device, &mj); r != 0)
    return unavailable(fmt::format("the device does not report total energy: {}", m.error_string(r)));
  return n;
}

Nvml::~Nvml() {
  if (impl_ && impl_->lib) {
    if (impl_->shutdown) impl_->shutdown();
    dlclose(impl_->lib);
  }
}

Result<uint64_t> Nvml::total_energy_mj() {
  unsigned long long mj = 0;
  if (int r = impl_->energy(impl_->device, &mj); r != 0)
    return make_error(ErrorCode::kUnavailable, fmt::format("NVML energy read failed: {}", impl_->error_string(r)));
  return static_cast<uint64_t>(mj);
}

unsigned Nvml::sm_clock_mhz() {
  unsigned v = 0;
  if (impl_->clock) impl_->clock(impl_->device, 1 /* NVML_CLOCK_SM */, &v);
  return v;
}

double Nvml::utilization_since(uint64_t since_us) {
  if (!impl_->samples) return -1;
  int type = 0;
  unsigned count = 0;
  if (impl_->samples(impl_->device, kGpuUtilizationSamples, since_us, &type, &count, nullptr) != 0 || count == 0)
    return -1;
  std::vector<NvmlSample> got(count);
  if (impl_->samples(impl_->device, kGpuUtilizationSamples, since_us, &type, &count, got.data()) != 0 || count == 0)
    return -1;
  // The value type is an unsigned int (0) or unsigned long long (3) for utilization samples.
  // The first sample after `since_us` covers a period that began before it: skipped. Without a
  // second one, nothing is said.
  std::sort(got.begin(), got.begin() + count,
            [](const NvmlSample& a, const NvmlSample& b) { return a.time_stamp < b.time_stamp; });
  double sum = 0;
  unsigned n = 0;
  bool first = true;
  for (unsigned i = 0; i < count; ++i) {
    if (got[i].time_stamp <= since_us) continue;
    if (first) {
      first = false;
      continue;
    }
    sum += type == 0 ? static_cast<double>(static_cast<uint32_t>(got[i].value)) : static_cast<double>(got[i].value);
    ++n;
  }
  return n ? sum / n : -1;
}

unsigned Nvml::temperature_c() {
  unsigned v = 0;
  if (impl_->temperature) impl_->temperature(impl_->device, 0 /* NVML_TEMPERATURE_GPU */, &v);
  return v;
}

}  // namespace kp::judge
