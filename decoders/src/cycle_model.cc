#include "pathprof/decoders/cycle_model.h"

#include <Zydis/Zydis.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
      return Error(ErrorCode::kInternal, "cycle model: cannot write llvm-mca's input");
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
  // posix_spawn rather than fork + exec: the daemon is multithreaded, and between fork and exec
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
    return Error(ErrorCode::kResourceExhausted, "cycle model: llvm-mca did not finish within " +
                                                    std::to_string(timeout_ms) + " ms");
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

}  // namespace

Result<std::unique_ptr<CycleModel>> CycleModel::Create(const CycleModelOptions& options) {
  if (options.iterations == 0 || options.max_block_instructions == 0)
    return Error(ErrorCode::kInvalidArgument,
                 "cycle model: iterations and max_block_instructions must be positive");
  std::unique_ptr<CycleModel> m(new CycleModel(options));
  static constexpr uint8_t kAddOne[] = {0x48, 0x83, 0xc0, 0x01};  // add rax, 1
  auto probe = m->EstimateCode(kAddOne, 0x1000);
  if (!probe.ok())
    return Error(ErrorCode::kUnavailable,
                 "cycle model unavailable: " + probe.status().message() +
                     " (install Debian's llvm package for llvm-mca, or weight windows by "
                     "instructions)");
  m->stats_ = CycleModelStats{};
  m->cache_.clear();
  return m;
}

CycleModel::~CycleModel() = default;

std::string CycleModel::Label(uint64_t start, uint32_t instructions) {
  return ".Lt" + std::to_string(start) + "_" + std::to_string(instructions);
}

std::string CycleModel::Disassemble(uint64_t start, uint32_t instructions, uint64_t last,
                                    const CodeReader& code) const {
  if (instructions == 0 || instructions > options_.max_block_instructions) return {};
  std::string text;
  uint64_t address = start;
  for (uint32_t i = 0; i < instructions; ++i) {
    const std::span<const uint8_t> bytes = code(address);
    if (bytes.empty()) return {};
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(
            ZydisDecoderDecodeFull(&ZydisDecoder64(), bytes.data(), bytes.size(), &insn, operands)))
      return {};
    if (i + 1 == instructions && address != last) return {};  // the walk missed the branch
    if (HasRelativeTarget(insn)) {
      // Where a jump goes does not change its cost: the block's own label (at its end, see
      // RunMca) keeps the text assemblable.
      text += ZydisMnemonicGetString(insn.mnemonic);
      text += " " + Label(start, instructions) + "\n";
    } else {
      char line[256];
      if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&Formatter(), &insn, operands,
                                                        insn.operand_count_visible, line,
                                                        sizeof line, address, nullptr)))
        return {};
      text += line;
      text += '\n';
    }
    address += insn.length;
  }
  return text;
}

Result<std::vector<double>> CycleModel::RunMca(const std::vector<const Block*>& blocks) {
  // One assembly unit with a region per block, each ending at the label its branches name
  // (blocks are distinct, so their labels are too).
  std::string input = ".intel_syntax noprefix\n";
  for (size_t i = 0; i < blocks.size(); ++i) {
    input += "# LLVM-MCA-BEGIN b" + std::to_string(i) + "\n" + blocks[i]->assembly;
    input += Label(blocks[i]->start, blocks[i]->instructions) + ":\n# LLVM-MCA-END\n";
  }
  ++stats_.mca_runs;
  PATHPROF_ASSIGN_OR_RETURN(
      auto run, RunTool({options_.llvm_mca, "-mcpu=" + options_.cpu,
                         "-iterations=" + std::to_string(options_.iterations), "-timeline=false",
                         "-resource-pressure=false", "-instruction-info=false", "-"},
                        input, options_.timeout_ms));
  if (run.exit_code != 0) {
    std::string first = run.output.substr(0, run.output.find('\n'));
    return Error(ErrorCode::kInvalidArgument, "llvm-mca failed: " + first);
  }
  return ParseCyclesPerRun(run.output, blocks.size());
}

std::vector<double> CycleModel::Estimate(const std::vector<const Block*>& blocks) {
  if (blocks.empty()) return {};
  auto all = RunMca(blocks);
  if (all.ok()) return *all;
  ++stats_.mca_failures;
  // One block it cannot parse fails the whole run: retry each alone.
  std::vector<double> out(blocks.size(), kUnknown);
  if (blocks.size() == 1) return out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto one = RunMca({blocks[i]});
    if (one.ok()) out[i] = (*one)[0];
  }
  return out;
}

