// The native worker's pure decisions (worker/native_evaluator.cc), kept apart from its CUDA calls
// so that each is tested on the CPU: how many input sets fit, where timed calls go graph replay,
// when the wall clock or the tail says work escaped the stream, how the energy window is chunked
// and when it did not work, how big the L2 flush is, how many launches the Range Profiler session
// holds.
#pragma once

#include <cstdint>

#include "verdict/eval_options.h"

namespace kp::eval {

// Input sets an evaluation rotates through: `wanted` (at least 1), fewer while the sets
// (each set_bytes: its inputs, its outputs and the reference's outputs) would take more than a
// quarter of free device memory. Never fewer than 1: a task too big for one set fails at
// allocation with the harness named.
int input_sets_that_fit(uint64_t set_bytes, uint64_t free_bytes, int wanted);

// Whether `calls` calls of a replayed graph get outputs of their own (out_bytes each): when they
// take at most an eighth of free memory.
bool graph_outputs_fit(uint64_t out_bytes, int calls, uint64_t free_bytes);

// Whether a call of median t_est seconds is timed by graph replay (shorter than
// graph_threshold_us) rather than one event pair per call.
bool use_graph_replay(double t_est_s, const EvalOptions& options);

// Whether the median wall time of a call (launch to a device-wide sync) says work escaped the
// stream its events time: wall > wall_ratio x event + wall_slack_us.
bool wall_says_work_escaped(double wall_median_s, double event_median_s, const EvalOptions& options);

// Whether work ran on after the timed stream's end event: `tail_median_s` is the median, over
// the timed calls, of the host time from the end event's completion to the device being idle
// (a device-wide synchronization). On an idle device that is two API calls, a few microseconds;
// work left on another stream (or queued by a thread) keeps the device busy past the end event,
// and the tail is that work's remainder, seen directly rather than inferred from the whole call's
// wall time. Escaped when the tail exceeds kEscapedTailSlackS plus kEscapedTailShare of the
// event median. Example: a 100 us call with 30 us of work left on a side stream has a tail of
// about 30 us > 10 + 2 us.
inline constexpr double kEscapedTailSlackS = 10e-6;
inline constexpr double kEscapedTailShare = 0.02;
bool tail_says_work_escaped(double tail_median_s, double event_median_s);


// Whether replays that found their outputs already right (unpoisoned_s, per call) ran so much
// faster than the timed replays, each started from poisoned outputs (poisoned_s), that the
// candidate reads its output to skip work: poisoned more than 1.3x plus 0.5 us slower. An
// honest kernel does the same work either way; the timed samples are the poisoned ones, so a
// smaller gain is no gain.
bool faster_on_right_outputs(double unpoisoned_s, double poisoned_s);

// The share of timed calls (events) or timed replays (graph) whose outputs are checked right
// after them, drawn at random per call: a candidate cannot tell which ones, so one that skips
// work on a share s of calls is caught with probability 1 - (1 - kTimedCheckShare)^(s x calls).
inline constexpr double kTimedCheckShare = 0.5;

// Energy-window calls whose outputs are checked, at random (ENERGY_CHECKS in the KernelBench
// worker): enough that a candidate cannot skip its work while its energy is measured, few enough
// that the checks' own GPU work stays a small part of the measured joules.
inline constexpr int kEnergyChecks = 3;

// Calls launched back to back between synchronizations in the energy window: about 20 ms of
// work, at least one.
int64_t energy_chunk_calls(double t_call_s);

// Whether the energy window's calls cannot have done the timed calls' work, judged from the
// window itself (so it holds whatever the candidate can tell apart about the window):
//  - by rate: `calls` back-to-back calls in `window_s` ran under a third of the timed median
//    `call_s`, less 2 us each (back to back, without the flush and the syncs, an L2-resident call
//    honestly gains up to about 2x);
//  - by the GPU's own account: NVML's utilization over the window (`utilization_pct`, -1 when
//    unknown) is under a quarter of what the calls would keep the GPU busy for at the timed
//    median (calls x call_s / window_s, at most 1), where that is at least 20%. A candidate
//    that replays kept outputs and spins on the host to keep its call rate leaves the GPU idle.
// Example: 25,000 calls of a 20 us call in 0.5 s expect the GPU busy all the time; a replay
// shows about 0% and is caught; an honest call shows 60-100%.
bool energy_rate_says_skipped(double window_s, int64_t calls, double call_s);
bool energy_gpu_idle(double window_s, int64_t calls, double call_s, double utilization_pct);

// Bytes of the buffer read to evict L2 before a timed call: four times the L2, at least 256 MiB.
uint64_t l2_flush_bytes(int64_t l2_bytes);

// The Range Profiler session's capacity (max_kernels): the most kernel launches one collection
// profiles. CUPTI sizes the counter data image by it, and every collection starts from a fresh
// copy of that image, so the worker's session starts at kFirstRangeCapacity and grows to what
// the calls it profiles launch, up to kMostRangeCapacity (beyond that the counters are a
// sample of the call's first launches).
inline constexpr int kFirstRangeCapacity = 16;
inline constexpr int kMostRangeCapacity = 256;

// The capacity a session of `capacity` grows to after a collection of it kept some launches and
// dropped `dropped`: doubled until it holds the call's launches, at most kMostRangeCapacity.
// `launches` is the launch callback's count (-1 when the library saw no names); the call
// launched at least `capacity + dropped`. `capacity` itself when nothing was dropped or it is
// already at the most.
int grown_range_capacity(int capacity, int64_t launches, int64_t dropped);

}  // namespace kp::eval
