#!/bin/bash
# Boot Debian's cloud kernel under qemu (TCG) with a small initramfs
# (busybox + static test binaries + dial9.ko), run the module tests inside,
# stream the console here and fail on any failed test, a timeout, or a
# kernel splat in the guest log.
#
# Why an initramfs and not the host root over virtiofs: it boots in ~3 s,
# needs no virtiofsd daemon or shared-memory backend, and the guest sees
# exactly the files the test needs (static binaries, or dynamic ones with
# their libraries copied from the host).
#
# Benchmarks (make bench-sched) add host tools with --bin: perf, trace-cmd
# and bpftrace are copied with their ldd libraries at their own paths, so
# the guest runs Debian's binaries unchanged.  This beats virtiofs here for
# the same reasons, and one more: under -icount a guest that waits for the
# host (a page of a binary faulted in over virtiofs) sees virtual time jump,
# whereas from an initramfs everything the guest runs is already in its
# RAM.  The image then holds ~200 MB of LLVM for bpftrace, so it is left
# uncompressed: the kernel copies it at memory speed instead of inflating
# it under emulation.  --icount makes guest time a function of instructions
# executed (one instruction = 1 ns, no real-time sleeping).
set -euo pipefail

kernel= module= tests= example= demo= out=build/vm extra=() timeout_s=${DIAL9_VM_TIMEOUT:-420}
smp=2 mem=1024 icount=() bins=() trees=() disk=()
# One host thread runs every vCPU: qemu 7.2's multi-threaded TCG can hang
# a vCPU for good when the kernel live-patches code the other vCPU is
# running (seen here: text_poke_bp() waiting forever on CPU 1, which sat
# in __schedule() at the jump label being enabled by tracepoint
# registration).  DIAL9_VM_TCG_THREAD=multi brings it back.
tcg_thread=${DIAL9_VM_TCG_THREAD:-single} cmdline=
checks=tests/vm/checks.sh
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--module) module=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--example) example=$2; shift 2 ;;
	--checks) checks=$2; shift 2 ;;
	--file) extra+=("$2"); shift 2 ;;
	--demo) demo=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--icount) icount=(-icount shift=0,sleep=off); shift ;;
	--bin) bins+=("$2"); shift 2 ;;
	--tree) trees+=("$2"); shift 2 ;;
	--append) cmdline="$cmdline $2"; shift 2 ;;
	# a raw disk image the guest sees as /dev/nvme0n1 (NVMe is built
	# into the cloud kernel; virtio-blk is a module).  Under -icount the
	# guest's clock runs on while the host writes, so a flush can take
	# minutes of guest time: no I/O timeout (the driver's 30 s aborted
	# the journal's writes, "aio failed: Operation canceled").
	--disk) disk=(-drive "file=$2,if=none,id=d9disk,format=raw" \
		-device nvme,serial=dial9,drive=d9disk)
		cmdline="$cmdline nvme_core.io_timeout=100000"; shift 2 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -f "$kernel" ] || { echo "run.sh: no kernel image '$kernel' (make deps)" >&2; exit 2; }
[ -f "$module" ] || { echo "run.sh: no module '$module'" >&2; exit 2; }

root="$out/root"
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,tests,etc}
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cp tests/vm/init "$root/init"
chmod +x "$root/init"
cp build/tests/vm/exit "$root/bin/exit-vm"
cp tests/run-tests.sh "$root/bin/run-tests"
cp tests/vm/tasks.sh "$root/bin/vm-tasks"
cp "$module" "$root/dial9.ko"
echo "root:x:0:0:root:/:/bin/sh" >"$root/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/sh" >>"$root/etc/passwd"
names=""
for t in $tests; do
	# One directory in the guest: a second test of the same name would
	# silently replace the first.
	if [ -e "$root/tests/$(basename "$t")" ]; then
		echo "run.sh: two tests named $(basename "$t")" >&2
		exit 2
	fi
	cp "$t" "$root/tests/"
	names="$names $(basename "$t")"
