#include "pathctl/request_fields.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/duration.pb.h>

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include "pathprof/api/v1_enums.h"

namespace pathctl {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t at; (at = text.find(sep, from)) != std::string::npos; from = at + 1)
    out.push_back(text.substr(from, at - from));
  out.push_back(text.substr(from));
  return out;
}

// The message that holds the last name of `path` ("a.b.c": the message at a.b, created where
// unset) and that name's field; nullptr where a name is not a field, or a name before the last
// not a message.
Message* Holder(Message* root, const std::string& path, const FieldDescriptor** field) {
  Message* m = root;
  const std::vector<std::string> names = Split(path, '.');
  for (size_t i = 0; i < names.size(); ++i) {
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(names[i]);
    if (f == nullptr || f->is_repeated()) return nullptr;
    if (i + 1 == names.size()) {
      *field = f;
      return m;
    }
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return nullptr;
    m = m->GetReflection()->MutableMessage(m, f);
  }
  return nullptr;
}

std::optional<long long> IntOf(std::string_view text) {
  long long v = 0;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// Sets `field` of `m` from a flag's value. `whole`: the value is the flag's own (read by its
// declared type); otherwise `text` is one part of it.
bool Set(const Args& args, const Flag& flag, bool whole, const std::string& text, Message* m,
         const FieldDescriptor* field) {
  const Reflection* r = m->GetReflection();
  std::optional<long long> integer;
  if (whole && flag.type == FlagType::kInt)
    integer = args.Int(flag.name);
  else if (field->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE)
    integer = IntOf(text);
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      if (!integer) return false;
      r->SetInt32(m, field, static_cast<int32_t>(*integer));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:
      if (!integer) return false;
      r->SetInt64(m, field, *integer);
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      if (!integer) return false;
      r->SetUInt32(m, field, static_cast<uint32_t>(*integer));
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      if (!integer) return false;
      r->SetUInt64(m, field, static_cast<uint64_t>(*integer));
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      r->SetDouble(m, field, args.Double(flag.name));
      return whole;
    case FieldDescriptor::CPPTYPE_BOOL:
      if (flag.type != FlagType::kBool) return false;
      r->SetBool(m, field, flag.request_value != "false");
      return true;
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(m, field, text);
      return true;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const std::optional<int> value =
          pathprof::api::V1EnumValueOfWord(field->enum_type()->full_name(), text);
      if (!value) return false;
      r->SetEnumValue(m, field, *value);
      return true;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      if (field->message_type()->full_name() !=
              google::protobuf::Duration::descriptor()->full_name() ||
          flag.type != FlagType::kDuration || !whole)
        return false;
      const double seconds = args.Seconds(flag.name);
      auto* d = static_cast<google::protobuf::Duration*>(r->MutableMessage(m, field));
      d->set_seconds(static_cast<int64_t>(std::floor(seconds)));
      d->set_nanos(static_cast<int32_t>(std::llround((seconds - std::floor(seconds)) * 1e9)));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

void FillRequest(const Args& args, const std::vector<Flag>& flags, Message* request,
                 std::vector<std::string>* problems) {
  for (const Flag& flag : flags) {
    if (flag.request_field.empty() || !args.Has(flag.name)) continue;
    const std::vector<std::string> fields = Split(flag.request_field, ',');
    const std::string value = args.Get(flag.name);
    const std::vector<std::string> parts =
        fields.size() == 1 ? std::vector<std::string>{value} : Split(value, ',');
    for (size_t i = 0; i < fields.size() && i < parts.size(); ++i) {
      const FieldDescriptor* field = nullptr;
      Message* holder = Holder(request, fields[i], &field);
      if (holder == nullptr || !Set(args, flag, fields.size() == 1, parts[i], holder, field))
        problems->push_back("--" + flag.name + " cannot set " + request->GetTypeName() + "." +
                            fields[i] + " to '" + parts[i] + "'");
    }
  }
}

}  // namespace pathctl
