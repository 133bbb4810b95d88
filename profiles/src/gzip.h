// gzip (RFC 1952) through zlib, the container pprof files use.
#pragma once

#include <string>
#include <string_view>

#include "pathprof/core/status.h"

namespace pathprof::profiles::pprof {

Result<std::string> GzipCompress(std::string_view data);

// kInvalidArgument for a stream that is not gzip or is cut short; kResourceExhausted once the
// output would pass max_output_bytes (a few KiB of gzip can inflate to gigabytes).
Result<std::string> GzipDecompress(std::string_view data, size_t max_output_bytes);

}  // namespace pathprof::profiles::pprof
