// The perf.data driver: file header, attrs, features, then the record stream (file or pipe).
#include "pathprof/decoders/perf_data_reader.h"

#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "pathprof/core/hex.h"
#include "perf_data_internal.h"

namespace pathprof::decoders {

using perf_internal::Corrupt;
using perf_internal::Cursor;
using perf_internal::Truncated;

struct PerfDataReader::Impl {
  std::string name;
  std::optional<InputFile> file;  // when opened by path: owns what `bytes` points into
  std::span<const uint8_t> bytes;

  PerfDataInfo info;
  PerfDataStats stats;
  uint64_t pos = 0;
  uint64_t end = 0;           // where reading stops: the data end, clamped to the input
  uint64_t declared_end = 0;  // the data end the header promises
  uint64_t prescan_end = 0;   // records before this were applied to `info` by Open
  bool prescanning = false;
  Status error;
  std::unordered_map<uint64_t, size_t> attr_by_id;

  Status Init();
  Status ReadFileHeader();
  Status ReadAttrs(uint64_t attr_size, uint64_t offset, uint64_t size);
  Status ReadFeatures(const std::bitset<perf::kFeatureBits>& bits);
  void Prescan();
  void AddAttr(PerfAttr attr);
  size_t PickAttr(std::span<const uint8_t> body, bool sample);
  Result<bool> Next(PerfRecord* out);
  Status Apply(const PerfRecord& rec);
};

namespace {

// perf_file_section: {u64 offset, u64 size}.
bool ReadSection(Cursor& c, uint64_t* offset, uint64_t* size) {
  return c.U64(offset) && c.U64(size);
}

}  // namespace

Status PerfDataReader::Impl::Init() {
  Cursor c(bytes, 0);
  uint64_t magic = 0, header_size = 0;
  if (!c.U64(&magic)) return Truncated(name, 0, "file is shorter than the 8-byte magic");
  if (magic == perf::kMagicPerfile2Swapped) {
    return Error(ErrorCode::kUnsupported,
                 "perf.data " + name +
                     ": big-endian perf.data files (recorded on a big-endian host) are not "
                     "supported; read it with `perf script` instead");
  }
  if (magic == perf::kMagicPerfile1) {
    return Error(
        ErrorCode::kUnsupported,
        "perf.data " + name + ": version 1 (\"PERFFILE\", Linux < 2.6.35) files are not supported");
  }
  if (magic != perf::kMagicPerfile2) {
    return Corrupt(name, 0,
                   "not a perf.data file (magic " + HexAddress(magic) + ", expected PERFILE2)");
  }
  if (!c.U64(&header_size)) return Truncated(name, 8, "file header");
  if (header_size == perf::kPipeHeaderSize) {
    info.pipe_mode = true;
    pos = perf::kPipeHeaderSize;
    end = declared_end = bytes.size();
    info.data_offset = pos;
    info.data_size = end - pos;
  } else {
    PATHPROF_RETURN_IF_ERROR(ReadFileHeader());
  }
  Prescan();
  return Status::Ok();
}

Status PerfDataReader::Impl::ReadFileHeader() {
  Cursor h(bytes, 0);
  h.Skip(8);
  uint64_t header_size = 0, attr_size = 0, attrs_off = 0, attrs_size = 0, data_off = 0,
           data_size = 0, types_off = 0, types_size = 0;
  h.U64(&header_size);
  // 104 bytes since 2.6.35; 72 for the few versions before adds_features.
  if (header_size != perf::kFileHeaderSize && header_size != 72) {
    return Corrupt(
        name, 8,
        "file header size " + std::to_string(header_size) + " (expected 104, or 16 for pipe mode)");
  }
  if (!(h.U64(&attr_size) && ReadSection(h, &attrs_off, &attrs_size) &&
        ReadSection(h, &data_off, &data_size) && ReadSection(h, &types_off, &types_size))) {
    return Truncated(name, h.offset(), "file header");
  }
  std::bitset<perf::kFeatureBits> bits;
  if (header_size == perf::kFileHeaderSize) {
    for (int w = 0; w < 4; ++w) {
      uint64_t word = 0;
      if (!h.U64(&word)) return Truncated(name, h.offset(), "file header feature bitmap");
      for (int b = 0; b < 64; ++b) {
        if ((word >> b) & 1) bits.set(w * 64 + b);
      }
    }
  }
  PATHPROF_RETURN_IF_ERROR(ReadAttrs(attr_size, attrs_off, attrs_size));

  if (data_off > bytes.size()) {
    return Truncated(name, bytes.size(),
                     "data section starts at offset " + std::to_string(data_off) +
                         " beyond the end of the file");
  }
  if (data_size > UINT64_MAX - data_off) return Corrupt(name, 40, "data section size overflows");
  info.data_offset = data_off;
  info.data_size = data_size;
  pos = data_off;
  declared_end = data_off + data_size;
  end = std::min<uint64_t>(declared_end, bytes.size());
  // A cut-short file keeps its records up to the cut (Next reports the cut); its features,
  // stored after the data, are gone.
  if (declared_end <= bytes.size()) PATHPROF_RETURN_IF_ERROR(ReadFeatures(bits));
  return Status::Ok();
}

Status PerfDataReader::Impl::ReadAttrs(uint64_t attr_size, uint64_t offset, uint64_t size) {
  if (size == 0) return Status::Ok();
  if (attr_size <= 16 || attr_size > 4096) {
    return Corrupt(name, 16, "attr entry size " + std::to_string(attr_size));
  }
  if (offset > bytes.size() || size > bytes.size() - offset) {
    return Truncated(name, 24,
                     "attrs section [" + std::to_string(offset) + ", +" + std::to_string(size) +
                         ") lies beyond the end of the file");
  }
  const uint64_t n = size / attr_size;
  Cursor c(bytes.subspan(offset, size), offset);
  uint64_t total_ids = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t at = c.offset();
    // Like perf: each entry is the attr at its own stored size, then the ids section.
    uint32_t stored = 0;
    Cursor peek(c.Rest(), at);
    if (!(peek.Skip(4) && peek.U32(&stored))) return Truncated(name, at, "attr entry");
    const uint32_t attr_len = stored == 0 ? perf::kAttrSizeVer0 : stored;
    std::span<const uint8_t> attr_bytes;
    uint64_t ids_off = 0, ids_size = 0;
    if (attr_len < perf::kAttrSizeVer0 || !c.Bytes(attr_len, &attr_bytes) ||
        !ReadSection(c, &ids_off, &ids_size)) {
      return Corrupt(
          name, at,
          "attr entry (attr size " + std::to_string(attr_len) + ") does not fit the attrs section");
    }
    PerfAttr a;
    a.attr = perf_internal::ParseAttr(attr_bytes);
    if (ids_off > bytes.size() || ids_size > bytes.size() - ids_off) {
      return Truncated(name, at, "attr ids section lies beyond the end of the file");
    }
    // Each id section holds distinct bytes of the file; attrs that all point at one large
    // section would otherwise multiply it (hostile input): bound the total by the file.
    total_ids += ids_size / 8;
    if (total_ids > bytes.size() / 8) {
      return Corrupt(name, at, "attr id sections hold more ids than the file has room for");
    }
    Cursor ids(bytes.subspan(ids_off, ids_size), ids_off);
    ids.U64s(ids_size / 8, &a.ids);
    AddAttr(std::move(a));
  }
  return Status::Ok();
}

