// The flags of a profiling session, declared once for `pathctl run` (the embedded pipeline) and
// `pathctl start` (a daemon session), with the defaults of pipeline::kSessionDefaults: the
// values pathprofd gives a request's unset fields. The targets (--pid, --name, ...) are each
// command's own. One default differs by command: whether children are followed.
#pragma once

#include <string>
#include <vector>

#include "pathctl/flags.h"
#include "pathprof/pipeline/session_config.h"
#include "pathprof/v1/profiler.pb.h"

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

// The request the flags ask for: each of `flags` given (the session flags, and start's targets)
// sets its declared field (request_fields.h), each not given leaves it unset (the daemon then
// takes kSessionDefaults' value, the usage's default). follow_children is always set (--inherit,
// --no-inherit or the command's default, `follows_children`); --max-descendants is read only
// when children are followed (else it does not apply).
void ReadSessionRequest(const Args& args, const std::vector<Flag>& flags, bool follows_children,
                        pathprof::v1::CreateSessionRequest* request,
                        std::vector<std::string>* problems);

// run's config: ReadSessionRequest's settings converted as the daemon converts them
// (api::ToSessionConfig), children followed unless --no-inherit (kRunFollowsChildren), but for
// --duration, which run times itself.
void ReadSessionConfig(const Args& args, pathprof::pipeline::SessionConfig* config,
                       std::vector<std::string>* problems);

}  // namespace pathctl
