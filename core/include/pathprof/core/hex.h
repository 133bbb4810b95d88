// Lower-case hex of raw bytes: build-ids (perf.data records hold them raw, ELF notes too) and
// the first bytes of a file that is not what it was meant to be.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace pathprof {

std::string HexBytes(std::span<const uint8_t> bytes);
inline std::string HexBytes(std::string_view raw) {
  return HexBytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));
}

}  // namespace pathprof
