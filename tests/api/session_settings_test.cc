// A Session's settings <-> the pipeline's SessionConfig: defaults filled in on the way out, the
// way back gives the same config, and StartSessionRequest's flat fields lift into a Session.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "pathprof/api/grpc_status.h"
#include "pathprof/api/session_request.h"

namespace pathprof::api {
namespace {

using google::protobuf::util::MessageDifferencer;

TEST(SessionSettings, UnsetFieldsComeBackAsTheDefaultsInUse) {
  SessionBounds bounds;
  bounds.default_step_mode = stepping::StepMode::kEmulate;  // the daemon's [ptrace] step_mode
  pipeline::SessionConfig c;
  ASSERT_TRUE(ToSessionConfig(v1::SessionSettings{}, bounds, "", &c).ok());
  v1::SessionSettings out;
  ToProto(c, &out);
  const pipeline::SessionConfig defaults;
  EXPECT_EQ(out.source(), v1::SOURCE_CHOICE_AUTO);
  EXPECT_EQ(out.engine().path_kind(), v1::PATH_KIND_BALL_LARUS);
  EXPECT_EQ(out.engine().hpt_entries(), static_cast<int32_t>(defaults.engine.hpt_entries));
  EXPECT_EQ(out.engine().hpt_index(), v1::HPT_INDEX_XOR);
  EXPECT_EQ(out.engine().hpt_replacement(), v1::HPT_REPLACEMENT_LFU);
  EXPECT_EQ(out.engine().metric(), v1::METRIC_COUNT);
  EXPECT_TRUE(out.sampling().has_stack_hz());
  EXPECT_EQ(out.sampling().stack_hz(), 99);
  EXPECT_EQ(out.sampling().step_mode(), v1::STEP_MODE_EMULATE);
  EXPECT_EQ(out.sampling().call_graph(), v1::CALL_GRAPH_DWARF);
  EXPECT_DOUBLE_EQ(out.osp().confidence(), 0.95);
  EXPECT_EQ(out.pcct().max_nodes(), static_cast<int32_t>(defaults.pcct.max_nodes));
  EXPECT_TRUE(out.has_duration());
  EXPECT_EQ(out.duration().seconds(), 0);
  EXPECT_EQ(out.max_descendants(), 4);  // the API's default, not the pipeline's
}

TEST(SessionSettings, TheSettingsShownCreateTheSameConfigAgain) {
  v1::SessionSettings in;
  in.set_source(v1::SOURCE_CHOICE_PTRACE);
  in.mutable_engine()->set_path_kind(v1::PATH_KIND_EXTENDED_CALLS);
  in.mutable_engine()->set_extension(3);
  in.mutable_engine()->set_hpt_index(v1::HPT_INDEX_START);
  in.mutable_sampling()->set_stack_hz(0);  // set to 0: no stacks, not the default 99
  in.mutable_sampling()->set_bursts_per_second(50);
  in.mutable_sampling()->set_step_mode(v1::STEP_MODE_SINGLE_STEP);
  in.mutable_pcct()->mutable_purge_interval()->set_seconds(10);
  in.mutable_duration()->set_seconds(60);
  pipeline::SessionConfig first, second;
  ASSERT_TRUE(ToSessionConfig(in, SessionBounds{}, "", &first).ok());
  v1::SessionSettings shown, shown_again;
  ToProto(first, &shown);
  EXPECT_EQ(shown.sampling().stack_hz(), 0);
  EXPECT_EQ(shown.engine().extension(), 3);
  EXPECT_EQ(shown.engine().hpt_index(), v1::HPT_INDEX_START);
  EXPECT_DOUBLE_EQ(shown.sampling().bursts_per_second(), 50);
  EXPECT_EQ(shown.pcct().purge_interval().seconds(), 10);
  ASSERT_TRUE(ToSessionConfig(shown, SessionBounds{}, "", &second).ok());
  ToProto(second, &shown_again);
  EXPECT_TRUE(MessageDifferencer::Equals(shown, shown_again)) << shown_again.DebugString();
  EXPECT_EQ(second.sampling.stack_hz, 0u);
  EXPECT_EQ(second.duration_s, 60u);
}

TEST(SessionSettings, ErrorsNameTheFieldAsTheRequestSpellsIt) {
  v1::SessionSettings in;
  in.mutable_osp()->set_memory_entries(-5);
  pipeline::SessionConfig c;
  const grpc::Status s = ToSessionConfig(in, SessionBounds{}, kCreateSettingsField, &c);
  EXPECT_EQ(s.error_message(), "session.settings.osp.memory_entries -5 is negative");
  EXPECT_EQ(ErrorInfoOf(s)->metadata().at("field"), "session.settings.osp.memory_entries");
  EXPECT_EQ(ErrorInfoOf(s)->reason(), "FIELD_OUT_OF_RANGE");
  in.Clear();
  in.mutable_sampling()->set_max_stopped_fraction(0.9);
  const grpc::Status flat = ToSessionConfig(in, SessionBounds{}, "", &c);
  EXPECT_EQ(flat.error_message(), "sampling.max_stopped_fraction must be in [0, 0.5]");
  EXPECT_EQ(ErrorInfoOf(flat)->metadata().at("field"), "sampling.max_stopped_fraction");
}

TEST(SessionSettings, StartSessionRequestLiftsIntoTargetAndSettings) {
  v1::StartSessionRequest req;
  req.set_systemd_unit("nginx");
  req.set_source(v1::SOURCE_CHOICE_LBR);
  req.mutable_engine()->set_hpt_entries(2048);
  req.mutable_sampling()->set_stack_hz(0);
  req.mutable_duration()->set_seconds(5);
  req.set_follow_children(true);
  req.set_max_descendants(9);
  const v1::SessionTarget t = TargetOf(req);
  EXPECT_EQ(t.selector_case(), v1::SessionTarget::kSystemdUnit);
  EXPECT_EQ(t.systemd_unit(), "nginx");
  const v1::SessionSettings s = SettingsOf(req);
  EXPECT_EQ(s.source(), v1::SOURCE_CHOICE_LBR);
  EXPECT_EQ(s.engine().hpt_entries(), 2048);
  EXPECT_TRUE(s.sampling().has_stack_hz());
  EXPECT_EQ(s.duration().seconds(), 5);
  EXPECT_TRUE(s.follow_children());
  EXPECT_EQ(s.max_descendants(), 9);
  EXPECT_FALSE(s.has_osp());  // unset stays unset: the defaults are the server's to fill in
  EXPECT_EQ(TargetOf(v1::StartSessionRequest{}).selector_case(),
            v1::SessionTarget::SELECTOR_NOT_SET);
}

}  // namespace
}  // namespace pathprof::api
