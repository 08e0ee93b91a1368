"""Process-wide numeric modes: recorded before the candidate loads, checked after each phase.

A mode that a candidate switches for the whole process (TF32 for fp32 matmuls and convolutions,
reduced-precision reductions, the default dtype, autocast, cuDNN's algorithm choice)
changes the reference too (and so does a torch-function or dispatch mode left on the stack): the
reference then computes in the candidate's mode, its outputs match
a downgraded candidate's, and its timing is not the problem's. So the harness records the modes
before any candidate code runs and checks them after each phase and after each candidate call;
a change of arithmetic is a rejection (process_mode), and the modes are put back before anything
else runs. A change of algorithm choice only (ALGORITHM_MODES) is put back and noted.

Two views of the same modes, so that neither a patched getter nor a mode set below PyTorch (a
cuBLAS handle's math mode) hides a change:
  - the flags, read through getters taken from torch._C when this module is imported (before any
    candidate loads), not through attributes a candidate could rebind;
  - a probe: a small fp32 matmul and a 1x1 convolution of values that TF32 cannot represent
    (1 + 2^-15): their exact results are 1 + 2^-15; in TF32 they come out 1.0.
"""

import torch

_C = torch._C


def _getter(name):
    fn = getattr(_C, name, None)
    return fn if callable(fn) else None


# name -> (getter taken now, setter for restore)
_FLAGS = {
    "cuda.matmul.allow_tf32": (_getter("_get_cublas_allow_tf32"), _getter("_set_cublas_allow_tf32")),
    "float32_matmul_precision": (_getter("_get_float32_matmul_precision"), _getter("_set_float32_matmul_precision")),
    "cudnn.allow_tf32": (_getter("_get_cudnn_allow_tf32"), _getter("_set_cudnn_allow_tf32")),
    "cudnn.benchmark": (_getter("_get_cudnn_benchmark"), _getter("_set_cudnn_benchmark")),
    "cudnn.deterministic": (_getter("_get_cudnn_deterministic"), _getter("_set_cudnn_deterministic")),
    "cudnn.enabled": (_getter("_get_cudnn_enabled"), _getter("_set_cudnn_enabled")),
    "cuda.matmul.allow_fp16_reduced_precision_reduction": (
        _getter("_get_cublas_allow_fp16_reduced_precision_reduction"),
        _getter("_set_cublas_allow_fp16_reduced_precision_reduction")),
    "cuda.matmul.allow_bf16_reduced_precision_reduction": (
        _getter("_get_cublas_allow_bf16_reduced_precision_reduction"),
        _getter("_set_cublas_allow_bf16_reduced_precision_reduction")),
    "deterministic_algorithms": (_getter("_get_deterministic_algorithms"), None),  # restore() sets it
    "flash_sdp": (_getter("_get_flash_sdp_enabled"), _getter("_set_sdp_use_flash")),
    "mem_efficient_sdp": (_getter("_get_mem_efficient_sdp_enabled"), _getter("_set_sdp_use_mem_efficient")),
    "math_sdp": (_getter("_get_math_sdp_enabled"), _getter("_set_sdp_use_math")),
}
# Modes that choose algorithms rather than arithmetic: a candidate that sets one (cudnn.benchmark
# at import is common in honest code) is not rejected; the harness puts it back before the
# reference runs (algorithm_changes), so the reference is always timed in the problem's modes.
ALGORITHM_MODES = ("cudnn.benchmark", "cudnn.deterministic", "deterministic_algorithms", "flash_sdp",
                   "mem_efficient_sdp", "math_sdp")
_get_default_dtype = torch.get_default_dtype
_set_default_dtype = torch.set_default_dtype
_use_deterministic = torch.use_deterministic_algorithms
_deterministic_warn_only = _getter("_get_deterministic_algorithms_warn_only")
_is_autocast = getattr(torch, "is_autocast_enabled", None)
_matmul = torch.matmul
_conv2d = torch.nn.functional.conv2d
_full = torch.full
_eye = torch.eye
_ones = torch.ones


_function_mode_depth = getattr(_C, "_len_torch_function_stack", None)
_dispatch_mode_depth = getattr(_C, "_len_torch_dispatch_stack", None)


def _depth(fn):
    try:
        return int(fn()) if fn is not None else -1
    except Exception:
        return -1


def _autocast_cuda():
    if _is_autocast is None:
        return False
    try:
        return bool(_is_autocast("cuda"))
    except TypeError:
        return bool(_is_autocast())


def flags():
    """{mode name: value} of every flag this PyTorch has a getter for."""
    out = {}
    for name, (get, _) in _FLAGS.items():
        if get is not None:
            try:
                out[name] = get()
            except Exception:
                continue
    out["default_dtype"] = str(_get_default_dtype())
    out["autocast.cuda"] = _autocast_cuda()
    # A torch-function or dispatch mode left on the stack runs inside every PyTorch call of the
    # harness, the reference's and the input draws' (issue 41's second red team precomputed a
    # GEMM inside get_inputs() this way).
    out["torch_function_mode_stack"] = _depth(_function_mode_depth)
    out["torch_dispatch_mode_stack"] = _depth(_dispatch_mode_depth)
    return out