Status PerfDataReader::Impl::ReadFeatures(const std::bitset<perf::kFeatureBits>& bits) {
  info.features = bits;
  if (bits.none()) return Status::Ok();
  Cursor table(bytes, 0);
  table.Skip(declared_end);
  for (int f = 0; f < perf::kFeatureBits; ++f) {
    if (!bits.test(f)) continue;
    const uint64_t at = table.offset();
    uint64_t off = 0, size = 0;
    if (!ReadSection(table, &off, &size)) {
      return Truncated(name, at, "feature section table");
    }
    if (off > bytes.size() || size > bytes.size() - off) {
      return Truncated(name, at,
                       "header feature " + std::to_string(f) + " section [" + std::to_string(off) +
                           ", +" + std::to_string(size) + ") lies beyond the end of the file");
    }
    Cursor c(bytes.subspan(off, size), off);
    PATHPROF_RETURN_IF_ERROR(perf_internal::ApplyFeature(f, c, name, &info));
  }
  return Status::Ok();
}

void PerfDataReader::Impl::AddAttr(PerfAttr attr) {
  const size_t index = info.attrs.size();
  for (uint64_t id : attr.ids) attr_by_id.emplace(id, index);
  info.attrs.push_back(std::move(attr));
}

// Open reads the synthesized records at the head of the data (attrs and features in pipe mode,
// AUXTRACE_INFO, TIME_CONV) so that info() is complete before the first Next.
void PerfDataReader::Impl::Prescan() {
  const uint64_t start = pos;
  prescanning = true;
  PerfRecord rec;
  while (pos + perf::kRecordHeaderSize <= end) {
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + pos, 4);
    if (type < perf::kRecordHeaderAttr) break;
    Result<bool> more = Next(&rec);
    if (!more.ok() || !*more) break;
    prescan_end = pos;
  }
  prescanning = false;
  pos = start;
  error = Status::Ok();
  stats = PerfDataStats{};
}

