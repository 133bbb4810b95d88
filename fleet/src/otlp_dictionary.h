// The one ProfilesDictionary of an OTLP profiles request, filled as the profiles are built:
// strings, attributes and stacks are stored once and referred to by index, and every table
// starts with the empty entry OTLP requires at index 0 (the zero value of its message: an
// empty string, Mapping{}, Link{}, ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "opentelemetry/proto/profiles/v1development/profiles.pb.h"

namespace pathprof::fleet {

class OtlpDictionary {
 public:
  // Writes the index-0 entries of every table into `out`, which must outlive this object.
  explicit OtlpDictionary(opentelemetry::proto::profiles::v1development::ProfilesDictionary* out);

  int32_t String(const std::string& s);
  int32_t StringAttribute(const std::string& key, const std::string& value);
  int32_t IntAttribute(const std::string& key, int64_t value, const std::string& unit);
  int32_t Stack(const std::vector<int32_t>& location_indices);

  opentelemetry::proto::profiles::v1development::ProfilesDictionary& tables() { return *out_; }

 private:
  opentelemetry::proto::profiles::v1development::ProfilesDictionary* out_;
  std::unordered_map<std::string, int32_t> strings_;
  // key, is-int, string value or int value, unit (as string indices and the int)
  std::map<std::tuple<int32_t, bool, int32_t, int64_t, int32_t>, int32_t> attributes_;
  std::map<std::vector<int32_t>, int32_t> stacks_;
};

}  // namespace pathprof::fleet
