#include "llvm_mca_reference.h"

#include <Zydis/Zydis.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "zydis_decoder.h"

namespace pathprof::decoders {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

struct ToolOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs argv with `input` on stdin (a memfd, so no pipe can fill up while we read) and collects
// what it prints, killing it after `timeout_ms`.
Result<ToolOutput> RunTool(const std::vector<std::string>& argv, const std::string& input,
                           int timeout_ms) {
  const int in = memfd_create("pathprof-mca-input", MFD_CLOEXEC);
  if (in < 0) return Error(ErrorCode::kInternal, std::string("memfd_create: ") + strerror(errno));
  for (size_t done = 0; done < input.size();) {
    const ssize_t n = write(in, input.data() + done, input.size() - done);
    if (n <= 0) {
      close(in);
      return Error(ErrorCode::kInternal, "llvm-mca reference: cannot write llvm-mca's input");
    }
    done += static_cast<size_t>(n);
  }
  lseek(in, 0, SEEK_SET);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in);
    return Error(ErrorCode::kInternal, std::string("pipe: ") + strerror(errno));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn rather than fork + exec: tests are multithreaded, and between fork and exec
  // only async-signal-safe calls are allowed (execvp's PATH search is not one).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    close(in);
    close(out[0]);
    close(out[1]);
    return Error(spawned == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInternal,
                 "cannot run '" + argv[0] + "': " + strerror(spawned));
  }
  close(in);
  close(out[1]);
  ToolOutput result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return Error(ErrorCode::kResourceExhausted,
                 "llvm-mca did not finish within " + std::to_string(timeout_ms) + " ms");
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

const ZydisFormatter& Formatter() {
  static const ZydisFormatter formatter = [] {
    ZydisFormatter f;
    ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_INTEL);
    return f;
  }();
  return formatter;
}

bool HasRelativeTarget(const ZydisDecodedInstruction& insn) {
  for (int i = 0; i < 2; ++i)
    if (insn.raw.imm[i].size != 0 && insn.raw.imm[i].is_relative) return true;
  return false;
}

// llvm-mca's per-region figures: "[N] Code Region - bK", then "Iterations:" and "Total Cycles:".
std::vector<double> ParseCyclesPerRun(const std::string& output, size_t regions) {
  std::vector<double> cycles(regions, kUnknown);
  std::istringstream lines(output);
  std::string line;
  long region = -1;
  double iterations = 0;
  while (std::getline(lines, line)) {
    const size_t tag = line.find("Code Region - b");
    if (tag != std::string::npos) {
      region = std::strtol(line.c_str() + tag + 15, nullptr, 10);
      iterations = 0;
    } else if (line.rfind("Iterations:", 0) == 0) {
      iterations = std::strtod(line.c_str() + 11, nullptr);
    } else if (line.rfind("Total Cycles:", 0) == 0 && region >= 0 &&
               static_cast<size_t>(region) < regions && iterations > 0) {
      cycles[static_cast<size_t>(region)] = std::strtod(line.c_str() + 13, nullptr) / iterations;
    }
  }
  return cycles;
}

// One llvm-mca run over `blocks`: one assembly unit with a region per block, each ending at
// the label its branches name.
Result<std::vector<double>> RunOnce(std::span<const CodeBlock> blocks,
                                    const LlvmMcaOptions& options, LlvmMcaStats* stats) {
  std::string input = ".intel_syntax noprefix\n";
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string label = ".Lb" + std::to_string(i);
    input += "# LLVM-MCA-BEGIN b" + std::to_string(i) + "\n" + BlockAssembly(blocks[i], label);
    input += label + ":\n# LLVM-MCA-END\n";
  }
  ++stats->runs;
  PATHPROF_ASSIGN_OR_RETURN(
      auto run, RunTool({options.llvm_mca, "-mcpu=" + options.cpu,
                         "-iterations=" + std::to_string(options.iterations), "-timeline=false",
                         "-resource-pressure=false", "-instruction-info=false", "-"},
                        input, options.timeout_ms));
  if (run.exit_code != 0) {
    ++stats->failed_runs;
    return Error(ErrorCode::kInvalidArgument,
                 "llvm-mca failed: " + run.output.substr(0, run.output.find('\n')));
  }
  return ParseCyclesPerRun(run.output, blocks.size());
}

