#!/bin/sh
# A stand-in for a model's command-line client, of the shape of `claude -p`, `codex exec`,
# `gemini -p`, `llm -m MODEL` and `ollama run MODEL`: the prompt on stdin, the reply on stdout.
#   $FAKE_LLM_DIR     each call's prompt is kept there as call-N.txt (N from 1)
#   $FAKE_LLM_SCRIPT  the reply of each call in turn, the last one repeated:
#                     empty   nothing (a client that printed nothing)
#                     prose   an answer in words, no code
#                     cutoff  a code block that stops before its end (a reply cut at its limit)
#                     code    tests/data/llm/gelu_manual/debugger_answer.md (a whole gelu candidate)
dir=${FAKE_LLM_DIR:?FAKE_LLM_DIR names a folder}
n=$(( $(ls "$dir" 2>/dev/null | grep -c '^call-') + 1 ))
cat > "$dir/call-$n.txt"
set -- ${FAKE_LLM_SCRIPT:-code}
mode=""
i=1
for m in "$@"; do mode=$m; [ $i -eq $n ] && break; i=$((i + 1)); done
here=$(cd "$(dirname "$0")" && pwd)
case "$mode" in
  empty) ;;
  prose) echo "I would load four floats at a time and keep the erf in registers." ;;
  cutoff) printf '```cuda\n#include <kernelpro/kp_abi.h>\n__global__ void gelu(const float* x, float* y, long n) {\n  long i = blockIdx.x' ;;
  code) cat "$here/../llm/gelu_manual/debugger_answer.md" ;;
  *) echo "fake llm cli: unknown mode '$mode'" >&2; exit 2 ;;
esac
