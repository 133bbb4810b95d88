#include "pathprof/fleet/archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pathprof::fleet {

namespace fs = std::filesystem;

namespace {

constexpr const char* kProfileSuffix = ".pb.gz";
constexpr const char* kLabelsSuffix = ".labels";
constexpr const char* kBranchesSuffix = ".pbs";
constexpr const char* kTempSuffix = ".tmp";
constexpr size_t kMaxNameLabelBytes = 120;  // keeps names well under NAME_MAX (255)
constexpr mode_t kFileMode = 0640;
constexpr mode_t kFolderMode = 0750;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = HexValue(s[i + 1]);
      const int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// "name=value+name=value", encoded, cut at `limit` without splitting a %XX escape.
std::string NameLabels(const LabelSet& labels, size_t limit) {
  std::string out;
  for (const Label& label : labels) {
    if (!out.empty()) out += '+';
    out += label.name + '=' + PercentEncode(label.value);
  }
  if (out.size() <= limit) return out;
  size_t cut = limit;
  for (size_t back = 1; back <= 2 && back <= cut; ++back) {
    if (out[cut - back] == '%') cut -= back;
  }
  return out.substr(0, cut);
}

std::string Metadata(const ProfileWindow& window) {
  std::ostringstream meta;
  meta << "start_unix_nanos=" << window.start_unix_nanos << '\n'
       << "end_unix_nanos=" << window.end_unix_nanos << '\n'
       << "sample_rate_hz=" << window.sample_rate_hz << '\n';
  for (const Label& label : window.labels) {
    meta << "label." << label.name << '=' << PercentEncode(label.value) << '\n';
  }
  return meta.str();
}

struct ParsedMetadata {
  int64_t start = 0, end = 0, rate = 0;
  LabelSet labels;
};

Result<ParsedMetadata> ParseMetadata(const std::string& path, const std::string& text) {
  ParsedMetadata parsed;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return Error(ErrorCode::kCorrupt, "archive metadata " + path + " line " +
                                            std::to_string(line_no) + ": no '=': delete the file");
    }
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    try {
      if (key == "start_unix_nanos") {
        parsed.start = std::stoll(value);
      } else if (key == "end_unix_nanos") {
        parsed.end = std::stoll(value);
      } else if (key == "sample_rate_hz") {
        parsed.rate = std::stoll(value);
      } else if (key.rfind("label.", 0) == 0) {
        parsed.labels.push_back({key.substr(6), PercentDecode(value)});
      }
    } catch (const std::exception&) {
      return Error(ErrorCode::kCorrupt, "archive metadata " + path + " line " +
                                            std::to_string(line_no) + ": bad number '" + value +
                                            "'");
    }
  }
  return parsed;
}

Result<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
  }
  std::ostringstream data;
  data << in.rdbuf();
  if (in.bad()) return Error(ErrorCode::kIo, "cannot read " + path);
  return data.str();
}

// Temporary name + rename: readers (and a restarted daemon) never see half a file. Mode
// kFileMode whatever the process's umask: the profiles name the host's processes and functions,
// so they are for the daemon's user and group, never for everyone.
Status WriteAtomically(const std::string& path, const std::string& bytes) {
  const std::string temp = path + kTempSuffix;
  const int fd =
      open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kFileMode);
  if (fd < 0) {
    return Error(ErrorCode::kIo, "cannot create " + temp + ": " + std::strerror(errno));
  }
  bool ok = fchmod(fd, kFileMode) == 0;  // open's mode went through the umask; this does not
  for (size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  const int write_errno = errno;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return Error(ErrorCode::kIo,
                 "cannot write " + temp + ": " + std::strerror(write_errno) + " (disk full?)");
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return Error(ErrorCode::kIo, "cannot rename " + temp + " to " + path + ": " + ec.message());
  }
  return Status::Ok();
}

// "<20 digits>-<8 digits>_..." -> start, sequence.
bool ParseStem(const std::string& stem, int64_t* start, uint64_t* sequence) {
  if (stem.size() < 30 || stem[20] != '-' || stem[29] != '_') return false;
  for (size_t i = 0; i < 29; ++i) {
    if (i != 20 && (stem[i] < '0' || stem[i] > '9')) return false;
  }
  *start = std::stoll(stem.substr(0, 20));
  *sequence = std::stoull(stem.substr(21, 8));
  return true;
}

}  // namespace

