// A worker never outlives kernelpro. A worker holds a CUDA context and, for KernelBench, tens of
// GiB of device memory; one left behind makes every later evaluation on that GPU fail as the
// candidate's own out-of-memory crash. Workers run in process groups of their own, so a signal
// to kernelpro's group does not reach them, and SIGKILL gives kernelpro no chance to stop them.
//
// The watch is a thread that ends the worker's process group (the worker and whatever it
// started) as soon as one of these says kernelpro is gone:
//   - the request pipe has no writer left (POLLHUP): kernelpro's end closes when it exits, by
//     any signal, or when it lets the worker go;
//   - the process named by KP_ORCHESTRATOR_PID (eval::kOrchestratorPidEnv) has exited, watched
//     through a pidfd: this covers one-shot workers, whose parent may be ncu;
//   - without that variable, the parent changed (the worker was reparented).
// PR_SET_PDEATHSIG is not used: it fires when the *thread* that forked the worker ends, and
// kernelpro starts workers from its pipeline's threads.
#pragma once

namespace kp::worker {

// Starts the watch. `request_fd`: the pipe requests arrive on, or -1 (one-shot workers).
void watch_orchestrator(int request_fd);

}  // namespace kp::worker
