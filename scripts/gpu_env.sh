# Sourced by the GPU machine's session scripts (gpu_judge_session.sh, gpu_campaign_round.sh): the
# build carried as gpu-carry/ made usable where it was configured, and the environment its tools
# expect. Run from the repository root there.
# The binaries were configured in /work/main: make that path this checkout.
if [ "$(readlink -f /work/main 2>/dev/null)" != "$PWD" ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; fi
[ -e build ] || ln -sfn "$PWD/gpu-carry/build" build
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/kp-cache} PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
export KP_JUDGE_LIBRARY="$PWD/build/libkp_judge.so"
