"""`python -m kernelpro_torch.worker`: the KernelBench worker.

It speaks kp-worker's protocol (src/verdict/protocol.h): one JSON request per line on fd 3, one
JSON reply per line on fd 4; stdout and stderr belong to the candidates. Requests:
  {"op":"hello"}     -> {"ok":true,"device":{...},"protocol":1,"torch_version":"..."} or {"ok":false,"error":...}
                        (with "prewarm_profiler": {"metrics":[..],"rangeprof_library":path}, the stage-1
                        Range Profiler session is set up after the reply; its seconds go into the next
                        profile reply's phase_seconds["prewarm"])
  {"op":"eval",...}  -> {"ok":true,"id":N,"report":{WorkerReport},"exiting":B}
                        (options.reference_only: the problem's reference timed alone, no candidate loaded)
  {"op":"baseline","id":N,"problem":P,"modes":[...],"warmup":5,"trials":100}
                     -> {"ok":true,"id":N,"hardware":...,"device":"cuda:0","torch_version":...,
                         "results":{"eager":{...},"compile":{...}},"exiting":B}
  {"op":"prewarm","id":N,"problem":P}
                     -> {"ok":B,"id":N,"seconds":S,"error":"...","exiting":B}  (torch.compile once, to
                         warm inductor's on-disk caches for a later "baseline" in another process)
  {"op":"profile",...} -> {"ok":true,"id":N,"profile":{ProfileReply},"exiting":B}  (profile.py)
  {"op":"shutdown"}  -> exits 0
"exiting": the CUDA context is lost; the worker exits right after the reply and the orchestrator
starts a fresh one. `--stdio` serves stdin/stdout instead, for manual debugging; `--once REQ REPLY`
answers the one request in the file REQ into the file REPLY and exits (runs under ncu, or with
libkp_trace.so injected).
"""

import gc
import json
import os
import select
import signal
import sys
import threading

from . import processes

PROTOCOL = 1
ORCHESTRATOR_PID_ENV = "KP_ORCHESTRATOR_PID"  # eval::kOrchestratorPidEnv
WORKER_TOKEN_ENV = "KP_WORKER_TOKEN"  # eval::kWorkerTokenEnv


def kill_tagged(name, value):
    """SIGKILL to every process of this user whose initial environment has name=value, but this
    one (sys::kill_tagged): what a candidate started and moved out of the worker's group (setsid,
    a double fork) still carries the worker's token. Returns how many were signalled."""
    if not value:
        return 0
    needle, me, uid = f"{name}={value}".encode(), os.getpid(), os.getuid()
    signalled = set()
    for _ in range(8):  # a tagged process may fork between the scan and the signal
        found = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if needle in env:
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    continue
                if int(entry) not in signalled:
                    signalled.add(int(entry))
                    found += 1
        if not found:
            break
    return len(signalled)


def _end_group(why):
    sys.stderr.write(f"kernelpro_torch.worker: {why}; exiting with everything it started\n")
    sys.stderr.flush()
    kill_tagged(WORKER_TOKEN_ENV, os.environ.get(WORKER_TOKEN_ENV, ""))
    processes.kill_descendants()  # those that cleared their environment as well as left the group
    if os.getpgrp() == os.getpid():  # the group is ours alone (kernelpro starts workers so)
        os.killpg(0, signal.SIGKILL)
    os._exit(3)


def watch_orchestrator(request_fd):
    """The worker never outlives kernelpro (as kp-worker's worker/orphan_watch.h): a thread ends
    the worker's process group once the request pipe has no writer (POLLHUP), once the process
    named by KP_ORCHESTRATOR_PID has exited (a pidfd), or, without that variable, once the parent
    changed. A worker left behind holds its CUDA context and its GPU memory, and every later
    evaluation on that GPU fails as the candidate's out-of-memory crash. request_fd: None for a
    one-shot worker."""
    parent = os.getppid()
    orchestrator, pidfd = 0, None
    try:
        orchestrator = int(os.environ.get(ORCHESTRATOR_PID_ENV, "0"))
    except ValueError:
        orchestrator = 0
    if orchestrator > 1:
        try:
            pidfd = os.pidfd_open(orchestrator)
        except ProcessLookupError:
            _end_group("kernelpro exited before this worker started")
        except (OSError, AttributeError):
            pidfd = None

    def gone():
        if pidfd is None and orchestrator > 1:
            try:
                os.kill(orchestrator, 0)
            except ProcessLookupError:
                return True
            except OSError:
                return False
            return False
        return pidfd is None and os.getppid() != parent

    def run():
        watch = select.poll()
        if request_fd is not None:
            watch.register(request_fd, 0)  # no events asked: POLLHUP and POLLERR come anyway
        if pidfd is not None:
            watch.register(pidfd, select.POLLIN)  # readable once the process has exited
        while True:
            for fd, _ in watch.poll(250):
                _end_group("kernelpro closed the request pipe" if fd == request_fd else "kernelpro exited")
            if gone():
                _end_group("the process that started this worker exited")

    threading.Thread(target=run, name="kernelpro-orphan-watch", daemon=True).start()


