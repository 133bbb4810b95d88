#include "pathprof/collectors/perf_event_source.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace pathprof::collectors {
namespace {

bool IsPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

std::vector<uint8_t> ToBytes(const perf_event_attr& a) {
  const auto* p = reinterpret_cast<const uint8_t*>(&a);
  return std::vector<uint8_t>(p, p + sizeof a);
}

Status OpenError(int err, const char* what, pid_t pid) {
  std::string target = pid > 0 ? "pid " + std::to_string(pid) : "this CPU";
  std::string msg =
      std::string("perf_event_open for ") + what + " on " + target + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENODEV:
      return Error(ErrorCode::kUnavailable,
                   msg + " (no hardware PMU: a VM without PMU passthrough? use --source ptrace)");
    case EOPNOTSUPP:
      return Error(ErrorCode::kUnavailable, msg + " (this PMU cannot do that; see pathctl caps)");
    case EACCES:
    case EPERM:
      return Error(ErrorCode::kPermission,
                   msg + " (run as root or with CAP_PERFMON, or lower perf_event_paranoid)");
    case ESRCH:
      return Error(ErrorCode::kNotFound, msg + " (the process is gone)");
    default:
      return Error(ErrorCode::kUnavailable, msg);
  }
}

// Reads a PMU format field like "config:10" or "config:14-17" from sysfs and returns the shift.
Result<int> FormatBit(const std::string& root, const std::string& field) {
  std::string path = root + "/bus/event_source/devices/intel_pt/format/" + field;
  std::ifstream f(path);
  std::string spec;
  if (!(f >> spec) || spec.rfind("config:", 0) != 0)
    return Error(ErrorCode::kUnavailable, "cannot read the intel_pt format field " + path);
  return std::atoi(spec.c_str() + 7);
}

}  // namespace

PerfAttrBytes LbrAttr(const PerfLbrConfig& c) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CPU_CYCLES;
  a.sample_period = c.sample_period;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
                  PERF_SAMPLE_CPU | PERF_SAMPLE_BRANCH_STACK;
  a.branch_sample_type = c.call_stack_mode ? PERF_SAMPLE_BRANCH_CALL_STACK : PERF_SAMPLE_BRANCH_ANY;
  if (c.user_only) a.branch_sample_type |= PERF_SAMPLE_BRANCH_USER;
  a.exclude_kernel = c.user_only;
  a.exclude_hv = 1;
  a.disabled = 1;
  a.inherit = c.pid > 0 && c.cpu < 0;
  a.mmap = a.mmap2 = a.comm = a.task = 1;
  a.sample_id_all = 1;
  a.wakeup_events = 1;
  return {ToBytes(a)};
}

Result<PerfAttrBytes> PtAttr(const PerfPtConfig& c, const std::string& sysfs_root) {
  std::ifstream tf(sysfs_root + "/bus/event_source/devices/intel_pt/type");
  int type;
  if (!(tf >> type))
    return Error(ErrorCode::kUnavailable,
                 "no intel_pt PMU under " + sysfs_root +
                     "/bus/event_source/devices (not an Intel CPU, or a VM without PT)");
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = static_cast<uint32_t>(type);
  // Timing packets let the decoder place the trace in time; branch tracing itself is default on.
  for (const char* field : {"tsc", "mtc"}) {
    auto bit = FormatBit(sysfs_root, field);
    if (bit.ok()) a.config |= 1ull << *bit;
  }
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  a.exclude_kernel = c.user_only;
  a.exclude_hv = 1;
  a.disabled = c.start_disabled;
  a.mmap = a.mmap2 = a.comm = a.task = a.context_switch = 1;
  a.sample_id_all = 1;
  a.inherit = c.pid > 0 && c.cpu < 0 && !c.snapshot;
  return PerfAttrBytes{ToBytes(a)};
}

Result<std::unique_ptr<PerfEventSource>> PerfEventSource::OpenLbr(const PerfLbrConfig& c) {
  if (!IsPowerOfTwo(c.data_pages))
    return Error(ErrorCode::kInvalidArgument, "LBR data_pages must be a power of two");
  return Open(LbrAttr(c).bytes, c.pid, c.cpu, c.data_pages, 0, false, "LBR sampling");
}

Result<std::unique_ptr<PerfEventSource>> PerfEventSource::OpenPt(const PerfPtConfig& c) {
  if (!IsPowerOfTwo(c.data_pages) || !IsPowerOfTwo(c.aux_pages))
    return Error(ErrorCode::kInvalidArgument, "PT data_pages and aux_pages must be powers of two");
  PATHPROF_ASSIGN_OR_RETURN(auto attr, PtAttr(c));
  return Open(attr.bytes, c.pid, c.cpu, c.data_pages, c.aux_pages, c.snapshot, "Intel PT");
}

Result<std::unique_ptr<PerfEventSource>> PerfEventSource::Open(std::vector<uint8_t> attr, pid_t pid,
                                                               int cpu, int data_pages,
                                                               int aux_pages, bool aux_overwrite,
                                                               const char* what) {
  if (pid <= 0 && cpu < 0)
    return Error(ErrorCode::kInvalidArgument, std::string(what) + ": give a pid or a cpu");
  std::unique_ptr<PerfEventSource> s(new PerfEventSource());
  s->attr_ = std::move(attr);
  s->fd_ = static_cast<int>(
      syscall(SYS_perf_event_open, s->attr_.data(), pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
  if (s->fd_ < 0) return OpenError(errno, what, pid);

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  s->base_size_ = page * (1 + static_cast<size_t>(data_pages));
  s->base_ = mmap(nullptr, s->base_size_, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
  if (s->base_ == MAP_FAILED) {
    s->base_ = nullptr;
    return Error(ErrorCode::kResourceExhausted,
                 std::string(what) + ": mmap of the ring buffer failed: " + std::strerror(errno) +
                     " (raise /proc/sys/kernel/perf_event_mlock_kb or use fewer pages)");
  }
  if (aux_pages > 0) {
    auto* meta = static_cast<perf_event_mmap_page*>(s->base_);
    meta->aux_offset = s->base_size_;
    meta->aux_size = page * static_cast<size_t>(aux_pages);
    s->aux_size_ = meta->aux_size;
    // A read-only AUX mapping puts the kernel in overwrite (snapshot) mode.
    int prot = aux_overwrite ? PROT_READ : PROT_READ | PROT_WRITE;
    s->aux_ =
        mmap(nullptr, s->aux_size_, prot, MAP_SHARED, s->fd_, static_cast<off_t>(meta->aux_offset));
    if (s->aux_ == MAP_FAILED) {
      s->aux_ = nullptr;
      return Error(ErrorCode::kResourceExhausted,
                   std::string(what) + ": mmap of the AUX area failed: " + std::strerror(errno));
    }
  }
  s->ring_ = std::make_unique<PerfRing>(s->base_, page * static_cast<size_t>(data_pages), s->aux_,
                                        s->aux_size_);
  return s;
}

Status PerfEventSource::Enable() {
  if (ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0) != 0)
    return Error(ErrorCode::kIo, std::string("PERF_EVENT_IOC_ENABLE: ") + std::strerror(errno));
  return Status::Ok();
}

Status PerfEventSource::Disable() {
  if (ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0) != 0)
    return Error(ErrorCode::kIo, std::string("PERF_EVENT_IOC_DISABLE: ") + std::strerror(errno));
  return Status::Ok();
}

PerfEventSource::~PerfEventSource() {
  ring_.reset();
  if (aux_) munmap(aux_, aux_size_);
  if (base_) munmap(base_, base_size_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace pathprof::collectors
