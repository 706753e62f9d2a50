# dial9 — top-level build.  `make test` is what CI runs.
#
#   make deps      install everything from Debian, and the npm packages of
#                  tests/s3 and tests/fleet (idempotent, fast when done)
#   make           build the module, the library, the dial9 command and the
#                  examples
#   make test      deps + build + every test, the module tests inside a qemu VM
#   make demo      the module in a VM, a program under contention, the report
#   make check     checkpatch + sparse on the module
#   make dkms-install / install-udev   fleet-host installation

SHELL := /bin/bash
# Debian 12's two kernel lines: 6.1 (the default, built in the tree) and
# 6.12 (built in a copy under build/kmod/).  `make KVER=... target` runs
# a target for another kernel; TEST_TARGETS run the VM suite on both.
KVER_61 := $(shell scripts/kver.sh 2>/dev/null)
KVER_612 := $(shell scripts/kver.sh 6.12 2>/dev/null)
KVER ?= $(KVER_61)
KDIR ?= /usr/src/linux-headers-$(KVER)
ifeq ($(KVER),$(KVER_61))
KO := dial9.ko
KO_DIR := $(CURDIR)
VMSUF :=
else
KO_DIR := $(CURDIR)/build/kmod/$(KVER)
KO := $(KO_DIR)/dial9.ko
VMSUF := -$(KVER)
endif
CACHE ?= build/cache
BUILD ?= build
# The release: the VERSION file, which the library, the command, the
# module (Kbuild), dkms.conf and dial9.pc read too.
DIAL9_VERSION := $(shell cat VERSION 2>/dev/null)
ifeq ($(DIAL9_VERSION),)
$(error no version: the VERSION file at the top of the tree is missing or empty)
endif

CC ?= cc
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
USER_CFLAGS := -std=gnu11 -O2 -g $(WARN) -Iuapi
# Every suite runs its tests through one runner: a timeout each, one
# line each (ok / FAIL / SKIP), one summary line (docs/architecture.md).
RUN_TESTS := tests/run-tests.sh
# Static binaries go into the VM's initramfs.
HARNESS := $(CACHE)/linux-source/tools/testing/selftests

TEST_TARGETS := test-kmod test-stock test-dkms check \
	test-kmod-6.12 test-stock-6.12 test-dkms-6.12 check-6.12 test-packages

.PHONY: all deps module examples test test-kmod test-stock test-dkms check demo clean fuzz-kmod \
	bench-sched bench-stacks bench-occupants bench-profile bench-probe bench-product \
	bench-e2e-vm bench-server bench-server-vm

all: module examples

deps:
	@scripts/deps.sh

# Another kernel's build gets a copy of the sources (mtimes kept, so
# Kbuild rebuilds only what changed).
module:
ifneq ($(KO_DIR),$(CURDIR))
	@mkdir -p $(KO_DIR) && cp -pr Kbuild VERSION kmod uapi $(KO_DIR)/
endif
	$(MAKE) -C $(KDIR) M=$(KO_DIR) modules

# The same targets for Debian 12's 6.12 line.
%-6.12:
	@[ -n "$(KVER_612)" ] || { echo "no 6.12 cloud headers (make deps)"; exit 1; }
	$(MAKE) --no-print-directory KVER=$(KVER_612) $*

