#include "pathprof/api/page_token.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <absl/strings/escaping.h>

#include <array>
#include <stdexcept>

#include "pathprof/api/grpc_status.h"

namespace pathprof::api {
namespace {

// version | list length | list | request digest | after, then the MAC over all of it.
constexpr char kVersion = 1;
constexpr size_t kDigestBytes = 8;  // of the request: tells requests apart, not a secret
constexpr size_t kMacBytes = 16;    // truncated HMAC-SHA256 (128 bits stop forgery)

std::string Digest(std::string_view request) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d;
  SHA256(reinterpret_cast<const unsigned char*>(request.data()), request.size(), d.data());
  return std::string(reinterpret_cast<const char*>(d.data()), kDigestBytes);
}

std::string Mac(const std::string& key, std::string_view body) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac;
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac.data(), &len);
  return std::string(reinterpret_cast<const char*>(mac.data()), kMacBytes);
}

grpc::Status Refuse(std::string message) {
  return InvalidArgument(std::move(message), "page_token", v1::PAGE_TOKEN_INVALID);
}

// The token as the client sent it, shortened: it goes into a message.
std::string Quoted(const std::string& token) {
  return "'" + (token.size() > 48 ? token.substr(0, 48) + "..." : token) + "'";
}

}  // namespace

PageTokens::PageTokens() : key_(32, '\0') {
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key_.data()), static_cast<int>(key_.size())) != 1)
    throw std::runtime_error("page tokens: the system's random source failed (RAND_bytes)");
}

PageTokens::PageTokens(std::string key) : key_(std::move(key)) {}

std::string PageTokens::Make(std::string_view list, std::string_view request,
                             std::string_view after) const {
  std::string body(1, kVersion);
  body += static_cast<char>(list.size());
  body += list;
  body += Digest(request);
  body += after;
  return absl::WebSafeBase64Escape(body + Mac(key_, body));
}

grpc::Status PageTokens::Read(const std::string& token, std::string_view list,
                              std::string_view request, std::string* after) const {
  const std::string not_ours =
      "page_token " + Quoted(token) +
      " is not one this server gave (or one from before it restarted): pass next_page_token as "
      "it came, or no page_token for the first page";
  std::string raw;
  if (!absl::WebSafeBase64Unescape(token, &raw) || raw.size() < 2 + kDigestBytes + kMacBytes)
    return Refuse(not_ours);
  const std::string body = raw.substr(0, raw.size() - kMacBytes);
  const std::string mac = Mac(key_, body);
  if (CRYPTO_memcmp(mac.data(), raw.data() + body.size(), kMacBytes) != 0) return Refuse(not_ours);
  // Signed by this server, so well formed from here on.
  const size_t list_size = static_cast<unsigned char>(body[1]);
  if (body[0] != kVersion || body.size() < 2 + list_size + kDigestBytes) return Refuse(not_ours);
  const std::string_view token_list(body.data() + 2, list_size);
  if (token_list != list)
    return Refuse("page_token " + Quoted(token) + " continues " + std::string(token_list) +
                  ", not " + std::string(list) + ": pass the next_page_token of " +
                  std::string(list) + "'s own previous page");
  if (body.compare(2 + list_size, kDigestBytes, Digest(request)) != 0)
    return Refuse("page_token " + Quoted(token) + " continues a " + std::string(list) +
                  " request with other fields: a page token continues only the request that "
                  "returned it (page_size may change); ask again without page_token");
  *after = body.substr(2 + list_size + kDigestBytes);
  return grpc::Status::OK;
}

}  // namespace pathprof::api
