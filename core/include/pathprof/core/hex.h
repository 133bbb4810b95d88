// Lower-case hex: of raw bytes (build-ids, which perf.data records and ELF notes hold raw, and
// the first bytes of a file that is not what it was meant to be), and of addresses in messages.
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

// "0x401000": an address (or any 64-bit value) as messages and table keys write it.
std::string HexAddress(uint64_t value);

}  // namespace pathprof
