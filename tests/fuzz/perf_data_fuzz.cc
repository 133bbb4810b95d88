// libFuzzer target: any bytes through the perf.data reader must give records or a Status.
#include <cstddef>
#include <cstdint>
#include <span>

#include "pathprof/decoders/perf_data_reader.h"

namespace pd = pathprof::decoders;

static volatile uint64_t g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto reader = pd::PerfDataReader::FromBytes(std::span<const uint8_t>(data, size), "fuzz");
  if (!reader.ok()) return 0;
  (void)reader->RequireX86_64();
  pd::PerfRecord rec;
  uint64_t sink = 0;
  while (true) {
    pathprof::Result<bool> more = reader->Next(&rec);
    if (!more.ok() || !*more) break;
    // Touch what the record points at, so ASan checks the spans' bounds.
    if (auto* s = std::get_if<pd::PerfSample>(&rec.body)) {
      for (const auto& b : s->branches) sink += b.from ^ b.to ^ b.cycles();
      for (uint8_t byte : s->raw) sink += byte;
      for (uint8_t byte : s->stack_user) sink += byte;
    } else if (auto* a = std::get_if<pd::PerfAuxtrace>(&rec.body)) {
      if (!a->data.empty()) sink += a->data.front() + a->data.back();
    } else if (auto* o = std::get_if<pd::PerfOtherRecord>(&rec.body)) {
      if (!o->payload.empty()) sink += o->payload.back();
    }
  }
  g_sink = sink;
  return 0;
}
