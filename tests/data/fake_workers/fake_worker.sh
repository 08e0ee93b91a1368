#!/bin/sh
# A stand-in for kp-worker on machines without a GPU: speaks the worker protocol (requests on
# fd 3, replies on fd 4) and misbehaves on purpose, as $FAKE_MODE says, so the orchestrator's
# handling of crashes, hangs and protocol breaches is tested on a CPU.
#   ok        hello, then an "ok" report for every eval
#   no_gpu    hello answers {"ok":false} like a machine without a GPU
#   busy      hello answers {"ok":false,"busy":true} like a GPU held in exclusive-process mode
#   segv      hello, then dies by SIGSEGV on the first eval
#   hang      hello, then never answers an eval (after naming its phase, "timing", in the file
#             kernelpro names in $KP_PHASE_FILE, as both workers do)
#   garbage   hello, then answers an eval with a line that is not JSON
#   poisoned  hello, then answers one eval and exits 3, as after a lost CUDA context
#   child     as ok, and at its hello starts a child that outlives it (a process a candidate
#             left running), its pid written to $FAKE_CHILD
#   escaped   as child, but the child leaves the worker's group and session first (setsid):
#             only the token it inherited ($KP_WORKER_TOKEN) still finds it
#   broken    exits 1 before its hello, as a worker that cannot start (a bad build, a missing
#             library): that is a broken tool, not a machine without a GPU
# Every start appends a line to $FAKE_STARTS, so tests can count restarts; with $FAKE_HELLO set,
# the hello request is written there, so tests can read what the orchestrator asked for.
[ -n "${FAKE_STARTS:-}" ] && echo start >> "$FAKE_STARTS"
echo "fake worker stdout" 
if [ "${FAKE_MODE:-}" = broken ]; then echo "fake worker: cannot start" >&2; exit 1; fi
while read -r line <&3; do
  case "$line" in
    *'"op":"hello"'*)
      [ -n "${FAKE_HELLO:-}" ] && printf '%s\n' "$line" > "$FAKE_HELLO"
      if [ "$FAKE_MODE" = child ]; then sleep 1000 3<&- 4>&- & echo $! > "$FAKE_CHILD"; fi
      if [ "$FAKE_MODE" = escaped ]; then
        setsid sh -c 'sleep 1000 & echo $! > "$FAKE_CHILD"' 3<&- 4>&- < /dev/null > /dev/null 2>&1 &
      fi
      if [ "$FAKE_MODE" = no_gpu ]; then
        echo '{"ok":false,"error":"no CUDA device: fake machine without a GPU"}' >&4
      elif [ "$FAKE_MODE" = busy ]; then
        echo '{"ok":false,"busy":true,"error":"the GPU is busy: fake exclusive-process GPU"}' >&4
      else
        echo '{"ok":true,"device":{"name":"Fake GPU","cc_major":9,"cc_minor":0,"sm_count":132},"protocol":1}' >&4
      fi ;;
    *'"op":"shutdown"'*) exit 0 ;;
    *'"op":"eval"'*)
      echo "candidate says hi" >&2
      case "$FAKE_MODE" in
        segv) kill -SEGV $$ ;;
        hang) [ -n "${KP_PHASE_FILE:-}" ] && printf timing > "$KP_PHASE_FILE"; sleep 1000 ;;
        garbage) echo 'this is not json' >&4 ;;
        *)
          exiting=false; [ "$FAKE_MODE" = poisoned ] && exiting=true
          echo '{"ok":true,"id":1,"exiting":'$exiting',"report":{"outcome":"ok","reason":"","trials_run":3,"checks":[],"output_names":["y"],"timing":{"method":"events","samples_s":[0.001,0.002,0.003],"wall_s":[]},"reference_seconds":0.004,"seed":7}}' >&4
          if [ "$FAKE_MODE" = poisoned ]; then sleep 0.2; exit 3; fi ;;
      esac ;;
  esac
done
