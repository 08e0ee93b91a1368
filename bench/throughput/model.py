"""The scripted model of bench/throughput.sh (the `command` provider: the prompt on stdin, the
answer on stdout): the planner always chooses float4 loads, the coder always answers the float4
GELU of gelu_float4.md. So the model loop's row measures kernelpro's evaluation and analysis of
one candidate, not a model."""
import os
import sys

prompt = sys.stdin.read()
here = os.path.dirname(os.path.abspath(__file__))
if "Choose the next optimisation" in prompt:
    print('{"direction": "float4 loads and stores in a grid-stride loop", "actions": ["vectorize_loads"], '
          '"why": "memory-bound"}')
else:
    with open(os.path.join(here, "gelu_float4.md")) as f:
        print(f.read())
