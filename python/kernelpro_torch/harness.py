"""The KernelBench worker's plumbing for one evaluation: how a failure becomes a verdict (Stop, and
the exceptions of the candidate's or the problem's code turned into one), the harness's own
references to PyTorch's timing functions, and small helpers over tensors and the process. Nothing
here decides a verdict on the candidate's numbers: that is the judge core's (judge.py).
"""

import os
import shutil
import subprocess
import threading
import time
import traceback

import torch

# The harness's own references to its timing functions, taken before any candidate code runs:
# a candidate that patches torch.cuda.Event.elapsed_time or time.perf_counter changes nothing
# the harness measures (and is caught by problem.Guard).
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_current_stream = torch.cuda.current_stream
_elapsed = torch.cuda.Event.elapsed_time
_sync = torch.cuda.synchronize
_perf = time.perf_counter

STICKY = ("illegal memory access", "illegal instruction", "misaligned address", "unspecified launch failure",
          "device-side assert", "an illegal", "hardware stack error", "invalid program counter",
          "CUDA error: unknown error", "the launch timed out")


class Stop(Exception):
    """Why an evaluation ended early: an outcome, a reason, and the cheat it caught, if any."""

    def __init__(self, outcome, reason, cheat="", reference_failed=False):
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.cheat = cheat
        self.reference_failed = reference_failed


def context_lost():
    try:
        _sync()
        torch.empty(1, device="cuda").fill_(1).item()
        return False
    except Exception:
        return True


def _describe_exception(e, who):
    text = f"{type(e).__name__}: {e}".strip()
    tb = traceback.format_exc().strip().splitlines()
    tail = "\n".join(tb[-8:])
    return f"{who} raised {text}\n{tail}" if tail else f"{who} raised {text}"


# Device memory this worker's CUDA context takes besides PyTorch's allocator (an H100's context
# with lazy module loading is about 0.6 GiB), and how much more held outside this worker makes an
# out-of-memory the machine's fault rather than the candidate's.
CONTEXT_BYTES = 1 << 30
ELSEWHERE_BYTES = 2 << 30
_NVIDIA_SMI = shutil.which("nvidia-smi")


def memory_held_elsewhere():
    """Bytes of device memory that neither this worker's PyTorch allocator nor its context holds:
    other processes' (or raw allocations outside PyTorch)."""
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return max(0, total - free - torch.cuda.memory_reserved() - CONTEXT_BYTES)


def gpu_holders():
    """nvidia-smi's list of the GPU's compute processes ("pid name MiB", this one marked), or ""."""
    if _NVIDIA_SMI is None:
        return ""
    try:
        r = subprocess.run([_NVIDIA_SMI, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [line.strip() + (" (this worker)" if line.split(",")[0].strip() == str(os.getpid()) else "")
             for line in r.stdout.splitlines() if line.strip()]
    return "; ".join(lines[:8])


def out_of_memory(e, who):
    """The Stop for an out-of-memory error: gpu_unavailable when more than ELSEWHERE_BYTES are held
    outside this worker (another process holds the GPU: the machine's failure, which the search
    retries and never records as the candidate's), else runtime_error (the candidate's or the
    problem's own appetite)."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    try:
        elsewhere = memory_held_elsewhere()
    except Exception:
        elsewhere = 0
    if elsewhere > ELSEWHERE_BYTES:
        holders = gpu_holders()
        return Stop("gpu_unavailable", f"{who} ran out of device memory while {elsewhere / 2**30:.1f} GiB of the GPU are "
                                       "held outside this worker" + (f" (nvidia-smi: {holders})" if holders else "") +
                                       f"; the GPU is not free, the candidate is not at fault ({first})")
    return Stop("runtime_error", f"{who}: out of device memory ({first})")


def problem_failure(e, who, reference_failed=False):
    """The Stop for an exception of the problem's own code (get_inputs(), the reference): the
    problem's runtime_error, unless it ran out of memory because another process holds the GPU."""
    if isinstance(e, torch.cuda.OutOfMemoryError):
        st = out_of_memory(e, who)
        if st.outcome == "gpu_unavailable":
            return st
    return Stop("runtime_error", _describe_exception(e, who), reference_failed=reference_failed)


def run_guarded(fn, who):
    """Calls fn; an exception becomes a Stop (crash when the CUDA context is lost)."""
    try:
        return fn()
    except Stop:
        raise
    except torch.cuda.OutOfMemoryError as e:
        raise out_of_memory(e, who)
    except Exception as e:
        lost = any(s in str(e) for s in STICKY) or context_lost()
        reason = _describe_exception(e, who)
        if lost:
            raise Stop("crash", reason + "\n(the CUDA context is lost)")
        raise Stop("runtime_error", reason)


def outputs_of(value, who):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    raise Stop("incorrect", f"{who} returned {type(value).__name__}, not a tensor (KernelBench compares one tensor)")


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def storage_range(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def tensors(xs):
    return [x for x in xs if isinstance(x, torch.Tensor)]


def nbytes(xs):
    return sum(t.numel() * t.element_size() for t in tensors(xs))


def module_bytes(m):
    """Bytes of a module's parameters and buffers (each once, however often it is shared); 0 for
    anything that is not a module."""
    if not isinstance(m, torch.nn.Module):
        return 0
    return nbytes(list(m.parameters()) + list(m.buffers()))


def compulsory_bytes(xs, outs, model):
    """The DRAM traffic no implementation of one call avoids: each input and output once, and
    the model's parameters and buffers once."""
    return nbytes(xs) + nbytes(outs) + module_bytes(model)


def _check_stream(stream, who, when):
    """Stops when the call left another stream current than `stream` (which it puts back)."""
    if _current_stream() != stream:
        torch.cuda.set_stream(stream)
        raise Stop("rejected", f"{who} left another CUDA stream current after {when}: switch streams inside forward "
                               "only with `with torch.cuda.stream(...)`, which puts the current one back",
                   cheat="side_stream")


def _contiguous(outs):
    return [o if o.is_contiguous() else o.contiguous() for o in outs]


def core_stop(result):
    """The Stop the judge core decided (its result dict), or None."""
    if result is None:
        return None
    if result.get("tainted"):
        return Stop("rejected", "the harness was tampered with: " + result["tainted"], cheat="harness_tamper")
    st = result.get("stop")
    if st:
        return Stop(st["outcome"], st["reason"], cheat=st.get("cheat", ""),
                    reference_failed=bool(st.get("reference_failed")))
    return None


PHASE_FILE_ENV = "KP_PHASE_FILE"  # eval::kPhaseFileEnv


def mark_phase(name):
    """Writes the phase the evaluation enters into the file kernelpro named in KP_PHASE_FILE, so
    that an evaluation killed at its timeout ends with the phase named (src/verdict/protocol.h)."""
    path = os.environ.get(PHASE_FILE_ENV)
    if not path:
        return
    try:
        with open(path, "w") as f:
            f.write(name)
    except OSError:
        pass  # a phase left unnamed only makes a timeout's reason shorter


def _bitwise_equal(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return torch.equal(a.view(-1).view(_int_of(a.dtype)), b.view(-1).view(_int_of(b.dtype)))
    return torch.equal(a, b)


def _int_of(dtype):
    return {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
            torch.bfloat16: torch.int16}.get(dtype, torch.uint8)
