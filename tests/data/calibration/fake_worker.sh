#!/bin/sh
# A stand-in for kp-worker that answers hello as an H200 and "calibrate" with fixed ceilings of
# the form worker/calibrate.cc writes (values near what an H200 measures), so that `kernelpro
# calibrate` (the store, the table, the JSON) is tested on machines without a GPU.
while read -r line <&3; do
  case "$line" in
    *'"op":"hello"'*)
      echo '{"ok":true,"device":{"name":"NVIDIA H200","cc_major":9,"cc_minor":0,"sm_count":132,"l2_bytes":62914560,"memory_bytes":150109880320,"sm_clock_khz":1980000,"dram_bytes_per_s":4.1e12},"protocol":1}' >&4 ;;
    *'"op":"shutdown"'*) exit 0 ;;
    *'"op":"calibrate"'*)
      echo '{"ok":true,"id":1,"exiting":false,"seconds":3.5,"ceilings":{"gpu":"NVIDIA H200","cc_major":9,"cc_minor":0,"sm_count":132,"source":"calibrated","measured_at":"2025-01-02T03:04:05Z","sm_clock_mhz":1980,"dram_bytes_per_s":4.2e12,"l2_bytes_per_s":1.1e13,"fp32_flops":6.5e13,"fp64_flops":3.3e13,"fp16_flops":1.3e14,"tensor_fp16_flops":7.4e14,"tensor_bf16_flops":7.5e14,"tensor_tf32_flops":3.9e14,"tensor_fp64_flops":5.5e13,"tensor_int8_ops":1.4e15,"method":{"sm_clock_mhz":"NVML","dram_bytes_per_s":"copy kernel","l2_bytes_per_s":"ld.global.cg reads","fp32_flops":"FFMA chains","fp64_flops":"DFMA chains","fp16_flops":"HFMA2 chains","tensor_fp16_flops":"cuBLAS","tensor_bf16_flops":"cuBLAS","tensor_tf32_flops":"cuBLAS","tensor_fp64_flops":"cuBLAS","tensor_int8_ops":"cuBLAS"}}}' >&4 ;;
    *) echo '{"ok":false,"error":"fake calibrate worker: unknown op"}' >&4 ;;
  esac
done
