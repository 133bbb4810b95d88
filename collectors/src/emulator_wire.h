// The socket protocol between a snapshot collector and its emulator helper (pathprof-emulator):
// framed messages {type, size, payload} over a Unix stream socket, descriptors passed with
// SCM_RIGHTS on the message that answers an open request. The helper is the untrusted side: it
// interprets code somebody else chose, so everything the collector reads from it is parsed as
// hostile (sizes bounded, counts checked, an enum past its table refused), and it may ask to
// open only what a sample it was handed names.
//
//   collector                          helper
//   kSettings (version, sizes, ...) ->
//                                   <- kReady (or kError and exit)
//   kSamples (a batch, in order)    ->
//                                   <- kOpen (maps, pagemap or a mapped file of the pid of the
//                                      sample it is on: the one after the outcomes sent so far)
//   kOpened (+ fd, or an errno)     ->
//                                   <- kHints (pages to copy with the pid's samples)
//                                   <- kOutcome (one per sample, in order)
//   kForget (pid)                   ->
// A batch is one message each way where no open is needed (the helper sends its outcomes
// together, before an open request and at the batch's end): at a few hundred windows a second
// the helper then wakes once per batch, not once per sample.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pathprof/collectors/ebpf_stack_sampler.h"
#include "pathprof/decoders/mapped_file.h"
#include "pathprof/stepping/helper_socket.h"
#include "snapshot_emulation.h"

namespace pathprof::collectors::emulator_wire {

inline constexpr uint32_t kVersion = 1;

enum class Type : uint32_t {
  kSettings = 1,
  kReady = 2,
  kError = 3,  // text: the helper could not start (it then exits)
  kSamples = 4,
  kOpen = 5,
  kOpened = 6,
  kHints = 7,
  kOutcome = 8,
  kForget = 9,
};

struct Header {
  Type type;
  uint32_t size;
};

// Largest payload either side accepts (a batch of samples with their stacks and hint pages).
inline constexpr uint32_t kMaxPayload = 64u << 20;
// Samples in one batch at most.
inline constexpr uint32_t kMaxBatch = 256;

struct Settings {
  uint32_t version = kVersion;
  uint32_t event_size = sizeof(BranchEvent);
  uint32_t image_stats_size = sizeof(ProcessImage::Stats);
  uint32_t window_taken = 0;
  uint32_t hint_pages = 0;
  uint32_t learn_hints = 0;
  uint32_t max_processes = 0;
  uint32_t max_stable_pages = 0;
  uint32_t max_decoded = 0;
  uint32_t reserved = 0;
};
Settings SettingsFor(const EmulationSettings& s);
EmulationSettings FromSettings(const Settings& s);

enum class OpenWhat : uint32_t { kMaps = 1, kPagemap = 2, kMapped = 3 };
struct OpenRequest {
  OpenWhat what;
  uint32_t pid;
  uint64_t start, end;  // kMapped: the mapping's range, device and inode
  uint64_t device, inode;
};

struct OutcomeHeader {
  uint8_t kind;   // SampleOutcome::Kind
  uint8_t end;    // emulator::EmulationEnd
  uint8_t flags;  // kExec | kEvicted | kInSyscall
  uint8_t reserved;
  uint32_t taken;
  uint64_t emulate_ns;
  ProcessImage::Stats image;
  uint32_t events;
  uint32_t evicted_pid;
};
inline constexpr uint8_t kExec = 1, kEvicted = 2, kInSyscall = 4;

// The framing is stepping's (helper_socket.h); these give it the emulator's types and bound.
// Appends one framed message to `out` (sent later with SendBytes).
void Append(Type type, const void* payload, uint32_t size, std::vector<uint8_t>* out);
// Writes `bytes` whole. False when the peer is gone.
bool SendBytes(int sock, const std::vector<uint8_t>& bytes);
// Writes one message, with `fd` attached when >= 0. False when the peer is gone.
bool Send(int sock, Type type, const void* payload, uint32_t size, int fd = -1);
bool Send(int sock, Type type, const std::vector<uint8_t>& payload, int fd = -1);

using ReceiveResult = stepping::ReceiveResult;
// Reads one message (stepping::ReceiveMessage, payloads up to kMaxPayload).
ReceiveResult Receive(int sock, int timeout_ms, Header* header, std::vector<uint8_t>* payload,
                      int* fd);

// The collector's side (the helper never sends it a descriptor): many messages a read.
class MessageReader {
 public:
  explicit MessageReader(int sock) : reader_(sock, kMaxPayload) {}
  ReceiveResult Next(int timeout_ms, Header* header, std::vector<uint8_t>* payload);

 private:
  stepping::MessageReader reader_;
};

// The fields of a sample a window needs (not its stack copy for unwinding: the snapshot has
// its own).
std::vector<uint8_t> EncodeSample(const RawStackSample& s);
bool DecodeSample(const std::vector<uint8_t>& bytes, RawStackSample* s);
// A batch: a count, then each sample's length and encoding, written into `out` (cleared; its
// capacity kept). The batch is the collector's largest buffer: one kept for every batch
// instead of one allocated each time, which glibc's heap kept (its mmap threshold rises to the
// size of a large block freed), left the daemon 20-40 MB larger.
void EncodeSamples(const std::vector<const RawStackSample*>& samples, std::vector<uint8_t>* out);
bool DecodeSamples(const std::vector<uint8_t>& bytes, std::vector<RawStackSample>* samples);

std::vector<uint8_t> EncodeOutcome(const SampleOutcome& o);
// Refuses (false) what a helper could not have sent: an enum past its table, more events than
// the payload holds or than `max_events`.
bool DecodeOutcome(const std::vector<uint8_t>& bytes, uint32_t max_events, SampleOutcome* o);

std::vector<uint8_t> EncodeHints(uint32_t pid, const std::vector<uint64_t>& pages);
bool DecodeHints(const std::vector<uint8_t>& bytes, uint32_t max_pages, uint32_t* pid,
                 std::vector<uint64_t>* pages);

}  // namespace pathprof::collectors::emulator_wire