std::vector<double> CycleModel::BlockCycles(std::span<const BranchEvent> events,
                                            const CodeReader& code) {
  std::vector<double> cycles(events.size(), 0.0);
  if (cache_.size() > options_.max_cached_blocks) {
    cache_.clear();
    ++stats_.cache_resets;
  }
  std::vector<Block> fresh;
  std::vector<size_t> fresh_of(events.size(), SIZE_MAX);
  std::unordered_map<std::pair<uint64_t, uint32_t>, size_t, KeyHash> fresh_index;
  for (size_t i = 1; i < events.size(); ++i) {
    const BranchEvent& e = events[i];
    if (e.instructions == 0) continue;
    const std::pair<uint64_t, uint32_t> key{events[i - 1].to, e.instructions};
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.cache_hits;
      if (!std::isnan(it->second)) cycles[i] = it->second;
      continue;
    }
    if (auto it = fresh_index.find(key); it != fresh_index.end()) {
      fresh_of[i] = it->second;
      continue;
    }
    std::string assembly = Disassemble(key.first, key.second, e.from, code);
    if (assembly.empty()) {
      ++stats_.unreadable_blocks;
      cache_.emplace(key, kUnknown);
      continue;
    }
    fresh_index.emplace(key, fresh.size());
    fresh_of[i] = fresh.size();
    fresh.push_back(Block{key.first, key.second, std::move(assembly)});
  }
  std::vector<const Block*> pointers;
  for (const Block& b : fresh) pointers.push_back(&b);
  const std::vector<double> estimates = Estimate(pointers);
  for (size_t b = 0; b < fresh.size(); ++b) {
    const double c = estimates[b];
    if (std::isnan(c)) {
      ++stats_.rejected_blocks;
    } else {
      ++stats_.blocks_estimated;
    }
    cache_.emplace(std::make_pair(fresh[b].start, fresh[b].instructions), c);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    if (fresh_of[i] != SIZE_MAX && !std::isnan(estimates[fresh_of[i]]))
      cycles[i] = estimates[fresh_of[i]];
  }
  return cycles;
}

std::vector<double> CycleModel::WindowDurations(std::span<const BranchEvent> events,
                                                const CodeReader& code) {
  std::vector<double> cycles = BlockCycles(events, code);
  double known_cycles = 0, known_instructions = 0;
  size_t missing = 0;
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i].instructions == 0) continue;
    if (cycles[i] > 0) {
      known_cycles += cycles[i];
      known_instructions += events[i].instructions;
    } else {
      ++missing;
    }
  }
  cycles_seen_ += known_cycles;
  instructions_seen_ += known_instructions;
  if (missing == 0) return cycles;
  const double cpi = known_instructions > 0   ? known_cycles / known_instructions
                     : instructions_seen_ > 0 ? cycles_seen_ / instructions_seen_
                                              : 1.0;
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i].instructions == 0 || cycles[i] > 0) continue;
    cycles[i] = cpi * events[i].instructions;
    ++stats_.imputed_blocks;
  }
  return cycles;
}

Result<double> CycleModel::EstimateCode(std::span<const uint8_t> code, uint64_t address) {
  // Count the instructions first: the block is all of `code`.
  uint32_t count = 0;
  uint64_t last = address;
  for (size_t at = 0; at < code.size();) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ZydisDecoder64(), code.data() + at, code.size() - at,
                                             &insn, operands)))
      return Error(ErrorCode::kCorrupt,
                   "cycle model: undecodable instruction at offset " + std::to_string(at));
    last = address + at;
    at += insn.length;
    ++count;
  }
  const CodeReader reader = [&](uint64_t a) -> std::span<const uint8_t> {
    if (a < address || a >= address + code.size()) return {};
    return code.subspan(static_cast<size_t>(a - address));
  };
  Block block{address, count, Disassemble(address, count, last, reader)};
  if (block.assembly.empty())
    return Error(ErrorCode::kCorrupt, "cycle model: the code does not disassemble");
  PATHPROF_ASSIGN_OR_RETURN(auto run, RunMca({&block}));
  if (run.empty() || std::isnan(run[0]))
    return Error(ErrorCode::kInternal, "cycle model: llvm-mca reported no cycles");
  return run[0];
}

}  // namespace pathprof::decoders
