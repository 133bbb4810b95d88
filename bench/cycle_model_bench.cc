// The cycle model (decoders/cycle_model.h): what it costs against the llvm-mca run per batch of
// new blocks that it replaced, and how it compares with llvm-mca and with this host's own
// hardware on hand-written loops.
//
// Cost: BM_ModelPerBlock estimates distinct basic blocks of a real binary (Debian's zstd, or
// this benchmark itself where zstd is not installed) in process; BM_WindowDurationsCached
// times a 32-branch window whose blocks are cached; BM_LlvmMcaPerBatch/N runs llvm-mca once on
// N of the same blocks, as the old model did for each window's new blocks, and counts the
// child's CPU time (the benchmark's own CPU time does not include it).
//
// Accuracy on the host: BM_Loop/<name> runs a loop body (hand-written below, each ending in
// dec rdi; jnz back) on this CPU and times it against an 8-add dependency chain (8 cycles an
// iteration on every x86-64 core, whatever the clock), and prints next to it the model's
// estimate and llvm-mca's for the same bytes. The loops isolate the cases where the model
// departs from llvm-mca. Both are timed in thread CPU time, the fastest of several runs
// interleaved, so that a busy neighbour costs repetitions rather than the figure; a host whose
// clock moves between the two still shows (run it alone).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "llvm_mca_reference.h"
#include "pathprof/core/procfs.h"
#include "pathprof/decoders/code_blocks.h"
#include "pathprof/decoders/cycle_model.h"
#include "pathprof/decoders/elf_image.h"
#include "pathprof/decoders/x86_branch.h"

// ---- the loops timed on this host (see BM_Loop) -------------------------------------------

// A loop `name`: `setup` once, then `body; dec rdi; jnz` rdi times. Called as name(n, buffer)
// (System V: rdi = n, rsi = a 4 KiB buffer); bodies use only caller-saved registers, the
// buffer and the red zone below rsp. name_loop .. name_end are the loop's bytes: the block the
// model and llvm-mca estimate.
#define PATHPROF_LOOP(name, setup, body)                                                    \
  extern "C" void name(long n, void* buffer);                                               \
  extern "C" const uint8_t name##_loop[], name##_end[];                                     \
  asm(".pushsection .text\n.p2align 6\n.globl " #name "\n.type " #name ",@function\n" #name \
      ":\n" setup "\n.p2align 6\n.globl " #name "_loop\n" #name "_loop:\n" body             \
      "\ndec %rdi\njnz " #name "_loop\n.globl " #name "_end\n" #name                        \
      "_end:\nret\n"                                                                        \
      ".popsection\n");

PATHPROF_LOOP(pathprof_loop_chain8, "",
              "add $1,%rax\nadd $1,%rax\nadd $1,%rax\nadd $1,%rax\n"
              "add $1,%rax\nadd $1,%rax\nadd $1,%rax\nadd $1,%rax")
PATHPROF_LOOP(pathprof_loop_branch_only, "", "")
PATHPROF_LOOP(pathprof_loop_warm_body, "xor %edx,%edx\nmov $1,%eax",
              "mov %eax,%ecx\nshl $5,%ecx\nadd %ecx,%eax\nadd %edx,%eax\nadd $1,%edx\n"
              "mov %eax,(%rsi)")
// hot()'s body with its two inner branches never taken (their targets are the next line).
PATHPROF_LOOP(pathprof_loop_hot_body, "xor %eax,%eax\nxor %ecx,%ecx\nmov $-1,%r8d",
              "add %ecx,%edx\nadd $1,%eax\nadd $7,%ecx\nmov %edx,(%rsi)\ncmp %eax,%r8d\n"
              "je 1f\n1:\ntest $0,%al\njne 2f\n2:")
