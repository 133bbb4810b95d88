#include "pathprof/pipeline/offline_analysis.h"

#include <fcntl.h>
#include <intel-pt.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "pathprof/core/clock.h"
#include "pathprof/core/hex.h"
#include "pathprof/core/pbs.h"
#include "pathprof/decoders/address_space.h"
#include "pathprof/decoders/image_store.h"
#include "pathprof/decoders/lbr_replay.h"
#include "pathprof/decoders/perf_data_reader.h"
#include "pathprof/decoders/pt_config.h"
#include "pathprof/decoders/pt_decoder.h"
#include "pathprof/decoders/pt_image.h"
#include "pathprof/decoders/pt_synth.h"
#include "pathprof/decoders/x86_branch.h"
#include "recording_decode.h"
#include "recording_import.h"

namespace pathprof::pipeline {
namespace {

namespace dec = decoders;

constexpr uint32_t kNoPid = ~0u;  // perf's -1: kernel mappings, CPU-wide AUX buffers

// What the recording says about its processes: mappings (MMAP/MMAP2, inherited on FORK),
// names (COMM) and which thread belongs to which process.
struct RecordedProcesses {
  std::map<uint32_t, std::vector<dec::Mapping>> mappings;
  std::map<uint32_t, std::vector<dec::PerfMmap>> mmaps;  // for PT images
  std::map<uint32_t, std::string> comm;
  std::unordered_map<uint32_t, uint32_t> pid_of_tid;

