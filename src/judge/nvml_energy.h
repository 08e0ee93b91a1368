// NVML, loaded with dlopen("libnvidia-ml.so.1") so the worker runs (without energy) where the
// driver's NVML is absent. Reads the board's total-energy counter, clocks and temperature.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/result.h"

namespace kp::judge {

class Nvml {
 public:
  // Loads NVML and finds the device with this PCI bus id ("0000:01:00.0", from
  // cudaDeviceGetPCIBusId). kUnavailable with the reason when the library, a symbol or the
  // device is missing, or the device does not report energy (pre-Volta).
  static Result<std::unique_ptr<Nvml>> open(const std::string& pci_bus_id);
  ~Nvml();

  // Millijoules since the driver loaded. The counter updates about every 100 ms.
  Result<uint64_t> total_energy_mj();
  unsigned sm_clock_mhz();
  unsigned temperature_c();
  // The mean of NVML's GPU-utilization samples (percent of time one or more kernels ran, per
  // sample period of 1/6 s to 1 s) taken after `since_us` (microseconds since the epoch, the
  // CPU clock NVML stamps its samples with), the first of them left out (its period began
  // before); -1 when NVML has fewer than two or cannot say.
  double utilization_since(uint64_t since_us);

 private:
  Nvml() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kp::judge