std::string PercentEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<ProfileArchive> ProfileArchive::Open(ArchiveOptions options) {
  if (options.directory.empty() || options.max_windows == 0 || options.max_bytes == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "archive needs a directory, max_windows >= 1 and max_bytes >= 1");
  }
  std::error_code ec;
  const bool created = fs::create_directories(options.directory, ec);
  // A folder it made gets kFolderMode whatever the umask; one that was there keeps the mode
  // its owner gave it.
  if (!ec && created) fs::permissions(options.directory, fs::perms(kFolderMode), ec);
  if (ec) {
    return Error(ErrorCode::kIo,
                 "cannot create archive folder " + options.directory + ": " + ec.message());
  }
  ProfileArchive archive(std::move(options));
  PATHPROF_RETURN_IF_ERROR(archive.Scan());
  archive.Evict();
  return archive;
}

Status ProfileArchive::Scan() {
  std::error_code ec;
  std::vector<std::string> stray_companions;
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, kTempSuffix)) {
      // Left by a crash between write and rename: never a complete window.
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
      continue;
    }
    // A window's other files belong to its profile; without one they are an unfinished Add.
    bool companion = false;
    for (const char* suffix : {kLabelsSuffix, kBranchesSuffix}) {
      if (!EndsWith(name, suffix)) continue;
      companion = true;
      const std::string stem = name.substr(0, name.size() - std::strlen(suffix));
      int64_t start = 0;
      uint64_t sequence = 0;
      if (!ParseStem(stem, &start, &sequence)) {
        ++stats_.foreign_files_ignored;  // not one of ours: left alone
      } else if (!fs::exists(fs::path(options_.directory) / (stem + kProfileSuffix))) {
        stray_companions.push_back(entry.path().string());
      }
    }
    if (companion) continue;
    int64_t start = 0;
    uint64_t sequence = 0;
    if (!EndsWith(name, kProfileSuffix) ||
        !ParseStem(name.substr(0, name.size() - std::strlen(kProfileSuffix)), &start, &sequence)) {
      ++stats_.foreign_files_ignored;
      continue;
    }
    ArchivedWindow window;
    window.profile_path = entry.path().string();
    const std::string stem = name.substr(0, name.size() - std::strlen(kProfileSuffix));
    window.labels_path = (fs::path(options_.directory) / (stem + kLabelsSuffix)).string();
    window.start_unix_nanos = start;
    window.end_unix_nanos = start;
    window.sequence = sequence;
    std::error_code size_ec;
    window.bytes = entry.file_size(size_ec);
    if (size_ec) window.bytes = 0;
    const std::string branches = (fs::path(options_.directory) / (stem + kBranchesSuffix)).string();
    if (const uintmax_t branches_bytes = fs::file_size(branches, size_ec); !size_ec) {
      window.branches_path = branches;
      window.bytes += branches_bytes;
    }
    const uintmax_t labels_bytes = fs::file_size(window.labels_path, size_ec);
    if (!size_ec) {
      window.bytes += labels_bytes;
      Result<std::string> text = ReadWhole(window.labels_path);
      if (text.ok()) {
        Result<ParsedMetadata> meta = ParseMetadata(window.labels_path, *text);
        if (meta.ok()) {
          window.end_unix_nanos = meta->end;
          window.labels = std::move(meta->labels);
        }
      }
    }
    windows_.push_back(std::move(window));
  }
  if (ec) {
    return Error(ErrorCode::kIo,
                 "cannot list archive folder " + options_.directory + ": " + ec.message());
  }
  // The profile is renamed into place last, so labels or branches without one are an unfinished
  // Add.
  for (const std::string& path : stray_companions) {
    std::error_code ignored;
    fs::remove(path, ignored);
  }
  std::sort(windows_.begin(), windows_.end(), [](const ArchivedWindow& a, const ArchivedWindow& b) {
    return a.start_unix_nanos != b.start_unix_nanos ? a.start_unix_nanos < b.start_unix_nanos
                                                    : a.sequence < b.sequence;
  });
  for (const ArchivedWindow& window : windows_) {
    total_bytes_ += window.bytes;
    next_sequence_ = std::max(next_sequence_, window.sequence + 1);
  }
  return Status::Ok();
}