PATHPROF_LOOP(pathprof_loop_pointer_chase, "mov %rsi,%rax\nmov %rsi,(%rsi)", "mov (%rax),%rax")
PATHPROF_LOOP(pathprof_loop_imul_chain, "mov $3,%eax",
              "imul %rax,%rax\nimul %rax,%rax\nimul %rax,%rax\nimul %rax,%rax")
PATHPROF_LOOP(pathprof_loop_move_chain, "",
              "mov %rax,%rcx\nmov %rcx,%rdx\nmov %rdx,%rax\nadd $1,%rax")
PATHPROF_LOOP(pathprof_loop_counter_in_memory, "", "addq $1,(%rsi)")
PATHPROF_LOOP(pathprof_loop_spill_reload, "", "mov %rax,-8(%rsp)\nmov -8(%rsp),%rax\nadd $1,%rax")
PATHPROF_LOOP(pathprof_loop_two_stores_two_lines, "", "mov %rax,(%rsi)\nmov %rcx,64(%rsi)")
PATHPROF_LOOP(pathprof_loop_store_two_loads, "",
              "movl $1,0x108(%rsi)\nmov 0x200(%rsi),%edx\nand 0x204(%rsi),%edx")
PATHPROF_LOOP(pathprof_loop_push_pop, "",
              "push %rax\npush %rcx\npush %rdx\npop %rdx\npop %rcx\npop %rax")
PATHPROF_LOOP(pathprof_loop_endbr64, "", "endbr64")
PATHPROF_LOOP(pathprof_loop_divide32, "mov $7,%ecx", "mov $1000,%eax\nxor %edx,%edx\ndiv %ecx")
PATHPROF_LOOP(pathprof_loop_divide32_memory, "movl $7,16(%rsi)",
              "mov $1000,%eax\nxor %edx,%edx\ndivl 16(%rsi)")
PATHPROF_LOOP(pathprof_loop_locked_add, "", "lock addq $1,(%rsi)")
PATHPROF_LOOP(pathprof_loop_movabs4, "",
              "movabs $0x7FFFFFFFFFFFFFCE,%rax\nmovabs $0x7FFFFFFFFFFFFFCE,%rcx\n"
              "movabs $0x7FFFFFFFFFFFFFCE,%rdx\nmovabs $0x7FFFFFFFFFFFFFCE,%r8")
PATHPROF_LOOP(pathprof_loop_six_adds, "",
              "add $1,%eax\nadd $1,%ecx\nadd $1,%edx\nadd $1,%r8d\nadd $1,%r9d\nadd $1,%r10d")
PATHPROF_LOOP(pathprof_loop_float_add_chain, "pxor %xmm0,%xmm0",
              "addsd %xmm0,%xmm0\naddsd %xmm0,%xmm0\naddsd %xmm0,%xmm0\naddsd %xmm0,%xmm0")
PATHPROF_LOOP(pathprof_loop_float_divide_chain,
              "mov $0x3ff0000000000000,%rax\nmovq %rax,%xmm0\nmovq %rax,%xmm1", "divsd %xmm1,%xmm0")

