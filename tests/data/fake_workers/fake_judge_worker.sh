#!/bin/sh
# A stand-in worker for the judge's tests (src/driver/judge_test.cc): speaks the protocol (fd 3
# in, fd 4 out) and appends one line per request to $FAKE_REQUESTS, "PID OP KIND", KIND being
# "reference" for a reference-only eval, "eval-timing-reference" for an eval that times the
# reference itself, "eval" for one that does not, and "-" for other ops. A reference alone
# takes 4 ms a call, the candidate 2 ms (when its path holds "fast") or 8 ms.
log() { [ -n "${FAKE_REQUESTS:-}" ] && echo "$$ $1 $2" >> "$FAKE_REQUESTS"; }
while read -r line <&3; do
  case "$line" in
    *'"op":"hello"'*)
      log hello -
      echo '{"ok":true,"device":{"name":"Fake GPU","cc_major":9,"cc_minor":0,"sm_count":132,"pci_bus_id":"00000000:01:00.0"},"protocol":1}' >&4 ;;
    *'"op":"shutdown"'*) log shutdown -; exit 0 ;;
    *'"op":"profile"'*)
      log profile -
      echo '{"ok":true,"id":1,"exiting":false,"profile":{"outcome":"ok","mode":"cupti","calls":1,"range_profile":{"passes":1,"ranges":[{"name":"k","values":{"gpu__time_duration.sum":2000000}}],"dropped":0,"replay":"user"}}}' >&4 ;;
    *'"reference_only":true'*)
      log eval reference
      echo '{"ok":true,"id":1,"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":0,"checks":[],"output_names":[],"reference_seconds":0.004,"reference_timing":{"method":"events","samples_s":[0.004,0.004,0.004],"wall_s":[],"stop":"precise"},"seed":7}}' >&4 ;;
    *'"op":"eval"'*)
      case "$line" in *'"time_reference":true'*) kind=eval-timing-reference ;; *) kind=eval ;; esac
      log eval $kind
      t=0.008; case "$line" in *fast*) t=0.002 ;; esac
      ref=0; [ $kind = eval-timing-reference ] && ref=0.005
      echo '{"ok":true,"id":1,"exiting":false,"report":{"outcome":"ok","reason":"","trials_run":3,"checks":[],"output_names":["y"],"timing":{"method":"events","samples_s":['$t','$t','$t'],"wall_s":[],"stop":"precise"},"reference_seconds":'$ref',"seed":7}}' >&4 ;;
  esac
done
