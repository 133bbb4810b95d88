// The flags of a profiling session, declared once for `pathctl run` (the embedded pipeline) and
// `pathctl start` (a daemon session), with the defaults of pipeline::kSessionDefaults: the
// values pathprofd gives a request's unset fields. The targets (--pid, --name, ...) are each
// command's own. One default differs by command: whether children are followed.
#pragma once

#include <string>
#include <vector>

#include "pathctl/flags.h"
#include "pathprof/pipeline/session_config.h"

namespace pathctl {

// `pathctl run` follows the processes its target forks unless --no-inherit, as `perf record`
// does: the command it starts is the user's whole job, and the work is often in its children
// (`sh -c`, make, a server's workers), so a report of the target alone would show a shell that
// waited. Its stores are run's own memory, under no daemon quota. `pathctl start` keeps
// kSessionDefaults.follow_children (off): it attaches to processes already running, whose future
// forks (a server's workers) would each get stores charged against the daemon's memory quota.
inline constexpr bool kRunFollowsChildren = true;

// The session flags, their --inherit/--no-inherit help saying which is the default when children
// are followed by default (`follows_children`) or not.
std::vector<Flag> SessionFlags(bool follows_children);

// --inherit / --no-inherit, else `by_default`; both given is a usage problem.
bool FollowChildren(const Args& args, bool by_default, std::vector<std::string>* problems);

// Fills `config` (run's) from the session flags, each flag not given keeping the table's value,
// children followed unless --no-inherit (kRunFollowsChildren). --max-descendants is read only
// when children are followed (else it does not apply).
void ReadSessionConfig(const Args& args, pathprof::pipeline::SessionConfig* config,
                       std::vector<std::string>* problems);

}  // namespace pathctl