// A loop that is one window block exactly: `body` ends with its own branch back (`back`, to
// name_loop), and `setup` makes it run rdi times and leave through a branch to `2:`.
#define PATHPROF_BLOCK_LOOP(name, setup, body, back)                                        \
  extern "C" void name(long n, void* buffer);                                               \
  extern "C" const uint8_t name##_loop[], name##_end[];                                     \
  asm(".pushsection .text\n.p2align 6\n.globl " #name "\n.type " #name ",@function\n" #name \
      ":\n" setup "\n.p2align 6\n.globl " #name "_loop\n" #name "_loop:\n" body "\n" back   \
      " " #name "_loop\n.globl " #name "_end\n" #name "_end:\n2:\nret\n.popsection\n");

// The window blocks of examples/hotloop (as tests/decoders/cycle_model_mca_test.cc lists
// them; the stores go to the buffer instead of the program's globals). warm(): edx counts.
PATHPROF_BLOCK_LOOP(pathprof_block_hotloop_warm, "mov %edi,%r8d\nxor %edx,%edx\nmov $1,%eax",
                    "mov %eax,%ecx\nshl $5,%ecx\nadd %ecx,%eax\nadd %edx,%eax\nadd $1,%edx\n"
                    "mov %eax,(%rsi)\ncmp %edx,%r8d",
                    "jne")
// hot(), i & 3 != 0: r11b & 3 is never 0, so the back branch is always taken; eax counts.
PATHPROF_BLOCK_LOOP(pathprof_block_hotloop_hot_3in4,
                    "mov %edi,%r8d\nxor %eax,%eax\nxor %ecx,%ecx\nxor %edx,%edx\nmov $1,%r11d",
                    "add %ecx,%edx\nadd $1,%eax\nadd $7,%ecx\nmov %edx,(%rsi)\ncmp %eax,%r8d\n"
                    "je 2f\ntest $3,%r11b",
                    "jne")
// hot(), i & 3 == 0: r11b & 3 is always 0, so the inner branch falls through; eax counts twice.
PATHPROF_BLOCK_LOOP(pathprof_block_hotloop_hot_1in4,
                    "mov %edi,%r8d\nadd %r8d,%r8d\nxor %eax,%eax\nxor %ecx,%ecx\nxor %edx,%edx\n"
                    "xor %r11d,%r11d",
                    "add %ecx,%edx\nadd $1,%eax\nadd $7,%ecx\nmov %edx,(%rsi)\ncmp %eax,%r8d\n"
                    "je 2f\ntest $3,%r11b\njne 2f\nxor %eax,%edx\nadd $1,%eax\nadd $7,%ecx\n"
                    "mov %edx,8(%rsi)\ncmp %eax,%r8d",
                    "jne")

namespace {

using namespace pathprof;
using namespace pathprof::decoders;

// ---- cost ---------------------------------------------------------------------------------

struct Blocks {
  std::string source, error;
  std::vector<CodeBlock> blocks;
};

const Blocks& GetBlocks() {
  static const Blocks* blocks = [] {
    auto* b = new Blocks;
    auto self = procfs::Procfs::Host().Executable(getpid());
    b->source = std::filesystem::exists("/usr/bin/zstd") ? "/usr/bin/zstd" : self.ok() ? *self : "";
    auto image = ElfImage::Open(b->source);
    if (!image.ok()) {
      b->error = image.status().ToString();
      return b;
    }
    CodeBlockSampling sampling;
    sampling.max_blocks = 2000;
    auto sampled = SampleCodeBlocks(**image, sampling);
    if (!sampled.ok()) {
      b->error = sampled.status().ToString();
      return b;
    }
    b->blocks = std::move(*sampled);
    return b;
  }();
  return *blocks;
}

void BM_ModelPerBlock(benchmark::State& state) {
  const Blocks& in = GetBlocks();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  auto model = CycleModel::Create();
  if (!model.ok()) return state.SkipWithError(model.status().ToString().c_str());
  double total = 0;
  for (auto _ : state) {
    for (const CodeBlock& b : in.blocks) {
      auto c = (*model)->EstimateCode(b.bytes, b.address);
      total += c.ok() ? *c : 0;
    }
  }
  benchmark::DoNotOptimize(total);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * in.blocks.size()));
  state.SetLabel(in.source + ", " + std::to_string(in.blocks.size()) + " blocks");
}
BENCHMARK(BM_ModelPerBlock)->Unit(benchmark::kMicrosecond);

// A window of 32 taken branches through 31 sampled blocks (event i ends blocks[i - 1]), and
// the code they were read from.
struct Window {
  std::vector<BranchEvent> events;
  std::map<uint64_t, const CodeBlock*> blocks;  // by start address
  CodeReader Reader() const {
    return [this](uint64_t a) -> std::span<const uint8_t> {
      auto it = blocks.upper_bound(a);
      if (it == blocks.begin()) return {};
      const CodeBlock& b = *std::prev(it)->second;
      if (a >= b.address + b.bytes.size()) return {};
      return std::span(b.bytes).subspan(static_cast<size_t>(a - b.address));
    };
  }
};

