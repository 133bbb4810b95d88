// Hot paths per calling context (docs/profiles.md, "Hot paths per calling context"): for each
// context that branch windows were attributed to, a bounded table of the paths seen in those
// windows with their window-estimator contributions, so that a loop's paths can be told apart by
// which caller ran it. Also what attribution needs besides the stack a window brings: each
// thread's recent stack samples (the fallback for windows without a stack) and a rate cap on
// unwinds. Pure data, owned and locked by its ProfileStore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/profiles/pcct.h"

namespace pathprof::pipeline {

// A calling context: its frames as the PCCT keeps them, leaf first.
struct ContextKey {
  std::vector<profiles::StackFrame> frames;
  bool truncated = false;  // cut on the root side: hangs under the PCCT's "[truncated]" root
  bool operator==(const ContextKey&) const = default;
};
struct ContextKeyHash {
  size_t operator()(const ContextKey& k) const;
};

struct ContextLimits {
  size_t max_contexts = 4096;          // per process; windows of more contexts are counted
  size_t max_paths_per_context = 256;  // per context; paths beyond are counted, weight kept
  // Per process. An unwind cost ~300 us in the sanitizer build once the images' CFI was loaded
  // (~800 us for the first 50 windows), measured on examples/two_callers: 1000 a second bounds
  // it to a third of a CPU there, and it matches the emulated windows' default rate.
  double unwinds_per_second = 1000;
  uint64_t nearest_sample_ns = 50'000'000;  // a stack sample this close in time names a window
  size_t samples_per_thread = 8;            // recent stack samples kept per thread
  size_t max_threads = 4096;
};

class WindowContexts {
 public:
  struct PathTally {
    double sum = 0;  // Horvitz-Thompson contributions, as the window estimator adds them
    double sum_sq = 0;
    uint64_t observations = 0;
  };
  struct Context {
    profiles::PcctNodeId node = profiles::kPcctNoNode;  // as last placed (eviction may move it)
    uint64_t windows = 0;
    double weight = 0;          // every contribution, the table's and the dropped ones
    double dropped_weight = 0;  // of paths that found the table full
    std::unordered_map<hwmodel::PathDescriptor, PathTally, hwmodel::PathDescriptorHash> paths;
  };
  struct Contribution {
    hwmodel::PathDescriptor path;
    double value = 0;
    uint64_t observations = 0;
  };
  enum class AddResult { kAdded, kTableFull };

  explicit WindowContexts(ContextLimits limits = {}) : limits_(limits) {}

  // One token of the unwind rate cap; false when this second's are spent.
  bool TakeUnwind(uint64_t now_ns);
  // A stack sample of `tid` at `time_ns` had this context.
  void NoteSample(uint32_t tid, uint64_t time_ns, const ContextKey& key);
  // The context of the thread's stack sample nearest to `time_ns`, within nearest_sample_ns.
  const ContextKey* NearestSample(uint32_t tid, uint64_t time_ns) const;
  void ForgetThread(uint32_t tid);

  // One window's paths into its context's table. kTableFull: the process has max_contexts
  // contexts and this is a new one (nothing added). `paths_dropped` counts paths that found the
  // context's table full.
  AddResult Add(const ContextKey& key, profiles::PcctNodeId node,
                const std::vector<Contribution>& window, uint64_t* paths_dropped);

  const Context* Find(const ContextKey& key) const;
  void ForEach(const std::function<void(const ContextKey&, const Context&)>& fn) const;
  size_t size() const { return contexts_.size(); }
  size_t memory_bytes() const;

 private:
  struct Sample {
    uint64_t time_ns;
    ContextKey key;
  };
  ContextLimits limits_;
  std::unordered_map<ContextKey, Context, ContextKeyHash> contexts_;
  std::unordered_map<uint32_t, std::deque<Sample>> samples_;
  double tokens_ = 0;
  uint64_t tokens_at_ns_ = 0;
  size_t path_entries_ = 0;
};

}  // namespace pathprof::pipeline
