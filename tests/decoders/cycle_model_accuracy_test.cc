// The cycle model's error against llvm-mca, its reference (`llvm-mca -mcpu=znver3
// -iterations=100`, what the model replaced; Zen 3 on every host, llvm_mca_reference.h), on a few
// thousand distinct basic blocks of real binaries: the example programs and, where installed,
// Debian's xz, zstd, python3 and sqlite3. Prints the figures docs/profiles.md quotes and holds the
// model to them.
//
// Two differences are deliberate and measured on the hardware (bench/cycle_model_bench.cc,
// BM_Loop): a block run as a loop takes at least one cycle, its branch back being taken, which
// llvm-mca (no front end) does not model; and where llvm-mca's figures depart from the
// hardware for a whole kind of instruction (KnownDeparture), the model follows the hardware.
// Both are printed apart, as are the figures without them.
//
// PATHPROF_CYCLE_MODEL_PBS=a.pbs,b.pbs (recordings of `pathctl bursts -o`, whose images are
// still on disk) adds the error on the blocks as a profile weights them: each block as often
// as the windows hold it, and each window's duration. PATHPROF_CYCLE_MODEL_WORST=N prints the
// N blocks with the largest error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "llvm_mca_reference.h"
#include "pathprof/core/pbs.h"
#include "pathprof/decoders/code_blocks.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/x86_branch.h"

