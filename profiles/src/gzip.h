// gzip (RFC 1952) compression through zlib, the container pprof files use.
#pragma once

#include <string>
#include <string_view>

#include "pathprof/core/status.h"

namespace pathprof::profiles::pprof {

Result<std::string> GzipCompress(std::string_view data);

}  // namespace pathprof::profiles::pprof