Window MakeWindow(const std::vector<CodeBlock>& sample) {
  Window w;
  BranchEvent first;
  first.to = sample[0].address;
  w.events.push_back(first);
  for (size_t i = 0; i < 31 && i < sample.size(); ++i) {
    const CodeBlock& b = sample[i];
    w.blocks[b.address] = &b;
    uint64_t last = b.address;  // the block's branch: its last instruction
    for (size_t at = 0; at < b.bytes.size();) {
      X86Instruction insn;
      if (!DecodeX86Fast(b.bytes.data() + at, b.bytes.size() - at, b.address + at, &insn)) break;
      last = b.address + at;
      at += insn.length;
    }
    BranchEvent e;
    e.from = last;
    e.to = i + 1 < sample.size() ? sample[i + 1].address : 0;
    e.instructions = static_cast<uint16_t>(b.instructions);
    w.events.push_back(e);
  }
  return w;
}

// WindowDurations for a window whose blocks are all cached: what the collector pays per
// window once the target's hot code has been seen.
void BM_WindowDurationsCached(benchmark::State& state) {
  const Blocks& in = GetBlocks();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  auto model = CycleModel::Create();
  if (!model.ok()) return state.SkipWithError(model.status().ToString().c_str());
  const Window window = MakeWindow(in.blocks);
  const CodeReader reader = window.Reader();
  (*model)->WindowDurations(window.events, reader);  // fills the cache
  for (auto _ : state) benchmark::DoNotOptimize((*model)->WindowDurations(window.events, reader));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["blocks_estimated"] = static_cast<double>((*model)->stats().blocks_estimated);
}
BENCHMARK(BM_WindowDurationsCached);

double ChildCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// One llvm-mca run per batch of N new blocks (consecutive batches of the same sample).
void BM_LlvmMcaPerBatch(benchmark::State& state) {
  const Blocks& in = GetBlocks();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  if (Status s = LlvmMcaAvailable(); !s.ok()) return state.SkipWithError(s.message().c_str());
  const size_t n = static_cast<size_t>(state.range(0));
  size_t next = 0;
  const double child_before = ChildCpuSeconds();
  for (auto _ : state) {
    if (next + n > in.blocks.size()) next = 0;
    auto c = LlvmMcaCycles(std::span(in.blocks).subspan(next, n));
    if (!c.ok()) return state.SkipWithError(c.status().ToString().c_str());
    next += n;
  }
  const double child = ChildCpuSeconds() - child_before;
  state.counters["child_cpu_ms_per_run"] = 1e3 * child / static_cast<double>(state.iterations());
  state.counters["child_cpu_us_per_block"] =
      1e6 * child / static_cast<double>(state.iterations() * n);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_LlvmMcaPerBatch)
    ->Arg(1)
    ->Arg(8)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(20);

// ---- accuracy on this host's hardware -------------------------------------------------------

struct Loop {
  void (*run)(long, void*);
  const uint8_t* begin;
  const uint8_t* end;
};

#define PATHPROF_LOOP_REF(name)   \
  Loop {                          \
    name, name##_loop, name##_end \
  }

