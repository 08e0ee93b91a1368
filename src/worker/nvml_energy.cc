#include "worker/nvml_energy.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace kp::worker {

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
};

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

unsigned Nvml::temperature_c() {
  unsigned v = 0;
  if (impl_->temperature) impl_->temperature(impl_->device, 0 /* NVML_TEMPERATURE_GPU */, &v);
  return v;
}

}  // namespace kp::worker
