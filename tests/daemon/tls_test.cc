// pathprofd over TCP: TLS with client certificates; only identities listed in [[tcp.clients]] get
// in.
#include <gtest/gtest.h>

#include "daemon_harness.h"

namespace pathprof::daemon::testing {
namespace {

// A throwaway CA, a server certificate for localhost and two client certificates.
void MakeCerts(const std::string& dir) {
  std::string ssl = "cd " + dir + " && openssl ";
  ASSERT_EQ(Sh(ssl + "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key "
                     "-out ca.crt")
                .rc,
            0);
  auto sign = [&](const std::string& name, const std::string& ext) {
    ASSERT_EQ(Sh(ssl + "req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + name +
                 ".key -out " + name + ".csr")
                  .rc,
              0);
    std::ofstream(dir + "/" + name + ".ext") << ext;
    ASSERT_EQ(Sh(ssl + "x509 -req -in " + name +
                 ".csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                 "-days 1 -extfile " +
                 name + ".ext -out " + name + ".crt")
                  .rc,
              0);
  };
  sign("server", "subjectAltName=DNS:localhost\n");
  sign("collector", "extendedKeyUsage=clientAuth\n");
  sign("stranger", "extendedKeyUsage=clientAuth\n");
}

TEST(DaemonTls, OnlyListedClientIdentitiesAreAccepted) {
  char tmpl[] = "/tmp/pathprof-tls-XXXXXX";
  std::string certs = mkdtemp(tmpl);
  MakeCerts(certs);
  std::string port = std::to_string(30000 + getpid() % 20000);
  Daemon d("[tcp]\naddress = \"localhost:" + port + "\"\ntls_cert = \"" + certs +
           "/server.crt\"\ntls_key = \"" + certs + "/server.key\"\ntls_client_ca = \"" + certs +
           "/ca.crt\"\n[[tcp.clients]]\nidentity = \"collector\"\nuid = 0\n");
  ASSERT_TRUE(d.Ready()) << d.Log();
  auto tcp = [&](const std::string& who) {
    // The native resolver: c-ares (gRPC's default) leaks a few bytes at exit, which ASan reports.
    return Sh("GRPC_DNS_RESOLVER=native " + kBin + "/pathctl caps --address localhost:" + port +
              " --tls-ca " + certs + "/ca.crt --tls-cert " + certs + "/" + who + ".crt --tls-key " +
              certs + "/" + who + ".key --timeout 5");
  };
  auto ok = tcp("collector");
  EXPECT_EQ(ok.rc, 0) << ok.out << d.Log();
  EXPECT_NE(ok.out.find("ptrace_bursts"), std::string::npos) << ok.out;
  auto refused = tcp("stranger");
  EXPECT_EQ(refused.rc, 5) << refused.out;
  EXPECT_NE(refused.out.find("TLS identity stranger is not listed"), std::string::npos)
      << refused.out;
  // No client certificate at all: the handshake itself fails.
  auto anonymous =
      Sh("GRPC_DNS_RESOLVER=native " + kBin + "/pathctl caps --address localhost:" + port +
         " --tls-ca " + certs + "/ca.crt --timeout 3");
  EXPECT_NE(anonymous.rc, 0) << anonymous.out;
  Sh("rm -rf " + certs);
}

}  // namespace
}  // namespace pathprof::daemon::testing
