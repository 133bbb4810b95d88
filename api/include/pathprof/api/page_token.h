// Opaque page tokens (AIP-158) for the daemon's lists. A token holds where the next page starts,
// bound to the list and to a digest of the request's other fields, and signed (HMAC-SHA256) with
// a key drawn when the daemon starts: a client can neither read nor forge one, a token from one
// request does not continue another, and one from before a restart is refused. Each refusal is
// INVALID_ARGUMENT with reason PAGE_TOKEN_INVALID, blaming the field page_token, and says what
// to do (page_size may change between pages; nothing else may).
#pragma once

#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

namespace pathprof::api {

class PageTokens {
 public:
  PageTokens();                          // a random key
  explicit PageTokens(std::string key);  // a given key (tests)

  // A token for the page after `after` (the last item of this one, as the list orders them) of
  // `list` (the method, e.g. "ListTargets") asked with `request` (its fields but page_size and
  // page_token, in a form of the list's choosing).
  std::string Make(std::string_view list, std::string_view request, std::string_view after) const;
  // The `after` that `token` holds, when this server made it for the same list and request.
  grpc::Status Read(const std::string& token, std::string_view list, std::string_view request,
                    std::string* after) const;

 private:
  std::string key_;
};

}  // namespace pathprof::api