namespace pathprof::decoders {
namespace {

struct Source {
  std::string path;
  size_t max_blocks;
};

// The example programs whole; from the Debian binaries, blocks spread evenly over their code.
std::vector<Source> Sources() {
  std::vector<Source> s;
  for (const char* example : {"example_hotloop", "example_fft", "example_heapsort", "example_loop",
                              "example_churn", "example_threads"})
    s.push_back({std::string(PATHPROF_BIN_DIR) + "/" + example, 400});
  s.push_back({"/usr/bin/xz", 400});
  s.push_back({"/usr/lib/x86_64-linux-gnu/liblzma.so.5", 800});
  s.push_back({"/usr/bin/zstd", 1200});
  s.push_back({"/usr/bin/python3.11", 1500});
  s.push_back({"/usr/bin/sqlite3", 300});
  s.push_back({"/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", 800});
  return s;
}

// Kinds of instruction whose llvm-mca figure is off the hardware's, so that a block holding one
// measures llvm-mca more than the model:
//   call/ret: llvm-mca says so itself ("call instructions are not correctly modeled. Assume a
//             latency of 100cy", "program counter updates are ignored");
//   push/pop: llvm-mca chains their stack pointer updates through the load latency, where the
//             cores' stack engine makes them independent (bench/cycle_model_bench.cc,
//             BM_Loop/push_pop: llvm-mca 18 cycles, the reference host 3);
//   endbr64:  ~51 cycles in llvm-mca, none on the hardware (BM_Loop/endbr64);
//   divide:   llvm-mca 1 (from memory) to 13 (from a register) cycles, hardware 6
//             (BM_Loop/divide32, divide32_memory);
//   locked:   llvm-mca 1 cycle, hardware 7-9 (BM_Loop/locked_add).
const char* KnownDeparture(const std::string& assembly) {
  std::istringstream lines(assembly);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string op = line.substr(0, line.find(' '));
    if (op == "push" || op == "pop" || op == "leave") return "push/pop";
    if (op == "call" || op == "ret") return "call/ret";
    if (op == "endbr64") return "endbr64";
    if (op == "div" || op == "idiv") return "divide";
    if (op == "lock" || line.find("lock ") != std::string::npos) return "locked";
  }
  return nullptr;
}

struct Compared {
  CodeBlock block;
  std::string source, assembly;
  const char* departure = nullptr;
  CycleEstimate model;
  double mca = 0;
  // Every block ends in its branch back: one taken branch per run, one cycle at least.
  double Reference() const { return std::max(mca, 1.0); }
  double Error() const { return std::fabs(model.cycles - Reference()) / Reference(); }
  double RawError() const { return std::fabs(model.cycles - mca) / mca; }
};

Compared Unmeasured(CodeBlock block, std::string source) {
  Compared c;
  c.block = std::move(block);
  c.source = std::move(source);
  return c;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

// The quantile of values each counted `weight` times.
double WeightedQuantile(std::vector<std::pair<double, double>> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [value, weight] : v) total += weight;
  double seen = 0;
  for (const auto& [value, weight] : v) {
    seen += weight;
    if (seen >= q * total) return value;
  }
  return v.back().first;
}

std::string Percentiles(const std::vector<double>& e) {
  char line[128];
  std::snprintf(line, sizeof line, "median %.1f%%, p90 %.1f%% (%zu blocks)", 100 * Quantile(e, 0.5),
                100 * Quantile(e, 0.9), e.size());
  return line;
}

// Model and llvm-mca figures for `blocks`, the ones both can estimate.
std::vector<Compared> Compare(std::vector<Compared> blocks, size_t* rejected,
                              size_t* unreadable_by_mca) {
  auto model = CycleModel::Create();
  EXPECT_TRUE(model.ok());
  std::vector<Compared> estimated;
  for (Compared& c : blocks) {
    auto e = (*model)->ExplainCode(c.block.bytes, c.block.address);
    if (!e.ok()) {
      ++*rejected;  // an instruction without a fixed cost (rep movs, syscall, cpuid)
      continue;
    }
    c.model = *e;
    c.assembly = BlockAssembly(c.block, ".L");
    c.departure = KnownDeparture(c.assembly);
    estimated.push_back(std::move(c));
  }
  std::vector<CodeBlock> code;
  for (const Compared& c : estimated) code.push_back(c.block);
  auto mca = LlvmMcaCycles(code);
  EXPECT_TRUE(mca.ok()) << mca.status().ToString();
  std::vector<Compared> compared;
  for (size_t i = 0; mca.ok() && i < estimated.size(); ++i) {
    if (std::isnan((*mca)[i]) || (*mca)[i] <= 0) {
      ++*unreadable_by_mca;
      continue;
    }
    estimated[i].mca = (*mca)[i];
    compared.push_back(std::move(estimated[i]));
  }
  return compared;
}

void PrintWorst(std::vector<Compared> compared) {
  const char* worst = std::getenv("PATHPROF_CYCLE_MODEL_WORST");
  if (!worst) return;
  std::erase_if(compared, [](const Compared& c) { return c.departure != nullptr; });
  std::sort(compared.begin(), compared.end(),
            [](const Compared& a, const Compared& b) { return a.Error() > b.Error(); });
  compared.resize(std::min<size_t>(std::strtoul(worst, nullptr, 10), compared.size()));
  for (const Compared& c : compared)
    std::printf(
        "--- %s 0x%llx: model %.2f (chain %.2f, front end %.2f, %s %.2f), llvm-mca %.2f\n%s",
        c.source.c_str(), (unsigned long long)c.block.address, c.model.cycles, c.model.recurrence,
        c.model.front_end, c.model.busiest.c_str(), c.model.units, c.mca, c.assembly.c_str());
}

TEST(CycleModelAccuracy, AgainstLlvmMcaOnRealBlocks) {
  if (Status mca = LlvmMcaAvailable(); !mca.ok())
    GTEST_SKIP() << "no reference to compare with: " << mca.message();
  std::vector<Compared> blocks;
  std::unordered_set<std::string> seen;  // the examples share their start-up code
  for (const Source& source : Sources()) {
    if (!std::filesystem::exists(source.path)) {
      std::printf("skipped (not installed): %s\n", source.path.c_str());
      continue;
    }
    auto image = ElfImage::Open(source.path);
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    CodeBlockSampling sampling;
    sampling.max_blocks = source.max_blocks;
    auto sampled = SampleCodeBlocks(**image, sampling);
    ASSERT_TRUE(sampled.ok()) << sampled.status().ToString();
    for (CodeBlock& b : *sampled)
      if (seen.insert(std::string(b.bytes.begin(), b.bytes.end())).second)
        blocks.push_back(Unmeasured(std::move(b), std::filesystem::path(source.path).filename()));
  }
  size_t rejected = 0, unreadable_by_mca = 0;
  const std::vector<Compared> compared = Compare(std::move(blocks), &rejected, &unreadable_by_mca);

  std::map<std::string, size_t> per_source;
  std::map<std::string, std::vector<double>> departures;
  std::vector<double> raw, errors, signed_errors, agreeing, agreeing_above_one, agreeing_signed;
  for (const Compared& c : compared) {
    ++per_source[c.source];
    raw.push_back(c.RawError());
    errors.push_back(c.Error());
    signed_errors.push_back((c.model.cycles - c.Reference()) / c.Reference());
    if (c.departure) {
      departures[c.departure].push_back(c.Error());
    } else {
      agreeing.push_back(c.Error());
      agreeing_signed.push_back((c.model.cycles - c.Reference()) / c.Reference());
      if (c.mca > 1) agreeing_above_one.push_back(c.Error());
    }
  }
  for (const auto& [name, n] : per_source) std::printf("%6zu blocks from %s\n", n, name.c_str());
  std::printf(
      "%zu blocks compared (%zu without a fixed cost in the model, %zu llvm-mca could "
      "not read)\n",
      compared.size(), rejected, unreadable_by_mca);
  std::printf("error against llvm-mca as it is: %s\n", Percentiles(raw).c_str());
  std::printf("against llvm-mca held to one taken branch per cycle: %s; signed median %+.1f%%\n",
              Percentiles(errors).c_str(), 100 * Quantile(signed_errors, 0.5));
  for (const auto& [kind, e] : departures)
    std::printf("  holding an instruction llvm-mca times off the hardware (%s): %s\n", kind.c_str(),
                Percentiles(e).c_str());
  std::printf("without those: %s; signed median %+.1f%%, mean %.1f%%\n",
              Percentiles(agreeing).c_str(), 100 * Quantile(agreeing_signed, 0.5),
              100 * Mean(agreeing));
  std::printf("  of which llvm-mca gives more than one cycle: %s\n",
              Percentiles(agreeing_above_one).c_str());
  std::map<std::string, std::vector<double>> by_bound;
  for (const Compared& c : compared) {
    if (c.departure) continue;
    const std::string bound = c.model.cycles == c.model.recurrence  ? "dependency chain"
                              : c.model.cycles == c.model.front_end ? "front end"
                                                                    : c.model.busiest;
    by_bound[bound].push_back(c.Error());
  }
  for (const auto& [bound, e] : by_bound)
    std::printf("  bound by %-20s %s\n", bound.c_str(), Percentiles(e).c_str());
  PrintWorst(compared);

  ASSERT_GE(compared.size(), 1000u) << "too few blocks to measure the model on";
  EXPECT_LE(Quantile(errors, 0.5), 0.10);
  EXPECT_LE(Quantile(agreeing, 0.5), 0.10);
  EXPECT_LE(Quantile(agreeing, 0.9), 0.30);
  EXPECT_LE(Quantile(agreeing_above_one, 0.5), 0.20);
}

// ---- the blocks of recorded windows, as a profile weights them ------------------------------

struct Image {
  ImageRecord record;
  std::shared_ptr<const ElfImage> elf;
};

// The run of blocks `run` ends (blocks joined by not-taken branches, as the model times them),
// from runtime address `start`, read from the image mapped there, each block ending at its
// event's branch; empty when the recording's images do not hold it.
CodeBlock ReadRun(const std::vector<Image>& images, uint64_t start,
                  std::span<const BranchEvent> run) {
  for (const Image& image : images) {
    if (start < image.record.start || start >= image.record.end) continue;
    uint64_t vaddr = 0;
    if (!image.elf->FileOffsetToVaddr(start - image.record.start + image.record.file_offset,
                                      &vaddr))
      return {};
    CodeBlock block;
    block.address = vaddr;
    uint64_t at = start;
    for (const BranchEvent& e : run) {
      for (uint32_t i = 0; i < e.instructions; ++i) {
        const std::span<const uint8_t> code = image.elf->CodeAt(vaddr + (at - start));
        X86Instruction insn;
        if (!DecodeX86Fast(code.data(), code.size(), at, &insn)) return {};
        block.bytes.insert(block.bytes.end(), code.begin(), code.begin() + insn.length);
        if (i + 1 == e.instructions && at != e.from) return {};
        at += insn.length;
      }
      block.instructions += e.instructions;
    }
    return block;
  }
  return {};
}

TEST(CycleModelAccuracy, AgainstLlvmMcaOnRecordedWindows) {
  const char* recordings = std::getenv("PATHPROF_CYCLE_MODEL_PBS");
  if (!recordings)
    GTEST_SKIP() << "set PATHPROF_CYCLE_MODEL_PBS to recordings of `pathctl bursts -o`";
  if (Status mca = LlvmMcaAvailable(); !mca.ok())
    GTEST_SKIP() << "no reference to compare with: " << mca.message();
  std::istringstream paths(recordings);
  std::string path;
  while (std::getline(paths, path, ',')) {
    auto contents = ReadPbsFile(path);
    ASSERT_TRUE(contents.ok()) << contents.status().ToString();
    std::vector<Image> images;
    for (const ImageRecord& r : contents->images) {
      auto elf = ElfImage::Open(r.path);
      if (elf.ok()) images.push_back({r, *elf});
    }
    // Distinct blocks (runs between taken branches), how often the windows hold each, and each
    // window's blocks.
    std::vector<Compared> blocks;
    std::map<std::tuple<uint64_t, uint64_t, uint32_t>, size_t> index;
    std::vector<std::vector<size_t>> windows;
    size_t unreadable = 0;
    for (const BranchBatch& b : contents->batches) {
      std::vector<size_t> window;
      for (size_t first = 1; first < b.events.size();) {
        size_t last = first;
        while (last + 1 < b.events.size() && !b.events[last].taken) ++last;
        const std::span<const BranchEvent> run(&b.events[first], last - first + 1);
        const uint64_t start = b.events[first - 1].to;
        first = last + 1;
        // Runs after the window's last taken branch are not part of its duration.
        if (!run.back().taken) continue;
        uint32_t total = 0;
        for (const BranchEvent& e : run) total += e.instructions;
        const std::tuple<uint64_t, uint64_t, uint32_t> key{start, run.back().from, total};
        auto it = index.find(key);
        if (it == index.end()) {
          CodeBlock block = ReadRun(images, start, run);
          if (block.bytes.empty()) {
            ++unreadable;
            continue;
          }
          it = index.emplace(key, blocks.size()).first;
          blocks.push_back(Unmeasured(std::move(block), path));
        }
        window.push_back(it->second);
      }
      windows.push_back(std::move(window));
    }
    size_t rejected = 0, unreadable_by_mca = 0;
    std::vector<Compared> compared = Compare(blocks, &rejected, &unreadable_by_mca);
    std::map<std::pair<uint64_t, std::string>, const Compared*> by_block;
    for (const Compared& c : compared)
      by_block[{c.block.address, std::string(c.block.bytes.begin(), c.block.bytes.end())}] = &c;
    // Each block weighted by its occurrences; each window's duration, blocks both estimate.
    std::vector<std::pair<double, double>> weighted;
    std::vector<double> window_errors, window_ratios, clean_window_errors;
    std::unordered_map<size_t, size_t> occurrences;
    for (const auto& w : windows)
      for (size_t b : w) ++occurrences[b];
    const auto find = [&](size_t b) -> const Compared* {
      auto it = by_block.find({blocks[b].block.address, std::string(blocks[b].block.bytes.begin(),
                                                                    blocks[b].block.bytes.end())});
      return it == by_block.end() ? nullptr : it->second;
    };
    std::vector<std::pair<double, double>> weighted_clean;
    double departing = 0, total = 0;
    for (const auto& [b, n] : occurrences) {
      const Compared* c = find(b);
      if (!c) continue;
      weighted.emplace_back(c->Error(), static_cast<double>(n));
      total += static_cast<double>(n);
      if (c->departure) {
        departing += static_cast<double>(n);
      } else {
        weighted_clean.emplace_back(c->Error(), static_cast<double>(n));
      }
    }
    for (const auto& w : windows) {
      double model = 0, reference = 0;
      bool clean = true;  // no block with an instruction llvm-mca times off the hardware
      for (size_t b : w) {
        if (const Compared* c = find(b)) {
          model += c->model.cycles;
          reference += c->Reference();
          clean &= c->departure == nullptr;
        }
      }
      if (reference <= 0) continue;
      window_errors.push_back(std::fabs(model - reference) / reference);
      window_ratios.push_back(model / reference);
      if (clean) clean_window_errors.push_back(window_errors.back());
    }
    // The estimator weights windows against each other, so a factor common to all of them
    // cancels: the error that remains is each window's ratio against the typical one.
    const double typical = Quantile(window_ratios, 0.5);
    std::vector<double> relative_errors;
    for (double r : window_ratios) relative_errors.push_back(std::fabs(r / typical - 1));
    std::printf(
        "%s: %zu windows, %zu distinct blocks (%zu unreadable, %zu without a fixed cost, "
        "%zu llvm-mca could not read)\n",
        path.c_str(), windows.size(), blocks.size(), unreadable, rejected, unreadable_by_mca);
    std::printf(
        "  blocks weighted by occurrence: median %.1f%%, p90 %.1f%%; without the %.0f%% "
        "llvm-mca times off the hardware: median %.1f%%, p90 %.1f%%\n",
        100 * WeightedQuantile(weighted, 0.5), 100 * WeightedQuantile(weighted, 0.9),
        100 * departing / total, 100 * WeightedQuantile(weighted_clean, 0.5),
        100 * WeightedQuantile(weighted_clean, 0.9));
    std::printf(
        "  window durations: median %.1f%%, p90 %.1f%% (%zu windows); model/llvm-mca "
        "median %.2f\n",
        100 * Quantile(window_errors, 0.5), 100 * Quantile(window_errors, 0.9),
        window_errors.size(), typical);
    std::printf("  window durations relative to that median ratio: median %.1f%%, p90 %.1f%%\n",
                100 * Quantile(relative_errors, 0.5), 100 * Quantile(relative_errors, 0.9));
    std::printf(
        "  windows without a block llvm-mca times off the hardware: median %.1f%%, p90 "
        "%.1f%% (%zu windows)\n",
        100 * Quantile(clean_window_errors, 0.5), 100 * Quantile(clean_window_errors, 0.9),
        clean_window_errors.size());
    PrintWorst(compared);
  }
}

}  // namespace
}  // namespace pathprof::decoders