size_t PerfDataReader::Impl::PickAttr(std::span<const uint8_t> body, bool sample) {
  if (info.attrs.size() <= 1) return 0;
  // perf requires every attr to put the id at the same place, so attrs[0] tells where it is.
  const uint64_t t = info.attrs[0].attr.sample_type;
  int pos_u64 = -1;
  uint64_t byte_pos = 0;
  if (sample) {
    pos_u64 = perf_internal::SampleIdPosFromStart(t);
    if (pos_u64 < 0) return 0;
    byte_pos = uint64_t(pos_u64) * 8;
  } else {
    if (!info.attrs[0].attr.sample_id_all()) return 0;
    pos_u64 = perf_internal::SampleIdPosFromEnd(t);
    if (pos_u64 < 0 || body.size() < uint64_t(pos_u64) * 8) return 0;
    byte_pos = body.size() - uint64_t(pos_u64) * 8;
  }
  uint64_t id = 0;
  if (byte_pos + 8 > body.size()) return 0;
  std::memcpy(&id, body.data() + byte_pos, 8);
  auto it = attr_by_id.find(id);
  if (it == attr_by_id.end()) {
    if (sample) ++stats.samples_unknown_id;
    return 0;
  }
  return it->second;
}

Result<bool> PerfDataReader::Impl::Next(PerfRecord* out) {
  if (!error.ok()) return error;
  if (pos >= end) {
    if (end < declared_end) {
      error = Truncated(name, pos,
                        "data section should run to offset " + std::to_string(declared_end) +
                            " but the file ends");
      return error;
    }
    return false;
  }
  const uint64_t at = pos;
  const uint64_t left = end - pos;
  const bool at_input_end = end == bytes.size();
  if (left < perf::kRecordHeaderSize) {
    error = at_input_end ? Truncated(name, at, "input ends inside a record header")
                         : Corrupt(name, at, "data section ends inside a record header");
    return error;
  }
  uint32_t type = 0;
  uint16_t misc = 0, size = 0;
  std::memcpy(&type, bytes.data() + at, 4);
  std::memcpy(&misc, bytes.data() + at + 4, 2);
  std::memcpy(&size, bytes.data() + at + 6, 2);
  if (size < perf::kRecordHeaderSize) {
    error = Corrupt(name, at,
                    "record of type " + std::to_string(type) + " has size " + std::to_string(size) +
                        ", smaller than its header");
    return error;
  }
  if (size > left) {
    const std::string what = "record of type " + std::to_string(type) + " and size " +
                             std::to_string(size) + " crosses the end of the data";
    error = at_input_end ? Truncated(name, at, what) : Corrupt(name, at, what);
    return error;
  }
  std::span<const uint8_t> body = bytes.subspan(at + perf::kRecordHeaderSize, size - 8);
  std::span<const uint8_t> after = bytes.subspan(at + size, end - at - size);
  Cursor c(body, at + perf::kRecordHeaderSize);
  out->offset = at;
  out->type = type;
  out->misc = misc;
  out->size = size;
  uint64_t extra = 0;
  Status st;
  if (type == perf::kRecordSample) {
    if (info.attrs.empty()) {
      error = Corrupt(name, at, "sample record before any event attr");
      return error;
    }
    const size_t index = PickAttr(body, true);
    PerfSample* s = std::get_if<PerfSample>(&out->body);
    if (s == nullptr) s = &out->body.emplace<PerfSample>();
    s->attr_index = index;
    st = perf_internal::ParseSample(c, info.attrs[index].attr, name, s);
  } else {
    const PerfEventAttr* attr = nullptr;
    if (!info.attrs.empty() && type < perf::kRecordHeaderAttr) {
      attr = &info.attrs[PickAttr(body, false)].attr;
    }
    st = perf_internal::ParseNonSample(type, misc, c, attr, after, name, &out->body, &extra);
  }
  if (!st.ok()) {
    error = st;
    return error;
  }
  pos = at + size + extra;
  Status applied = Apply(*out);
  if (!applied.ok()) {
    error = applied;
    return error;
  }
  return true;
}

