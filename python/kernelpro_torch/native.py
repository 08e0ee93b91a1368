"""Thin ctypes bindings to the CUDA driver and NVML: what PyTorch does not expose.

Only what the worker needs: the persisting-L2 limit and a stream's access-policy window (to reset
them before each timed call and to see whether a candidate set them), and NVML's energy counter,
clock and temperature. Every entry
point degrades to "unavailable" instead of raising, so a machine without NVML still evaluates.
"""

import ctypes

# cuCtxGetLimit / cuCtxSetLimit: CU_LIMIT_PERSISTING_L2_CACHE_SIZE.
_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
# cuStreamGetAttribute / cuStreamSetAttribute: CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, whose value
# is a CUaccessPolicyWindow {base_ptr, num_bytes, hitRatio, hitProp, missProp} at the start of the
# 64-byte CUstreamAttrValue union.
_CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
_STREAM_ATTR_VALUE_BYTES = 64
_WINDOW_NUM_BYTES_OFFSET = 8

_NVML_CLOCK_SM = 1
_NVML_TEMPERATURE_GPU = 0


class Driver:
    """The CUDA driver API of the current context (the one PyTorch made current)."""

    def __init__(self):
        try:
            self._lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            self._lib = None
            self.error = str(e)

    @property
    def available(self):
        return self._lib is not None

    def persisting_l2_limit(self):
        """Bytes of L2 set aside for persisting accesses, or None when it cannot be read."""
        if not self._lib:
            return None
        value = ctypes.c_size_t(0)
        rc = self._lib.cuCtxGetLimit(ctypes.byref(value), _CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        return value.value if rc == 0 else None

    def reset_persisting_l2(self):
        """Sets the set-aside to zero and demotes persisting lines to normal ones."""
        if not self._lib:
            return
        self._lib.cuCtxSetLimit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        self._lib.cuCtxResetPersistingL2Cache()

    def access_policy_window_bytes(self, stream):
        """num_bytes of the access-policy window on `stream` (a CUstream handle, 0 for the legacy
        default stream), or None when it cannot be read."""
        if not self._lib:
            return None
        value = (ctypes.c_ubyte * _STREAM_ATTR_VALUE_BYTES)()
        rc = self._lib.cuStreamGetAttribute(ctypes.c_void_p(stream), _CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                            ctypes.byref(value))
        if rc != 0:
            return None
        return ctypes.c_size_t.from_buffer(value, _WINDOW_NUM_BYTES_OFFSET).value

    def clear_access_policy_window(self, stream):
        """An empty access-policy window on `stream`: its accesses are normal ones again."""
        if not self._lib:
            return
        value = (ctypes.c_ubyte * _STREAM_ATTR_VALUE_BYTES)()
        self._lib.cuStreamSetAttribute(ctypes.c_void_p(stream), _CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                                       ctypes.byref(value))


class Nvml:
    """NVML for one device, found by PCI bus id. `error` says why when `available` is False."""

    def __init__(self, pci_bus_id):
        self.error = ""
        self._lib = None
        self._dev = ctypes.c_void_p()
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.error = f"libnvidia-ml.so.1 not loadable ({e}); energy needs the NVIDIA driver's NVML"
            return
        if lib.nvmlInit_v2() != 0:
            self.error = "nvmlInit failed"
            return
        rc = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self._dev))
        if rc != 0:
            self.error = f"NVML has no device at PCI bus id {pci_bus_id} (error {rc})"
            return
        probe = ctypes.c_ulonglong(0)
        if lib.nvmlDeviceGetTotalEnergyConsumption(self._dev, ctypes.byref(probe)) != 0:
            self.error = "this GPU has no NVML total-energy counter"
            return
        self._lib = lib

    @property
    def available(self):
        return self._lib is not None

    def total_energy_mj(self):
        v = ctypes.c_ulonglong(0)
        if self._lib.nvmlDeviceGetTotalEnergyConsumption(self._dev, ctypes.byref(v)) != 0:
            return None
        return v.value

    def sm_clock_mhz(self):
        v = ctypes.c_uint(0)
        self._lib.nvmlDeviceGetClockInfo(self._dev, _NVML_CLOCK_SM, ctypes.byref(v))
        return v.value

    def temperature_c(self):
        v = ctypes.c_uint(0)
        self._lib.nvmlDeviceGetTemperature(self._dev, _NVML_TEMPERATURE_GPU, ctypes.byref(v))
        return v.value

    def driver_version(self):
        v = ctypes.c_int(0)
        if self._lib and self._lib.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(v)) == 0:
            return v.value
        return 0
