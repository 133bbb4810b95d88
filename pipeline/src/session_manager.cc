#include "pathprof/pipeline/session_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "pathprof/core/clock.h"

namespace pathprof::pipeline {

SessionManager::SessionManager(SessionManagerOptions options)
    : SessionManager(options, options.probe_capabilities ? collectors::ProbeHostCapabilities()
                                                         : collectors::HostCapabilities{}) {}

SessionManager::SessionManager(SessionManagerOptions options, collectors::HostCapabilities caps)
    : options_(options),
      caps_(std::move(caps)),
      symbols_(std::make_shared<SymbolService>(options_.images, options_.symbolize_in)) {}

SessionManager::~SessionManager() {
  StopAll();
}

size_t SessionManager::StopAll() {
  std::vector<std::shared_ptr<Session>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sessions_)
      if (s->Info().state == SessionState::kRunning) running.push_back(s);
  }
  std::vector<std::thread> stoppers;
  for (auto& s : running) stoppers.emplace_back([s] { s->Stop(); });
  for (auto& t : stoppers) t.join();
  return running.size();
}

Result<std::string> SessionManager::NextId() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.size() >= options_.max_sessions)
    return Status(ErrorCode::kResourceExhausted,
                  "session limit reached (" + std::to_string(options_.max_sessions) +
                      "); stop a session or wait for ended ones to expire");
  char buf[32];
  std::snprintf(buf, sizeof buf, "s%llu-%04x", static_cast<unsigned long long>(next_id_++),
                static_cast<unsigned>(std::random_device{}() & 0xffff));
  return std::string(buf);
}

Result<std::shared_ptr<Session>> SessionManager::Start(SessionConfig config) {
  ReapExpired();
  PATHPROF_ASSIGN_OR_RETURN(std::string id, NextId());
  PATHPROF_ASSIGN_OR_RETURN(auto session, Session::Start(id, std::move(config), caps_, symbols_));
  std::shared_ptr<Session> shared(std::move(session));
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.push_back(shared);
  return shared;
}

Result<std::shared_ptr<Session>> SessionManager::Import(const std::string& path,
                                                        const AnalyzeOptions& options,
                                                        std::vector<std::string>* warnings) {
  ReapExpired();
  PATHPROF_ASSIGN_OR_RETURN(std::string id, NextId());
  PATHPROF_ASSIGN_OR_RETURN(std::shared_ptr<Session> shared,
                            SessionFromRecording(std::move(id), path, options, warnings));
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.push_back(shared);
  return shared;
}

Result<SessionInfo> SessionManager::Stop(const std::string& id) {
  std::shared_ptr<Session> s = Get(id);
  if (s == nullptr) return Status(ErrorCode::kNotFound, "no session with id '" + id + "'");
  s->Stop();
  return s->Info();
}

Result<SessionInfo> SessionManager::Delete(const std::string& id) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(sessions_.begin(), sessions_.end(),
                           [&](const auto& x) { return x->id() == id; });
    if (it == sessions_.end())
      return Status(ErrorCode::kNotFound, "no session with id '" + id + "'");
    s = *it;
    sessions_.erase(it);
  }
  s->Stop();
  return s->Info();
}

std::vector<SessionInfo> SessionManager::List() const {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions = sessions_;
  }
  std::vector<SessionInfo> out;
  for (const auto& s : sessions) out.push_back(s->Info());
  return out;
}

std::shared_ptr<Session> SessionManager::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : sessions_)
    if (s->id() == id) return s;
  return nullptr;
}

std::vector<std::string> SessionManager::SessionsFor(uint32_t pid) const {
  std::vector<std::string> out;
  for (const SessionInfo& info : List())
    for (uint32_t p : info.pids)
      if (p == pid) out.push_back(info.id);
  return out;
}

size_t SessionManager::ReapExpired() {
  const int64_t now = UnixMs();
  std::vector<std::shared_ptr<Session>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if ((*it)->Expired(now)) {
        expired.push_back(*it);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return expired.size();
}

}  // namespace pathprof::pipeline
