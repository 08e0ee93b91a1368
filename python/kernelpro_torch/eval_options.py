"""EvalOptions (src/verdict/eval_options.h) for the KernelBench worker.

kernelpro sends every field with each request; a request that lacks one (a hand-written --once
request) gets EvalOptions' default from eval_defaults.json, which a C++ test holds equal to
EvalOptions{}. The decisions that read them (the sampling rule, the escaped-work checks, the
physics floor) are the judge core's (src/judge/, through judge.py), written once, in C++."""

import json
import os

_DEFAULTS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval_defaults.json")
with open(_DEFAULTS_PATH) as _f:
    DEFAULTS = json.load(_f)


def options_with_defaults(options):
    """EvalOptions' defaults overlaid with the request's options."""
    merged = dict(DEFAULTS)
    merged.update(options or {})
    return merged
