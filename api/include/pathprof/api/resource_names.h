// Resource names (AIP-122): a session is `sessions/{id}` on the wire, a bare id inside the
// pipeline. These are the only places that add or strip the collection prefix.
#pragma once

#include <string>

#include "pathprof/core/status.h"

namespace pathprof::api {

inline constexpr char kSessionsCollection[] = "sessions/";

std::string SessionName(const std::string& id);

// The id in `sessions/{id}`; `field` names the request field in the error.
Result<std::string> SessionIdFromName(const std::string& name, const char* field);

// What a person typed (`abc` or `sessions/abc`) as a resource name: pathctl and pathtop accept
// both, the API only the full name.
std::string SessionNameFromUser(const std::string& typed);

// The id a person reads in tables (the name without its collection).
std::string SessionIdForDisplay(const std::string& name);

}  // namespace pathprof::api
