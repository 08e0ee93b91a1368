"""What the KernelBench worker knows of its GPU, measured once when it starts."""

import torch

from .harness import _Event, _elapsed, _record, _sync


class Device:
    """What the worker knows of its GPU, measured once when it starts."""

    def __init__(self):
        from . import native

        if not torch.cuda.is_available():
            raise RuntimeError(f"PyTorch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False); "
                               "run on a machine with an NVIDIA GPU, driver and a CUDA build of torch")
        torch.cuda.set_device(0)
        p = torch.cuda.get_device_properties(0)
        self.props = p
        self.name = p.name
        self.l2_bytes = int(getattr(p, "L2_cache_size", 50 << 20))
        bus = getattr(p, "pci_bus_id", 0)
        self.pci_bus_id = f"{getattr(p, 'pci_domain_id', 0):08X}:{bus:02X}:{getattr(p, 'pci_device_id', 0):02X}.0"
        self.driver = native.Driver()
        self.nvml = native.Nvml(self.pci_bus_id)
        self.flush = torch.empty(max(4 * self.l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")
        self.dram_bytes_per_s = self._copy_bandwidth()
        self.idle_watts = None

    def _copy_bandwidth(self):
        free, _ = torch.cuda.mem_get_info()
        n = int(min(1 << 30, free // 8)) // 4 * 4
        a = torch.empty(n // 4, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)
        b.copy_(a)
        best = 0.0
        for _ in range(5):
            s, e = _Event(enable_timing=True), _Event(enable_timing=True)
            _record(s)
            b.copy_(a)
            _record(e)
            _sync()
            best = max(best, 2 * n / (_elapsed(s, e) * 1e-3))
        del a, b
        torch.cuda.empty_cache()
        return best

    def info(self):
        p = self.props
        return {"name": self.name, "cc_major": p.major, "cc_minor": p.minor, "sm_count": p.multi_processor_count,
                "l2_bytes": self.l2_bytes, "memory_bytes": int(p.total_memory),
                "driver_version": self.nvml.driver_version() if self.nvml.available else 0,
                "runtime_version": _cuda_version_int(), "pci_bus_id": self.pci_bus_id,
                "nvml": self.nvml.available, "nvml_error": self.nvml.error,
                "dram_bytes_per_s": self.dram_bytes_per_s}

    def prepare_timed_call(self):
        """L2 flush and persisting-L2 reset, then an idle GPU: the state every timed call starts from.

        The flush reads the buffer (a sum over it as int32) rather than writing it: a write leaves L2
        full of dirty lines that the next kernel pays to write back (kp-worker's evict_l2 does the
        same; on the H200 it brought the in-process layernorm time within 0.7% of ncu's)."""
        self._flush_sink = self.flush.view(torch.int32).sum()
        self.reset_persisting_l2()
        _sync()

    def reset_persisting_l2(self):
        """No persisting-L2 set-aside, no access-policy window on the current stream."""
        self.driver.reset_persisting_l2()
        self.driver.clear_access_policy_window(torch.cuda.current_stream().cuda_stream)


def _cuda_version_int():
    v = torch.version.cuda or "0.0"
    major, minor = (v.split(".") + ["0"])[:2]
    return int(major) * 1000 + int(minor) * 10
