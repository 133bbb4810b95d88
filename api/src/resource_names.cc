#include "pathprof/api/resource_names.h"

namespace pathprof::api {
namespace {

bool HasCollection(const std::string& s) {
  return s.rfind(kSessionsCollection, 0) == 0;
}

}  // namespace

std::string SessionName(const std::string& id) {
  return kSessionsCollection + id;
}

Result<std::string> SessionIdFromName(const std::string& name, const char* field) {
  const std::string f(field);
  if (name.empty())
    return Error(ErrorCode::kInvalidArgument,
                 f + " is empty: name a session as sessions/{id} (pathctl sessions lists them)");
  if (name.size() > 256) return Error(ErrorCode::kInvalidArgument, f + " longer than 256 bytes");
  if (!HasCollection(name))
    return Error(ErrorCode::kInvalidArgument, f + " '" + name +
                                                  "' is not a session name: expected sessions/" +
                                                  name + " (the form Session.name has)");
  std::string id = name.substr(sizeof(kSessionsCollection) - 1);
  if (id.empty() || id.find('/') != std::string::npos)
    return Error(ErrorCode::kInvalidArgument,
                 f + " '" + name + "' is not a session name: expected sessions/{id}");
  return id;
}

std::string SessionNameFromUser(const std::string& typed) {
  return HasCollection(typed) ? typed : SessionName(typed);
}

std::string SessionIdForDisplay(const std::string& name) {
  return HasCollection(name) ? name.substr(sizeof(kSessionsCollection) - 1) : name;
}

}  // namespace pathprof::api
