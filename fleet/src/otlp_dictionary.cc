#include "otlp_dictionary.h"

namespace pathprof::fleet {

namespace otlp = opentelemetry::proto::profiles::v1development;

OtlpDictionary::OtlpDictionary(otlp::ProfilesDictionary* out) : out_(out) {
  out_->add_mapping_table();
  out_->add_location_table();
  out_->add_function_table();
  // The zero value, as for every other table: a Link with no ids at all ("link_table[0] must
  // always be zero value (Link{})"), which samples without a link refer to by index 0.
  out_->add_link_table();
  out_->add_attribute_table();
  out_->add_stack_table();
  String("");
}

int32_t OtlpDictionary::String(const std::string& s) {
  auto [it, added] = strings_.try_emplace(s, static_cast<int32_t>(out_->string_table_size()));
  if (added) out_->add_string_table(s);
  return it->second;
}

int32_t OtlpDictionary::StringAttribute(const std::string& key, const std::string& value) {
  const auto k = std::make_tuple(String(key), false, String(value), int64_t{0}, 0);
  auto [it, added] = attributes_.try_emplace(k, static_cast<int32_t>(out_->attribute_table_size()));
  if (added) {
    otlp::KeyValueAndUnit* a = out_->add_attribute_table();
    a->set_key_strindex(std::get<0>(k));
    a->mutable_value()->set_string_value(value);
  }
  return it->second;
}

int32_t OtlpDictionary::IntAttribute(const std::string& key, int64_t value,
                                     const std::string& unit) {
  const auto k = std::make_tuple(String(key), true, 0, value, unit.empty() ? 0 : String(unit));
  auto [it, added] = attributes_.try_emplace(k, static_cast<int32_t>(out_->attribute_table_size()));
  if (added) {
    otlp::KeyValueAndUnit* a = out_->add_attribute_table();
    a->set_key_strindex(std::get<0>(k));
    a->mutable_value()->set_int_value(value);
    a->set_unit_strindex(std::get<4>(k));
  }
  return it->second;
}

int32_t OtlpDictionary::Stack(const std::vector<int32_t>& location_indices) {
  auto [it, added] =
      stacks_.try_emplace(location_indices, static_cast<int32_t>(out_->stack_table_size()));
  if (added) {
    otlp::Stack* s = out_->add_stack_table();
    s->mutable_location_indices()->Add(location_indices.begin(), location_indices.end());
  }
  return it->second;
}

}  // namespace pathprof::fleet