Status ProfileArchive::Add(const ProfileWindow& window) {
  if (Status valid = ValidateWindow(window); !valid.ok()) {
    ++stats_.windows_rejected_invalid;
    return valid;
  }
  const std::string meta = Metadata(window);
  uint64_t bytes = window.pprof.size() + meta.size();
  // The branches go with the profile when both fit; a profile too large alone is refused below.
  bool with_branches = !window.branches.empty();
  if (with_branches && bytes <= options_.max_bytes &&
      bytes + window.branches.size() > options_.max_bytes) {
    ++stats_.branches_rejected_too_large;
    with_branches = false;
  }
  if (with_branches) bytes += window.branches.size();
  if (bytes > options_.max_bytes) {
    ++stats_.windows_rejected_too_large;
    return Error(ErrorCode::kResourceExhausted,
                 "window of " + std::to_string(bytes) + " bytes exceeds the archive's max_bytes " +
                     std::to_string(options_.max_bytes) + ": raise the limit");
  }
  const uint64_t sequence = next_sequence_++ % 100'000'000;
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "%020" PRId64 "-%08" PRIu64 "_", window.start_unix_nanos,
                sequence);
  const std::string stem = prefix + NameLabels(window.labels, kMaxNameLabelBytes);
  ArchivedWindow entry;
  entry.profile_path = (fs::path(options_.directory) / (stem + kProfileSuffix)).string();
  entry.labels_path = (fs::path(options_.directory) / (stem + kLabelsSuffix)).string();
  if (with_branches)
    entry.branches_path = (fs::path(options_.directory) / (stem + kBranchesSuffix)).string();
  entry.start_unix_nanos = window.start_unix_nanos;
  entry.end_unix_nanos = window.end_unix_nanos;
  entry.sequence = sequence;
  entry.bytes = bytes;
  entry.labels = window.labels;

  // Metadata and branches first: the profile's rename is what makes the window exist (see Scan).
  Status status = WriteAtomically(entry.labels_path, meta);
  if (status.ok() && with_branches) status = WriteAtomically(entry.branches_path, window.branches);
  if (status.ok()) status = WriteAtomically(entry.profile_path, window.pprof);
  if (!status.ok()) {
    ++stats_.write_errors;
    std::error_code ignored;
    fs::remove(entry.labels_path, ignored);
    if (with_branches) fs::remove(entry.branches_path, ignored);
    return status;
  }
  ++stats_.windows_written;
  stats_.windows_with_branches += with_branches;
  stats_.bytes_written += bytes;
  windows_.push_back(std::move(entry));
  total_bytes_ += bytes;
  Evict();
  return Status::Ok();
}

void ProfileArchive::Evict() {
  while (windows_.size() > 1 &&
         (windows_.size() > options_.max_windows || total_bytes_ > options_.max_bytes)) {
    const bool over_count = windows_.size() > options_.max_windows;
    ArchivedWindow oldest = std::move(windows_.front());
    windows_.erase(windows_.begin());
    total_bytes_ -= oldest.bytes;
    stats_.bytes_deleted += oldest.bytes;
    ++(over_count ? stats_.windows_deleted_count_limit : stats_.windows_deleted_byte_limit);
    if (!Remove(oldest).ok()) ++stats_.write_errors;
  }
}

Status ProfileArchive::Remove(const ArchivedWindow& entry) {
  std::error_code ec_profile, ec_labels, ec_branches;
  fs::remove(entry.profile_path, ec_profile);
  fs::remove(entry.labels_path, ec_labels);
  if (!entry.branches_path.empty()) fs::remove(entry.branches_path, ec_branches);
  if (ec_profile || ec_labels || ec_branches) {
    return Error(ErrorCode::kIo, "cannot delete archived window " + entry.profile_path);
  }
  return Status::Ok();
}

Result<ProfileWindow> ProfileArchive::Read(const ArchivedWindow& entry) const {
  PATHPROF_ASSIGN_OR_RETURN(std::string pprof, ReadWhole(entry.profile_path));
  ProfileWindow window;
  window.pprof = std::move(pprof);
  window.start_unix_nanos = entry.start_unix_nanos;
  window.end_unix_nanos = entry.end_unix_nanos;
  window.labels = entry.labels;
  if (!entry.branches_path.empty()) {
    PATHPROF_ASSIGN_OR_RETURN(window.branches, ReadWhole(entry.branches_path));
  }
  Result<std::string> text = ReadWhole(entry.labels_path);
  if (text.ok()) {
    PATHPROF_ASSIGN_OR_RETURN(ParsedMetadata meta, ParseMetadata(entry.labels_path, *text));
    window.start_unix_nanos = meta.start;
    window.end_unix_nanos = meta.end;
    window.sample_rate_hz = meta.rate;
    window.labels = std::move(meta.labels);
  }
  return window;
}

}  // namespace pathprof::fleet
