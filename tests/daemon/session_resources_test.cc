// Sessions as resources (AIP-131/133/158), over real gRPC on the real daemon's socket:
// CreateSession takes a Session whose settings GetSession and ListSessions give back with the
// defaults filled in; the deprecated StartSession is the same path; GetSession authorizes as every
// call naming a session does; page tokens are opaque and continue only their own request; and
// errors carry specific ErrorInfo reasons.
#include <google/protobuf/util/message_differencer.h>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pwd.h>

#include "daemon_harness.h"
#include "pathprof/api/grpc_status.h"
#include "pathprof/v1/profiler.grpc.pb.h"

namespace pathprof::daemon::testing {
namespace {

using google::protobuf::util::MessageDifferencer;

// A connection of its own (gRPC otherwise shares one among channels to the same address), made
// with the credentials the process has at the first call.
std::unique_ptr<v1::PathProfiler::Stub> Connect(const Daemon& d) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::PathProfiler::NewStub(
      grpc::CreateCustomChannel("unix:" + d.socket(), grpc::InsecureChannelCredentials(), args));
}

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

std::string Reason(const grpc::Status& s) {
  auto info = api::ErrorInfoOf(s);
  return info ? info->reason() : "(no ErrorInfo)";
}

// Settings that differ from every default they can (stacks only: no tracer on the loop).
v1::SessionSettings Unusual() {
  v1::SessionSettings s;
  s.set_source(v1::SOURCE_CHOICE_NONE);
  s.mutable_engine()->set_path_kind(v1::PATH_KIND_WPP);
  s.mutable_engine()->set_max_path_length(16);
  s.mutable_engine()->set_hpt_entries(1024);
  s.mutable_engine()->set_hpt_ways(8);
  s.mutable_engine()->set_metric(v1::METRIC_INSTRUCTIONS);
  s.mutable_engine()->set_hpt_replacement(v1::HPT_REPLACEMENT_LRU);
  s.mutable_sampling()->set_stack_hz(7);
  s.mutable_sampling()->set_window_branches(16);
  s.mutable_sampling()->set_call_graph(v1::CALL_GRAPH_FRAME_POINTERS);
  s.mutable_sampling()->set_step_mode(v1::STEP_MODE_INT3);
  s.mutable_osp()->set_memory_entries(5000);
  s.mutable_osp()->set_max_length(512);
  s.mutable_osp()->set_confidence(0.9);
  s.mutable_pcct()->set_max_depth(64);
  s.mutable_pcct()->set_max_nodes(50000);
  s.mutable_pcct()->mutable_purge_interval()->set_seconds(30);
  s.mutable_duration()->set_seconds(600);
  s.set_follow_children(true);
  s.set_max_descendants(3);
  return s;
}

class SessionResources : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.Ready()) << daemon_.Log();
    stub_ = Connect(daemon_);
  }
  grpc::Status Create(const v1::SessionSettings& settings, v1::Session* out) {
    v1::CreateSessionRequest req;
    req.mutable_session()->mutable_target()->set_pid(loop_.pid());
    *req.mutable_session()->mutable_settings() = settings;
    return stub_->CreateSession(Ctx().get(), req, out);
  }
  grpc::Status Get(const std::string& name, v1::Session* out) {
    v1::GetSessionRequest req;
    req.set_name(name);
    return stub_->GetSession(Ctx().get(), req, out);
  }
  Daemon daemon_;
  HotLoop loop_;
  std::unique_ptr<v1::PathProfiler::Stub> stub_;
};

