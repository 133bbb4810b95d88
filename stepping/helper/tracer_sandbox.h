// What the tracer process may still do once it has seized its target: the emulator interprets
// whatever code the target runs, so a flaw in it must not hand the target's author the
// tracer's rights. After the attach, the tracer sets no_new_privs and installs a seccomp
// allowlist (libseccomp) of the calls a burst tracer makes: ptrace and waits on its tracees,
// reads of their memory and of /proc, its pipes, its timers, memory for its own heap. What it
// never needs is refused: exec, new processes, sockets, files opened for writing (but the
// target's memory in the breakpoint modes, which write int3 bytes into its text). A call the
// list does not name fails with EPERM; exec, fork and sockets kill the tracer outright, so an
// exploit that reaches them ends the session (the collector reports the tracer's death)
// instead of running.
#pragma once

#include <string>

namespace pathprof::stepping {

struct TracerSandboxOptions {
  // Opening files for writing (not creating them): the breakpoint modes open the target's
  // memory read-write to place int3 bytes.
  bool allow_text_writes = false;
};

// Enters the sandbox for the rest of this process's life. Empty on success, else what failed
// (the tracer then runs without it and says so).
std::string EnterTracerSandbox(const TracerSandboxOptions& options);

}  // namespace pathprof::stepping
