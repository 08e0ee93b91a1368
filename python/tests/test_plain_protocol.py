"""The worker's protocol, spoken to a real worker process over fds 3 and 4."""

import json
import os
import subprocess
import sys
import unittest

PYDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Worker:
    def __init__(self, extra_env=None):
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        # The child must see the pipes as fds 3 and 4, like kp-worker.
        def setup():
            a, b = os.dup(req_r), os.dup(rep_w)  # the pipes may themselves be fds 3 or 4
            os.dup2(a, 3)
            os.dup2(b, 4)
        env = dict(os.environ, PYTHONPATH=PYDIR + os.pathsep + os.environ.get("PYTHONPATH", ""), **(extra_env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "kernelpro_torch.worker"], preexec_fn=setup, close_fds=False,
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(req_r)
        os.close(rep_w)
        self.out = os.fdopen(self.rep_r, "r")
        self.inp = os.fdopen(self.req_w, "w")

    def ask(self, line):
        self.inp.write(line + "\n")
        self.inp.flush()
        return json.loads(self.out.readline())

    def close(self):
        try:
            self.inp.write('{"op":"shutdown"}\n')
            self.inp.flush()
        except BrokenPipeError:
            pass
        rc = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.out.close()
        return rc


class ProtocolTest(unittest.TestCase):
    def setUp(self):
        self.w = Worker()

    def tearDown(self):
        if self.w.proc.poll() is None:
            self.w.close()

    def test_malformed_requests_get_an_error_and_the_worker_stays_up(self):
        r = self.w.ask("this is not json")
        self.assertFalse(r["ok"])
        self.assertIn("malformed", r["error"])
        r = self.w.ask('{"no_op": 1}')
        self.assertFalse(r["ok"])
        r = self.w.ask('{"op": "dance"}')
        self.assertFalse(r["ok"])
        self.assertIn("unknown op", r["error"])
        self.assertIn("hello", r["error"])

    def test_hello_reports_the_device_or_says_why_not(self):
        r = self.w.ask('{"op":"hello"}')
        self.assertEqual(r["protocol"], 1)
        try:
            import torch
            have_gpu = torch.cuda.is_available()
        except ImportError:
            torch, have_gpu = None, False
        if torch is None:
            self.assertFalse(r["ok"])
            self.assertIn("PyTorch is not importable", r["error"])
        elif not have_gpu:
            self.assertFalse(r["ok"])
            self.assertIn("no CUDA device", r["error"])
        else:
            self.assertTrue(r["ok"], r)
            self.assertTrue(r["device"]["name"])
            self.assertGreater(r["device"]["dram_bytes_per_s"], 1e11)

    def test_eval_without_a_device_or_fields_is_an_error_reply(self):
        r = self.w.ask('{"op":"eval","id":7}')
        self.assertFalse(r["ok"])
        self.assertEqual(r["id"], 7)

    def test_a_reference_only_eval_needs_no_candidate(self):
        r = self.w.ask('{"op":"eval","id":8,"reference":"/nonexistent/p.py"}')
        self.assertFalse(r["ok"])
        self.assertIn("without candidate", r["error"])
        r = self.w.ask('{"op":"eval","id":9,"reference":"/nonexistent/p.py","candidate":"",'
                       '"options":{"reference_only":true}}')
        self.assertEqual(r["id"], 9)
        if r["ok"]:  # a GPU machine: the problem file is missing, which the report says
            self.assertEqual(r["report"]["outcome"], "runtime_error")
            self.assertTrue(r["report"]["reference_failed"])
        else:  # no device here: the request itself was fine
            self.assertNotIn("without", r["error"])

    def test_shutdown_exits_zero(self):
        self.assertEqual(self.w.close(), 0)


class OrphanTest(unittest.TestCase):
    """The worker never outlives kernelpro, nor does what its candidates started (issue 28, item 6)."""

    def test_an_orphaned_worker_ends_what_left_its_group_by_the_token(self):
        import signal
        import time
        token = os.urandom(16).hex()
        kernelpro = subprocess.Popen(["sleep", "60"])  # stands in for the orchestrator
        w = Worker({"KP_WORKER_TOKEN": token, "KP_ORCHESTRATOR_PID": str(kernelpro.pid)})
        self.assertTrue(w.ask('{"op":"hello"}') is not None)
        # What a candidate would leave: a process in a session of its own, with the worker's token.
        daemon = subprocess.Popen(["sleep", "60"], start_new_session=True, env=dict(os.environ, KP_WORKER_TOKEN=token))
        bystander = subprocess.Popen(["sleep", "60"], start_new_session=True,
                                     env=dict(os.environ, KP_WORKER_TOKEN=os.urandom(16).hex()))
        try:
            kernelpro.kill()
            kernelpro.wait()
            self.assertEqual(w.proc.wait(timeout=10), 3)  # the orphan watch's exit status
            self.assertEqual(daemon.wait(timeout=5), -signal.SIGKILL)
            time.sleep(0.1)
            self.assertIsNone(bystander.poll(), "a process with another token was killed")
        finally:
            for p in (daemon, bystander):
                p.kill()
                p.wait()
            w.proc.stdout.close()
            w.proc.stderr.close()


class EvalRequestTest(unittest.TestCase):
    """Which eval requests the worker refuses before it touches the device."""

    def test_fields_an_eval_needs(self):
        sys.path.insert(0, PYDIR)
        from kernelpro_torch.worker import eval_request_error

        self.assertEqual(eval_request_error({"op": "eval", "reference": "p.py", "candidate": "c.py"}), "")
        self.assertIn("reference, candidate", eval_request_error({"op": "eval"}))
        self.assertIn("candidate", eval_request_error({"op": "eval", "reference": "p.py", "candidate": ""}))
        # reference_only times the problem's reference alone: any candidate field is ignored.
        only = {"op": "eval", "reference": "p.py", "options": {"reference_only": True}}
        self.assertEqual(eval_request_error(only), "")
        self.assertEqual(eval_request_error(dict(only, candidate="")), "")
        self.assertIn("reference", eval_request_error({"op": "eval", "options": {"reference_only": True}}))
        self.assertIn("reference, candidate",
                      eval_request_error({"op": "eval", "options": {"reference_only": False}}))
        self.assertIn("options", eval_request_error({"op": "eval", "reference": "p.py", "candidate": "c.py",
                                                     "options": [1]}))


if __name__ == "__main__":
    unittest.main()


class OnceTest(unittest.TestCase):
    """`--once REQ REPLY`: one request from a file, its reply into a file (runs under ncu or with
    libkp_trace.so injected)."""

    def run_once(self, request_text):
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            req, rep = os.path.join(d, "req.json"), os.path.join(d, "reply.json")
            with open(req, "w") as f:
                f.write(request_text)
            env = dict(os.environ, PYTHONPATH=PYDIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
            p = subprocess.run([sys.executable, "-m", "kernelpro_torch.worker", "--once", req, rep], env=env,
                               capture_output=True, timeout=120)
            with open(rep) as f:
                return p.returncode, json.loads(f.readline())

    def test_a_malformed_request_file_gets_an_error_reply(self):
        rc, reply = self.run_once("not json")
        self.assertEqual(rc, 0)
        self.assertFalse(reply["ok"])
        self.assertIn("malformed", reply["error"])

    def test_an_unknown_op_is_named(self):
        rc, reply = self.run_once('{"op":"frobnicate"}')
        self.assertFalse(reply["ok"])
        self.assertIn("profile", reply["error"])  # the list of ops it knows

    def test_a_profile_request_without_a_device_says_why(self):
        rc, reply = self.run_once('{"op":"profile","id":7,"reference":"/nonexistent/p.py","candidate":"/x.py",'
                                  '"profile":{"mode":"cupti","metrics":["gpu__time_duration.sum"]}}')
        if reply.get("ok"):
            self.skipTest("this machine has a GPU and torch: the GPU tests cover the profile op")
        self.assertEqual(reply.get("id"), 7)
        self.assertTrue(reply["error"])
