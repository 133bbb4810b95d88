#include "pathctl/session_flags.h"

#include <cstdio>
#include <string>

#include "pathctl/request_fields.h"
#include "pathprof/api/session_request.h"
#include "pathprof/pipeline/session_defaults.h"

namespace pathctl {
namespace {

namespace pl = pathprof::pipeline;
constexpr const pl::SessionDefaults& kDefaults = pl::kSessionDefaults;
// A session setting's field in a CreateSessionRequest. (A function, not a std::string constant:
// the commands' declarations are made during static initialization, in any order.)
std::string Setting(const char* path) {
  return std::string("session.settings.") + path;
}

std::string Text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

std::vector<Flag> SessionFlags(bool follows_children) {
  return {
      WordsFlag("source", {"auto", "none", "ptrace", "lbr", "pt", "snapshot", "hybrid"}, "auto",
                "branch source: auto is the best the host has (pt > lbr > ptrace bursts > "
                "snapshot: windows emulated from the eBPF sampler's snapshots, no stop); hybrid: "
                "snapshot windows, and stop-and-emulate windows for a process whose snapshot "
                "windows end too early")
          .Accepts([](const std::string& s) {
            pl::SourceChoice c;
            return pl::ParseSourceChoice(s, &c);
          })
          .Sets(Setting("source")),
      WordsFlag("step-mode", {"auto", "emulate", "breakpoints", "int3", "step"}, "",
                "how ptrace bursts step a window (default: start, the daemon's [ptrace] "
                "step_mode; run, auto: what `pathctl caps` found works best)")
          .Accepts([](const std::string& s) {
            pathprof::stepping::StepRequest c;
            return pathprof::stepping::ParseStepRequest(s, &c);
          })
          .Sets(Setting("sampling.step_mode")),
      WordsFlag("call-graph", {"dwarf", "fp"}, "dwarf",
                "user stacks: DWARF CFI on a copy of the stack (dwarf,SIZE: copy SIZE bytes, "
                "4096..65536, default " +
                    std::to_string(kDefaults.stack_copy_bytes) +
                    "; deep stacks need more), or frame pointers alone")
          .Accepts([](const std::string& s) {
            pl::CallGraph c;
            uint32_t bytes = 0;
            return pl::ParseCallGraphSpec(s, &c, &bytes);
          })
          .Sets(Setting("sampling.call_graph,") + Setting("sampling.stack_copy_bytes")),
      IntFlag("freq", "HZ", std::to_string(kDefaults.stack_hz), 0, 10000,
              "eBPF stack samples per second (0: off; formerly --stack-hz)")
          .Short("-F")
          .Unit("Hz")
          .Sets(Setting("sampling.stack_hz")),
      DoubleFlag("burst-rate", "R", "", 0, 10000,
                 "ptrace bursts per second (default: 1000 emulated, 20 stepped; formerly "
                 "--bursts-per-second); --source snapshot: windows per second (default 999)")
          .Sets(Setting("sampling.bursts_per_second")),
      IntFlag("window", "N", std::to_string(kDefaults.window_branches), 1, 4096,
              "taken branches per window")
          .Sets(Setting("sampling.window_branches")),
      DoubleFlag("max-stopped", "F", Text(kDefaults.max_stopped_fraction), 0, 0.5,
                 "ptrace bursts: cap on the share of any second threads spend stopped")
          .Sets(Setting("sampling.max_stopped_fraction")),
      WordsFlag("path-kind", {"ball-larus", "wpp", "extended-loops", "extended-calls"},
                "ball-larus", "which paths the path engine counts")
          .Accepts([](const std::string& s) {
            pl::PathKind k;
            return pl::ParsePathKind(s, &k);
          })
          .Sets(Setting("engine.path_kind")),
      IntFlag("extension", "N", std::to_string(kDefaults.extension), 1, 255,
              "back-edges or calls an extended path spans")
          .Sets(Setting("engine.extension")),
      IntFlag("max-length", "N", std::to_string(kDefaults.max_path_length), 1, 64,
              "branches per path")
          .Sets(Setting("engine.max_path_length")),
      IntFlag("hpt-entries", "N", std::to_string(kDefaults.hpt_entries), 1, 1 << 24,
              "Hot Path Table size")
          .Sets(Setting("engine.hpt_entries")),
      IntFlag("osp-entries", "N", std::to_string(kDefaults.osp_memory_entries), 16, 1 << 24,
              "OSP memory bound (subpaths kept)")
          .Sets(Setting("osp.memory_entries")),
      IntFlag("max-depth", "N", std::to_string(kDefaults.pcct_max_depth), 1, 4096,
              "PCCT depth bound")
          .Sets(Setting("pcct.max_depth")),
      DurationFlag("duration", "", 1, 0, kMaxU32,
                   "stop after DUR (default: run, when CMD exits; start, when stopped; start "
                   "takes whole seconds)")
          .Sets(Setting("duration")),
      BoolFlag("inherit", std::string("profile the processes the targets fork from now on too "
                                      "(stacks; each counts against the memory quota)") +
                              (follows_children ? " (the default)" : ""))
          .Sets(Setting("follow_children")),
      BoolFlag("no-inherit",
               std::string("profile the targets only") + (follows_children ? "" : " (the default)"))
          .Sets(Setting("follow_children"), "false"),
      IntFlag("max-descendants", "N", std::to_string(kDefaults.max_descendants), 1, 1024,
              "when children are followed: descendants profiled at most (further ones are "
              "counted)")
          .Sets(Setting("max_descendants")),
  };
}

bool FollowChildren(const Args& args, bool by_default, std::vector<std::string>* problems) {
  const bool inherit = args.Has("inherit"), no_inherit = args.Has("no-inherit");
  if (inherit && no_inherit) problems->push_back("give --inherit or --no-inherit, not both");
  return inherit || (!no_inherit && by_default);
}

void ReadSessionRequest(const Args& args, const std::vector<Flag>& flags, bool follows_children,
                        pathprof::v1::CreateSessionRequest* request,
                        std::vector<std::string>* problems) {
  const bool follow_children = FollowChildren(args, follows_children, problems);
  // Without following children no descendant is profiled: --max-descendants is left unread
  // (reported as not applying).
  std::vector<Flag> read;
  for (const Flag& f : flags)
    if (follow_children || f.name != "max-descendants") read.push_back(f);
  FillRequest(args, read, request, problems);
  // Neither --inherit nor --no-inherit: the default, said here as the usage says it.
  request->mutable_session()->mutable_settings()->set_follow_children(follow_children);
}

void ReadSessionConfig(const Args& args, pl::SessionConfig* config,
                       std::vector<std::string>* problems) {
  pathprof::v1::CreateSessionRequest request;
  ReadSessionRequest(args, SessionFlags(kRunFollowsChildren), kRunFollowsChildren, &request,
                     problems);
  pathprof::v1::SessionSettings settings = request.session().settings();
  // run times --duration itself, to the millisecond: the session's own timer counts whole
  // seconds.
  settings.clear_duration();
  // The daemon's conversion, with no server's limits (the flags' ranges hold) and an unset step
  // mode meaning auto.
  if (grpc::Status s =
          pathprof::api::ToSessionConfig(settings, {}, pathprof::api::kCreateSettingsField, config);
      !s.ok())
    problems->push_back(s.error_message());
}

}  // namespace pathctl