done
echo "$names" >"$root/tests.list"
[ -n "$example" ] && cp "$example" "$root/bin/"
[ -f "$checks" ] && cp "$checks" "$root/tests/vm-checks.sh"
for f in "${extra[@]}"; do cp "$f" "$root/bin/"; done
[ -n "$demo" ] && echo "$demo" >"$root/demo.cmd"
# Dynamic binaries (the dial9 command, programs linking libdial9) bring
# their libraries and loader, each at its host path.
for f in "$root"/tests/* "$root"/bin/*; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	for l in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
		[ -e "$root$l" ] && continue
		mkdir -p "$root$(dirname "$l")"
		cp -L "$l" "$root$l"
	done
done
# A dynamic binary, its libraries and loader, each at its host path; a
# tree (a plugin directory) copied as is.
copy_host() {
	local f
	for f in "$@"; do
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
	done
}
for b in "${bins[@]}"; do
	copy_host "$b" $(ldd "$b" | grep -o '/[^ ]*' | sort -u)
done
for t in "${trees[@]}"; do
	[ -d "$t" ] && mkdir -p "$root$(dirname "$t")" && cp -a "$t" "$root$t"
done

if [ ${#bins[@]} -eq 0 ]; then
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out/initramfs.gz"
else
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$out/initramfs.gz"
fi

log="$out/console.log"
echo "vm: booting $(basename "$kernel") (TCG${icount:+ -icount}, $smp vCPUs), log in $log"
# Memory debugging the cloud kernel has without a rebuild: SLUB red
# zones, poisoning and sanity checks (slub_debug=FZP), freed pages zeroed
# (init_on_free).  It has no KASAN, no lockdep and no PAGE_POISONING
# (page_poison= does nothing there): README says what that hides.
debug="slub_debug=FZP init_on_free=1"
start=$(date +%s)
set +e
timeout "$timeout_s" qemu-system-x86_64 \
	-accel "tcg,thread=$tcg_thread" -cpu max -smp "$smp" -m "$mem" "${icount[@]}" "${disk[@]}" \
	-kernel "$kernel" -initrd "$out/initramfs.gz" \
	-append "console=ttyS0 quiet panic=-1 rdinit=/init $debug$cmdline" \
	-display none -monitor none -serial stdio -nic none -no-reboot \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	</dev/null 2>&1 | tee "$log" | grep --line-buffered -v '^\s*$' \
	| sed -u 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g'
rc=${PIPESTATUS[0]}
set -e
echo "vm: qemu exited with $rc after $(( $(date +%s) - start )) s"

fail=0
case $rc in
1) ;;
3) echo "vm: the guest reported failures"; fail=1 ;;
124) echo "vm: TIMEOUT after ${timeout_s}s"; fail=1 ;;
*) echo "vm: the guest died (panic or power-off without a result)"; fail=1 ;;
esac
grep -q "DIAL9-VM: done fail=0" "$log" || fail=1
if sed -n '/DIAL9-VM: dmesg begin/,/DIAL9-VM: dmesg end/p' "$log" |
	grep -E 'BUG:|WARNING:|Oops|lockdep|possible circular|INFO: rcu|rcu_.*stall|KASAN|UBSAN|general protection|Call Trace'; then
	echo "vm: kernel splat in the guest log"
	fail=1
fi
# The guest's runner (tests/run-tests.sh) says FAIL for a test that failed.
grep -qE '^not ok|^FAIL ' "$log" && fail=1
# The guest's own lines again, below its kernel log, so that the end of
# the output (all a CI summary may keep) says what failed.
if [ $fail -ne 0 ]; then
	echo "vm: the guest's last lines before its kernel log:"
	sed '/DIAL9-VM: dmesg begin/,/DIAL9-VM: dmesg end/d' "$log" |
		grep -v '^\[ *[0-9.]*\]' | tr -d '\r' | tail -n 60 | sed 's/^/vm:   /'
	echo "vm: what failed:"
	grep -E '^not ok|^FAIL |DIAL9-VM: (insmod failed|kernel splat)' "$log" | tr -d '\r'
fi
# The TAP lines of every test (numbered), then the guest runner's summary.
if [ -z "$demo" ]; then
	echo "vm: $(grep -cE '^ok [0-9]' "$log") checks ok, $(grep -cE '^not ok' "$log") not ok"
	echo "vm: $(grep -E '^guest: [0-9]+ passed' "$log" | tr -d '\r' || echo 'guest: no summary')"
fi
exit $fail
