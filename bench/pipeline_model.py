#!/usr/bin/env python3
"""A scripted stand-in for an LLM, for bench/model_pipeline.sh (the command provider: the prompt
on stdin, the reply on stdout). It waits LATENCY seconds (KP_BENCH_LATENCY, default 8), as a model
behind an API does, then answers the planner with "direction N" (N counts the planner prompts it
has seen, in a file next to it) and the coder with the gelu seed at the block size of direction N.
Every answer is a correct kernel; what is measured is the loop around the model, not the model."""
import os
import re
import sys
import time
from pathlib import Path

prompt = sys.stdin.read()
time.sleep(float(os.environ.get("KP_BENCH_LATENCY", "8")))
state = Path(os.environ.get("KP_BENCH_STATE", "/tmp/kp-pipeline-model.count"))
if "Choose the next optimisation" in prompt:
    n = int(state.read_text()) + 1 if state.exists() else 1
    state.write_text(str(n))
    print('{"direction": "direction %d: block size %d", "actions": ["tune_block"], "why": "bench"}'
          % (n, [128, 512, 1024, 64][(n - 1) % 4]))
    sys.exit(0)
m = re.search(r"direction (\d+): block size (\d+)", prompt)
if not m:
    print("no direction in the prompt", file=sys.stderr)
    sys.exit(1)
seed = (Path(__file__).resolve().parent.parent / "examples/gelu/seed.cu").read_text()
kernel = seed.replace("KP_TUNE(BLOCK, 256, 128, 512, 1024)", "constexpr int BLOCK = %s;  // direction %s"
                      % (m.group(2), m.group(1)))
print("```cuda\n" + kernel + "```")