Status PerfDataReader::Impl::Apply(const PerfRecord& rec) {
  ++stats.records;
  ++stats.records_by_type[rec.type];
  const bool fresh = prescanning || rec.offset >= prescan_end;
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, PerfSample>) {
          ++stats.samples;
          stats.branch_entries += r.branches.size();
        } else if constexpr (std::is_same_v<T, PerfLost>) {
          stats.lost_events += r.lost;
        } else if constexpr (std::is_same_v<T, PerfLostSamples>) {
          stats.lost_samples += r.lost;
        } else if constexpr (std::is_same_v<T, PerfAuxtrace>) {
          stats.auxtrace_bytes += r.data.size();
        } else if constexpr (std::is_same_v<T, PerfOtherRecord>) {
          if (r.known_type) {
            ++stats.undecoded_records;
          } else {
            ++stats.unknown_records;
          }
        } else if constexpr (std::is_same_v<T, PerfHeaderAttr>) {
          if (fresh) AddAttr(r.attr);
        } else if constexpr (std::is_same_v<T, PerfBuildId>) {
          if (fresh) info.build_ids.push_back(r);
        } else if constexpr (std::is_same_v<T, PerfAuxtraceInfo>) {
          if (fresh) info.auxtrace_info = r;
        } else if constexpr (std::is_same_v<T, PerfTimeConv>) {
          if (fresh) info.time_conv = r;
        }
      },
      rec.body);
  if (auto* f = std::get_if<PerfHeaderFeature>(&rec.body); f != nullptr && fresh) {
    Cursor c(f->data, rec.offset + 16);
    if (f->feature < perf::kFeatureBits) {
      return perf_internal::ApplyFeature(static_cast<int>(f->feature), c, name, &info);
    }
  }
  return Status::Ok();
}

PerfDataReader::PerfDataReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PerfDataReader::PerfDataReader(PerfDataReader&&) noexcept = default;
PerfDataReader& PerfDataReader::operator=(PerfDataReader&&) noexcept = default;
PerfDataReader::~PerfDataReader() = default;

Result<PerfDataReader> PerfDataReader::FromBytes(std::span<const uint8_t> bytes, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->name = std::move(name);
  impl->bytes = bytes;
  PATHPROF_RETURN_IF_ERROR(impl->Init());
  return PerfDataReader(std::move(impl));
}

Result<PerfDataReader> PerfDataReader::Open(const std::string& path, const InputLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->name = path;
  auto file = InputFile::Open(path, limits);
  if (!file.ok()) return WithContext(file.status(), "perf.data");
  impl->file.emplace(std::move(*file));
  impl->bytes = impl->file->bytes();
  PATHPROF_RETURN_IF_ERROR(impl->Init());
  return PerfDataReader(std::move(impl));
}

Result<bool> PerfDataReader::Next(PerfRecord* out) {
  return impl_->Next(out);
}
const PerfDataInfo& PerfDataReader::info() const {
  return impl_->info;
}
const PerfDataStats& PerfDataReader::stats() const {
  return impl_->stats;
}
const PerfEventAttr& PerfDataReader::attr(size_t index) const {
  return impl_->info.attrs.at(index).attr;
}

Status PerfDataReader::RequireX86_64() const {
  const std::string& a = impl_->info.arch;
  if (a.empty() || a == "x86_64") return Status::Ok();
  return Error(ErrorCode::kUnsupported,
               "perf.data " + impl_->name + " was recorded on " + a +
                   "; pathprof decodes branch records of x86-64 code only (LBR fall-through and "
                   "Intel PT need x86 instruction decoding). Use `perf script` on a " +
                   a + " host for this file");
}

}  // namespace pathprof::decoders