TEST_F(SessionResources, CreateThenGetGivesTheSettingsBackWithDefaultsFilledIn) {
  v1::Session created;
  ASSERT_TRUE(Create(Unusual(), &created).ok()) << daemon_.Log();
  ASSERT_EQ(created.name().rfind("sessions/", 0), 0u) << created.name();
  v1::Session got;
  ASSERT_TRUE(Get(created.name(), &got).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(got.settings(), created.settings()))
      << got.settings().DebugString() << created.settings().DebugString();
  EXPECT_EQ(got.target().pid(), loop_.pid());
  EXPECT_EQ(got.pids_size(), 1);
  // What was asked comes back as asked...
  const v1::SessionSettings& s = got.settings();
  const v1::SessionSettings asked = Unusual();
  EXPECT_EQ(s.source(), v1::SOURCE_CHOICE_NONE);
  EXPECT_TRUE(MessageDifferencer::Equals(s.osp(), asked.osp())) << s.osp().DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(s.pcct(), asked.pcct())) << s.pcct().DebugString();
  EXPECT_EQ(s.engine().path_kind(), v1::PATH_KIND_WPP);
  EXPECT_EQ(s.engine().hpt_entries(), 1024);
  EXPECT_EQ(s.engine().hpt_ways(), 8);
  EXPECT_EQ(s.engine().max_path_length(), 16);
  EXPECT_EQ(s.engine().metric(), v1::METRIC_INSTRUCTIONS);
  EXPECT_EQ(s.engine().hpt_replacement(), v1::HPT_REPLACEMENT_LRU);
  EXPECT_EQ(s.sampling().stack_hz(), 7);
  EXPECT_EQ(s.sampling().window_branches(), 16);
  EXPECT_EQ(s.sampling().call_graph(), v1::CALL_GRAPH_FRAME_POINTERS);
  EXPECT_EQ(s.sampling().step_mode(), v1::STEP_MODE_INT3);
  EXPECT_EQ(s.duration().seconds(), 600);
  EXPECT_TRUE(s.follow_children());
  EXPECT_EQ(s.max_descendants(), 3);
  // ... and what was left unset holds the default in use.
  EXPECT_EQ(s.engine().extension(), 2);
  EXPECT_EQ(s.engine().hpt_index(), v1::HPT_INDEX_XOR);
  EXPECT_EQ(s.sampling().lbr_period(), 100003);
  EXPECT_DOUBLE_EQ(s.sampling().max_stopped_fraction(), 0.04);

  // The settings a reply shows create the same session again.
  v1::Session again;
  ASSERT_TRUE(Create(got.settings(), &again).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(again.settings(), got.settings()));
  EXPECT_NE(again.name(), got.name());

  // ListSessions and StopSession carry them too.
  v1::ListSessionsResponse list;
  ASSERT_TRUE(stub_->ListSessions(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.sessions_size(), 2);
  for (const auto& x : list.sessions())
    EXPECT_TRUE(MessageDifferencer::Equals(x.settings(), got.settings())) << x.name();
  v1::StopSessionRequest stop;
  stop.set_name(got.name());
  v1::Session stopped;
  ASSERT_TRUE(stub_->StopSession(Ctx().get(), stop, &stopped).ok());
  EXPECT_EQ(stopped.state(), v1::SESSION_STATE_STOPPED);
  EXPECT_TRUE(MessageDifferencer::Equals(stopped.settings(), got.settings()));
  EXPECT_EQ(stopped.target().pid(), loop_.pid());

  // Defaults alone: an empty Session's settings come back whole.
  v1::Session plain;
  v1::SessionSettings none;
  none.set_source(v1::SOURCE_CHOICE_NONE);
  ASSERT_TRUE(Create(none, &plain).ok());
  EXPECT_EQ(plain.settings().engine().hpt_entries(), 512);
  EXPECT_EQ(plain.settings().sampling().stack_hz(), 99);
  EXPECT_EQ(plain.settings().osp().memory_entries(), 10000);
  EXPECT_EQ(plain.settings().max_descendants(), 4);
  EXPECT_NE(plain.settings().sampling().step_mode(), v1::STEP_MODE_UNSPECIFIED);
}

