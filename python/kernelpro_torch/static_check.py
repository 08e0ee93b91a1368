"""Source checks on a KernelBench candidate, before any of it runs (no torch needed)."""

import re

# Static checks on the candidate source: KernelBench's errors (timer patching, lazy tensor
# subclasses) with a named cheat. Comments are stripped first, strings are not (a patched timer
# hidden in exec("...") is still caught at run time by the identity check in Guard).
_STATIC_RULES = [
    ("timer_patch", re.compile(r"(torch\.cuda\.Event\.(record|elapsed_time|synchronize)|torch\.cuda\.(synchronize|Event)|"
                               r"time\.(perf_counter|time|monotonic)(_ns)?)\s*=[^=]"),
     "the candidate assigns to a timing function ({}); the harness's timer is not the candidate's to change"),
    ("lazy_output", re.compile(r"_make_subclass|class\s+\w+\s*\(\s*(torch\.)?Tensor\s*\)|torch\.Tensor\.__new__"),
     "the candidate defines a torch.Tensor subclass ({}); outputs must be real tensors computed by the call"),
]


def _strip_python_comments(src):
    return "\n".join(line.split("#", 1)[0] if not line.lstrip().startswith(("#include", "#define", "#pragma")) else line
                     for line in src.splitlines())


def static_check(source):
    """(cheat, reason) for the first rule the source breaks, or None."""
    text = _strip_python_comments(source)
    for cheat, rx, msg in _STATIC_RULES:
        m = rx.search(text)
        if m:
            return cheat, msg.format(m.group(0).strip().rstrip("=").strip())
    return None


