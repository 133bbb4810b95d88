#!/usr/bin/env bash
# Remakes the fuzz targets' seeds kept in the repository: a handful of small, valid inputs, so
# that the fuzzers start from real structure even where the shared corpus (../shared/corpus) is
# absent. The committed files are what the tests use; this script documents how they were made.
#   perf_data/        perf.data files recorded here by Debian's perf (linux-perf), file and pipe
#                     mode, with a callchain, user stack and registers, raw tracepoint data, and
#                     (with BUILD_DIR, where pathctl is built) branch stacks with MMAP2 build-ids
#                     written by `pathctl export --format perf-lbr` from an exact trace
#   lbr_reconstruct/  lbr_reconstruct_fuzz.cc's input: 512 bytes of code (code.s below, at
#                     0x401000) then 5-byte branch entries (from, to: 16-bit offsets; a selector)
#   emulator/         emulator_fuzz.cc's input: a header of registers, then a code page (emu.s
#                     below: loops, calls, string, integer and vector instructions, indirect
#                     jumps) and a data page whose top is the stack; one seed per entry point
#   cfi_unwind/       cfi_unwind_fuzz.cc's input: registers, the .eh_frame that `as` writes for
#                     cfi.s below (linked at the fuzzer's addresses), and the stack of a call
#                     chain through a frame-pointer frame, a saved register and a PLT-style CFA
#   elf_image/        small ELF files linked here from the assembly below: a static executable
#                     with local symbols, a PIE calling libc through its PLT (with .symtab, and
#                     stripped to .dynsym)
#   pbs/              .pbs files written by the Python writer below (the layout in core/pbs.h)
#   stack_record/     eBPF sampler records (bpf/stack_sample.h, written by the C++ below with
#                     that header): frames only, a stack copy, a snapshot with two register
#                     ranges, and a snapshot record cut short inside its pieces; plus
#                     regress_*, inputs the fuzzer found that once failed (kept as found)
#   import_wire/      import helper frames (pipeline/src/import_wire.proto), one of each kind,
#                     encoded by protoc from the text below
#   symbol_wire/      symbolizer helper answers (pipeline/src/symbol_wire.proto) behind the
#                     fuzzer's selector byte (0 symbol, 1 unwind, 2 image question, 3 ready)
# Each must stay under the fuzzers' -max_len (64 KiB). perf records need perf_event access
# (root, or kernel.perf_event_paranoid <= 1); the branch-stack file needs root (ptrace).
# usage: tests/fuzz/seeds/make_seeds.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --- perf_data ---
pd="$here/perf_data"
mkdir -p "$pd"
perf record -q -e cpu-clock -c 100000 -o "$pd/cpu_clock.data" -- true
perf record -q -e cpu-clock -c 100000 -o - -- true >"$pd/cpu_clock.pipe"
perf record -q -e cpu-clock -c 100000 --call-graph dwarf,512 -o "$pd/callchain_dwarf.data" -- true
perf record -q -e sched:sched_process_exec -o "$pd/raw_tracepoint.data" -- true
if [[ -n "$build" ]]; then
  # A program without libc (whose start-up alone takes thousands of branches: too big a file):
  # 12 rounds of a loop that calls f every other round, then exit. 29 taken branches, cut into
  # samples of 8 entries.
  cat >"$tmp/tiny.s" <<'ASM'
        .text
        .globl _start
_start: mov $12, %ecx
loop:   test $1, %cl
        jz skip
        call f
skip:   dec %ecx
        jnz loop
        mov $60, %eax
        xor %edi, %edi
        syscall
f:      inc %eax
        ret
ASM
  as -o "$tmp/tiny.o" "$tmp/tiny.s"
  ld -o "$tmp/tiny" "$tmp/tiny.o"
  "$build/bin/pathctl" trace --exact -o "$tmp/tiny.pbs" -- "$tmp/tiny"
  "$build/bin/pathctl" export --format perf-lbr "$tmp/tiny.pbs" -o "$pd/branch_stack.data" \
    --entries 8
