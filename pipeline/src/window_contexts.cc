#include "window_contexts.h"

#include <algorithm>

namespace pathprof::pipeline {

size_t ContextKeyHash::operator()(const ContextKey& k) const {
  uint64_t h = k.truncated ? 0x9e3779b97f4a7c15ull : 0;
  for (const profiles::StackFrame& f : k.frames) {
    h ^= f.function + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= f.call_site + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return static_cast<size_t>(h);
}

bool WindowContexts::TakeUnwind(uint64_t now_ns) {
  // A token bucket holding one second of unwinds: bursts up to the rate pass, a steady excess
  // is cut to the rate.
  const double rate = limits_.unwinds_per_second;
  if (tokens_at_ns_ == 0) tokens_ = rate;
  if (now_ns > tokens_at_ns_ && tokens_at_ns_ != 0)
    tokens_ = std::min(rate, tokens_ + rate * double(now_ns - tokens_at_ns_) / 1e9);
  tokens_at_ns_ = std::max(tokens_at_ns_, now_ns);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void WindowContexts::NoteSample(uint32_t tid, uint64_t time_ns, const ContextKey& key) {
  auto it = samples_.find(tid);
  if (it == samples_.end()) {
    if (samples_.size() >= limits_.max_threads) return;
    it = samples_.emplace(tid, std::deque<Sample>{}).first;
  }
  it->second.push_back({time_ns, key});
  while (it->second.size() > limits_.samples_per_thread) it->second.pop_front();
}

const ContextKey* WindowContexts::NearestSample(uint32_t tid, uint64_t time_ns) const {
  auto it = samples_.find(tid);
  if (it == samples_.end()) return nullptr;
  const ContextKey* best = nullptr;
  uint64_t best_distance = limits_.nearest_sample_ns + 1;
  for (const Sample& s : it->second) {
    const uint64_t d = s.time_ns > time_ns ? s.time_ns - time_ns : time_ns - s.time_ns;
    if (d < best_distance) best = &s.key, best_distance = d;
  }
  return best;
}

void WindowContexts::ForgetThread(uint32_t tid) {
  samples_.erase(tid);
}

WindowContexts::AddResult WindowContexts::Add(const ContextKey& key, profiles::PcctNodeId node,
                                              const std::vector<Contribution>& window,
                                              uint64_t* paths_dropped) {
  auto it = contexts_.find(key);
  if (it == contexts_.end()) {
    if (contexts_.size() >= limits_.max_contexts) return AddResult::kTableFull;
    it = contexts_.emplace(key, Context{}).first;
  }
  Context& c = it->second;
  c.node = node;
  ++c.windows;
  for (const Contribution& w : window) {
    c.weight += w.value;
    auto p = c.paths.find(w.path);
    if (p == c.paths.end()) {
      if (c.paths.size() >= limits_.max_paths_per_context) {
        c.dropped_weight += w.value;
        ++*paths_dropped;
        continue;
      }
      p = c.paths.emplace(w.path, PathTally{}).first;
      ++path_entries_;
    }
    p->second.sum += w.value;
    p->second.sum_sq += w.value * w.value;
    p->second.observations += w.observations;
  }
  return AddResult::kAdded;
}

const WindowContexts::Context* WindowContexts::Find(const ContextKey& key) const {
  auto it = contexts_.find(key);
  return it == contexts_.end() ? nullptr : &it->second;
}

void WindowContexts::ForEach(
    const std::function<void(const ContextKey&, const Context&)>& fn) const {
  for (const auto& [key, c] : contexts_) fn(key, c);
}

size_t WindowContexts::memory_bytes() const {
  size_t bytes = path_entries_ * 64;
  for (const auto& [key, c] : contexts_) bytes += 128 + key.frames.size() * 16;
  for (const auto& [tid, q] : samples_)
    for (const Sample& s : q) bytes += 48 + s.key.frames.size() * 16;
  return bytes;
}

}  // namespace pathprof::pipeline
