// Page tokens: opaque, signed, bound to their list and request.
#include "pathprof/api/page_token.h"

#include <gtest/gtest.h>

#include "pathprof/api/grpc_status.h"

namespace pathprof::api {
namespace {

TEST(PageTokens, ATokenGivesBackWhereItsPageEnded) {
  const PageTokens tokens;
  const std::string t = tokens.Make("ListTargets", "hot", "4242");
  EXPECT_EQ(t.find("4242"), std::string::npos) << t;  // opaque, not the position in clear
  std::string after;
  ASSERT_TRUE(tokens.Read(t, "ListTargets", "hot", &after).ok());
  EXPECT_EQ(after, "4242");
  // An empty position and a position with any bytes survive too.
  const std::string odd("a\0/b", 4);
  ASSERT_TRUE(tokens.Read(tokens.Make("ListSessions", "", odd), "ListSessions", "", &after).ok());
  EXPECT_EQ(after, odd);
}

void ExpectRefused(const grpc::Status& s, const std::string& says) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find(says), std::string::npos) << s.error_message();
  auto info = ErrorInfoOf(s);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->reason(), "PAGE_TOKEN_INVALID");
  EXPECT_EQ(info->metadata().at("field"), "page_token");
}

TEST(PageTokens, ForgedGarbledAndForeignTokensAreRefused) {
  const PageTokens tokens(std::string(32, 'k'));
  const std::string t = tokens.Make("ListTargets", "hot", "4242");
  std::string after = "untouched";
  // Another server's (another key), as after a restart.
  const PageTokens other(std::string(32, 'x'));
  ExpectRefused(other.Read(t, "ListTargets", "hot", &after), "is not one this server gave");
  // Each byte changed in transit.
  for (size_t i = 0; i < t.size(); ++i) {
    std::string bad = t;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    ExpectRefused(tokens.Read(bad, "ListTargets", "hot", &after), "is not one this server gave");
  }
  ExpectRefused(tokens.Read(t.substr(0, t.size() - 1), "ListTargets", "hot", &after),
                "is not one this server gave");
  ExpectRefused(tokens.Read("4242", "ListTargets", "hot", &after), "page_token '4242'");
  ExpectRefused(tokens.Read("not base64 !", "ListTargets", "hot", &after),
                "is not one this server gave");
  // Another list's, and another request's.
  ExpectRefused(tokens.Read(t, "ListSessions", "hot", &after),
                "continues ListTargets, not ListSessions");
  ExpectRefused(tokens.Read(t, "ListTargets", "cold", &after),
                "continues a ListTargets request with other fields");
  EXPECT_EQ(after, "untouched");
  // A long token is shortened in the message.
  const grpc::Status long_one = tokens.Read(std::string(500, 'A'), "ListTargets", "", &after);
  EXPECT_LT(long_one.error_message().size(), 300u) << long_one.error_message();
}

}  // namespace
}  // namespace pathprof::api
