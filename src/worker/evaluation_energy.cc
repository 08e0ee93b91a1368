// Energy: NVML's total-energy counter around back-to-back calls.
#include "worker/evaluation.h"

namespace kp::worker {

eval::EnergyReport NativeEvaluator::Impl::measure_energy(const CandidateLibrary& lib, DeviceBuffer& workspace,
                                                         double t_call, MaybeStop* stop) {
  eval::EnergyReport e;
  if (options->energy_window_s <= 0) {
    e.unavailable_reason = "disabled (--no-energy)";
    return e;
  }
  if (!nvml) {
    e.unavailable_reason = device.nvml_error.empty() ? "NVML unavailable" : device.nvml_error;
    return e;
  }
  auto read = [&]() -> std::optional<uint64_t> {
    auto r = nvml->total_energy_mj();
    return r.ok() ? std::optional<uint64_t>(*r) : std::nullopt;
  };
  // Waits until the counter changes (it updates about every 100 ms); returns the new value.
  auto next_tick = [&](uint64_t from) -> std::optional<uint64_t> {
    auto t0 = Clock::now();
    while (seconds_since(t0) < 0.5) {
      auto v = read();
      if (!v) return std::nullopt;
      if (*v != from) return v;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return from;
  };
  if (!idle_watts) {
    cudaDeviceSynchronize();
    auto a = read();
    if (!a) {
      e.unavailable_reason = "NVML energy read failed";
      return e;
    }
    auto a1 = next_tick(*a);
    auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(options->idle_window_s));
    auto b = next_tick(read().value_or(*a1));
    double dt = seconds_since(t0);
    idle_watts = (a1 && b && dt > 0) ? static_cast<double>(*b - *a1) * 1e-3 / dt : 0.0;
  }
  e.idle_watts = *idle_watts;
  std::vector<kp_args> args;
  for (auto& s : sets) args.push_back(make_args(s, workspace));
  const int64_t chunk = eval::energy_chunk_calls(t_call);
  auto e0 = read();
  if (!e0) {
    e.unavailable_reason = "NVML energy read failed";
    return e;
  }
  e0 = next_tick(*e0);
  auto t0 = Clock::now();
  int64_t calls = 0;
  std::optional<uint64_t> e1;
  uint64_t last = *e0;
  while (true) {
    for (int64_t i = 0; i < chunk; ++i, ++calls) {
      if ((*stop = call(lib, args[calls % args.size()], "the candidate"))) return e;
    }
    if ((*stop = cuda_failure(cudaDeviceSynchronize(), "the candidate execution"))) return e;
    if (seconds_since(t0) < options->energy_window_s) continue;
    auto v = read();
    if (!v) break;
    if (*v != last && seconds_since(t0) >= options->energy_window_s) {
      e1 = v;
      break;
    }
    last = *v;
    if (seconds_since(t0) > options->energy_window_s + 1.0) break;
  }
  double window = seconds_since(t0);
  if (!e1) {
    e.unavailable_reason = "the NVML energy counter did not advance";
    return e;
  }
  e.measured = true;
  e.calls = calls;
  e.window_s = window;
  double joules = static_cast<double>(*e1 - *e0) * 1e-3;
  e.joules_per_call = joules / static_cast<double>(calls);
  e.average_watts = joules / window;
  e.dynamic_joules_per_call = std::max(0.0, joules - e.idle_watts * window) / static_cast<double>(calls);
  e.sm_clock_mhz = nvml->sm_clock_mhz();
  e.temperature_c = nvml->temperature_c();
  return e;
}

}  // namespace kp::worker
