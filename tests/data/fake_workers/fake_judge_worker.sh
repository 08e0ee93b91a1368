#!/bin/sh
# A stand-in worker for the judge's tests (src/driver/judge_test.cc): speaks the protocol (fd 3
# in, fd 4 out) and appends one line per request to $FAKE_REQUESTS, "PID OP KIND", KIND being
# "reference" for a reference-only eval, "eval-timing-reference" for an eval that times the
# reference itself, "eval" for one that does not, the number of metrics for a profile, and "-"
# for other ops. A reference alone takes 4 ms a call, the candidate 2 ms (when its path holds
# "fast") or 8 ms. With
# $FAKE_BUSY_EVALS=N and $FAKE_BUSY_COUNT a file, the first N candidate evaluations (over every
# worker started) answer gpu_unavailable, as when another process holds the GPU's memory, and
# the worker exits after the reply, as the real one does. With $FAKE_BUSY_HELLOS=N and
# $FAKE_BUSY_HELLO_COUNT a file, the first N workers answer their hello as a busy GPU does
# (exclusive-process mode held by another process) and exit. With $FAKE_PROFILE_GREW set, a
# profile reply says the Range Profiler session grew from 16 to 64 launches for the call.
log() { [ -n "${FAKE_REQUESTS:-}" ] && echo "$$ $1 $2" >> "$FAKE_REQUESTS"; }
while read -r line <&3; do
  case "$line" in
    *'"op":"hello"'*)
      log hello -
      if [ -n "${FAKE_BUSY_HELLOS:-}" ]; then
        n=$(cat "$FAKE_BUSY_HELLO_COUNT" 2>/dev/null || echo 0)
        if [ "$n" -lt "$FAKE_BUSY_HELLOS" ]; then
          echo $((n + 1)) > "$FAKE_BUSY_HELLO_COUNT"
          echo '{"ok":false,"busy":true,"error":"the GPU is busy (CUDA-capable device(s) is/are busy or unavailable): another process holds it in exclusive-process compute mode","protocol":1}' >&4
          exit 0
        fi
      fi
      echo '{"ok":true,"device":{"name":"Fake GPU","cc_major":9,"cc_minor":0,"sm_count":132,"pci_bus_id":"00000000:01:00.0"},"protocol":1}' >&4 ;;
    *'"op":"shutdown"'*) log shutdown -; exit 0 ;;
    *'"op":"profile"'*)
      # KIND is the number of metrics asked for; past $FAKE_PROFILE_MAX_METRICS the chip refuses.
      n=$(printf '%s' "$line" | grep -o '"metrics":\[[^]]*\]' | grep -o '"[a-z0-9_.]*__[^"]*"' | wc -l)
      log profile "$n"
      if [ -n "${FAKE_PROFILE_MAX_METRICS:-}" ] && [ "$n" -gt "$FAKE_PROFILE_MAX_METRICS" ]; then
        echo '{"ok":false,"id":1,"error":"chip GH100 rejects x__y.sum (unknown name)"}' >&4
        continue
      fi
      # With $FAKE_PROFILE_GREW set, the worker's session grew from 16 to 64 launches for this call.
      grew=''
      [ -n "${FAKE_PROFILE_GREW:-}" ] && grew=',"max_kernels":64,"capacity_grown_from":16'
      echo '{"ok":true,"id":1,"exiting":false,"profile":{"outcome":"ok","mode":"cupti","calls":1,"range_profile":{"passes":1,"ranges":[{"name":"k","values":{"gpu__time_duration.sum":2000000}}],"dropped":0,"replay":"user"'"$grew"'}}}' >&4 ;;
    *'"reference_only":true'*)
      log eval reference
      echo '{"ok":true,"id":1,"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":0,"checks":[],"output_names":[],"reference_seconds":0.004,"reference_timing":{"method":"events","samples_s":[0.004,0.004,0.004],"wall_s":[],"stop":"precise"},"seed":7}}' >&4 ;;
    *'"op":"eval"'*)
      case "$line" in *'"time_reference":true'*) kind=eval-timing-reference ;; *) kind=eval ;; esac
      log eval $kind
      if [ -n "${FAKE_BUSY_EVALS:-}" ]; then
        busy=$(cat "$FAKE_BUSY_COUNT" 2>/dev/null || echo 0)
        if [ "$busy" -lt "$FAKE_BUSY_EVALS" ]; then
          echo $((busy + 1)) > "$FAKE_BUSY_COUNT"
          echo '{"ok":true,"id":1,"exiting":true,"report":{"outcome":"gpu_unavailable","reason":"the candidate ran out of device memory while 70.0 GiB of the GPU are held outside this worker","trials_run":0,"checks":[],"output_names":[],"reference_seconds":0,"seed":7}}' >&4
          exit 0
        fi
      fi
      t=0.008; case "$line" in *fast*) t=0.002 ;; esac
      ref=0; [ $kind = eval-timing-reference ] && ref=0.005
      echo '{"ok":true,"id":1,"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":3,"checks":[],"output_names":["y"],"timing":{"method":"events","samples_s":['$t','$t','$t'],"wall_s":[],"stop":"precise"},"reference_seconds":'$ref',"seed":7}}' >&4 ;;
  esac
done