# Examples that need only the UAPI header; contention.c links libdial9.
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,\
	$(filter-out examples/contention.c,$(wildcard examples/*.c)))
examples: $(EXAMPLES)

$(BUILD)/examples/%: examples/%.c uapi/linux/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -static -pthread -o $@ $<

# ---- module tests in a VM ---------------------------------------------------
# kselftest_harness.h is not -Wextra clean (its macros compare int with
# the values tested, and its handlers have unused parameters).
KTEST_CFLAGS := -isystem $(HARNESS) -Wno-sign-compare -Wno-unused-parameter \
	-Wno-missing-prototypes
KTESTS := $(patsubst tests/kmod/%.c,$(BUILD)/tests/kmod/%,$(wildcard tests/kmod/*_test.c))

$(BUILD)/tests/kmod/%: tests/kmod/%.c tests/kmod/dial9_test.h uapi/linux/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(KTEST_CFLAGS) -Itests/kmod \
		-static -pthread -o $@ $<

# The stack tests check a frame-pointer walk through their own functions.
$(BUILD)/tests/kmod/stack_test $(BUILD)/tests/sched/stacks_test \
$(BUILD)/tests/kmod/sample_test $(BUILD)/tests/sched/profile_test: \
	USER_CFLAGS += -fno-omit-frame-pointer
$(BUILD)/tests/kmod/stack_test $(BUILD)/tests/sched/stacks_test \
$(BUILD)/tests/sched/profile_test: tests/kmod/stack_chain.h
$(BUILD)/tests/kmod/sample_test $(BUILD)/tests/sched/profile_test: \
	tests/kmod/hot_chain.h

# The tasks of tests/stock/culprits.sh, pinned and named; it links
# libdial9 (dynamic: run.sh copies its libraries), so that the victim can
# record itself without privileges.
$(BUILD)/tests/stock/occupy: tests/stock/occupy.c $(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Ilib/include -pthread -o $@ $< $(LIB_A) $(LIB_LDLIBS)

$(BUILD)/tests/vm/exit: tests/vm/exit.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -static -o $@ $<

# libdial9 with dial9.ko: static test programs and a static dial9 command.
SCHED_TESTS := $(patsubst tests/sched/%.c,$(BUILD)/tests/sched/%,$(wildcard tests/sched/*_test.c))
# The guest gets dynamic binaries with their libraries (tests/vm/run.sh).
VM_DIAL9 := $(BUILD)/tools/dial9

vm-payload: module $(KTESTS) $(SCHED_TESTS) $(VM_DIAL9) $(BUILD)/tests/vm/exit examples

# In the guest each test goes through tests/run-tests.sh too (tests/vm/init:
# a line each, "guest: N passed, ..."); here the VM is one test, which
# fails on a failed test, a kernel splat or a guest that died.
VM_RUN_TIMEOUT := 900
test-kmod: deps vm-payload
	@$(RUN_TESTS) test-kmod$(VMSUF) -t $(VM_RUN_TIMEOUT) "vm: tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
		--tests '$(KTESTS) $(SCHED_TESTS)' --file $(VM_DIAL9) \
		--example $(BUILD)/examples/dial9-read --out $(BUILD)/vm$(VMSUF)"

# The ABI fuzzer (tests/kmod/fuzz_test.c) runs in test-kmod for 8 s per
# privilege after its kept seeds; this runs it FUZZ_KMOD_BOOTS more
# times, 40 s per privilege each, with fresh seeds (printed).  make fuzz
# runs it after the host's fuzzers (lib/lib.mk).
FUZZ_KMOD_BOOTS ?= 5
fuzz-kmod: deps module $(BUILD)/tests/kmod/fuzz_test $(BUILD)/tests/vm/exit
	@set -o pipefail; for i in $$(seq $(FUZZ_KMOD_BOOTS)); do \
		tests/vm/run.sh --kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
			--tests "$(BUILD)/tests/kmod/fuzz_test" --append d9_fuzz_secs=40 \
			--checks "" \
			--out $(BUILD)/vm-fuzz$(VMSUF) | grep -E '^# (seed|FINDING|HANG)|^vm:' \
			|| exit 1; \
	done

# Stock workloads from Debian (rt-tests' hackbench in process and thread
# mode, stress-ng with more runnable tasks than CPUs, perf bench sched
# messaging, sysbench threads) recorded by
# `dial9 record --children` in the VM, each thread's runqueue total and
# wait count checked against the kernel's own (bpftrace reads them at the
# thread's last switch).  tests/stock/guest.sh says how.  tsc=reliable:
# the guest's sched_clock stable, as on real hosts (TCG's TSCs look
# unsynchronized to it; tests/stock/culprits.sh says why it matters).
STOCK_BINS := /usr/bin/bpftrace /usr/bin/hackbench /usr/bin/stress-ng \
	/usr/bin/perf /usr/bin/sysbench
test-stock: deps module $(VM_DIAL9) $(BUILD)/tests/vm/exit $(BUILD)/tests/stock/occupy \
		$(BUILD)/tests/tools/kconv
	@DIAL9_VM_TIMEOUT=840 $(RUN_TESTS) test-stock$(VMSUF) -t $(VM_RUN_TIMEOUT) "vm: tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
		--mem 2048 --append tsc=reliable $(addprefix --bin ,$(STOCK_BINS)) --file $(VM_DIAL9) \
		--file $(BUILD)/tests/tools/kconv \
		--file tests/stock/refprobe.bt --file tests/stock/culprits.sh \
		--file $(BUILD)/tests/stock/occupy --checks tests/stock/guest.sh \
		--tests '' --out $(BUILD)/vm-stock$(VMSUF)"

# The main job end to end: the module in a VM, a program under contention
# recording itself through /dev/dial9, and its scheduling-delay report.
# The HTML report leaves the VM base64-encoded between two markers.
demo: deps vm-payload $(BUILD)/vm-bin/contention
	@set -o pipefail; tests/vm/run.sh --kernel $(CACHE)/vmlinuz-$(KVER) \
		--module $(KO) --example $(BUILD)/examples/dial9-read \
		--file $(VM_DIAL9) --file $(BUILD)/vm-bin/contention \
		--demo "contention /tmp/demo && dial9 sched --culprits --top 6 /tmp/demo && \
			dial9 sched --explain --min-delay 15000 /tmp/demo | \
			sed -n '/^delays of/,/^(each/p' && \
			dial9 report --html /tmp/demo -o /tmp/report.html && \
			dial9 flame --on-cpu /tmp/demo | head -n 5 && \
			dial9 flame --on-cpu --svg /tmp/demo -o /tmp/flame.svg && \
			echo DIAL9-REPORT-BEGIN && base64 /tmp/report.html && \
			echo DIAL9-REPORT-END && echo DIAL9-FLAME-BEGIN && \
			base64 /tmp/flame.svg && echo DIAL9-FLAME-END" \
			--out $(BUILD)/demo \
		| sed -u '/DIAL9-REPORT-BEGIN/,/DIAL9-REPORT-END/d; /DIAL9-FLAME-BEGIN/,/DIAL9-FLAME-END/d' \
		| grep -v -E '^\s*\[|^DIAL9-VM: (dmesg|done)'
	@sed -n '/DIAL9-REPORT-BEGIN/,/DIAL9-REPORT-END/p' $(BUILD)/demo/console.log \
		| tr -d '\r' | grep -v DIAL9-REPORT | base64 -d >$(BUILD)/demo/report.html
	@sed -n '/DIAL9-FLAME-BEGIN/,/DIAL9-FLAME-END/p' $(BUILD)/demo/console.log \
		| tr -d '\r' | grep -v DIAL9-FLAME | base64 -d >$(BUILD)/demo/flame.svg
	@echo "demo: the HTML report is $(BUILD)/demo/report.html, the CPU profile's flame graph $(BUILD)/demo/flame.svg"

test-dkms: deps
	@$(RUN_TESTS) test-dkms$(VMSUF) -t 900 \
		"dkms: tests/dkms/build.sh $(DIAL9_VERSION) $(KVER)"

check: deps
	scripts/check-kmod.sh $(KDIR)

# The library (lib/lib.mk) adds its own targets and tests.
ifneq ($(wildcard lib/lib.mk),)
include lib/lib.mk
endif
# make install, DKMS on this host, the Debian packages (packaging/packaging.mk).
include packaging/packaging.mk

$(BUILD)/tests/sched/%: tests/sched/%.c $(LIB_A) lib/include/dial9.h tests/lib/proc.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(KTEST_CFLAGS) -Ilib/include -Ilib -Itests/lib \
		-pthread -o $@ $< $(LIB_A) $(LIB_LDLIBS)

# With frame pointers, so that its CPU profile has whole stacks.
$(BUILD)/vm-bin/contention: examples/contention.c $(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fno-omit-frame-pointer -Ilib/include -pthread \
		-o $@ $< $(LIB_A) $(LIB_LDLIBS)

# make (all) builds the example that links libdial9 as well.
all: $(BUILD)/vm-bin/contention


# Each target a test of the runner (an hour at most each), its own
# summary line inside; at the end each target's time and the total (CI
# must stay well under 30 minutes), and make test's summary line.
test: deps
	$(MAKE) all
	@$(RUN_TESTS) test -t 3600 -s '' \
		$(foreach t,$(TEST_TARGETS),"$(t): $(MAKE) --no-print-directory $(t)")

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)/tests $(BUILD)/examples $(BUILD)/vm

# ---- module benchmark (not part of make test) --------------------------------
$(BUILD)/bench/dial9-rate: bench/kmod/rate.c uapi/linux/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -static -pthread -o $@ $<

# Records/s the module sustains with a reader draining, by thread pairs.
bench-kmod: deps module $(BUILD)/tests/vm/exit examples $(BUILD)/bench/dial9-rate
	@tests/vm/run.sh --kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
		--file $(BUILD)/bench/dial9-rate \
		--demo "for p in 1 2 4 8 16; do dial9-rate \$$p 3; done" \
		--out $(BUILD)/bench-kmod | grep -E '^pairs='

# ---- scheduler-tracing cost, side by side (not part of make test) ------------
# dial9 against perf sched record, trace-cmd (ftrace) and bpftrace, in the
# VM under qemu -icount (guest time = instructions executed).  Boot 1: one
# vCPU, every configuration, SCHED_REPS times, cost per round trip as a
# ratio to no tracing, then the idle recorders (SCHED_IDLE_SECS), libdial9
# with its flush thread at nice 0 and 10 and, with SCHED_DIAG=1, the cost
# of each record type; boot 2: two vCPUs, more and
# more thread pairs, who loses records first (SCHED_LOSS_CFGS: which
# configurations, default all).  Besides the raw /dev/dial9 readers, the
# product paths: libdial9 as shipped (dial9-libpairs, DIAL9_ENABLED=1) and
# `dial9 record`.  Prints the tables; docs/benchmarks.md explains them.
SCHED_BENCH := $(BUILD)/bench/dial9-pingpong $(BUILD)/bench/dial9-record
SCHED_ROUNDS ?= 20000
SCHED_STEADY_ROUNDS ?= 100000
SCHED_REPS ?= 3
SCHED_LOSS_ROUNDS ?= 1000
SCHED_PAIRS ?= 1 2 4 8 16 32 64
SCHED_LOSS_CFGS ?=
SCHED_IDLE_SECS ?= 10
SCHED_DIAG ?= 1
# The traces (and the other tracers' files) go to an ext4 file system on
# the VM's NVMe disk, as on a server (sched.sh mounts it at /var/tmp), made
# afresh for each boot (mkfs.ext4, from e2fsprogs).
BENCH_DISK := $(BUILD)/bench/disk.img
NEW_BENCH_DISK = rm -f $(BENCH_DISK) && truncate -s 2G $(BENCH_DISK) && \
	mkfs.ext4 -q -F $(BENCH_DISK)
SCHED_VM := tests/vm/run.sh --kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
	--disk $(BENCH_DISK) \
	--icount --mem 2048 --bin /usr/bin/perf --bin /usr/bin/trace-cmd \
	--bin /usr/bin/bpftrace --tree /usr/lib/x86_64-linux-gnu/traceevent \
	--file $(BUILD)/bench/dial9-pingpong --file $(BUILD)/bench/dial9-record \
	--file $(BUILD)/bench/dial9-libpairs --file $(BUILD)/bench/dial9-idle \
	--file $(VM_DIAL9) --file bench/kmod/sched.sh

$(SCHED_BENCH): $(BUILD)/bench/dial9-%: bench/kmod/%.c bench/kmod/pairs.h \
		uapi/linux/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -static -pthread -o $@ $<

# The ping-pong linking libdial9 (dynamic: run.sh copies its libraries).
$(BUILD)/bench/dial9-libpairs: bench/kmod/libpairs.c bench/kmod/pairs.h \
		$(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -Ilib/include -pthread -o $@ $< $(LIB_A) $(LIB_LDLIBS)

# The same, with frame pointers, for the cost of stacks (bench-stacks).
$(BUILD)/bench/dial9-libpairs-fp: bench/kmod/libpairs.c bench/kmod/pairs.h \
		$(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fno-omit-frame-pointer -Ilib/include -pthread \
		-o $@ $< $(LIB_A) $(LIB_LDLIBS)

# DIAL9_SCHED_STACKS off and on, one vCPU, -icount (bench/kmod/stacks.sh).
STACKS_ROUNDS ?= 20000
STACKS_REPS ?= 3
bench-stacks: deps module $(BUILD)/tests/vm/exit $(BUILD)/bench/dial9-libpairs \
		$(BUILD)/bench/dial9-libpairs-fp $(VM_DIAL9)
	@set -o pipefail; DIAL9_VM_TIMEOUT=1500 tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) --icount \
		--mem 2048 --smp 1 --file $(BUILD)/bench/dial9-libpairs \
		--file $(BUILD)/bench/dial9-libpairs-fp --file $(VM_DIAL9) \
		--bin /usr/bin/perf --bin /usr/bin/bpftrace \
		--tree /usr/lib/x86_64-linux-gnu/traceevent \
		--file bench/kmod/stacks.sh \
		--demo "sh /bin/stacks.sh $(STACKS_ROUNDS) $(STACKS_REPS)" \
		--out $(BUILD)/bench-stacks | grep -E '^STACKBENCH|^# '

# DIAL9_SCHED_OCCUPANTS off and on, one vCPU, -icount (bench/kmod/occupants.sh).
OCC_ROUNDS ?= 20000
OCC_REPS ?= 3
bench-occupants: deps module $(BUILD)/tests/vm/exit $(BUILD)/bench/dial9-libpairs \
		$(BUILD)/bench/dial9-pingpong $(VM_DIAL9)
	@set -o pipefail; DIAL9_VM_TIMEOUT=1500 tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) --icount \
		--mem 2048 --smp 1 --file $(BUILD)/bench/dial9-libpairs \
		--file $(BUILD)/bench/dial9-pingpong --file $(VM_DIAL9) \
		--file bench/kmod/occupants.sh \
		--demo "sh /bin/occupants.sh $(OCC_ROUNDS) $(OCC_REPS)" \
		--out $(BUILD)/bench-occupants | grep -E '^OCCBENCH|^# '

# The CPU profile's cost: a spinning dial9-spin with samples off, at 99
# and 999 Hz, from dial9.ko and from perf; one vCPU, -icount
# (bench/kmod/profile.sh).
PROFILE_ITERS ?= 2000
PROFILE_REPS ?= 3
$(BUILD)/bench/dial9-spin: bench/kmod/spin.c tests/kmod/hot_chain.h \
		$(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -fno-omit-frame-pointer -Ilib/include -pthread \
		-o $@ $< $(LIB_A) $(LIB_LDLIBS)

# The probes' cost for a task nobody records, beside 1 and beside 2,001
# sessions of other users, in one -icount boot (bench/kmod/probe_cost.sh;
# PROBE_ARGS: USERS SESSIONS ROUNDS REPS [occupants|busy]).
bench-probe: deps module $(BUILD)/tests/vm/exit
	@bench/kmod/probe_cost.sh --module $(KO) --kernel $(CACHE)/vmlinuz-$(KVER) $(PROBE_ARGS)

# A real server from Debian (redis, redis-benchmark) recorded and not, on
# this host (perf backend without dial9.ko) and in the VM under -icount
# with dial9.ko, one vCPU (bench/server.sh; SERVER_ARGS: REQS REPS).
SERVER_ARGS ?= 200000 3
bench-server: deps $(VM_DIAL9)
	@bench/server.sh $(SERVER_ARGS) $(VM_DIAL9)

bench-server-vm: deps module $(VM_DIAL9) $(BUILD)/tests/vm/exit
	@$(NEW_BENCH_DISK)
	@set -o pipefail; DIAL9_VM_TIMEOUT=2400 tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) --icount \
		--disk $(BENCH_DISK) \
		--mem 2048 --smp 1 --bin /usr/bin/redis-check-rdb \
		--bin /usr/bin/redis-benchmark --bin /usr/bin/redis-cli \
		--file $(VM_DIAL9) --file bench/server.sh \
		--demo "export PATH=$$PATH:/usr/bin; ip link set lo up; \
			mkdir -p /var/tmp; mount -t ext4 /dev/nvme0n1 /var/tmp; \
			D9_BENCH_DIR=/var/tmp sh /bin/server.sh $(SERVER_ARGS) dial9" \
		--out $(BUILD)/bench-server-vm | grep -E '^SERVERBENCH|^throughput|^recorder|^vm:'

bench-profile: deps module $(BUILD)/tests/vm/exit $(BUILD)/bench/dial9-spin
	@set -o pipefail; DIAL9_VM_TIMEOUT=1500 tests/vm/run.sh \
		--kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) --icount \
		--mem 2048 --smp 1 --file $(BUILD)/bench/dial9-spin \
		--file bench/kmod/profile.sh \
		--demo "sh /bin/profile.sh $(PROFILE_ITERS) $(PROFILE_REPS)" \
		--out $(BUILD)/bench-profile | grep -E '^PROF|^# '

bench-sched: deps module $(BUILD)/tests/vm/exit $(SCHED_BENCH) \
		$(BUILD)/bench/dial9-libpairs $(BUILD)/bench/dial9-idle $(VM_DIAL9)
	@$(NEW_BENCH_DISK)
	@set -o pipefail; DIAL9_VM_TIMEOUT=2400 $(SCHED_VM) --smp 1 \
		--demo "sh /bin/sched.sh cost $(SCHED_ROUNDS) $(SCHED_REPS); \
			sh /bin/sched.sh idle $(SCHED_IDLE_SECS); \
			sh /bin/sched.sh steady $(SCHED_STEADY_ROUNDS) 2; \
			sh /bin/sched.sh libdiag $(SCHED_ROUNDS) $(SCHED_REPS) \
			$(if $(filter 1,$(SCHED_DIAG)),; sh /bin/sched.sh diag $(SCHED_ROUNDS))" \
		--out $(BUILD)/bench-sched/cost | grep -E '^(BENCH|vm:)'
	@$(NEW_BENCH_DISK)
	@set -o pipefail; DIAL9_VM_TIMEOUT=2400 $(SCHED_VM) --smp 2 --append maxcpus=1 \
		--demo "LOSS_CFGS='$(SCHED_LOSS_CFGS)' sh /bin/sched.sh loss \
			$(SCHED_LOSS_ROUNDS) $(SCHED_PAIRS)" \
		--out $(BUILD)/bench-sched/loss | grep -E '^(BENCH|vm:)'
	@echo
	@bench/kmod/sched-table.sh $(BUILD)/bench-sched/cost/console.log \
		$(BUILD)/bench-sched/loss/console.log \
		$(wildcard $(BUILD)/bench/logs/idle-host.log)

# ---- end to end in the VM (make bench runs it; not part of make test) --------
# bench/e2e.c with dial9.ko: one boot under plain TCG (2 vCPUs, real time:
# parts 4 and 5), one under -icount (guest time = instructions executed;
# the second vCPU is onlined after boot, as in bench-sched).  Lines
# "BENCH ..." go to $(BENCH_LOGS)/vm*.log for bench/bench-table.sh.
BENCH_VM_REQS ?= 5000
BENCH_VM_REPS ?= 11
E2E_VM := tests/vm/run.sh --kernel $(CACHE)/vmlinuz-$(KVER) --module $(KO) \
	--file $(BUILD)/bench/dial9-e2e
E2E_ARGS := -S auto -n $(BENCH_VM_REQS) -r $(BENCH_VM_REPS)

bench-e2e-vm: deps module $(BUILD)/tests/vm/exit $(BUILD)/bench/dial9-e2e
	@mkdir -p $(BENCH_LOGS)
	@echo "bench: parts 4-5 in the VM with dial9.ko, TCG (log: $(BENCH_LOGS)/vm.log)"
	@set -o pipefail; DIAL9_VM_TIMEOUT=900 $(E2E_VM) \
		--demo "dial9-e2e -W vm $(E2E_ARGS) e2e bytes mem" \
		--out $(BUILD)/bench-e2e/tcg | tr -d '\r' | grep '^BENCH' >$(BENCH_LOGS)/vm.log
	@echo "bench: part 4 in the VM with dial9.ko, -icount (log: $(BENCH_LOGS)/vm-icount.log)"
	@set -o pipefail; DIAL9_VM_TIMEOUT=900 $(E2E_VM) --icount --smp 2 \
		--append maxcpus=1 --demo "echo 1 >/sys/devices/system/cpu/cpu1/online; \
			dial9-e2e -W vm-icount $(E2E_ARGS) e2e" \
		--out $(BUILD)/bench-e2e/icount | tr -d '\r' | grep '^BENCH' \
		>$(BENCH_LOGS)/vm-icount.log

