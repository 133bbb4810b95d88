// What a helper process may still do once it interprets or parses bytes somebody else chose. The
// helpers that interpret a profiled program's instructions run sandboxed: pathprof-tracer once
// it has seized its target (stepping/), pathprof-emulator (collectors/) from its start, fed
// snapshot records and handed the files it reads as descriptors; so does pathprof-import
// (pipeline/), which parses the recordings the daemon imports and the binaries they name, and
// pathprof-symbolizer (pipeline/), which reads the symbols, DWARF and CFI of profiled binaries. A
// flaw in the emulator or a parser must not hand a file's author the helper's rights, so each
// helper
//   - drops to an unprivileged identity where it ran as root (DropIdentity: no groups, no
//     capabilities; the caller chooses the uid: a confined session's requester, else nobody
//     for the emulator; an admin's tracer keeps root's uid, which seizing needs, but not the
//     calls below),
//   - sets no_new_privs and installs a seccomp allowlist (libseccomp) of the calls its role
//     makes. A call the list does not name fails with EPERM; exec, new processes, sockets,
//     uid changes and kill end the helper outright, so an exploit that reaches them ends the
//     session's windows (the collector reports the helper's death) instead of running.
#pragma once

#include <sys/types.h>

#include <string>

namespace pathprof::stepping {

enum class SandboxRole {
  // pathprof-tracer after its attach: ptrace and waits on its tracees, reads of their memory
  // and of /proc (read-only opens), its pipes, timers, signals, threads.
  kTracer,
  // pathprof-emulator: its one socket (messages and the descriptors they carry), reads of the
  // descriptors it was handed, its heap and clocks. It opens nothing, traces nothing, starts no
  // thread.
  kEmulator,
  // pathprof-import (pipeline/): reads the recording it was handed as a descriptor and the
  // binaries the recording names (read-only opens, stat, directory listings for a binary
  // directory's index), writes frames to its pipe. Traces nothing, starts no thread.
  kImporter,
  // pathprof-symbolizer (pipeline/): reads the images and debug files it was handed as
  // descriptors on its one socket (libdw: symbols, source lines, CFI), and read-only opens of
  // the DWARF supplements a debug file names. Traces nothing, starts no thread.
  kSymbolizer,
};

struct SandboxPolicy {
  SandboxRole role = SandboxRole::kTracer;
  // kTracer only: opening files read-write (never creating them): the breakpoint modes open the
  // target's memory read-write to place int3 bytes.
  bool allow_text_writes = false;
};

// Enters the sandbox for the rest of this process's life. Empty on success, else what failed.
std::string EnterHelperSandbox(const SandboxPolicy& policy);

// Becomes uid:gid for good: no supplementary groups, no capabilities (a uid change from 0 clears
// them; from a daemon that holds them as another user they are dropped explicitly), no way to
// regain privileges through exec. Checks its own /proc status afterwards. Empty on success,
// else what failed (the caller must then not go on).
std::string DropIdentity(uid_t uid, gid_t gid);

// Whether this process holds privilege a helper must not inherit: root's uid, or any permitted
// capability (the packaged daemon runs as `pathprof` with ambient capabilities, which an exec
// passes on: CAP_DAC_READ_SEARCH would let a helper taken over read any file). A helper started
// from such a process must be given an identity to drop to (DropIdentity clears them).
bool HoldsPrivilege();

// A helper's numeric argument (--uid, --gid, ...): decimal, within uint32_t, nothing after it.
bool ParseHelperNumber(const char* text, uint32_t* out);

// Tests only, builds with assertions (a release build's does nothing): what an exploit
// of a helper's interpreter or parser would do next, named by `fault` (the helper's
// PATHPROF_*_FAULT variable): "write" writes through a wild pointer, "exec" execs /bin/sh,
// "hang" blocks for ever using no CPU. Returns for nullptr or any other name.
void SimulateExploit(const char* fault);

// The uid and gid of `nobody` from the user database, 65534 where it has none.
void NobodyIdentity(uid_t* uid, gid_t* gid);

}  // namespace pathprof::stepping