class Channel:
    def __init__(self, stdio=False, once=None):
        self.once = once
        if once:
            self.inp = open(once[0], "r", encoding="utf-8", errors="replace")
            self.out = open(once[1], "w", encoding="utf-8")
        elif stdio:
            self.inp, self.out = sys.stdin, sys.stdout
        else:
            try:
                self.inp = os.fdopen(3, "r", encoding="utf-8", errors="replace")
                self.out = os.fdopen(4, "w", encoding="utf-8")
            except OSError:
                sys.stderr.write("kernelpro_torch.worker: fds 3 and 4 must be open (the kernelpro orchestrator starts "
                                 "this program); use --stdio to talk to it by hand\n")
                raise SystemExit(2)

    def requests(self):
        for line in self.inp:
            yield line

    def reply(self, obj):
        self.reply_text(json.dumps(obj, default=_jsonable))

    def reply_text(self, line):
        """One reply line, already JSON (the judge core's report is written as it wrote it)."""
        sys.stdout.flush()
        sys.stderr.flush()
        self.out.write(line + "\n")
        self.out.flush()


def _jsonable(x):
    if isinstance(x, float):
        return x
    try:
        return float(x)
    except Exception:
        return str(x)


def _sanitize(obj):
    """JSON has no NaN or Infinity: such numbers become null-free finite stand-ins or strings."""
    if isinstance(obj, float):
        if obj != obj:
            return 0.0
        if obj in (float("inf"), float("-inf")):
            return 1e308 if obj > 0 else -1e308
        return obj
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_sanitize(v) for v in obj]
    return obj


def eval_request_error(req):
    """Why an "eval" request cannot be served ("" when it can): it needs the problem
    ("reference"), a candidate unless options.reference_only (which times the problem's
    reference alone and ignores any candidate), and options, when given, as an object."""
    options = req.get("options")
    if options is not None and not isinstance(options, dict):
        return "eval request whose \"options\" is not an object"
    needed = ("reference",) if (options or {}).get("reference_only") else ("reference", "candidate")
    missing = [k for k in needed if not req.get(k)]
    if missing:
        return f"eval request without {', '.join(missing)}"
    return ""