// StartSession is CreateSession under its old name: the same session from the same fields, and
// its errors name the fields as its request spells them.
TEST_F(SessionResources, StartSessionIsAnAliasOfCreateSession) {
  const v1::SessionSettings settings = Unusual();
  v1::StartSessionRequest start;
  start.set_pid(loop_.pid());
  start.set_source(settings.source());
  *start.mutable_engine() = settings.engine();
  *start.mutable_sampling() = settings.sampling();
  *start.mutable_osp() = settings.osp();
  *start.mutable_pcct() = settings.pcct();
  *start.mutable_duration() = settings.duration();
  start.set_follow_children(settings.follow_children());
  start.set_max_descendants(settings.max_descendants());
  v1::Session started, created;
  ASSERT_TRUE(stub_->StartSession(Ctx().get(), start, &started).ok()) << daemon_.Log();
  ASSERT_TRUE(Create(settings, &created).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(started.settings(), created.settings()))
      << started.settings().DebugString() << created.settings().DebugString();
  EXPECT_EQ(started.target().pid(), loop_.pid());
  v1::Session got;
  ASSERT_TRUE(Get(started.name(), &got).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(got.settings(), started.settings()));

  start.mutable_engine()->set_hpt_entries(1 << 24);
  const grpc::Status old_spelling = stub_->StartSession(Ctx().get(), start, &started);
  EXPECT_EQ(old_spelling.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(old_spelling.error_message().rfind("engine.hpt_entries 16777216 is above", 0), 0u)
      << old_spelling.error_message();
  EXPECT_EQ(api::ErrorInfoOf(old_spelling)->metadata().at("field"), "engine.hpt_entries");
  v1::SessionSettings big = settings;
  big.mutable_engine()->set_hpt_entries(1 << 24);
  const grpc::Status new_spelling = Create(big, &created);
  EXPECT_EQ(new_spelling.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Reason(new_spelling), "ABOVE_LIMIT");
  EXPECT_EQ(api::ErrorInfoOf(new_spelling)->metadata().at("field"),
            "session.settings.engine.hpt_entries");
  v1::CreateSessionRequest no_target;
  const grpc::Status untargeted = stub_->CreateSession(Ctx().get(), no_target, &created);
  EXPECT_EQ(untargeted.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Reason(untargeted), "FIELD_REQUIRED");
  EXPECT_EQ(api::ErrorInfoOf(untargeted)->metadata().at("field"), "session.target");
}

// Page tokens are opaque: a token this server did not make, one garbled in transit, one of the
// other list and one of another filter are refused, each saying so; page_size may change.
TEST_F(SessionResources, PageTokensContinueOnlyTheirOwnRequest) {
  v1::ListTargetsRequest targets;
  targets.set_page_size(1);
  v1::ListTargetsResponse first;
  ASSERT_TRUE(stub_->ListTargets(Ctx().get(), targets, &first).ok());
  const std::string token = first.next_page_token();
  ASSERT_FALSE(token.empty());
  EXPECT_NE(token, std::to_string(first.targets(0).pid()));  // not the bare pid it once was
  EXPECT_NE(token.find_first_not_of("0123456789"), std::string::npos) << token;
  targets.set_page_token(token);
  targets.set_page_size(2);  // allowed to change
  v1::ListTargetsResponse second;
  ASSERT_TRUE(stub_->ListTargets(Ctx().get(), targets, &second).ok());
  ASSERT_GE(second.targets_size(), 1);
  EXPECT_GT(second.targets(0).pid(), first.targets(0).pid());

  auto refused = [&](const v1::ListTargetsRequest& req, const std::string& says) {
    v1::ListTargetsResponse out;
    const grpc::Status s = stub_->ListTargets(Ctx().get(), req, &out);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << req.page_token();
    EXPECT_NE(s.error_message().find(says), std::string::npos) << s.error_message();
    EXPECT_EQ(Reason(s), "PAGE_TOKEN_INVALID");
    EXPECT_EQ(api::ErrorInfoOf(s)->metadata().at("field"), "page_token");
  };
  v1::ListTargetsRequest forged = targets;
  forged.set_page_token(std::to_string(first.targets(0).pid()));  // the old bare-pid token
  refused(forged, "is not one this server gave");
  std::string flipped = token;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
  forged.set_page_token(flipped);
  refused(forged, "is not one this server gave");
  v1::ListTargetsRequest other_filter = targets;
  other_filter.set_name_filter("example_hotl");
  refused(other_filter, "continues a ListTargets request with other fields");

  // ListSessions' tokens are its own.
  for (int i = 0; i < 2; ++i) {
    v1::Session s;
    v1::SessionSettings stacks;
    stacks.set_source(v1::SOURCE_CHOICE_NONE);
    stacks.mutable_sampling()->set_stack_hz(1);
    ASSERT_TRUE(Create(stacks, &s).ok());
  }
  v1::ListSessionsRequest sessions;
  sessions.set_page_size(1);
  v1::ListSessionsResponse page;
  ASSERT_TRUE(stub_->ListSessions(Ctx().get(), sessions, &page).ok());
  ASSERT_FALSE(page.next_page_token().empty());
  EXPECT_EQ(page.next_page_token().find("sessions/"), std::string::npos)
      << page.next_page_token();  // not the name it holds
  v1::ListTargetsRequest crossed = targets;
  crossed.set_page_token(page.next_page_token());
  refused(crossed, "continues ListSessions, not ListTargets");
  sessions.set_page_token(token);
  const grpc::Status s = stub_->ListSessions(Ctx().get(), sessions, &page);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Reason(s), "PAGE_TOKEN_INVALID");
  EXPECT_NE(s.error_message().find("continues ListTargets, not ListSessions"), std::string::npos);
}

