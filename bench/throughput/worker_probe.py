"""Where the KernelBench worker's first seconds go: the steps of its start (the hello reply) and
of an evaluation's `setup` phase, each timed in a fresh interpreter, in the order the worker
takes them. One JSON object on stdout.

Usage (repo root, on the GPU machine): python3 bench/throughput/worker_probe.py PROBLEM.py
"""

import json
import os
import sys
import time

t_start = time.perf_counter()
steps = []


def step(name, fn):
    t0 = time.perf_counter()
    out = fn()
    steps.append((name, time.perf_counter() - t0))
    return out


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
torch = step("import torch", lambda: __import__("torch"))
evaluate = step("import kernelpro_torch.evaluate", lambda: __import__("kernelpro_torch.evaluate").evaluate)
from kernelpro_torch import device as kp_device  # noqa: E402  (imported by evaluate)
step("torch.cuda.init", torch.cuda.init)
dev = step("device.Device() (context, NVML, flush buffer, copy bandwidth)", kp_device.Device)
from kernelpro_torch import problem as pb  # noqa: E402  (already imported by evaluate)

prob = step("Problem(path)", lambda: pb.Problem(sys.argv[1]))
init = step("init_inputs()", prob.init_inputs)
device = torch.device("cuda", 0)
model = step("build the reference model", lambda: prob.build(prob.Model, init, device, torch.float32))
step("input_shapes (meta device)", lambda: prob.input_shapes(1, device, torch.float32))
step("Guard()", pb.Guard)
xs = step("inputs(seed) on the GPU", lambda: prob.inputs(1, device, torch.float32))


def ref_once():
    with torch.no_grad():
        model(*xs)
    torch.cuda.synchronize()


step("first reference call", ref_once)
step("second reference call", ref_once)
print(json.dumps({"device": dev.name, "torch": torch.__version__,
                  "steps_s": {n: round(s, 4) for n, s in steps},
                  "total_s": round(time.perf_counter() - t_start, 4)}, indent=1))
