// Numbers of the perf.data format: record types, sample_type bits, header features.
// The kernel's <linux/perf_event.h> defines the kernel half, but not the records and features that
// only the perf tool writes (types >= 64, HEADER_*), and its contents vary with the installed
// kernel headers; one self-contained table keeps the reader independent of the build host.
#pragma once

#include <cstdint>

namespace pathprof::decoders::perf {

// perf_event_header.type
enum RecordType : uint32_t {
  kRecordMmap = 1,
  kRecordLost = 2,
  kRecordComm = 3,
  kRecordExit = 4,
  kRecordThrottle = 5,
  kRecordUnthrottle = 6,
  kRecordFork = 7,
  kRecordRead = 8,
  kRecordSample = 9,
  kRecordMmap2 = 10,
  kRecordAux = 11,
  kRecordItraceStart = 12,
  kRecordLostSamples = 13,
  kRecordSwitch = 14,
  kRecordSwitchCpuWide = 15,
  kRecordNamespaces = 16,
  kRecordKsymbol = 17,
  kRecordBpfEvent = 18,
  kRecordCgroup = 19,
  kRecordTextPoke = 20,
  kRecordAuxOutputHwId = 21,
  kKernelRecordTypeEnd = 22,
  // Records the perf tool synthesizes (user types).
  kRecordHeaderAttr = 64,
  kRecordHeaderEventType = 65,
  kRecordHeaderTracingData = 66,
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordIdIndex = 69,
  kRecordAuxtraceInfo = 70,
  kRecordAuxtrace = 71,
  kRecordAuxtraceError = 72,
  kRecordThreadMap = 73,
  kRecordCpuMap = 74,
  kRecordStatConfig = 75,
  kRecordStat = 76,
  kRecordStatRound = 77,
  kRecordEventUpdate = 78,
  kRecordTimeConv = 79,
  kRecordHeaderFeature = 80,
  kRecordCompressed = 81,
  kRecordFinishedInit = 82,
  kUserRecordTypeEnd = 83,
};

// perf_event_header.misc
inline constexpr uint16_t kMiscCpuModeMask = 0x7;
inline constexpr uint16_t kMiscKernel = 1;
inline constexpr uint16_t kMiscUser = 2;
inline constexpr uint16_t kMiscCommExec = 1u << 13;   // COMM
inline constexpr uint16_t kMiscSwitchOut = 1u << 13;  // SWITCH, SWITCH_CPU_WIDE
inline constexpr uint16_t kMiscSwitchOutPreempt = 1u << 14;
inline constexpr uint16_t kMiscMmapBuildId = 1u << 14;  // MMAP2 carries a build-id
inline constexpr uint16_t kMiscBuildIdSize = 1u << 15;  // HEADER_BUILD_ID carries its size

// perf_event_attr.sample_type
enum SampleType : uint64_t {
  kSampleIp = 1ull << 0,
  kSampleTid = 1ull << 1,
  kSampleTime = 1ull << 2,
  kSampleAddr = 1ull << 3,
  kSampleRead = 1ull << 4,
  kSampleCallchain = 1ull << 5,
  kSampleId = 1ull << 6,
  kSampleCpu = 1ull << 7,
  kSamplePeriod = 1ull << 8,
  kSampleStreamId = 1ull << 9,
  kSampleRaw = 1ull << 10,
  kSampleBranchStack = 1ull << 11,
  kSampleRegsUser = 1ull << 12,
  kSampleStackUser = 1ull << 13,
  kSampleWeight = 1ull << 14,
  kSampleDataSrc = 1ull << 15,
  kSampleIdentifier = 1ull << 16,
  kSampleTransaction = 1ull << 17,
  kSampleRegsIntr = 1ull << 18,
  kSamplePhysAddr = 1ull << 19,
  kSampleAux = 1ull << 20,
  kSampleCgroup = 1ull << 21,
  kSampleDataPageSize = 1ull << 22,
  kSampleCodePageSize = 1ull << 23,
  kSampleWeightStruct = 1ull << 24,
  kSampleTypeKnownMask = (1ull << 25) - 1,
};

// perf_event_attr.read_format
enum ReadFormat : uint64_t {
  kFormatTotalTimeEnabled = 1ull << 0,
  kFormatTotalTimeRunning = 1ull << 1,
  kFormatId = 1ull << 2,
  kFormatGroup = 1ull << 3,
  kFormatLost = 1ull << 4,
};

// perf_event_attr.branch_sample_type
enum BranchSampleType : uint64_t {
  kBranchUser = 1ull << 0,
  kBranchKernel = 1ull << 1,
  kBranchHv = 1ull << 2,
  kBranchAny = 1ull << 3,
  kBranchAnyCall = 1ull << 4,
  kBranchAnyReturn = 1ull << 5,
  kBranchIndCall = 1ull << 6,
  kBranchAbortTx = 1ull << 7,
  kBranchInTx = 1ull << 8,
  kBranchNoTx = 1ull << 9,
  kBranchCond = 1ull << 10,
  kBranchCallStack = 1ull << 11,
  kBranchIndJump = 1ull << 12,
  kBranchCall = 1ull << 13,
  kBranchNoFlags = 1ull << 14,
  kBranchNoCycles = 1ull << 15,
  kBranchTypeSave = 1ull << 16,
  kBranchHwIndex = 1ull << 17,
};

// Bits of the perf_event_attr flags word (the bitfield after read_format).
enum AttrFlagBit : int {
  kAttrDisabled = 0,
  kAttrInherit = 1,
  kAttrExcludeUser = 4,
  kAttrExcludeKernel = 5,
  kAttrExcludeHv = 6,
  kAttrMmap = 8,
  kAttrComm = 9,
  kAttrFreq = 10,
  kAttrEnableOnExec = 12,
  kAttrTask = 13,
  kAttrSampleIdAll = 18,
  kAttrExcludeGuest = 20,
  kAttrMmap2 = 23,
  kAttrCommExec = 24,
};

// Sizes of the published perf_event_attr ABI versions.
inline constexpr uint32_t kAttrSizeVer0 = 64;
inline constexpr uint32_t kAttrSizeVer5 = 112;

// File header feature bits (adds_features), in the order their sections are stored.
enum HeaderFeature : int {
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsRelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrCpus = 7,
  kFeatCpuDesc = 8,
  kFeatCpuId = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatAuxtrace = 18,
  kFeatureBits = 256,
};

inline constexpr uint64_t kMagicPerfile2 = 0x32454c4946524550ull;  // "PERFILE2" read little-endian
inline constexpr uint64_t kMagicPerfile2Swapped = 0x50455246494c4532ull;
inline constexpr uint64_t kMagicPerfile1 = 0x454c494646524550ull;  // "PERFFILE", pre-2.6.35
inline constexpr uint64_t kFileHeaderSize = 104;
inline constexpr uint64_t kPipeHeaderSize = 16;
inline constexpr uint64_t kRecordHeaderSize = 8;
inline constexpr uint64_t kBranchEntrySize = 24;

}  // namespace pathprof::decoders::perf