fi
chmod 644 "$pd"/*

# --- lbr_reconstruct ---
# A loop of three rounds: odd rounds call g, even rounds skip the call; then an indirect jump
# and a return out of the code. Labels name the branch instructions.
cat >"$tmp/code.s" <<'EOF'
        .text
f:      push %rbx
        xor %eax, %eax
        mov $3, %ecx
head:   add %ecx, %eax
        test $1, %cl
jz_even: jz even
call_g: call g
even:   dec %ecx
jnz_head: jnz head
        lea table(%rip), %rdx
ijmp:   jmp *(%rdx)
back:   pop %rbx
ret_out: ret
g:      inc %eax
ret_g:  ret
        .p2align 3
table:  .quad 0
        .fill 512 - (. - f), 1, 0x90
EOF
as -o "$tmp/code.o" "$tmp/code.s"
objcopy -O binary -j .text "$tmp/code.o" "$tmp/code.bin"
[[ "$(stat -c %s "$tmp/code.bin")" == 512 ]]
declare -A at
while read -r addr _ name; do at[$name]=$((16#$addr)); done < <(nm "$tmp/code.o")

byte() { printf "\\$(printf %03o "$1")"; }
# entry FROM TO SELECTOR: FROM/TO are labels or numbers (offsets into the code); the selector's
# bits 0-1 place FROM, bits 3-4 place TO (0: in the code, 1: kernel, 2: another user mapping, 2
# with bit 2 of its field: address 0), and all 8 bits are the entry's cycles (bit 7: mispredict).
entry() {
  local from=${at[$1]:-$1} to=${at[$2]:-$2}
  byte $((from & 255)); byte $((from >> 8)); byte $((to & 255)); byte $((to >> 8)); byte "$3"
}
lr="$here/lbr_reconstruct"
mkdir -p "$lr"
# The whole run, newest entry first as the LBR holds it; cycles 0x20/0x40 on some entries.
{
  cat "$tmp/code.bin"
  entry ret_out 0x100 0x10  # to another user mapping
  entry ijmp back 0x40
  entry ret_g even 0
  entry call_g g 0x20
  entry jnz_head head 0
  entry jz_even even 0x20
  entry jnz_head head 0
  entry ret_g even 0
  entry call_g g 0x40
} >"$lr/loop_call_ret.bin"
# An interrupt inside the loop: user to kernel, kernel back to the same place; a mispredicted
# jz (bit 7); then the loop goes on.
{
  cat "$tmp/code.bin"
  entry jnz_head head 0x20
  entry 0x200 0xa 0x01      # kernel -> user (the interrupt returns to the test at 0xa)
  entry 0xa 0x300 0x08      # user -> kernel
  entry jz_even even 0x80
  entry jnz_head head 0
} >"$lr/interrupt.bin"
# What real stacks also hold: a duplicated newest entry (a kernel quirk), a target in the middle
# of an instruction, ranges that do not chain, zero addresses, a from outside the code.
{
  cat "$tmp/code.bin"
  entry jnz_head head 0
  entry jnz_head head 0
  entry call_g 0x10 0x20    # mid-instruction target
  entry ret_g even 0
  entry 0x1f4 0x8 0x02      # from another user mapping
  entry 0 0 0x36            # both ends zero
  entry jnz_head head 0
} >"$lr/quirks.bin"
ls -l "$pd" "$lr"

# --- emulator ---
# Code at 0x10000 (the fuzzer's first page: executable, stable), data at 0x11000 (writable, the
# stack at its top). Entry points at fixed offsets, one seed each.
cat >"$tmp/emu.s" <<'EOF'
        .text
        .org 0
# 0x000: a loop calling a function every other round, storing to the stack and the data page
loop_call:
        mov $12, %ecx
        xor %eax, %eax
1:      test $1, %cl
        jz 2f
        call add_one
2:      mov %rax, 0x11000(,%rcx,8)
        push %rcx
        pop %rdx
        dec %ecx
        jnz 1b
        mov 0x11008, %rbx
        cmp %rbx, %rax
        jne 3f
        syscall
3:      jmp loop_call
add_one:
        inc %eax
        ret
        .org 0x80
# 0x080: string instructions over the data page
strings:
        mov $0x11000, %rdi
        mov $64, %ecx
        mov $0x5a, %al
        rep stosb
        mov $0x11000, %rsi
        mov $0x11800, %rdi
        mov $64, %ecx
        rep movsb
        mov $0x11000, %rsi
        mov $0x11800, %rdi
        mov $64, %ecx
        repe cmpsb
        jne 1f
        lodsq
        scasq
1:      jmp strings
        .org 0x100
# 0x100: integer arithmetic and flags, ending in a division by zero
arith:
        mov $0x123456789, %rax
        mov $77, %rbx
        mul %rbx
        imul $13, %rax, %rcx
        shl $3, %rcx
        sar %cl, %rax
        rol $7, %rbx
        bsf %rax, %rdx
        bsr %rcx, %rsi
        adc %rdx, %rsi
        sbb $1, %rsi
        cmovz %rsi, %rdi
        setc %r8b
        movzx %r8b, %r9d
        lea 1(%r9,%r9,4), %r10
        xchg %r10, %r11
        bswap %r11
        popcnt %r11, %r12
        cqo
        mov $7, %r13
        idiv %r13
        xor %r14, %r14
        test %r14, %r14
        jnz arith
        div %r14
        .org 0x180
# 0x180: a strlen-like loop in SSE2 and AVX2 over the data page (vector state loadable)
vectors:
        mov $0x11000, %rdi
        movl $0x41414141, (%rdi)
        movb $0, 40(%rdi)
        pxor %xmm0, %xmm0
1:      movdqu (%rdi), %xmm1
        pcmpeqb %xmm0, %xmm1
        pmovmskb %xmm1, %eax
        test %eax, %eax
        jnz 2f
        add $16, %rdi
        jmp 1b
2:      vpxor %ymm2, %ymm2, %ymm2
        vpcmpeqb 0x11000, %ymm2, %ymm3
        vpmovmskb %ymm3, %ecx
        tzcnt %ecx, %ecx
        vzeroupper
        jmp vectors
        .org 0x200
# 0x200: indirect calls and jumps through a table, a lock-prefixed add (where a window of a
# process of many threads ends), then cpuid (hidden state)
indirect:
        lea table(%rip), %rbx
        mov $3, %ecx
1:      mov -8(%rbx,%rcx,8), %rax
        call *%rax
        dec %ecx
        jnz 1b
        lock addq $1, 0x11000
        mov 0x11000, %rax
        cmp $2, %rax
        jb indirect
        cpuid
        jmp *(%rbx)
t0:     ret
t1:     add $1, %rdx
        ret
        .p2align 3
table:  .quad 0x10000 + t0 - loop_call, 0x10000 + t1 - loop_call, 0x10000 + t0 - loop_call
        .org 0x300
EOF
as -o "$tmp/emu.o" "$tmp/emu.s"
objcopy -O binary -j .text "$tmp/emu.o" "$tmp/emu.bin"
em="$here/emulator"
mkdir -p "$em"
# seed NAME RIP_OFFSET FLAGS (bit 0: rsp at the stack's top; bit 1: vector state readable; bit 2:
# other threads share the memory; bit 3: also over a partial guest). The *_partial seeds: the
# data page's second half (the stack's top) and a third page are not held, nor are rax and rdx.
python3 - "$tmp/emu.bin" "$em" <<'PY'
import struct, sys
code = open(sys.argv[1], 'rb').read()
for name, rip, flags in [('loop_call', 0x000, 1), ('strings', 0x080, 1), ('arith', 0x100, 1),
                         ('vectors', 0x180, 3), ('indirect', 0x200, 1),
                         ('indirect_shared', 0x200, 5), ('loop_call_partial', 0x000, 9),
                         ('strings_partial', 0x080, 9), ('vectors_partial', 0x180, 9),
                         ('indirect_partial', 0x200, 9)]:
    partial = flags & 8
    rflags = 0x202 | (0b101 << 16 if partial else 0)  # bits 16-31: the unheld registers
    header = bytes(16 * 8) + struct.pack('<QHBB', rflags, rip, 31, flags)
    code_page = bytes([6]) + code.ljust(4096, b'\xcc')   # executable, stable
    data_page = bytes([1 | (16 if partial else 0)]) + bytes(range(64)).ljust(4096, b'\0')
    if not partial:
        data_page = bytes([1]) + bytes(range(64))        # writable, zero-filled past 64 bytes
    extra = bytes([1 | 8]) + bytes(range(64)) if partial else b''  # writable, not held
    open(f'{sys.argv[2]}/{name}.bin', 'wb').write(header + code_page + data_page + extra)
PY

# --- cfi_unwind ---
cat >"$tmp/cfi.s" <<'EOF'
        .text
# A chain outer -> framed -> saver -> leaf, each kind of frame the unwinder meets.
outer:  .cfi_startproc
        .cfi_undefined rip
        call framed
        hlt
        .cfi_endproc
framed: .cfi_startproc
        push %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset rbp, -16
        mov %rsp, %rbp
        .cfi_def_cfa_register rbp
        call saver
        pop %rbp
        .cfi_def_cfa rsp, 8
        ret
        .cfi_endproc
saver:  .cfi_startproc
        push %rbx
        .cfi_def_cfa_offset 16
        .cfi_offset rbx, -16
        sub $32, %rsp
        .cfi_def_cfa_offset 48
        call plt
        add $32, %rsp
        .cfi_def_cfa_offset 16
        pop %rbx
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
# The PLT's computed CFA (a DWARF expression), as ld writes it for .plt.
plt:    .cfi_startproc
        .cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
        call leaf
        ret
        .cfi_endproc
leaf:   .cfi_startproc
        ret
        .cfi_endproc
EOF
as -o "$tmp/cfi.o" "$tmp/cfi.s"
# At the fuzzer's addresses: .text at 0x401000, .eh_frame at 0x402000 (its FDEs are pc-relative).
ld -o "$tmp/cfi.elf" -e 0x401000 -Ttext=0x401000 --section-start=.eh_frame=0x402000 "$tmp/cfi.o"
objcopy -O binary -j .eh_frame "$tmp/cfi.elf" "$tmp/cfi.eh"
cu="$here/cfi_unwind"
mkdir -p "$cu"
python3 - "$tmp/cfi.eh" "$cu" $(nm "$tmp/cfi.elf" | awk '{print $3 "=" $1}') <<'PY'
import struct, sys
eh = open(sys.argv[1], 'rb').read()
at = {k: int(v, 16) for k, v in (a.split('=') for a in sys.argv[3:])}
S, BIAS = 0x7ffc0000, 0x7f0000000000
def regs(rip, rsp, rbp):  # DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip
    r = [0] * 17
    r[6], r[7], r[16] = rbp, rsp, rip
    return struct.pack('<17Q', *r)
def chain(bias):
    # leaf's entry, called from plt, from saver (which saved rbx and took 32 bytes), from
    # framed (rbp frame), from outer (undefined return address: the outermost frame).
    q = [at['plt'] + 5, at['saver'] + 10, 0, 0, 0, 0, 0x1234, at['framed'] + 9, 0, at['outer'] + 5]
    return b''.join(struct.pack('<Q', v + bias if v in (q[0], q[1], q[7], q[9]) else v) for v in q)
def seed(name, rip, rbp, eh_frame, flags, stack):
    out = regs(rip, S, rbp) + struct.pack('<HB', len(eh_frame), flags) + eh_frame + stack
    open(f'{sys.argv[2]}/{name}.bin', 'wb').write(out)
seed('cfi_chain', at['leaf'], S + 64, eh, 0, chain(0))
seed('cfi_chain_bias', at['leaf'] + BIAS, S + 64, eh, 1, chain(BIAS))
# No CFI: the frame-pointer chain, through an address no image covers, to a zero return.
fp = struct.pack('<8Q', 0, 0, S + 48, 0x500000, 0, 0, 0, 0)
seed('frame_pointers', 0x401080, S + 16, b'', 0, fp)
PY

# --- elf_image ---
cat >"$tmp/pie.s" <<'EOF'
        .text
        .globl _start
_start: xor %ebp, %ebp
        lea main(%rip), %rdi
        call *__libc_start_main@GOTPCREL(%rip)
        hlt
        .globl main
        .type main, @function
main:   .cfi_startproc
        sub $8, %rsp
        .cfi_def_cfa_offset 16
        call helper
        lea msg(%rip), %rdi
        call puts@PLT
        call strlen@PLT
        xor %eax, %eax
        add $8, %rsp
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
        .size main, . - main
        .type helper, @function
helper: .cfi_startproc
        ret
        .cfi_endproc
        .size helper, . - helper
        .section .rodata
msg:    .asciz "hi"
EOF
el="$here/elf_image"
mkdir -p "$el"
ld --build-id -o "$el/static_cfi.elf" -e 0x401000 -Ttext=0x401000 -z noseparate-code \
  -z max-page-size=0x1000 "$tmp/cfi.o"
as -o "$tmp/pie.o" "$tmp/pie.s"
gcc -nostartfiles -pie -Wl,--build-id -Wl,-z,noseparate-code -Wl,-z,max-page-size=0x1000 \
  -Wl,-z,norelro -o "$el/pie_plt.elf" "$tmp/pie.o"
strip -o "$el/pie_plt_stripped.elf" "$el/pie_plt.elf"
chmod 644 "$el"/*

# --- pbs ---
pb="$here/pbs"
mkdir -p "$pb"
python3 - "$pb" <<'PY'
import struct, sys, zlib
def varint(v):
    out = b''
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
def zigzag(v):
    return varint((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)
def string(s):
    return varint(len(s)) + s
def record(rtype, payload):
    head = bytes([rtype]) + varint(len(payload))
    return head + payload + struct.pack('<I', zlib.crc32(head + payload))
def batch(pid, tid, time_ns, flags, events):
    out = varint(pid) + varint(tid) + varint(time_ns) + bytes([flags]) + varint(len(events))
    prev_to = 0
    for frm, to, bits, cycles, instructions in events:
        out += zigzag(frm - prev_to) + zigzag(to - frm) + bytes([bits])
        if bits & 0x20: out += varint(cycles)
        if bits & 0x40: out += varint(instructions)
        prev_to = to
    return record(1, out)
def image(pid, start, end, offset, path, build_id):
    return record(2, varint(pid) + varint(start) + varint(end) + varint(offset) + string(path) +
                  string(build_id))
def meta(key, value):
    return record(3, string(key) + string(value))
def pbs(records):
    return b'PBS\x1a' + struct.pack('<HH', 1, 0) + b''.join(records) + record(0xff, varint(len(records)))
# bits: kind (0-2), taken (3), mispredicted (4), has cycles (5), has instructions (6)
loop = [(0x401010, 0x401000, 0x08 | 0x20, 12, 0), (0x401010, 0x401000, 0x08, 0, 0),
        (0x401010, 0x401015, 0x00 | 0x40, 0, 7), (0x401020, 0x7f0000001000, 0x0a | 0x10, 0, 0)]
calls = [(0x401005, 0x401100, 0x0b, 0, 0), (0x401108, 0x40100a, 0x0c | 0x60, 3, 9)]
open(f'{sys.argv[1]}/batches.pbs', 'wb').write(pbs([
    meta(b'workload', b'seed'), image(42, 0x400000, 0x402000, 0, b'/bin/seed', bytes(range(20))),
    batch(42, 42, 1000, 1, loop), batch(42, 43, 2000, 3, calls), batch(42, 42, 3000, 0, [])]))
open(f'{sys.argv[1]}/meta_only.pbs', 'wb').write(pbs([meta(b'seed', b'1')]))
PY
# --- stack_record ---
sr="$here/stack_record"
mkdir -p "$sr"
cat >"$tmp/stack_record.cc" <<'CXX'
#include <linux/types.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "stack_sample.h"

static stack_sample s;  // ~400 KiB: not on the stack

static void Write(const std::string& path, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(&s, 1, bytes, f);
  std::fclose(f);
}

int main(int, char** argv) {
  const std::string dir = argv[1];
  s.pid = 1234, s.tid = 1235, s.cpu = 1, s.time_ns = 1000, s.period = 1000000, s.root = 1234;
  s.hz = 99, s.plain_uid = 1000;
  std::memcpy(s.comm, "zstd", 4);
  s.user_bytes = 3 * 8, s.user[0] = 0x401000, s.user[1] = 0x401200, s.user[2] = 0x401300;
  s.kernel_bytes = -14;  // -EFAULT
  Write(dir + "/frames_only", offsetof(stack_sample, regs));
  for (int i = 0; i < 17; ++i) s.regs[i] = 0x1000 * (i + 1);
  s.stack_base = 0x7ffc0000f000, s.regs[7] = 0x7ffc0000ff00, s.regs[16] = 0x401010;
  s.stack_bytes = 4096, s.stack_hz = 99;
  for (int i = 0; i < 4096; ++i) s.stack[i] = static_cast<__u8>(i * 7);
  Write(dir + "/stack_copy", offsetof(stack_sample, stack) + 4096);
  // rdi's range (96 bytes at 0x602000), fs_base's (64 bytes), then the table.
  s.snapshot_flags = PATHPROF_SNAPSHOT_TAKEN | PATHPROF_SNAPSHOT_ONLY | PATHPROF_SNAPSHOT_MM_SEQ;
  s.mm_seq = 418;  // the process's mapping sequence (even: no change under way)
  s.threads = 1;
  s.rflags = 0x246, s.fs_base = 0x7f0000001000, s.orig_rax = ~0ull;
  s.snapshot_pieces = 2, s.snapshot_bytes = 160;
  __u8* area = s.stack + 4096;
  for (int i = 0; i < 160; ++i) area[i] = static_cast<__u8>(0xa0 + i);
  const snapshot_piece table[2] = {{0x602000, 96, 5}, {0x7f0000001000, 64, 15}};
  std::memcpy(area + 160, table, sizeof table);
  Write(dir + "/snapshot", offsetof(stack_sample, stack) + 4096 + 160 + sizeof table);
  s.snapshot_flags |= PATHPROF_SNAPSHOT_IN_KERNEL, s.orig_rax = 0;  // in read(2)
  Write(dir + "/snapshot_in_syscall_cut", offsetof(stack_sample, stack) + 4096 + 100);
}
CXX
c++ -std=c++20 -I"$here/../../../bpf" -o "$tmp/stack_record" "$tmp/stack_record.cc"
"$tmp/stack_record" "$sr"

# --- import_wire ---
iw="$here/import_wire"
mkdir -p "$iw"
proto="$here/../../../pipeline/src"
enc() { protoc -I"$proto" --encode=pathprof.pipeline.import_wire.pb.Frame \
          "$proto/import_wire.proto" >"$iw/$1"; }
echo 'begin { windows: 1 processes { pid: 42 comm: "zstd" mappings { start: 4194304 len: 65536
  pgoff: 0 executable: true path: "/usr/bin/zstd" build_id: "0a1b2c" } mappings {
  start: 140737488224256 len: 8192 executable: false path: "[stack]" } } processes { pid: 43 } }' |
  enc begin
echo 'batch { pid: 42 tid: 43 time_ns: 123456 gap_before: true window: true
  from: [4198400, 4198416, 4198432] to: [4198416, 4198400, 4202496] cycles: [3, 0, 12]
  instructions: [2, 5, 1] kinds: "\000\000\003" flags: "\000\003\001" }' | enc batch
echo 'summary { format: "perf.data/lbr" records: 5619 samples: 3732
  broken_windows { name: "discontinuity" count: 3 } dropped_entries { name: "duplicate_entry"
  count: 966 } decode_errors { name: "pt: overflow" count: 1 } counters { name: "images_found"
  count: 2 } warnings: "decoding with default PT settings" }' | enc summary
echo 'failure { code: 3 message: "x.data: corrupt at offset 120" }' | enc failure

# --- symbol_wire ---
sw="$here/symbol_wire"
mkdir -p "$sw"
# $1: the file, $2: the selector byte (octal), $3: the message type.
senc() { { printf "\\$2"; protoc -I"$proto" --encode="pathprof.pipeline.symbol_wire.pb.$3" \
           "$proto/symbol_wire.proto"; } >"$sw/$1"; }
echo 'function: "std::vector<int>::push_back(int const&)" offset: 26 file: "/usr/include/c++/12/bits/stl_vector.h"
  line: 1287 frames { function: "std::vector<int>::push_back(int const&)" file: "stl_vector.h"
  line: 1287 } frames { function: "main" file: "main.cc" line: 12 }' | senc symbol 000 Symbol
echo 'function: "libfoo.so+0x1a40" offset: 4 function_size: 96 from_unwind_entry: true
  without_symbol: true' | senc unwind_entry_name 000 Symbol
echo 'error_code: 2 error: "symbolizer: no readable image"' | senc not_found 000 Symbol
echo 'frames: [4198400, 4198500, 140737488224256] end: 0 frame_pointer_steps: 1
  cfi_refused: "register_out_of_range"' | senc unwound 001 Unwound
echo 'address: 4198400' | senc question 002 ImageQuestion
echo 'error: "could not enter its sandbox: seccomp_load: Invalid argument"' | senc ready 003 Ready

ls -l "$em" "$cu" "$el" "$pb" "$sr" "$iw" "$sw"
