// Energy: NVML's total-energy counter around back-to-back calls.
#include "worker/evaluation.h"

namespace kp::worker {

eval::EnergyReport NativeEvaluator::Impl::measure_energy(const CandidateLibrary& lib, const CandidateLibrary& ref,
                                                         DeviceBuffer& workspace, double t_call,
                                                         eval::WorkerReport* report, MaybeStop* stop) {
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
  // The checked calls: the anti-cheat phases redrew inputs in place, so each set's reference is
  // run again first (outside the window). Then one call, at a random place, in each of
  // kEnergyChecks chunks drawn among those the window should hold (from the timing's median).
  for (size_t k = 0; k < sets.size(); ++k)
    if ((*stop = run_reference(ref, k, report))) return e;
  if ((*stop = cuda_failure(cudaDeviceSynchronize(), "the reference"))) return e;
  const int64_t expected_chunks = std::max<int64_t>(
      1, std::llround(options->energy_window_s / std::max(1e-9, static_cast<double>(chunk) * std::max(t_call, 1e-9))));
  std::vector<int64_t> checked_chunks;
  std::uniform_int_distribution<int64_t> any_chunk(0, expected_chunks - 1);
  while (checked_chunks.size() < static_cast<size_t>(std::min<int64_t>(expected_chunks, eval::kEnergyChecks)))
    if (int64_t c = any_chunk(timed_checks);
        std::find(checked_chunks.begin(), checked_chunks.end(), c) == checked_chunks.end())
      checked_chunks.push_back(c);
  std::uniform_int_distribution<int64_t> position(0, chunk - 1);
  int checks = 0;
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
  for (int64_t chunk_index = 0;; ++chunk_index) {
    const bool check_this = std::find(checked_chunks.begin(), checked_chunks.end(), chunk_index) != checked_chunks.end();
    const int64_t checked_at = check_this ? position(timed_checks) : -1;
    for (int64_t i = 0; i < chunk; ++i, ++calls) {
      const size_t k = static_cast<size_t>(calls % static_cast<int64_t>(args.size()));
      if (i == checked_at && (*stop = poison_outputs(sets[k], false))) return e;
      if ((*stop = call(lib, args[k], "the candidate"))) return e;
      if (i != checked_at) continue;
      ++checks;
      MaybeStop s = compare_outputs(sets[k], k, report, fmt::format("on energy call {}", calls + 1));
      if (s && s->outcome == Outcome::kIncorrect) {
        *stop = Stop{Outcome::kRejected,
                     fmt::format("the output of energy call {} on input set {} was not computed by that call ({}): "
                                 "work skipped or deferred while energy is measured",
                                 calls + 1, k, s->reason),
                     "batched_calls"};
        return e;
      }
      if ((*stop = std::move(s))) return e;
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
  e.checked_calls = checks;
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