def probe():
    """{"matmul": exact, "conv": exact}: whether fp32 matmul and convolution are computed in full
    fp32 right now, from their results on values TF32 cannot hold."""
    v = 1.0 + 2.0 ** -15
    with torch.no_grad():
        a = _full((64, 64), v, dtype=torch.float32, device="cuda")
        m = float(_matmul(a, _eye(64, dtype=torch.float32, device="cuda"))[0, 0])
        x = _full((1, 16, 8, 8), v, dtype=torch.float32, device="cuda")
        w = torch.zeros((16, 16, 1, 1), dtype=torch.float32, device="cuda")
        w[:, 0] = 1.0
        c = float(_conv2d(x, w)[0, 0, 0, 0])
    return {"matmul": m == v, "conv": c == v}


_MODULE_HOOK_DICTS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks", "_global_forward_hooks_always_called",
                      "_global_forward_hooks_with_kwargs", "_global_module_registration_hooks",
                      "_global_parameter_registration_hooks", "_global_buffer_registration_hooks")
_module_globals = vars(torch.nn.modules.module)


def global_module_hooks():
    """PyTorch's process-wide module hooks: every (dict, key, hook) there. A global forward hook
    or pre-hook runs inside the reference's forward (issue 41's second red team: one made the
    reference return what the candidate returned, another finished the candidate's deferred work
    while the reference ran)."""
    out = []
    for name in _MODULE_HOOK_DICTS:
        d = _module_globals.get(name)
        if isinstance(d, dict):
            out.extend((name, k, id(v)) for k, v in d.items())
    return tuple(out)


def model_state(model):
    """What a model computes with, besides its code: every submodule's hooks, every parameter's
    storage and version counter (an in-place write bumps it) and every buffer's storage (not its
    version: a KernelBench model runs in training mode, and batch norm updates its running
    statistics in place on every forward)."""
    hooks, tensors = [], []
    for mname, m in model.named_modules():
        for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
            d = getattr(m, attr, None)
            if isinstance(d, dict):
                hooks.extend((mname, attr, k, id(v)) for k, v in d.items())
    for name, t in model.named_parameters():
        tensors.append((name, t.data_ptr(), t._version, tuple(t.shape), str(t.dtype)))
    for name, t in model.named_buffers():
        tensors.append((name, t.data_ptr(), tuple(t.shape), str(t.dtype)))
    return tuple(hooks), tuple(tensors)


def snapshot():
    """What the modes are now: the flags and the probe."""
    return {"flags": flags(), "probe": probe()}


def changes(before, with_probe=True):
    """The numeric modes (those that change arithmetic) that differ from `before` (a snapshot),
    as "name: old -> new" lines; [] when none. Algorithm modes are not listed (algorithm_changes)."""
    now = flags()
    changed = [f"{k}: {before['flags'].get(k)!r} -> {now.get(k)!r}" for k in sorted(set(before["flags"]) | set(now))
               if before["flags"].get(k) != now.get(k) and k not in ALGORITHM_MODES]
    if with_probe:
        p = probe()
        for k in ("matmul", "conv"):
            if before["probe"].get(k) and not p[k]:
                changed.append(f"fp32 {k} no longer computes in full fp32 (a value TF32 cannot hold came back "
                               "rounded)")
    return changed


def algorithm_changes(before):
    """The algorithm modes that differ from `before`, as "name: old -> new" lines."""
    now = flags()
    return [f"{k}: {before['flags'].get(k)!r} -> {now.get(k)!r}" for k in ALGORITHM_MODES
            if k in before["flags"] and before["flags"].get(k) != now.get(k)]


def restore(before):
    """Puts back every flag of `before` that has a setter."""
    for name, value in before["flags"].items():
        setter = _FLAGS.get(name, (None, None))[1]
        if setter is not None:
            try:
                setter(value)
            except Exception:
                pass
    try:
        _set_default_dtype(getattr(torch, before["flags"]["default_dtype"].replace("torch.", "")))
    except Exception:
        pass
    if "deterministic_algorithms" in before["flags"]:
        try:
            warn_only = bool(_deterministic_warn_only()) if _deterministic_warn_only else False
            _use_deterministic(bool(before["flags"]["deterministic_algorithms"]), warn_only=warn_only)
        except Exception:
            pass


def check(before, when, with_probe, notes):
    """Stops (process_mode) when the process's arithmetic modes changed since `before`, putting
    them back; puts back (and notes in `notes`, at most 8) a change of its algorithm modes, so that
    the reference runs in the problem's own."""
    from .harness import Stop

    changed = changes(before, with_probe=with_probe)
    if changed:
        restore(before)
        raise Stop("rejected", f"the candidate changed process-wide numeric modes during {when}: {'; '.join(changed)}. "
                               "A mode set for the whole process changes the reference too (its outputs and its "
                               "timing); set what your own kernels need inside them, not on PyTorch",
                   cheat="process_mode")
    algorithms = algorithm_changes(before)
    if algorithms:
        restore(before)
        if len(notes) < 8:
            notes.append(f"put back after {when}: {'; '.join(algorithms)}")
