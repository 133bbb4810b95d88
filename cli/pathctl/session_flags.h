// The flags of a profiling session, declared once for `pathctl run` (the embedded pipeline) and
// `pathctl start` (a daemon session), with the defaults of pipeline::kSessionDefaults: the
// values pathprofd gives a request's unset fields. The targets (--pid, --name, ...) are each
// command's own.
#pragma once

#include <string>
#include <vector>

#include "pathctl/flags.h"
#include "pathprof/pipeline/session_config.h"

namespace pathctl {

std::vector<Flag> SessionFlags();

// --inherit / --no-inherit, else the default (kSessionDefaults.follow_children); both given is a
// usage problem.
bool FollowChildren(const Args& args, std::vector<std::string>* problems);

// Fills `config` (run's) from the session flags, each flag not given keeping the table's value.
// --max-descendants is read only when children are followed (else it does not apply).
void ReadSessionConfig(const Args& args, pathprof::pipeline::SessionConfig* config,
                       std::vector<std::string>* problems);

}  // namespace pathctl
