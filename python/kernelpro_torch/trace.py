"""One traced call of the candidate (the PyTorch profiler's CUPTI activity): the kernels it ran,
which of them are its own, and work that escaped the current stream."""

import json
import os
import random
import tempfile

import torch

from . import kernel_names
from .harness import Stop, _describe_exception, _sync, problem_failure, run_guarded

kernel_base = kernel_names.kernel_base


def cuda_activity_profiler():
    """PyTorch's Kineto profiler, recording GPU activity only. Taken from torch.autograd.profiler,
    not torch.profiler: torch.profiler.profile's start asks `hasattr(torch, "_inductor")`, which
    imports inductor and dynamo, 2.3 s on a CPU and 4.5 s of every KernelBench evaluation on the
    H100 (bench/results/h100-2026-12-06-throughput). The events and the chrome trace are the same
    Kineto ones."""
    from torch.autograd import profiler as autograd_profiler

    return autograd_profiler.profile(use_cpu=False, use_device="cuda", use_kineto=True)


def trace_call(call, inputs, candidate_symbols):
    """Kernels of one call, traced with the PyTorch profiler (CUPTI), and work that escaped the
    current stream: anything on another stream still running when a marker kernel on the current
    stream, launched right after the call, started."""
    # Markers: torch.cuda._sleep launches a tiny spin kernel, a name no candidate uses.
    with cuda_activity_profiler() as prof:
        torch.cuda._sleep(1)
        out = run_guarded(lambda: call(inputs), "the candidate (the traced call)")
        torch.cuda._sleep(1)
        run_guarded(_sync, "the candidate (the traced call)")
    del out
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = [ev for ev in trace.get("traceEvents", []) if isinstance(ev, dict)
              and ev.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "ts" in ev]
    events.sort(key=lambda ev: float(ev["ts"]))
    fills = [i for i, ev in enumerate(events) if ev.get("cat") == "kernel" and "spin_kernel" in ev.get("name", "")]
    if len(fills) < 2:
        # Without both markers neither check can be made: that is no pass.
        raise Stop("runtime_error", f"the trace of the candidate's call holds {len(fills)} of its 2 marker kernels "
                                    f"({len(events)} GPU events in all), so the escaped-work and kernel-attribution "
                                    "checks could not run")
    first, last = events[fills[0]], events[fills[-1]]
    stream = first.get("args", {}).get("stream")
    # Work of the call that runs after the end marker is in the trace too: take everything
    # after the first marker except the end marker itself.
    body = [ev for ev in events[fills[0] + 1:] if ev is not last]
    end_start = float(last["ts"])
    escaped = []
    for ev in body:
        s = ev.get("args", {}).get("stream")
        finish = float(ev["ts"]) + float(ev.get("dur", 0))
        if s != stream and finish > end_start:
            escaped.append(f"{ev.get('name', '?')} (stream {s})")
    kernels = [ev.get("name", "") for ev in body if ev.get("cat") == "kernel"]
    owned = None
    if candidate_symbols is not None:
        owned = [k for k in kernels if kernel_base(k) in candidate_symbols]
    # The GPU's busy time in the call: the union of its kernels' and copies' intervals.
    spans = sorted((float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0))) for ev in body)
    busy_us, reach = 0.0, None
    for a, b in spans:
        if reach is None or a > reach:
            busy_us += b - a
            reach = b
        elif b > reach:
            busy_us += b - reach
            reach = b
    return {"kernels": kernels, "escaped": escaped, "owned": owned, "busy_s": busy_us * 1e-6}


def traced_work_exceeds_timed(traced_busy_s, timed_median_s):
    """Whether the traced call kept the GPU busy far longer than a whole timed call takes: more
    than 1.25 x the timed median plus 10 us. An honest call is timed from a flushed L2 with its
    launch gaps included, so its traced kernels (warm, gaps excluded) take no longer; a candidate
    that runs other, heavier code while the profiler is on (its own kernel for the attribution,
    a library's when timed: issue 41's rt41_profiler_only_own_kernel) shows the difference."""
    return traced_busy_s > 1.25 * timed_median_s + 10e-6


def judge_traced_call(call, prob, device, dtype, candidate_symbols, options, report):
    """One call on inputs drawn now (they did not exist while the candidate's code could look),
    traced, its kernels written into report["kernels"]: stops when work escaped the current stream,
    when no kernel of the candidate's own ran (unless options["library_only_ok"]), or when it ran
    kernels it did not build under options["strict_kernels"]. Returns trace_call's dict."""
    try:
        inputs = prob.inputs(random.SystemRandom().randrange(2 ** 32 - 1), device, dtype)
    except Exception as e:
        raise problem_failure(e, "the problem's get_inputs()", reference_failed=True)
    # Neither check may be skipped: an exception of the candidate's call is its verdict
    # (run_guarded, inside), and a trace that fails otherwise (the profiler, perhaps disturbed by
    # the candidate) ends the evaluation without one, never with the two checks silently off.
    try:
        traced = trace_call(call, inputs, candidate_symbols)
    except Stop:
        raise
    except Exception as e:
        raise Stop("runtime_error", "the traced call could not be traced, so the escaped-work and kernel-attribution "
                                    f"checks could not run: {_describe_exception(e, 'the PyTorch profiler')}")
    del inputs
    report["kernels"] = traced["kernels"][:64]
    if traced["escaped"]:
        raise Stop("rejected", "work escaped the current stream (a side stream or a background thread): "
                               f"{', '.join(traced['escaped'][:3])} still ran after the call's last work on the "
                               "current stream; launch on torch.cuda.current_stream() or join other streams "
                               "back into it", cheat="side_stream")
    if traced["owned"] is not None and traced["kernels"]:
        foreign = sorted(set(k for k in traced["kernels"] if k not in traced["owned"]))
        if not traced["owned"] and not options["library_only_ok"]:
            raise Stop("rejected", "no kernel of the candidate's own ran: ModelNew computed its output with "
                                   f"PyTorch or library kernels only ({', '.join(foreign[:3])})", cheat="no_custom_kernel")
        if options["strict_kernels"] and foreign:
            raise Stop("rejected", f"the candidate launched kernels it did not build ({', '.join(foreign[:3])}); "
                                   "--strict-kernels forbids PyTorch and library kernels", cheat="forbidden_library")
    elif traced["owned"] is not None and not traced["kernels"]:
        raise Stop("rejected", "the candidate's forward launched no kernel at all: its output was not computed "
                               "on the GPU by this call", cheat="no_custom_kernel")
    return traced


def check_traced_against_timed(busy_s, median_s):
    """Stops (phase_dependent) when the traced call kept the GPU far busier than a timed call takes
    (traced_work_exceeds_timed)."""
    if traced_work_exceeds_timed(busy_s, median_s):
        raise Stop("rejected", f"the traced call kept the GPU busy {busy_s * 1e6:.1f} us, but a timed call takes "
                               f"{median_s * 1e6:.1f} us from a flushed L2: the candidate runs other work while the "
                               "profiler is on (the kernels attributed to it are not the ones timed)",
                   cheat="phase_dependent")