alignas(4096) uint8_t g_buffer[4096];

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// CPU seconds for n iterations, the fastest of `runs`. CPU rather than wall time: on a shared
// host the thread waits for the core, and that is not the loop's time.
double Fastest(const Loop& loop, long n, int runs) {
  double best = 1e9;
  for (int r = 0; r < runs; ++r) {
    const double t0 = ThreadCpuSeconds();
    loop.run(n, g_buffer);
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best;
}

void BM_Loop(benchmark::State& state, Loop loop) {
  const Loop calibration = PATHPROF_LOOP_REF(pathprof_loop_chain8);
  constexpr long kIterations = 10'000'000;
  const std::span<const uint8_t> bytes(loop.begin, static_cast<size_t>(loop.end - loop.begin));
  const uint64_t address = reinterpret_cast<uint64_t>(loop.begin);
  double hardware = 0;
  for (auto _ : state) {
    // Calibration and loop interleaved, so that both see the same clock.
    double chain = 1e9, body = 1e9;
    for (int r = 0; r < 5; ++r) {
      chain = std::min(chain, Fastest(calibration, kIterations, 2));
      body = std::min(body, Fastest(loop, kIterations, 2));
    }
    hardware = 8 * body / chain;
  }
  auto model = CycleModel::Create();
  if (!model.ok()) return state.SkipWithError(model.status().ToString().c_str());
  auto estimate = (*model)->EstimateCode(bytes, address);
  state.counters["hardware"] = hardware;
  state.counters["model"] = estimate.ok() ? *estimate : -1;
  if (LlvmMcaAvailable().ok()) {
    CodeBlock block;
    block.address = address;
    block.bytes.assign(bytes.begin(), bytes.end());
    auto mca = LlvmMcaCycles(std::span(&block, 1));
    state.counters["llvm_mca"] = mca.ok() ? (*mca)[0] : -1;
  }
}

#define PATHPROF_LOOP_BENCHMARK(label, name)                 \
  BENCHMARK_CAPTURE(BM_Loop, label, PATHPROF_LOOP_REF(name)) \
      ->Iterations(1)                                        \
      ->Unit(benchmark::kMillisecond);

PATHPROF_LOOP_BENCHMARK(hotloop_warm, pathprof_block_hotloop_warm)
PATHPROF_LOOP_BENCHMARK(hotloop_hot_3in4, pathprof_block_hotloop_hot_3in4)
PATHPROF_LOOP_BENCHMARK(hotloop_hot_1in4, pathprof_block_hotloop_hot_1in4)
PATHPROF_LOOP_BENCHMARK(branch_only, pathprof_loop_branch_only)
PATHPROF_LOOP_BENCHMARK(warm_body, pathprof_loop_warm_body)
PATHPROF_LOOP_BENCHMARK(hot_body, pathprof_loop_hot_body)
PATHPROF_LOOP_BENCHMARK(pointer_chase, pathprof_loop_pointer_chase)
PATHPROF_LOOP_BENCHMARK(imul_chain, pathprof_loop_imul_chain)
PATHPROF_LOOP_BENCHMARK(move_chain, pathprof_loop_move_chain)
PATHPROF_LOOP_BENCHMARK(counter_in_memory, pathprof_loop_counter_in_memory)
PATHPROF_LOOP_BENCHMARK(spill_reload, pathprof_loop_spill_reload)
PATHPROF_LOOP_BENCHMARK(two_stores_two_lines, pathprof_loop_two_stores_two_lines)
PATHPROF_LOOP_BENCHMARK(store_two_loads, pathprof_loop_store_two_loads)
PATHPROF_LOOP_BENCHMARK(push_pop, pathprof_loop_push_pop)
PATHPROF_LOOP_BENCHMARK(endbr64, pathprof_loop_endbr64)
PATHPROF_LOOP_BENCHMARK(divide32, pathprof_loop_divide32)
PATHPROF_LOOP_BENCHMARK(divide32_memory, pathprof_loop_divide32_memory)
PATHPROF_LOOP_BENCHMARK(locked_add, pathprof_loop_locked_add)
PATHPROF_LOOP_BENCHMARK(movabs4, pathprof_loop_movabs4)
PATHPROF_LOOP_BENCHMARK(six_adds, pathprof_loop_six_adds)
PATHPROF_LOOP_BENCHMARK(float_add_chain, pathprof_loop_float_add_chain)
PATHPROF_LOOP_BENCHMARK(float_divide_chain, pathprof_loop_float_divide_chain)

}  // namespace

BENCHMARK_MAIN();