def main(argv):
    once = None
    if "--once" in argv:
        i = argv.index("--once")
        if len(argv) < i + 3:
            sys.stderr.write("usage: python -m kernelpro_torch.worker --once REQUEST.json REPLY.json\n")
            return 2
        once = (argv[i + 1], argv[i + 2])
    chan = Channel(stdio="--stdio" in argv, once=once)
    processes.become_subreaper()  # a candidate's orphans stay below this process (processes.py)
    watch_orchestrator(None if once else chan.inp.fileno())
    dev = None
    dev_error = None
    dev_busy = False  # the device exists but is held (exclusive-process mode): the machine's, retried
    torch_version = ""
    prewarm_seconds = None  # reported once, in the next profile reply

    def ensure_device():
        nonlocal dev, dev_error, dev_busy, torch_version
        if dev is not None or dev_error is not None:
            return
        try:
            import torch

            torch_version = torch.__version__
            from . import device, evaluate  # noqa: F401 - the harness imported before any candidate

            dev = device.Device()
        except ImportError as e:
            dev_error = (f"PyTorch is not importable by {sys.executable} ({e}); KernelBench problems need torch: "
                         "pip install torch, or point --python / KERNELPRO_PYTHON at an interpreter that has it")
        except Exception as e:
            dev_error = str(e)
            # cudaErrorDevicesUnavailable, as torch words it
            dev_busy = "busy or unavailable" in dev_error
            if dev_busy:
                dev_error = (f"the GPU is busy ({dev_error.strip()}): another process holds it in exclusive-process "
                             "compute mode, or its compute mode prohibits new contexts (nvidia-smi -q -d COMPUTE); "
                             "the evaluation is the machine's and is tried again")

    for line in chan.requests():
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or "op" not in req:
                raise ValueError
        except ValueError:
            chan.reply({"ok": False, "error": "malformed request: expected a JSON object with \"op\""})
            continue
        op = req["op"]
        if op == "shutdown":
            processes.kill_descendants()
            return 0
        if op == "hello":
            ensure_device()
            if dev is None:
                chan.reply({"ok": False, "error": dev_error, "busy": dev_busy, "protocol": PROTOCOL})
            else:
                chan.reply({"ok": True, "device": dev.info(), "protocol": PROTOCOL, "torch_version": torch_version})
                # After the reply, while the orchestrator builds the candidate: set up the stage-1
                # Range Profiler session. A failure only costs the first profile request its set-up.
                spec = req.get("prewarm_profiler")
                if isinstance(spec, dict) and spec.get("metrics") and spec.get("rangeprof_library"):
                    from . import profile

                    try:
                        prewarm_seconds = profile.prewarm(spec)
                    except Exception as e:  # noqa: BLE001 - reported, and profiling sets it up itself
                        sys.stderr.write(f"kernelpro_torch.worker: prewarming the Range Profiler failed "
                                         f"(profiling will set it up itself): {e}\n")
            continue
        if op not in ("eval", "baseline", "prewarm", "profile"):
            chan.reply({"ok": False, "error": f"unknown op \"{op}\" (hello, eval, baseline, prewarm, profile, shutdown)"})
            continue
        rid = req.get("id", 0)
        if op == "eval":
            error = eval_request_error(req)
            if error:
                chan.reply({"ok": False, "id": rid, "error": error})
                continue
        ensure_device()
        if dev is None:
            chan.reply({"ok": False, "id": rid, "error": dev_error})
            continue
        if op == "eval":
            from . import evaluate

            # A Range Profiler session, prewarmed or left by a profile request, stays through the
            # evaluation, as in kp-worker: on the H200 a held session did not change timing
            # (1.3195 ms without one, 1.3202 ms with one, bench/results/h200-2026-12-03-warm).
            # No automatic collection from here to the reply: the evaluation frees the candidate's
            # objects itself (one gc.collect, after the judge core's verdict), and no finalizer of
            # the candidate's may run between that verdict and the reply that carries it.
            gc.disable()
            try:
                ev = evaluate.Evaluation(dev, req)
                report, exiting = ev.run()
                final = ev.final_json
                if final is not None:  # the judge core's text, written as it is
                    chan.reply_text('{"ok": true, "id": %s, "report": %s, "exiting": %s}'
                                    % (json.dumps(rid), final, "true" if exiting else "false"))
                else:
                    chan.reply(_sanitize({"ok": True, "id": rid, "report": report, "exiting": exiting}))
            finally:
                gc.enable()
        elif op == "profile":
            from . import profile

            reply, exiting = profile.Profile(dev, req).run()
            if prewarm_seconds is not None and isinstance(reply.get("phase_seconds"), dict):
                reply["phase_seconds"]["prewarm"] = prewarm_seconds
                prewarm_seconds = None
            chan.reply(_sanitize({"ok": True, "id": rid, "profile": reply, "exiting": exiting}))
        elif op == "prewarm":
            if not req.get("problem"):
                chan.reply({"ok": False, "id": rid, "error": "prewarm request without \"problem\""})
                continue
            from . import baseline

            seconds, error, exiting = baseline.prewarm(dev, req["problem"], req.get("precision", "fp32"))
            chan.reply({"ok": not error, "id": rid, "seconds": seconds, "error": error, "exiting": exiting})
        else:
            if not req.get("problem"):
                chan.reply({"ok": False, "id": rid, "error": "baseline request without \"problem\""})
                continue
            from . import baseline

            results, exiting = baseline.time_problem(dev, req["problem"], req.get("modes", ["eager", "compile"]),
                                                     int(req.get("warmup", 5)), int(req.get("trials", 100)),
                                                     req.get("precision", "fp32"))
            chan.reply(_sanitize({"ok": True, "id": rid, "hardware": dev.name, "device": "cuda:0",
                                  "torch_version": torch_version, "results": results, "exiting": exiting}))
        if exiting:
            processes.kill_descendants()  # a rejected candidate's processes go with its worker
            return 3
        if once:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
