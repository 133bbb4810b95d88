// One record of the eBPF sampler's ring buffer (bpf/stack_sample.h's struct stack_sample, cut
// after the bytes it copied) into a RawStackSample. Apart from the sampler so that it can be
// fuzzed without loading BPF (tests/fuzz/stack_record_fuzz.cc): the bytes behind the header are
// the sampled process's memory, and a record may be shorter than its header says.
#pragma once

#include <cstddef>

#include "pathprof/collectors/ebpf_stack_sampler.h"

namespace pathprof::collectors {

// False when `size` does not hold the header (the fixed fields and the frames): nothing to
// deliver. Otherwise fills `out` with what the record holds: the stack copy only when the stack
// pointer lies inside the bytes copied, snapshot pieces only where they lie whole inside the
// record. `data` is aligned as the ring buffer aligns records (8 bytes).
bool ParseStackRecord(const void* data, size_t size, RawStackSample* out);

}  // namespace pathprof::collectors