  void Add(const dec::PerfMmap& m) {
    dec::Mapping map;
    map.start = m.start;
    map.len = m.len;
    map.pgoff = m.pgoff;
    map.executable = !m.is_mmap2 || (m.prot & PROT_EXEC) != 0;
    map.path = m.filename;
    map.build_id = HexBytes(m.build_id);
    mappings[m.pid].push_back(std::move(map));
    mmaps[m.pid].push_back(m);
    pid_of_tid.emplace(m.tid, m.pid);
  }
  void Fork(const dec::PerfForkExit& f) {
    pid_of_tid[f.tid] = f.pid;
    if (f.pid == f.ppid || mappings.contains(f.pid)) return;
    auto it = mappings.find(f.ppid);
    if (it == mappings.end()) return;
    mappings[f.pid] = it->second;
    mmaps[f.pid] = mmaps[f.ppid];
  }
};

// The processes as a sink's Begin receives them.
std::map<uint32_t, RecordedProcess> ProcessesOf(const RecordedProcesses& p) {
  std::map<uint32_t, RecordedProcess> out;
  for (const auto& [pid, maps] : p.mappings) out[pid].mappings = maps;
  for (const auto& [pid, comm] : p.comm) out[pid].comm = comm;
  return out;
}

std::string PtErrorName(int code) {
  const char* s = pt_errstr(static_cast<pt_error_code>(code < 0 ? -code : code));
  return std::string("pt: ") + (s != nullptr ? s : "error " + std::to_string(code));
}

void MergePtStats(const dec::PtDecodeStats& s, DecodeSummary* d) {
  d->counters["pt_syncs"] += s.syncs;
  d->counters["pt_blocks"] += s.blocks;
  d->counters["pt_overflows"] += s.overflows;
  d->counters["pt_gaps"] += s.gaps;
  d->counters["pt_async_transfers"] += s.async_transfers;
  if (s.unresolved) d->decode_errors["pt_unresolved_branch_at_gap"] += s.unresolved;
  if (s.walk_mismatches) d->decode_errors["pt_walk_mismatch"] += s.walk_mismatches;
  for (const auto& [code, n] : s.errors_by_code) d->decode_errors[PtErrorName(code)] += n;
}

// Pass 1 over a perf.data: processes, and whether it holds Intel PT data.
Result<RecordedProcesses> ReadSideband(const InputFile& input, bool* has_pt, DecodeSummary* d) {
  auto reader = dec::PerfDataReader::FromBytes(input.bytes(), input.name());
  if (!reader.ok()) return reader.status();
  PATHPROF_RETURN_IF_ERROR(reader->RequireX86_64());
  RecordedProcesses p;
  *has_pt = reader->info().auxtrace_info.has_value();
  dec::PerfRecord rec;
  for (;;) {
    Result<bool> more = reader->Next(&rec);
    if (!more.ok()) {
      // Keep what was read before the damage; say where it stopped.
      d->decode_errors["perf_data_truncated_or_corrupt"]++;
      d->warnings.push_back(more.status().ToString());
      break;
    }
    if (!*more) break;
    if (auto* m = std::get_if<dec::PerfMmap>(&rec.body)) {
      p.Add(*m);
    } else if (auto* c = std::get_if<dec::PerfComm>(&rec.body)) {
      p.pid_of_tid[c->tid] = c->pid;
      if (c->pid == c->tid || !p.comm.contains(c->pid)) p.comm[c->pid] = c->comm;
    } else if (auto* f = std::get_if<dec::PerfForkExit>(&rec.body)) {
      if (!f->is_exit) p.Fork(*f);
    } else if (auto* s = std::get_if<dec::PerfSample>(&rec.body)) {
      p.pid_of_tid.emplace(s->tid, s->pid);
    }
  }
  const dec::PerfDataStats& st = reader->stats();
  d->records = st.records;
  d->counters["lost_events"] = st.lost_events;
  d->counters["lost_samples"] = st.lost_samples;
  if (st.unknown_records) d->decode_errors["perf_data_unknown_records"] = st.unknown_records;
  return p;
}

Status AnalyzeLbr(const InputFile& input, const AnalyzeOptions& options,
                  const RecordedProcesses& processes, RecordingSink* sink, DecodeSummary* out) {
  out->format = "perf.data/lbr";
  dec::LbrReplayOptions opt;
  opt.images.binary_dir = options.binary_dir;
  opt.pid = options.pid;
  PATHPROF_RETURN_IF_ERROR(sink->Begin(BranchWindows::kTakenBranches, ProcessesOf(processes)));
  Status sink_status;
  auto reader = dec::PerfDataReader::FromBytes(input.bytes(), input.name());
  if (!reader.ok()) return reader.status();
  auto r = dec::ReplayLbr(&*reader, opt, [&](std::vector<BranchBatch>& batches) {
    for (const BranchBatch& b : batches) {
      if (!sink_status.ok()) return;
      sink_status = sink->Add(b);
    }
  });
  if (!r.ok()) return r.status();
  PATHPROF_RETURN_IF_ERROR(sink_status);
  const dec::LbrStats& s = r->lbr;
  DecodeSummary& d = *out;
  d.samples = s.samples;
  d.counters["lbr_entries"] = s.entries;
  d.counters["lbr_entries_emitted"] = s.entries_emitted;
  d.counters["lbr_ranges"] = s.ranges;
  d.counters["lbr_ranges_walked"] = s.ranges_walked;
  d.counters["lbr_async_transfers"] = s.async_transfers;
  d.counters["perf_style_instructions"] = s.perf_style_instructions;
  d.counters["samples_without_branches"] = r->samples_without_branches;
  d.counters["samples_other_pid"] = r->samples_other_pid;
  d.counters["images_found"] = r->images.found;
  d.counters["images_not_found"] = r->images.not_found;
  d.counters["images_build_id_mismatches"] = r->images.build_id_mismatches;
  d.counters["images_found_by_build_id"] = r->images.found_by_build_id;
  d.counters["binary_dir_elf_files"] = r->images.binary_dir_elf_files;
  d.counters["binary_dir_unindexed"] = r->images.binary_dir_unindexed;
  for (size_t i = 0; i < s.ranges_broken.size(); ++i)
    if (s.ranges_broken[i])
      d.broken_windows[std::string(dec::LbrRangeBreakName(static_cast<dec::LbrRangeBreak>(i)))] =
          s.ranges_broken[i];
  for (size_t i = 0; i < s.entries_dropped.size(); ++i)
    if (s.entries_dropped[i])
      d.dropped_entries[std::string(dec::LbrEntryDropName(static_cast<dec::LbrEntryDrop>(i)))] =
          s.entries_dropped[i];
  return Status::Ok();
}

// Pass 2 for Intel PT: every AUXTRACE buffer of a thread, concatenated in file order (full-trace
// mode writes one continuous stream per thread), decoded over the process's recorded mappings.
Status AnalyzePt(const InputFile& input, const AnalyzeOptions& options,
                 const RecordedProcesses& processes, RecordingSink* sink, DecodeSummary* out) {
  DecodeSummary& d = *out;
  d.format = "perf.data/intel-pt";
  auto reader = dec::PerfDataReader::FromBytes(input.bytes(), input.name());
  if (!reader.ok()) return reader.status();
  auto config = dec::PtConfigFromPerf(reader->info());
  dec::PtDecoderConfig pt_config;
  if (config.ok()) {
    pt_config = *config;
  } else {
    d.decode_errors["pt_config_incomplete"]++;
    d.warnings.push_back("decoding with default PT settings: " + config.status().ToString());
  }
  std::map<uint32_t, std::vector<uint8_t>> trace_of_tid;
  dec::PerfRecord rec;
  for (;;) {
    Result<bool> more = reader->Next(&rec);
    if (!more.ok() || !*more) break;  // damage was counted by the first pass
    auto* a = std::get_if<dec::PerfAuxtrace>(&rec.body);
    if (a == nullptr) continue;
    d.samples++;
    d.counters["pt_aux_bytes"] += a->data.size();
    if (a->tid == kNoPid) {
      // CPU-wide buffers need the context-switch sideband to split by thread.
      d.decode_errors["pt_cpu_wide_buffer_unsupported"]++;
      continue;
    }
    auto& t = trace_of_tid[a->tid];
    t.insert(t.end(), a->data.begin(), a->data.end());
  }
  auto cache = dec::PtSectionCache::Create();
  if (!cache.ok()) return cache.status();
  std::map<uint32_t, std::shared_ptr<dec::PtImage>> images;
  // Finds each recorded file as every other decoder does (build-id, recorded path, basename);
  // libipt then reads the file itself.
  dec::ImageStoreOptions store_options;
  store_options.binary_dir = options.binary_dir;
  dec::ImageStore files(store_options);
  PATHPROF_RETURN_IF_ERROR(sink->Begin(BranchWindows::kNone, ProcessesOf(processes)));
  for (auto& [tid, bytes] : trace_of_tid) {
    auto pit = processes.pid_of_tid.find(tid);
    const uint32_t pid = pit != processes.pid_of_tid.end() ? pit->second : tid;
    if (options.pid && pid != *options.pid) continue;
    auto& image = images[pid];
    if (image == nullptr) {
      image = std::make_shared<dec::PtImage>(*cache, "pid " + std::to_string(pid));
      if (auto m = processes.mmaps.find(pid); m != processes.mmaps.end()) {
        for (const dec::PerfMmap& mm : m->second) {
          if (mm.is_mmap2 && (mm.prot & PROT_EXEC) == 0) continue;
          if (mm.filename.empty() || mm.filename[0] != '/') continue;
          auto found = files.Get(mm.filename, HexBytes(mm.build_id));
          const std::string file = found.ok() ? (*found)->path() : mm.filename;
          if (image->AddFile(file, mm.pgoff, mm.start, mm.start + mm.len).ok())
            d.counters["images_found"]++;
          else
            d.counters["images_not_found"]++;
        }
      }
    }
    auto decoder = dec::PtBranchDecoder::Create(bytes, pt_config, image, pid, tid);
    if (!decoder.ok()) return decoder.status();
    PATHPROF_RETURN_IF_ERROR((*decoder)->Decode([&](BranchBatch&& b) { return sink->Add(b); }));
    MergePtStats((*decoder)->stats(), &d);
  }
  return Status::Ok();
}

// Whether the instruction at `ip` is a far branch (syscall, int): those disable PT
// synchronously; anything else that transfers far was asynchronous.
class FarBranchProbe {
 public:
  explicit FarBranchProbe(const std::vector<ImageRecord>& images) : images_(images) {}
  bool operator()(uint64_t ip) const {
    for (const auto& img : images_) {
      if (ip < img.start || ip >= img.end || img.path.empty() || img.path[0] != '/') continue;
      const int fd = open(img.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return false;
      uint8_t buf[16];
      const ssize_t n =
          pread(fd, buf, sizeof buf, static_cast<off_t>(img.file_offset + (ip - img.start)));
      close(fd);
      dec::X86Instruction insn;
      return n > 0 && dec::DecodeX86Fast(buf, static_cast<size_t>(n), ip, &insn) &&
             insn.is_branch && insn.kind == BranchKind::kFarTransfer;
    }
    return false;
  }

 private:
  const std::vector<ImageRecord>& images_;
};

Status AnalyzePbs(const InputFile& input, const AnalyzeOptions& options, RecordingSink* sink,
                  DecodeSummary* out) {
  auto reader = PbsReader::FromBytes(
      std::vector<uint8_t>(input.bytes().begin(), input.bytes().end()), input.name());
  if (!reader.ok()) return reader.status();
  auto pbs = ReadPbs(&*reader);
  if (!pbs.ok()) return pbs.status();
  DecodeSummary& d = *out;
  d.records = pbs->batches.size() + pbs->images.size() + pbs->meta.size();
  RecordedProcesses processes;
  for (const ImageRecord& img : pbs->images) {
    dec::Mapping m;
    m.start = img.start;
    m.len = img.end - img.start;
    m.pgoff = img.file_offset;
    m.path = img.path;
    m.build_id = HexBytes(img.build_id);
    processes.mappings[img.pid].push_back(std::move(m));
  }
  bool windowed = false;
  for (const BranchBatch& b : pbs->batches) windowed |= b.window;
  if (!options.pbs_via_pt) {
    d.format = "pbs";
    d.samples = pbs->batches.size();
    // Windows in a .pbs do not say how their starts were drawn: taken as LBR-like.
    PATHPROF_RETURN_IF_ERROR(sink->Begin(
        windowed ? BranchWindows::kTakenBranches : BranchWindows::kNone, ProcessesOf(processes)));
    for (const BranchBatch& b : pbs->batches) PATHPROF_RETURN_IF_ERROR(sink->Add(b));
    return Status::Ok();
  }
  d.format = "pbs/synthesized-pt";
  if (windowed)
    return Status(
        ErrorCode::kInvalidArgument,
        input.name() + " holds sampled windows; --via-pt needs a continuous (exact) stream");
  PATHPROF_RETURN_IF_ERROR(sink->Begin(BranchWindows::kNone, ProcessesOf(processes)));
  dec::PtSynthOptions synth;
  FarBranchProbe far(pbs->images);
  synth.is_far_branch_instruction = [&far](uint64_t ip) { return far(ip); };
  auto traces = dec::SynthesizePt(pbs->batches, synth);
  if (!traces.ok()) return traces.status();
  auto cache = dec::PtSectionCache::Create();
  if (!cache.ok()) return cache.status();
  std::map<uint32_t, std::shared_ptr<dec::PtImage>> images;
  for (const dec::PtSynthTrace& t : *traces) {
    d.samples++;
    d.counters["pt_aux_bytes"] += t.bytes.size();
    d.counters["pt_packets"] += t.packets;
    auto& image = images[t.pid];
    if (image == nullptr) {
      image = std::make_shared<dec::PtImage>(*cache, "pid " + std::to_string(t.pid));
      std::vector<ImageRecord> mine;
      for (const auto& img : pbs->images)
        if (img.pid == t.pid) mine.push_back(img);
      image->AddImages(mine);
    }
    auto decoder =
        dec::PtBranchDecoder::Create(t.bytes, dec::PtDecoderConfig{}, image, t.pid, t.tid);
    if (!decoder.ok()) return decoder.status();
    PATHPROF_RETURN_IF_ERROR((*decoder)->Decode([&](BranchBatch&& b) { return sink->Add(b); }));
    MergePtStats((*decoder)->stats(), &d);
  }
  return Status::Ok();
}

bool LooksLikePbs(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "PBS", 3) == 0;
}

}  // namespace

StoreSink::~StoreSink() {
  cpu_.Flush();
}

Status StoreSink::Begin(BranchWindows windows,
                        const std::map<uint32_t, RecordedProcess>& processes) {
  windows_ = windows;
  processes_ = processes;
  return Status::Ok();
}

Result<ProfileStore*> StoreSink::For(uint32_t pid) {
  auto it = out_->stores.find(pid);
  if (it != out_->stores.end()) return it->second.get();
  auto store = ProfileStore::CreateOffline(pid, options_.config, windows_, out_->symbols);
  if (!store.ok()) return store.status();
  if (auto p = processes_.find(pid); p != processes_.end()) {
    for (const dec::Mapping& map : p->second.mappings) (*store)->AddMapping(map);
    if (!p->second.comm.empty()) (*store)->SetIdentity(p->second.comm, "");
  }
  return out_->stores.emplace(pid, std::move(*store)).first->second.get();
}

Status StoreSink::Add(const BranchBatch& batch) {
  if (options_.pid && batch.pid != *options_.pid) {
    out_->decode.counters["batches_other_pid"]++;
    return Status::Ok();
  }
  DecodeSummary& d = out_->decode;
  d.windows++;
  d.events += batch.events.size();
  for (const auto& e : batch.events) {
    (e.taken ? d.taken : d.not_taken)++;
    d.instructions += e.instructions;
  }
  if (options_.decode_only) return Status::Ok();
  auto store = For(batch.pid);
  if (!store.ok()) return store.status();
  (*store)->AddBranches(batch);
  cpu_.Note(&(*store)->accounting());
  if (cpu_.pending() >= 1024) cpu_.Flush();
  return Status::Ok();
}

AnalyzeResult EmptyAnalyzeResult(const AnalyzeOptions& options) {
  AnalyzeResult out;
  dec::ImageStoreOptions images;
  images.binary_dir = options.binary_dir;
  // The daemon's imports: the binaries a recording names are read by libdw in the sandboxed
  // helper too, not as root.
  out.symbols = std::make_shared<SymbolService>(
      images, options.decode_in_helper_for ? SymbolizeIn::kHelper : SymbolizeIn::kThisProcess);
  return out;
}

void MergeDecodeSummary(DecodeSummary from, DecodeSummary* into) {
  into->format = std::move(from.format);
  into->records += from.records;
  into->samples += from.samples;
  for (auto& [k, v] : from.broken_windows) into->broken_windows[k] += v;
  for (auto& [k, v] : from.dropped_entries) into->dropped_entries[k] += v;
  for (auto& [k, v] : from.decode_errors) into->decode_errors[k] += v;
  for (auto& [k, v] : from.counters) into->counters[k] += v;
  for (std::string& w : from.warnings) into->warnings.push_back(std::move(w));
}

Result<DecodeSummary> DecodeRecording(const std::string& path, int input_fd,
                                      const AnalyzeOptions& options, RecordingSink* sink) {
  DecodeSummary d;
  // Read once: a pipe cannot be read twice, and the passes below each walk the whole input.
  static constexpr std::string_view kMagics[] = {"PERFILE2", "PBS"};
  auto input = input_fd >= 0 ? InputFile::FromDescriptor(input_fd, path, options.limits, kMagics)
                             : InputFile::Open(path, options.limits, kMagics);
  if (!input.ok()) return input.status();
  if (LooksLikePbs(input->bytes()) || path.ends_with(".pbs")) {
    PATHPROF_RETURN_IF_ERROR(AnalyzePbs(*input, options, sink, &d));
    return d;
  }
  if (options.pbs_via_pt)
    return Status(ErrorCode::kInvalidArgument, "--via-pt applies to .pbs files only");
  bool has_pt = false;
  auto processes = ReadSideband(*input, &has_pt, &d);
  if (!processes.ok()) return processes.status();
  if (has_pt)
    PATHPROF_RETURN_IF_ERROR(AnalyzePt(*input, options, *processes, sink, &d));
  else
    PATHPROF_RETURN_IF_ERROR(AnalyzeLbr(*input, options, *processes, sink, &d));
  // Shown so that a host whose clocks are system calls can see what they cost here: CPU time is
  // charged per batch, never per sample.
  d.counters["clock_reads"] = ClockReads();
  return d;
}

Result<AnalyzeResult> AnalyzeFile(const std::string& path, const AnalyzeOptions& options) {
  if (options.decode_in_helper_for) return AnalyzeFileInHelper(path, options);
  AnalyzeResult out = EmptyAnalyzeResult(options);
  // The sink charges its last batches' CPU when it goes, before anyone reads the stats.
  auto decoded = [&] {
    StoreSink sink(options, &out);
    return DecodeRecording(path, -1, options, &sink);
  }();
  if (!decoded.ok()) return decoded.status();
  MergeDecodeSummary(std::move(*decoded), &out.decode);
  return out;
}

Result<std::unique_ptr<Session>> SessionFromRecording(std::string id, const std::string& path,
                                                      const AnalyzeOptions& options,
                                                      std::vector<std::string>* warnings) {
  PATHPROF_ASSIGN_OR_RETURN(AnalyzeResult analysis, AnalyzeFile(path, options));
  if (warnings != nullptr) *warnings = std::move(analysis.decode.warnings);
  return Session::FromRecording(std::move(id), options.config, std::move(analysis.symbols),
                                std::move(analysis.stores),
                                "a recording (" + analysis.decode.format + ")");
}

}  // namespace pathprof::pipeline