// The calling process takes the test user's uid and group for as long as it lives, so that a
// connection made meanwhile is the user's (the daemon reads SO_PEERCRED at connect). glibc
// applies set*id to every thread, gRPC's included.
class AsTestUser {
 public:
  AsTestUser() {
    const passwd* pw = getpwnam(kTestUser);
    const group* gr = getgrnam(kTestGroup);
    ok_ = pw && gr && setegid(gr->gr_gid) == 0 && seteuid(pw->pw_uid) == 0;
  }
  ~AsTestUser() {
    (void)seteuid(0);
    (void)setegid(0);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

TEST(SessionResourcesAuth, GetSessionOfAnotherUsersSessionIsRefusedAsEveryCallNamingOne) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as the test user";
  EnsureTestUser();
  Daemon d("", {"--socket-group", kTestGroup, "--admin-group", "pathprof-test-admins"});
  ASSERT_TRUE(d.Ready()) << d.Log();
  HotLoop roots;
  auto root = Connect(d);
  v1::CreateSessionRequest req;
  req.mutable_session()->mutable_target()->set_pid(roots.pid());
  req.mutable_session()->mutable_settings()->set_source(v1::SOURCE_CHOICE_NONE);
  v1::Session rs;
  ASSERT_TRUE(root->CreateSession(Ctx().get(), req, &rs).ok()) << d.Log();

  grpc::Status get, paths, missing;
  v1::Session seen;
  {
    AsTestUser as;
    ASSERT_TRUE(as.ok()) << "cannot act as " << kTestUser;
    auto user = Connect(d);
    v1::GetSessionRequest g;
    g.set_name(rs.name());
    get = user->GetSession(Ctx().get(), g, &seen);
    v1::GetHotPathsRequest p;
    p.set_session(rs.name());
    v1::HotPaths hp;
    paths = user->GetHotPaths(Ctx().get(), p, &hp);
    g.set_name("sessions/no-such");
    missing = user->GetSession(Ctx().get(), g, &seen);
  }
  EXPECT_EQ(get.error_code(), grpc::StatusCode::PERMISSION_DENIED) << get.error_message();
  EXPECT_EQ(get.error_message(), "session " + rs.name() + " belongs to uid 0");
  EXPECT_EQ(Reason(get), "SESSION_NOT_PERMITTED");
  EXPECT_EQ(get.error_code(), paths.error_code());
  EXPECT_EQ(get.error_message(), paths.error_message());
  EXPECT_EQ(Reason(get), Reason(paths));
  EXPECT_TRUE(seen.name().empty());
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Reason(missing), "SESSION_NOT_FOUND");

  // pathctl session shows it to root, and refuses the user as pathctl paths does (exit 5).
  const CmdResult shown = d.Ctl("session " + rs.name());
  EXPECT_EQ(shown.rc, 0) << shown.out;
  EXPECT_NE(shown.out.find("pid " + std::to_string(roots.pid())), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("source    none: asked for"), std::string::npos) << shown.out;
  const CmdResult json = d.Ctl("session " + rs.name() + " --json");
  EXPECT_NE(json.out.find("\"settings\""), std::string::npos) << json.out;
  const std::string as = EnsureTestUser();
  const CmdResult denied = d.Ctl("session " + rs.name(), as);
  EXPECT_EQ(denied.rc, 5) << denied.out;
  EXPECT_NE(denied.out.find("belongs to uid 0"), std::string::npos) << denied.out;
}

}  // namespace
}  // namespace pathprof::daemon::testing
