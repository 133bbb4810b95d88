#include "pathprof/daemon/config.h"

#include <gtest/gtest.h>

namespace pathprof::daemon {
namespace {

TEST(Config, FileValuesOverrideDefaults) {
  auto c = ParseConfigText(R"(
[socket]
path = "/tmp/x.sock"
group = "ops"
[limits]
max_top_k = 50
rate_qps = 12.5
[[tcp.clients]]
identity = "collector"
uid = 0
[[tcp.clients]]
identity = "alice"
uid = 1000
)",
                           "test.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->socket_path, "/tmp/x.sock");
  EXPECT_EQ(c->socket_group, "ops");
  EXPECT_EQ(c->limits.max_top_k, 50u);
  EXPECT_DOUBLE_EQ(c->limits.rate_qps, 12.5);
  EXPECT_EQ(c->limits.max_depth, Limits{}.max_depth);  // untouched keys keep their defaults
  ASSERT_EQ(c->tls_identities.size(), 2u);
  EXPECT_EQ(c->tls_identities[1].name, "alice");
  EXPECT_EQ(c->tls_identities[1].uid, 1000u);
}

TEST(Config, UnknownKeyIsAnErrorNamingIt) {
  auto c = ParseConfigText("[limits]\nmax_topk = 5\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("limits.max_topk"), std::string::npos);
}

TEST(Config, SyntaxErrorNamesLine) {
  auto c = ParseConfigText("[limits]\nmax_top_k = = 5\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("t.toml:2"), std::string::npos) << c.status().message();
}

TEST(Config, WrongTypeAndRange) {
  EXPECT_FALSE(ParseConfigText("[limits]\nmax_top_k = \"many\"\n", "t").ok());
  EXPECT_FALSE(ParseConfigText("[limits]\nmax_top_k = -1\n", "t").ok());
  EXPECT_FALSE(ParseConfigText("[limits]\nmax_top_k = 99999999999\n", "t").ok());
  EXPECT_FALSE(ParseConfigText("[log]\nlevel = \"loud\"\n", "t").ok());
}

TEST(Config, FlagsOverrideFile) {
  const char* argv[] = {"pathprofd",   "--config",      "/dev/null",  "--socket",
                        "/tmp/f.sock", "--max-top-k=7", "--rate-qps", "3"};
  auto f = ParseFlags(8, const_cast<char**>(argv));
  ASSERT_TRUE(f.ok()) << f.status().message();
  auto c = BuildConfig(*f);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->socket_path, "/tmp/f.sock");
  EXPECT_EQ(c->limits.max_top_k, 7u);
  EXPECT_EQ(c->limits.default_top_k, 7u);  // clamped under the maximum
  EXPECT_DOUBLE_EQ(c->limits.rate_qps, 3);
}

TEST(Config, BadFlags) {
  const char* unknown[] = {"pathprofd", "--frobnicate", "1"};
  EXPECT_FALSE(ParseFlags(3, const_cast<char**>(unknown)).ok());
  const char* missing[] = {"pathprofd", "--socket"};
  EXPECT_FALSE(ParseFlags(2, const_cast<char**>(missing)).ok());
  const char* tcp[] = {"pathprofd", "--config", "/dev/null", "--tcp", "0.0.0.0:1"};
  auto f = ParseFlags(5, const_cast<char**>(tcp));
  ASSERT_TRUE(f.ok());
  auto c = BuildConfig(*f);
  ASSERT_FALSE(c.ok());  // TCP without TLS is refused
  EXPECT_NE(c.status().message().find("tls_cert"), std::string::npos);
}

TEST(Config, ShippedSampleParses) {
  auto c = LoadConfigFile(PATHPROF_SOURCE_DIR "/packaging/pathprofd.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->socket_path, "/run/pathprof/pathprofd.sock");
}

}  // namespace
}  // namespace pathprof::daemon
