"""What a worker finds of the processes it started (kernelpro_torch/processes.py): no torch needed."""

import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kernelpro_torch import processes  # noqa: E402

# A child that escapes as a candidate would: a double fork, setsid, an empty environment. It
# prints the escaped process's pid and exits, leaving that process to whoever reaps orphans.
ESCAPE = r"""
import os, sys
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid != 0:
        os.write(w, str(pid).encode()); os._exit(0)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execve("/bin/sleep", ["sleep", "60"], {})
os.wait()
print(os.read(r, 32).decode(), flush=True)
"""


def alive(pid):
    st = processes._stat(pid)
    return st is not None and st[1] != "Z"


class DescendantsTest(unittest.TestCase):
    def test_a_process_that_left_by_double_fork_setsid_and_a_cleared_environment_is_found_and_killed(self):
        self.assertTrue(processes.become_subreaper(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        before = set(processes.live_descendants())
        out = subprocess.run([sys.executable, "-c", ESCAPE], capture_output=True, text=True, env={}, timeout=30)
        escaped = int(out.stdout.strip())
        try:
            self.assertTrue(alive(escaped))
            with open(f"/proc/{escaped}/environ", "rb") as f:
                self.assertEqual(f.read(), b"", "the escaped process should carry no environment, no token")
            found = processes.live_descendants()
            self.assertIn(escaped, set(found) - before, "the orphan was not re-parented to this subreaper")
            self.assertEqual(found[escaped], "sleep")
            self.assertIn(f"pid {escaped} (sleep)", processes.describe(found))
            self.assertGreaterEqual(processes.kill_descendants(), 1)
            deadline = time.time() + 5
            while alive(escaped) and time.time() < deadline:
                time.sleep(0.02)
            self.assertFalse(alive(escaped), "kill_descendants left it running")
            self.assertNotIn(escaped, processes.live_descendants(), "a zombie counted as a live process")
        finally:
            try:
                os.kill(escaped, 9)
            except OSError:
                pass
            try:
                os.waitpid(escaped, 0)  # ours to reap, as its subreaper
            except ChildProcessError:
                pass

    def test_a_command_name_with_spaces_and_parentheses_is_read_whole(self):
        named = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(15, b'a (b) c', 0, 0, 0); "
                 "print('ready', flush=True); time.sleep(30)")  # PR_SET_NAME
        p = subprocess.Popen([sys.executable, "-c", named], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "ready")
            ppid, state, name = processes._stat(p.pid)
            self.assertEqual((ppid, name), (os.getpid(), "a (b) c"))
            self.assertEqual(processes.live_descendants().get(p.pid), "a (b) c")
        finally:
            p.kill()
            p.wait()
            p.stdout.close()


if __name__ == "__main__":
    unittest.main()
