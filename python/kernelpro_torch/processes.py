"""The processes a worker started, wherever they went (issue 28, item 4).

A candidate can start a process that runs beside the reference's timing, or beside later
candidates, and move it out of reach: setsid leaves the worker's process group, a double fork
leaves its children, a cleared environment drops the worker's token (worker.kill_tagged). The
worker makes itself a child subreaper, so that every orphan among its descendants is re-parented
to it rather than to init, and the /proc parent links then reach all of them. Linux only; plain
Python, no torch.
"""

import ctypes
import os
import signal

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_subreaper():
    """Orphaned descendants are re-parented to this process. False where prctl is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid):
    """(parent pid, state letter, command name) from /proc/PID/stat, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    # "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; it ends at the last ')'.
    close = text.rfind(")")
    fields = text[close + 2:].split()
    if close < 0 or len(fields) < 2:
        return None
    return int(fields[1]), fields[0], text[text.find("(") + 1:close]


def live_descendants(root=None):
    """{pid: command name} of the processes below `root` (this one by default) that still run:
    zombies, which hold no GPU and run nothing, are left out."""
    root = os.getpid() if root is None else root
    children = {}
    names = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        st = _stat(entry)
        if st is None:
            continue
        ppid, state, comm = st
        children.setdefault(ppid, []).append(int(entry))
        if state != "Z":
            names[int(entry)] = comm
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in found or pid == root:
            continue
        if pid in names:
            found[pid] = names[pid]
        else:
            found.setdefault(pid, None)  # a zombie still parents what it left
        todo.extend(children.get(pid, []))
    return {pid: name for pid, name in found.items() if name is not None}


def kill_descendants(root=None):
    """SIGKILL to every live descendant, repeated while new ones appear (one may fork between the
    scan and the signal). Returns how many were signalled."""
    signalled = set()
    for _ in range(8):
        fresh = [pid for pid in live_descendants(root) if pid not in signalled]
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            signalled.add(pid)
    return len(signalled)


def describe(procs):
    """"pid 123 (sleep), pid 456 (python3)" for a reason."""
    return ", ".join(f"pid {pid} ({name})" for pid, name in sorted(procs.items())[:6]) + (
        f" and {len(procs) - 6} more" if len(procs) > 6 else "")


def stop_new(before, during):
    """A process the candidate started and left running (however far it moved: setsid, a double
    fork, a cleared environment) can load the GPU while the reference or a later candidate is
    timed: each one not in `before` is killed, and the evaluation stops (background_process). The
    worker exits after this verdict."""
    from .harness import Stop

    new = {pid: name for pid, name in live_descendants().items() if pid not in before}
    if new:
        for pid in new:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        raise Stop("rejected", f"the candidate left {len(new)} process(es) running after {during}: {describe(new)}; "
                               "work outside the worker's process escapes the timing and can slow the reference or "
                               "other candidates", cheat="background_process")
