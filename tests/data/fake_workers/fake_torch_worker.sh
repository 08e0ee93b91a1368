#!/bin/sh
# A stand-in for the Python worker (`python -m kernelpro_torch.worker`) on machines without a
# GPU or PyTorch. Tests pass this script as --python, so it is started as
# `fake_torch_worker.sh -m kernelpro_torch.worker`; it speaks the protocol on fds 3 and 4.
#   hello     {"ok":true,...} unless $FAKE_MODE is no_gpu ({"ok":false} as without torch/GPU);
#             {"ok":false} naming the problem when its arguments or PYTHONPATH are not those
#             of the Python worker
#   baseline  a problem whose path contains "crash" kills the worker (SIGSEGV); "hang" never
#             answers; "compile_fails"
#             gets eager ok and compile ok:false; any other gets both modes ok (eager 2 ms,
#             compile 1 ms). Every baseline request appends its line to $FAKE_LOG and first
#             sleeps $FAKE_SLEEP seconds when that is set.
#   prewarm   logged to $FAKE_LOG; "crash" kills the worker, "compile_fails" answers ok:false,
#             any other ok
#   eval      an ok report with timing, a traced kernel and a physics floor; a reference-only
#             request (the judge timing the problem's Model alone) the reference's 2 ms; the
#             request line is appended to $FAKE_LOG.
[ -n "${FAKE_STARTS:-}" ] && echo start >> "$FAKE_STARTS"
bad=""
[ "$1 $2" = "-m kernelpro_torch.worker" ] || bad="started with arguments '$*', not '-m kernelpro_torch.worker'"
case "${PYTHONPATH:-}" in */python|*/python:*) ;; *) bad="PYTHONPATH '${PYTHONPATH:-}' does not start with the source tree's python/" ;; esac
while read -r line <&3; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"hello"'*)
      if [ -n "$bad" ]; then
        echo '{"ok":false,"error":"fake torch worker: '"$bad"'"}' >&4
      elif [ "${FAKE_MODE:-}" = no_gpu ]; then
        echo '{"ok":false,"error":"torch.cuda.is_available() is False: fake machine without a GPU"}' >&4
      else
        echo '{"ok":true,"device":{"name":"Fake H200","cc_major":9,"cc_minor":0,"sm_count":132},"torch_version":"2.11.0","protocol":1}' >&4
      fi ;;
    *'"op":"shutdown"'*) exit 0 ;;
    *'"op":"baseline"'*)
      [ -n "${FAKE_LOG:-}" ] && printf '%s\n' "$line" >> "$FAKE_LOG"
      [ -n "${FAKE_SLEEP:-}" ] && sleep "$FAKE_SLEEP"
      head='"ok":true,"id":'"$id"',"hardware":"Fake H200","device":"cuda:0","torch_version":"2.11.0","exiting":false'
      eager='"eager":{"ok":true,"mean_ms":2.00049,"std_ms":0.0123456,"min_ms":1.98,"max_ms":2.1,"median_ms":2.0,"num_trials":100,"warmup_s":0.5}'
      case "$line" in
        *crash*) echo "fake torch worker: segfault in the problem" >&2; kill -SEGV $$ ;;
        *hang*) sleep 1000 ;;
        *compile_fails*)
          echo '{'"$head"',"results":{'"$eager"',"compile":{"ok":false,"error":"torch._dynamo.exc.Unsupported: fake"}}}' >&4 ;;
        *)
          echo '{'"$head"',"results":{'"$eager"',"compile":{"ok":true,"mean_ms":1.0,"std_ms":0.01,"min_ms":0.99,"max_ms":1.1,"median_ms":1.0,"num_trials":100,"warmup_s":12.5}}}' >&4 ;;
      esac ;;
    *'"op":"prewarm"'*)
      [ -n "${FAKE_LOG:-}" ] && printf '%s\n' "$line" >> "$FAKE_LOG"
      case "$line" in
        *crash*) kill -SEGV $$ ;;
        *compile_fails*) echo '{"ok":false,"id":'"$id"',"seconds":0.1,"error":"torch._dynamo.exc.Unsupported: fake","exiting":false}' >&4 ;;
        *) echo '{"ok":true,"id":'"$id"',"seconds":3.5,"error":"","exiting":false}' >&4 ;;
      esac ;;
    *'"reference_only":true'*)
      [ -n "${FAKE_LOG:-}" ] && printf '%s\n' "$line" >> "$FAKE_LOG"
      echo '{"ok":true,"id":'"$id"',"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":0,"checks":[],"output_names":[],"reference_seconds":0.002,"reference_timing":{"method":"events","samples_s":[0.002,0.002,0.002],"wall_s":[],"stop":"precise"},"seed":7}}' >&4 ;;
    *'"op":"eval"'*)
      [ -n "${FAKE_LOG:-}" ] && printf '%s\n' "$line" >> "$FAKE_LOG"
      echo "candidate says hi" >&2
      echo '{"ok":true,"id":'"$id"',"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":5,"checks":[],"output_names":[],"timing":{"method":"events","samples_s":[0.001,0.001,0.001],"wall_s":[]},"reference_seconds":0.002,"seed":7,"cheat":"","physics_floor_s":0.0001,"physics_floor_basis":"64 MiB over 4.0 TB/s","kernels":["softmax_kernel(float const*, float*, int)"]}}' >&4 ;;
  esac
done
