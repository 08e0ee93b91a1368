#!/bin/sh
# A stand-in for `kernelpro optimize TASK --run-dir DIR --json [...]` in the campaign's tests
# (src/campaign/campaign_test.cc): no nvcc, no GPU. It appends "TASK|CUDA_VISIBLE_DEVICES|ARGS" to
# $FAKE_LOG, creates DIR/store.db (an empty file: a later run must pass --resume), and acts by the
# task folder's name:
#   *fails*   exits 4 with a message on stderr, as a broken tool
#   *nogpu*   exits 3 with {"stopped":"no_gpu"}, as on a machine without a GPU
#   *busy*    exits 3 with {"stopped":"gpu_unavailable"}, as when another process holds the GPU
#   *manual*  exits 5 with {"stopped":"pending"}, as when a manual prompt waits for its answer
#   *slow*    waits for SIGINT (up to 30 s), then prints {"stopped":"interrupted"} and exits 0;
#             with $FAKE_IGNORE_INT set it ignores SIGINT
#   *starting* waits (up to 30 s) with no handler, so SIGINT ends it, as it does an optimize
#             still setting up (its judge, its worker) before its own handler is in place
#   other     prints {"stopped":"budget","speedup_vs_reference":1.5,"nodes":3} and exits 0
task=$2
run=$4
[ "$1" = optimize ] || { echo "fake kernelpro: not an optimize call: $*" >&2; exit 2; }
[ -n "${FAKE_LOG:-}" ] && echo "$(basename "$task")|${CUDA_VISIBLE_DEVICES-unset}|$*" >> "$FAKE_LOG"
mkdir -p "$run" && touch "$run/store.db"
case "$(basename "$task")" in
  *fails*) echo "fake kernelpro: internal error: boom" >&2; exit 4 ;;
  *nogpu*) echo '{"stopped":"no_gpu","nodes":1}'; exit 3 ;;
  *busy*) echo '{"stopped":"gpu_unavailable","nodes":0}'; exit 3 ;;
  *manual*) echo '{"stopped":"pending","nodes":1}'; exit 5 ;;
  *slow*)
    if [ -n "${FAKE_IGNORE_INT:-}" ]; then trap '' INT
    else trap 'echo "{\"stopped\":\"interrupted\",\"nodes\":1}"; exit 0' INT; fi
    i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    echo '{"stopped":"budget","nodes":1}'; exit 0 ;;
  *starting*) exec sleep 30 ;;
  *) echo '{"stopped":"budget","speedup_vs_reference":1.5,"nodes":3}'; exit 0 ;;
esac