// Cycles of `blocks` into `out`, splitting a failed run in halves: one block llvm-mca cannot
// parse fails the run it is in.
Status Measure(std::span<const CodeBlock> blocks, const LlvmMcaOptions& options,
               LlvmMcaStats* stats, double* out) {
  if (blocks.empty()) return Status::Ok();
  auto run = RunOnce(blocks, options, stats);
  if (run.ok()) {
    std::copy(run->begin(), run->end(), out);
    return Status::Ok();
  }
  if (run.status().code() != ErrorCode::kInvalidArgument) return run.status();  // not a block's
  if (blocks.size() == 1) return Status::Ok();                                  // stays NaN
  const size_t half = blocks.size() / 2;
  PATHPROF_RETURN_IF_ERROR(Measure(blocks.first(half), options, stats, out));
  return Measure(blocks.subspan(half), options, stats, out + half);
}

}  // namespace

std::string BlockAssembly(const CodeBlock& block, const std::string& label) {
  std::string text;
  uint64_t address = block.address;
  for (size_t at = 0; at < block.bytes.size();) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ZydisDecoder64(), block.bytes.data() + at,
                                             block.bytes.size() - at, &insn, operands)))
      return {};
    if (HasRelativeTarget(insn)) {
      // Where a jump goes does not change its cost: the block's own label keeps the text
      // assemblable.
      text += ZydisMnemonicGetString(insn.mnemonic);
      text += " " + label + "\n";
    } else {
      char line[256];
      if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&Formatter(), &insn, operands,
                                                        insn.operand_count_visible, line,
                                                        sizeof line, address, nullptr)))
        return {};
      text += line;
      text += '\n';
    }
    at += insn.length;
    address += insn.length;
  }
  return text;
}

Status LlvmMcaAvailable(const LlvmMcaOptions& options) {
  auto run = RunTool({options.llvm_mca, "--version"}, "", options.timeout_ms);
  // -mcpu=native on a CPU this LLVM does not know (Debian 12's LLVM 14 on AMD Zen 5, family 26)
  // falls back to a generic scheduling model: its cycles would describe no real core, so there
  // is no reference to compare with.
  if (run.ok() && run->exit_code == 0 && options.cpu == "native" &&
      run->output.find("Host CPU: (unknown)") != std::string::npos)
    return Error(ErrorCode::kUnavailable,
                 options.llvm_mca +
                     " has no scheduling model for this host's CPU (its --version says Host "
                     "CPU: (unknown)); -mcpu=native would time a generic core");
  if (run.ok() && run->exit_code == 0) return Status::Ok();
  return Error(
      ErrorCode::kUnavailable,
      "cannot run " + options.llvm_mca + " (Debian's llvm package): " +
          (run.ok() ? run->output.substr(0, run->output.find('\n')) : run.status().message()));
}

Result<std::vector<double>> LlvmMcaCycles(std::span<const CodeBlock> blocks,
                                          const LlvmMcaOptions& options, LlvmMcaStats* stats) {
  if (options.max_blocks_per_run == 0 || options.iterations == 0)
    return Error(ErrorCode::kInvalidArgument,
                 "llvm-mca reference: max_blocks_per_run and iterations must be positive");
  LlvmMcaStats local;
  if (!stats) stats = &local;
  std::vector<double> cycles(blocks.size(), kUnknown);
  // Blocks that do not disassemble are left out of the runs (they stay NaN).
  std::vector<CodeBlock> readable;
  std::vector<size_t> index;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (BlockAssembly(blocks[i], ".L").empty()) continue;
    readable.push_back(blocks[i]);
    index.push_back(i);
  }
  std::vector<double> measured(readable.size(), kUnknown);
  for (size_t from = 0; from < readable.size(); from += options.max_blocks_per_run) {
    const size_t n = std::min(options.max_blocks_per_run, readable.size() - from);
    PATHPROF_RETURN_IF_ERROR(
        Measure(std::span(readable).subspan(from, n), options, stats, measured.data() + from));
  }
  for (size_t i = 0; i < readable.size(); ++i) cycles[index[i]] = measured[i];
  return cycles;
}

}  // namespace pathprof::decoders
