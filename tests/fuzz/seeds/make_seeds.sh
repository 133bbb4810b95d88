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
