// The admission policy alone (daemon/include/pathprof/daemon/admission.h), over made-up held
// sessions: the caps, the admins' reserve, the per-client memory share, and who may evict what.
// authorization_test.cc and hostile_user_test.cc check the same through the real daemon.
#include "pathprof/daemon/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pathprof::daemon {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
using Kind = AdmissionDecision::Kind;

Limits SmallLimits() {
  Limits l;
  l.max_sessions = 5;
  l.admin_reserved_sessions = 2;
  l.max_sessions_per_client = 3;
  l.max_memory_bytes = 1000 * kMiB;
  l.admin_reserved_memory_bytes = 200 * kMiB;
  l.max_session_memory_bytes = 300 * kMiB;
  l.client_memory_share = 0.5;
  return l;
}

Applicant User(uint64_t need_mib = 10) {
  return {.admin = false, .client_key = "uid:1000", .memory_bound_bytes = need_mib * kMiB};
}
Applicant Root(uint64_t need_mib = 10) {
  return {.admin = true, .client_key = "uid:0", .memory_bound_bytes = need_mib * kMiB};
}

HeldSession Held(std::string id, bool mine, bool running, uint64_t mib = 10,
                 int64_t stopped_ms = 0) {
  return {.id = std::move(id),
          .mine = mine,
          .running = running,
          .memory_bound_bytes = mib * kMiB,
          .stopped_unix_ms = stopped_ms};
}

std::string Message(const AdmissionDecision& d) {
  return d.refusal.error_message();
}

TEST(Admission, AnEmptyDaemonAdmits) {
  EXPECT_EQ(Admit(SmallLimits(), User(), {}).kind, Kind::kAdmit);
}

TEST(Admission, OneSessionAboveItsOwnBoundIsRefusedWhateverIsFree) {
  const AdmissionDecision d = Admit(SmallLimits(), Root(301), {});
  ASSERT_EQ(d.kind, Kind::kRefuse);
  EXPECT_EQ(d.refusal.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(Message(d).find("limits.max_session_memory_bytes 300 MiB"), std::string::npos)
      << Message(d);
}

TEST(Admission, AClientAtItsCapEvictsItsOldestEndedSession) {
  const std::vector<HeldSession> held = {Held("a", true, false, 10, 300),
                                         Held("b", true, false, 10, 100), Held("c", true, true)};
  const AdmissionDecision d = Admit(SmallLimits(), User(), held);
  ASSERT_EQ(d.kind, Kind::kEvict);
  EXPECT_EQ(d.evict_id, "b");  // ended first
  EXPECT_NE(d.reason.find("limits.max_sessions_per_client"), std::string::npos) << d.reason;
}

TEST(Admission, AClientWhoseSessionsAllRunIsRefusedWithWhatToDo) {
  const std::vector<HeldSession> held = {Held("a", true, true), Held("b", true, true),
                                         Held("c", true, true)};
  const AdmissionDecision d = Admit(SmallLimits(), User(), held);
  ASSERT_EQ(d.kind, Kind::kRefuse);
  EXPECT_NE(Message(d).find("none of yours has ended"), std::string::npos) << Message(d);
}

TEST(Admission, NobodyEvictsAnotherClientsSession) {
  // Three held, all ended, none the applicant's: the non-admin cap (5 less 2 reserved) is full.
  const std::vector<HeldSession> held = {Held("x", false, false), Held("y", false, false),
                                         Held("z", false, false)};
  const AdmissionDecision d = Admit(SmallLimits(), User(), held);
  ASSERT_EQ(d.kind, Kind::kRefuse);
  EXPECT_NE(Message(d).find("limits.admin_reserved_sessions"), std::string::npos) << Message(d);
}

// An admin is not one client among many: 20 sessions of root are admitted where a user's
// cap is 8 (the defaults), and a user's cap is unchanged by it. max_sessions bounds both.
TEST(Admission, AnAdminHasItsOwnCapAboveTheClients) {
  Limits l;  // the defaults: 8 per client, 64 in all
  EXPECT_GE(SessionsPerClient(l, /*admin=*/true), 32u);
  EXPECT_EQ(SessionsPerClient(l, /*admin=*/false), 8u);
  std::vector<HeldSession> twenty;
  for (int i = 0; i < 20; ++i) twenty.push_back(Held("r" + std::to_string(i), true, true));
  EXPECT_EQ(Admit(l, Root(), twenty).kind, Kind::kAdmit);
  const AdmissionDecision user =
      Admit(l, User(), std::vector<HeldSession>(twenty.begin(), twenty.begin() + 8));
  ASSERT_EQ(user.kind, Kind::kRefuse);
  EXPECT_NE(Message(user).find("limits.max_sessions_per_client"), std::string::npos)
      << Message(user);
  l.max_sessions_per_admin = 20;
  const AdmissionDecision capped = Admit(l, Root(), twenty);
  ASSERT_EQ(capped.kind, Kind::kRefuse);
  EXPECT_NE(Message(capped).find("limits.max_sessions_per_admin"), std::string::npos)
      << Message(capped);
}

TEST(Admission, TheReservedPlacesAreAdminsOnly) {
  const std::vector<HeldSession> held = {Held("x", false, true), Held("y", false, true),
                                         Held("z", false, true)};
  EXPECT_EQ(Admit(SmallLimits(), Root(), held).kind, Kind::kAdmit);
  std::vector<HeldSession> full = held;
  full.push_back(Held("v", false, true));
  full.push_back(Held("w", false, true));
  const AdmissionDecision d = Admit(SmallLimits(), Root(), full);
  ASSERT_EQ(d.kind, Kind::kRefuse);
  EXPECT_NE(Message(d).find("allowed (limits.max_sessions)"), std::string::npos) << Message(d);
}

TEST(Admission, MemoryCapsLeaveTheAdminsReserveAndEachClientItsShare) {
  // Non-admin memory: 1000 - 200 = 800 MiB; one client's share of it: 400 MiB.
  const std::vector<HeldSession> mine = {Held("m", true, true, 250)};
  const AdmissionDecision share = Admit(SmallLimits(), User(200), mine);
  ASSERT_EQ(share.kind, Kind::kRefuse);
  EXPECT_NE(Message(share).find("250 MiB of the 400 MiB one client may hold"), std::string::npos)
      << Message(share);
  EXPECT_EQ(Admit(SmallLimits(), User(150), mine).kind, Kind::kAdmit);  // 400 exactly

  const std::vector<HeldSession> others = {Held("o1", false, true, 300),
                                           Held("o2", false, true, 300)};
  const AdmissionDecision all = Admit(SmallLimits(), User(250), others);
  ASSERT_EQ(all.kind, Kind::kRefuse);
  EXPECT_NE(Message(all).find("600 MiB of the 800 MiB allowed"), std::string::npos) << Message(all);
  EXPECT_EQ(Admit(SmallLimits(), Root(250), others).kind, Kind::kAdmit);  // 850 of 1000
}

}  // namespace
}  // namespace pathprof::daemon
