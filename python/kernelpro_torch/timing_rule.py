"""When to stop sampling timed calls: the twin of src/verdict/timing_rule.h, held to the same cases
(tests/data/timing_rule_cases.json) by a C++ test and a Python test.

The thresholds are EvalOptions' (src/verdict/eval_options.h). kernelpro sends every field with each
request; a request that lacks one (a hand-written --once request) gets EvalOptions' default from
eval_defaults.json, which a C++ test holds equal to EvalOptions{}."""

import json
import math
import os

_DEFAULTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval_defaults.json")
with open(_DEFAULTS_PATH) as _f:
    DEFAULTS = json.load(_f)


CAP_MIN_SAMPLES = 3  # eval::kCapMinSamples


def options_with_defaults(options):
    """EvalOptions' defaults overlaid with the request's options."""
    merged = dict(DEFAULTS)
    merged.update(options or {})
    return merged


def median_interval95(samples):
    """(median, lo, hi): the distribution-free 95% interval of the median, as the C++ rule."""
    s = sorted(samples)
    n = len(s)
    if n == 0:
        return 0.0, 0.0, 0.0
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    half = 0.98 * math.sqrt(n)
    lo_rank = int(min(max(math.floor(n / 2 - half), 1), n))
    hi_rank = int(min(max(math.ceil(n / 2 + half), 1), n))
    return median, s[lo_rank - 1], s[hi_rank - 1]


def relative_half_width(samples):
    median, lo, hi = median_interval95(samples)
    return (hi - lo) / 2 / median if median > 0 else 0.0


def sampling_decision(samples, loop_wall_s, options):
    """"continue", "precise", "budget", "max_trials" or "cap", exactly as eval::sampling_decision."""
    n = len(samples)
    cap = float(options["timing_cap_s"])
    if cap > 0 and n >= CAP_MIN_SAMPLES and loop_wall_s >= cap:
        return "cap"
    min_trials = max(1, int(options["min_trials"]))
    max_trials = max(min_trials, int(options["max_trials"]))
    if n < min_trials:
        return "continue"
    if n >= max_trials:
        return "max_trials"
    ci = float(options["median_ci"])
    if ci > 0 and relative_half_width(samples) <= ci:
        return "precise"
    if loop_wall_s >= float(options["timing_budget_s"]):
        return "budget"
    return "continue"
