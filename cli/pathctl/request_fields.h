// A command's request from its declared flags: each flag given sets the v1 field its declaration
// names (Flag::request_field, a path of field names from the request's type), so that no command
// maps a flag by hand. A flag not given leaves its field unset: the server's default, which the
// usage shows.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "pathctl/flags.h"

namespace pathctl {

// Sets the fields of `flags` given in `args` in `request`. The value goes by the field's type:
// a number as the flag read it (a kDuration flag into a google.protobuf.Duration), a word of an
// enum by api/v1_enums.h's words, text as given; a bool field takes the flag's request_value
// ("true" unless declared otherwise). A flag naming several fields ("a,b") sets them from its
// value's comma-separated parts, in order (dwarf,16384); parts not given leave theirs unset.
// A path the request's type does not have is a problem naming the flag (a declaration's error).
void FillRequest(const Args& args, const std::vector<Flag>& flags,
                 google::protobuf::Message* request, std::vector<std::string>* problems);

}  // namespace pathctl
