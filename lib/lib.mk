# libdial9, the dial9 CLI, their tests, fuzzers and benchmark.
# Included by the top-level Makefile; paths are relative to the repo root.
#
#   make lib          build/lib: libdial9.so (soname, export map), .a, .pc
#   make tools        build/tools/dial9
#   make test-lib     cmocka tests under ASan+UBSan, threading tests under
#                     TSan, mistyped DIAL9_EMIT values must not compile,
#                     and each fuzz target for LIB_FUZZ_SECS seconds
#                     (the decoder, the encoder round trip, and one per
#                     dial9 subcommand that reads traces or summaries:
#                     fuzz_cli_*)
#   make fuzz         each fuzz target for FUZZ_SECS seconds, then the
#                     kernel ABI fuzzer in the VM (make fuzz-kmod;
#                     FUZZ_KMOD=0 leaves it out)
#   make test-fleet   segment summaries of three hosts through S3, read by
#                     DuckDB, dial9 sched and dial9 fleet (tests/fleet)
#   make bench        record cost, end to end, bytes (parts 3-5 of issue 6),
#                     after make bench-product (bench-sched, bench-idle)
#   make bench-idle   an idle recorder's CPU and wake-ups on the host
#   make DIAL9_S3=0   library and CLI without S3 upload: no libcurl and no
#                     libcrypto (packaging/packaging.mk installs them)
#
# CPPFLAGS, CFLAGS and LDFLAGS from the environment or the command line
# (dpkg-buildflags' hardening, say) are added to the library and the CLI.

CC ?= cc
BUILD ?= build
WARN ?= -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
FUZZ_CC ?= clang
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
LIB_FUZZ_SECS ?= 20
FUZZ_SECS ?= 600
FUZZ_KMOD ?= 1

LIB_VERSION := $(DIAL9_VERSION)
LIB_SOMAJOR := 0
LIB_B := $(BUILD)/lib
LIB_SRCS := $(wildcard lib/*/*.c)
LIB_HDRS := lib/include/dial9.h $(wildcard lib/*/*.h)
# S3 upload (libcurl, libcrypto) is in unless DIAL9_S3=0.  Objects and
# the CLI are rebuilt when it or the version changes ($(LIB_CONF)).
DIAL9_S3 ?= 1
override DIAL9_S3 := $(if $(filter 0 no,$(DIAL9_S3)),0,1)
LIB_CPPFLAGS := -D_GNU_SOURCE -DDIAL9_S3=$(DIAL9_S3) -Ilib/include -Ilib -Iuapi
# <dial9.h>'s DIAL9_VERSION_STRING: the VERSION file (the Makefile's
# DIAL9_VERSION); make install writes it into the installed header.
LIB_CPPFLAGS += -DDIAL9_VERSION_STRING='"$(LIB_VERSION)"'
LIB_CFLAGS := -std=gnu11 -O2 -g $(WARN) -pthread
LIB_LDLIBS := $(strip -luring -llz4 -lelf -lz $(if $(filter 1,$(DIAL9_S3)),-lcurl -lcrypto) -pthread)
# -lelf: stack frames named through libelf (lib/symbols/), by the
# command and by the worker's symbol table step (DIAL9_SYMBOLS).
TOOL_LDLIBS :=
LIB_CONF := $(LIB_B)/build-options

LIB_SO := $(LIB_B)/libdial9.so.$(LIB_VERSION)
LIB_A := $(LIB_B)/libdial9.a
LIB_PC := $(LIB_B)/dial9.pc
LIB_PIC_OBJS := $(patsubst lib/%.c,$(LIB_B)/pic/%.o,$(LIB_SRCS))
LIB_OBJS := $(patsubst lib/%.c,$(LIB_B)/obj/%.o,$(LIB_SRCS))
# Each object lists the headers it read in a .d file beside it (-MMD;
# -MP: a deleted header is no error), included at the end of this file.
DEPFLAGS := -MMD -MP
# The command's sources (every tools/*.c and tools/timeline/*.c is part of
# the one dial9 binary); `all` needs them known here.
TOOL_SRCS := $(wildcard tools/*.c tools/timeline/*.c)
TOOL_HDRS := $(wildcard tools/*.h tools/timeline/*.h)

.PHONY: lib tools test-lib fuzz fuzz-build bench bench-idle lib-clean \
	s3-server FORCE

# make (all) builds the command too.
all: lib tools
TEST_TARGETS += test-lib

lib: $(LIB_SO) $(LIB_A) $(LIB_PC)

# Rewritten only when an option changed, so that what depends on it is
# rebuilt then and only then.
$(LIB_CONF): FORCE
	@mkdir -p $(dir $@)
	@echo 'DIAL9_S3=$(DIAL9_S3) VERSION=$(LIB_VERSION)' | cmp -s - $@ || \
		echo 'DIAL9_S3=$(DIAL9_S3) VERSION=$(LIB_VERSION)' >$@

$(LIB_B)/pic/%.o: lib/%.c $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) $(CFLAGS) -fPIC \
		-fvisibility=hidden $(DEPFLAGS) -c -o $@ $<

$(LIB_B)/obj/%.o: lib/%.c $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) $(CPPFLAGS) $(LIB_CFLAGS) $(CFLAGS) \
		-fvisibility=hidden $(DEPFLAGS) -c -o $@ $<

$(LIB_SO): $(LIB_PIC_OBJS) lib/libdial9.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libdial9.so.$(LIB_SOMAJOR) \
		-Wl,--version-script=lib/libdial9.map -Wl,--no-undefined \
		-o $@ $(LIB_PIC_OBJS) $(LIB_LDLIBS)
	ln -sf libdial9.so.$(LIB_VERSION) $(LIB_B)/libdial9.so.$(LIB_SOMAJOR)
	ln -sf libdial9.so.$(LIB_SOMAJOR) $(LIB_B)/libdial9.so

$(LIB_A): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

# The pkg-config file for PREFIX, LIBDIR and INCLUDEDIR; Libs.private
# are the libraries libdial9 itself links (pkg-config --static).
LIB_PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIB_VERSION)|' \
	-e 's|@LIBS_PRIVATE@|$(LIB_LDLIBS)|' lib/dial9.pc.in

$(LIB_PC): lib/dial9.pc.in lib/lib.mk $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(LIB_PC_SED) > $@

# ---- the CLI: the public headers (<dial9.h>, <linux/dial9.h>) and the static
# library (TOOL_SRCS above) --------------------------------------------------

# The HTML report page (tools/report.html) is compiled in as a C array.
TOOL_GEN := $(BUILD)/tools/report_html.c

tools: $(BUILD)/tools/dial9

$(BUILD)/tools/report_html.c: tools/report.html
	@mkdir -p $(dir $@)
	{ echo '/* generated from tools/report.html by lib/lib.mk */'; \
	  echo 'const char dial9_report_html[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0 };'; \
	  echo 'const unsigned long dial9_report_html_len = sizeof(dial9_report_html) - 1;'; \
	} > $@.tmp && mv $@.tmp $@

$(BUILD)/tools/dial9: $(TOOL_SRCS) $(TOOL_HDRS) $(TOOL_GEN) $(LIB_HDRS) \
		$(LIB_A) $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) $(CPPFLAGS) -std=gnu11 -O2 -g $(WARN) $(CFLAGS) \
		$(LDFLAGS) -o $@ $(TOOL_SRCS) $(TOOL_GEN) $(LIB_A) $(LIB_LDLIBS) $(TOOL_LDLIBS)

# ---- tests -------------------------------------------------------------------
# Each test links the library compiled with the same sanitizers, so that
# internal functions (lib/*/*.h) can be tested too: one object set per
# sanitizer (ASan+UBSan, TSan), each compiled once for every test.
LIB_T := $(BUILD)/tests/lib
LIB_TESTS := $(patsubst tests/lib/%.c,%,$(wildcard tests/lib/test_*.c))
# Tests that exercise threads run under TSan as well.
LIB_TSAN_TESTS := $(filter $(LIB_TESTS),test_recorder test_rotation test_segment test_worker \
	test_dump)
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
TSAN_FLAGS := -fsanitize=thread -DDIAL9_TSAN
LIB_ASAN_OBJS := $(patsubst lib/%.c,$(LIB_T)/obj-asan/%.o,$(LIB_SRCS))
LIB_TSAN_OBJS := $(patsubst lib/%.c,$(LIB_T)/obj-tsan/%.o,$(LIB_SRCS))
# Kept between runs (a pattern rule's prerequisites would be removed).
.SECONDARY: $(LIB_ASAN_OBJS) $(LIB_TSAN_OBJS)

$(LIB_T)/obj-asan/%.o: lib/%.c $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) $(LIB_CFLAGS) -O1 $(ASAN_FLAGS) $(DEPFLAGS) \
		-c -o $@ $<

$(LIB_T)/obj-tsan/%.o: lib/%.c $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) $(LIB_CFLAGS) -O1 $(TSAN_FLAGS) $(DEPFLAGS) \
		-c -o $@ $<

$(LIB_T)/asan/%: tests/lib/%.c $(LIB_ASAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -Itests/lib $(LIB_CFLAGS) -O1 $(ASAN_FLAGS) \
		$(DEPFLAGS) -MF $@.d -MT $@ -o $@ $< $(LIB_ASAN_OBJS) -lcmocka $(LIB_LDLIBS)

$(LIB_T)/tsan/%: tests/lib/%.c $(LIB_TSAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -Itests/lib $(LIB_CFLAGS) -O1 $(TSAN_FLAGS) \
		$(DEPFLAGS) -MF $@.d -MT $@ -o $@ $< $(LIB_TSAN_OBJS) -lcmocka $(LIB_LDLIBS)

# Tests that fork a multi-threaded recorder and start another in the
# child, which neither sanitizer supports (test_recorder.c says why):
# against libdial9.a as shipped, no sanitizer.
LIB_PLAIN_TESTS := test_recorder
$(LIB_T)/plain/%: tests/lib/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -Itests/lib $(LIB_CFLAGS) \
		$(DEPFLAGS) -MF $@.d -MT $@ -o $@ $< $(LIB_A) -lcmocka $(LIB_LDLIBS)

LIB_TEST_BINS := $(addprefix $(LIB_T)/asan/,$(LIB_TESTS)) \
	$(addprefix $(LIB_T)/tsan/,$(LIB_TSAN_TESTS)) \
	$(addprefix $(LIB_T)/plain/,$(LIB_PLAIN_TESTS))

# Every step through tests/run-tests.sh: the cmocka programs with no
# skip codes (their exit status is the number of failed tests), the
# fuzz targets through tests/fuzz/run.sh (as many at once as there are
# CPUs; the timeout as if one at a time).
LIB_FUZZ_RUNS = "fuzz: tests/fuzz/run.sh $(1) $(FUZZ_B) $(FUZZ_BINS)"
LIB_FUZZ_TIMEOUT = $$(($(1) * $(words $(FUZZ_BINS)) + 120))

test-lib: lib tools $(LIB_TEST_BINS) fuzz-build s3-server
	@DIAL9_TEST_TOOL=$(CURDIR)/$(BUILD)/tools/dial9 \
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	$(RUN_TESTS) test-lib -t 120 "tests/lib/mistyped.sh $(CC) $(FUZZ_CC)" \
		-t 240 -s '' $(foreach t,$(LIB_TEST_BINS),"$(t:$(LIB_T)/%=%): $(t)") \
		-t $(call LIB_FUZZ_TIMEOUT,$(LIB_FUZZ_SECS)) $(call LIB_FUZZ_RUNS,$(LIB_FUZZ_SECS))

# ---- export and report ------------------------------------------------------
# dial9 export / report on traces with exactly known content (built with the
# encoder) and on a real perf recording: the JSON is parsed and checked by
# node, the HTML page is driven in Debian's headless chromium over the
# DevTools pipe (screenshots in $(TOOLS_T)/).  The tool runs under ASan+UBSan.
TOOLS_T := $(BUILD)/tests/tools
TEST_TARGETS += test-tools

$(TOOLS_T)/dial9: $(TOOL_SRCS) $(TOOL_HDRS) $(TOOL_GEN) $(LIB_HDRS) \
		$(LIB_A) $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -std=gnu11 -O1 -g $(WARN) $(ASAN_FLAGS) \
		-o $@ $(TOOL_SRCS) $(TOOL_GEN) $(LIB_A) $(LIB_LDLIBS) $(TOOL_LDLIBS)

# mktrace_stacks.c reads build-ids as the library does (ksched/ksched.h).
$(TOOLS_T)/mktrace: tests/tools/mktrace.c tests/tools/mktrace_stacks.c \
		tests/tools/mktrace_samples.c tests/tools/mktrace.h \
		lib/include/dial9.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -Ilib/include -Ilib -Iuapi \
		-o $@ tests/tools/mktrace.c tests/tools/mktrace_stacks.c \
		tests/tools/mktrace_samples.c $(LIB_A) $(LIB_LDLIBS)

# kconv: a trace of kernel chunks rewritten as the encoding pipeline
# wrote it (version 1), for the tests that compare the two.
$(TOOLS_T)/kconv: tests/tools/kconv.c $(LIB_HDRS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -Ilib/include -Ilib -Iuapi \
		-o $@ tests/tools/kconv.c $(LIB_A) $(LIB_LDLIBS)

.PHONY: test-tools
test-tools: $(TOOLS_T)/dial9 $(TOOLS_T)/mktrace $(TOOLS_T)/kconv
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	$(RUN_TESTS) test-tools -t 120 $(foreach s,synthetic recorded inputs symbols shipped,\
		"$(s): tests/tools/$(s).sh $(TOOLS_T)")

# ---- the S3-compatible server of the upload tests (tests/lib/s3_test.h):
# s3rver from the npm registry, pinned by tests/s3/package-lock.json -------
S3_SERVER_STAMP := tests/s3/node_modules/.dial9-installed

s3-server: $(S3_SERVER_STAMP)

$(S3_SERVER_STAMP): tests/s3/package.json tests/s3/package-lock.json
	scripts/npm-ci.sh tests/s3

# ---- fleet summaries: three hosts ship to the S3 test server, DuckDB
# (@duckdb/node-api from the npm registry, pinned by
# tests/fleet/package-lock.json) reads the summaries where they lie, and
# dial9 sched and dial9 fleet must agree with it (tests/fleet/run.sh) --
FLEET_STAMP := tests/fleet/node_modules/.dial9-installed
TEST_TARGETS += test-fleet

.PHONY: test-fleet fleet-deps
fleet-deps: $(FLEET_STAMP)

$(FLEET_STAMP): tests/fleet/package.json tests/fleet/package-lock.json
	scripts/npm-ci.sh tests/fleet

# Then dial9 record under the disk budget, trigger mode and memory mode
# (tests/fleet/settings.sh).
test-fleet: $(TOOLS_T)/dial9 s3-server fleet-deps
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	$(RUN_TESTS) test-fleet -t 600 \
		"fleet: tests/fleet/run.sh $(TOOLS_T)/dial9 $(BUILD)/tests/fleet" \
		"settings: tests/fleet/settings.sh $(TOOLS_T)/dial9 $(BUILD)/tests/fleet-settings"

# ---- fuzzing (clang libFuzzer) ----------------------------------------------
FUZZ_B := $(BUILD)/fuzz
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_B)/%,$(wildcard tests/fuzz/fuzz_*.c))
# (utf8.c: names cut in kernel chunks, format/kchunk.c)
FUZZ_LIB_SRCS := $(wildcard lib/format/*.c) lib/common/utf8.c

FUZZ_FLAGS := -std=gnu11 -O1 -g $(WARN) -fno-sanitize-recover=all
# The command's targets (fuzz_cli_*.c, one per subcommand that reads
# traces, and fleet's summaries) link every file of the command but main()'s (tools/dial9.c) and
# the whole library, built once into objects for them.
FUZZ_CLI_SRCS := $(filter-out tools/dial9.c,$(TOOL_SRCS)) $(LIB_SRCS)
FUZZ_CLI_OBJS := $(patsubst %.c,$(FUZZ_B)/obj/%.o,$(FUZZ_CLI_SRCS))
FUZZ_CLI_BINS := $(filter $(FUZZ_B)/fuzz_cli_%,$(FUZZ_BINS))

fuzz-build: $(FUZZ_BINS)

$(FUZZ_B)/%: tests/fuzz/%.c $(FUZZ_LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(LIB_CPPFLAGS) $(FUZZ_FLAGS) \
		-fsanitize=fuzzer,address,undefined \
		-o $@ $< $(FUZZ_LIB_SRCS)

$(FUZZ_CLI_OBJS): $(FUZZ_B)/obj/%.o: %.c $(LIB_CONF)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(LIB_CPPFLAGS) $(FUZZ_FLAGS) -pthread \
		-fsanitize=fuzzer-no-link,address,undefined $(DEPFLAGS) -c -o $@ $<

$(FUZZ_CLI_BINS): $(FUZZ_B)/fuzz_cli_%: tests/fuzz/fuzz_cli_%.c \
		tests/fuzz/cli_fuzz.h $(FUZZ_CLI_OBJS) $(TOOL_GEN)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(LIB_CPPFLAGS) $(FUZZ_FLAGS) \
		-fsanitize=fuzzer,address,undefined \
		-o $@ $< $(FUZZ_CLI_OBJS) $(TOOL_GEN) $(LIB_LDLIBS) $(TOOL_LDLIBS)

fuzz: fuzz-build
	@$(RUN_TESTS) fuzz -s '' -t $(call LIB_FUZZ_TIMEOUT,$(FUZZ_SECS)) \
		$(call LIB_FUZZ_RUNS,$(FUZZ_SECS))
	@if [ "$(FUZZ_KMOD)" = 1 ]; then $(MAKE) --no-print-directory fuzz-kmod; fi

# ---- benchmark ---------------------------------------------------------------
# One table (bench/bench-table.sh) of every figure as a ratio to its
# baseline, absolute values beside it (docs/benchmarks.md explains them):
#   part 3  record_bench: ns/event against a raw append and LTTng-UST
#           (lttng_bench, an LTTng-UST tracepoint provider, in a session of
#           its own where liblttng-ust-dev is installed; else it says why);
#           dial9-apprate (bench/app_rate.c, make bench-apprate): the highest
#           rate of application events per thread with 0 lost and no backlog
#   part 4  dial9-e2e (bench/e2e.c): a thread-pool service off / app events
#           / scheduler events, throughput and p99, on the host (perf-event
#           fallback) and, with BENCH_VM=1 (default), in the VM with dial9.ko
#           (plain TCG and -icount: make bench-e2e-vm)
#   part 5  dial9-e2e: bytes/event raw and after LZ4, the flush thread's
#           MB/s per CPU-second, memory per recording thread
# It runs make bench-product first (BENCH_SCHED=0 skips it): bench-idle
# (the idle recorder on the host: libdial9 with the perf backend, perf
# record, an LTTng-UST session) and make bench-sched (parts 1-2 and the
# product paths in the VM: loss by thread pairs, cost per switch, the idle
# recorder with dial9.ko; ~30 min).
# Logs in $(BENCH_B)/logs/.  Never part of make test.
BENCH_B := $(BUILD)/bench
BENCH_LTTNG := $(shell pkg-config --exists lttng-ust 2>/dev/null && echo yes)
BENCH_CFLAGS := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -Ilib/include -Ibench
BENCH_REQS ?= 20000
BENCH_REPS ?= 11
BENCH_VM ?= 1
BENCH_SCHED ?= 1
BENCH_LOGS := $(BENCH_B)/logs
BENCH_IDLE_SECS ?= 10

bench: $(BENCH_B)/record_bench $(if $(BENCH_LTTNG),$(BENCH_B)/lttng_bench) \
		$(BENCH_B)/dial9-e2e $(BENCH_B)/dial9-apprate
	@set -eo pipefail; mkdir -p $(BENCH_LOGS); rm -f $(BENCH_LOGS)/*.log; \
	if [ "$(BENCH_SCHED)" = 1 ]; then $(MAKE) --no-print-directory bench-product; fi; \
	echo "bench: part 3, record cost (log: $(BENCH_LOGS)/record.log)"; \
	$(BENCH_B)/record_bench --lttng $(CURDIR)/$(BENCH_B)/lttng_bench \
		$(BENCH_EVENTS) >$(BENCH_LOGS)/record.log 2>&1; \
	$(MAKE) --no-print-directory bench-apprate; \
	echo "bench: parts 4-5 on the host, perf-event fallback (log: $(BENCH_LOGS)/host.log)"; \
	$(BENCH_B)/dial9-e2e -W host -S perf -n $(BENCH_REQS) -r $(BENCH_REPS) \
		e2e bytes mem >$(BENCH_LOGS)/host.log 2>$(BENCH_LOGS)/host.err; \
	if [ "$(BENCH_VM)" = 1 ]; then $(MAKE) --no-print-directory bench-e2e-vm; fi; \
	echo; bench/bench-table.sh $(BENCH_LOGS)/record.log $(BENCH_LOGS)/apprate.log \
		$(BENCH_LOGS)/host.log \
		$$(ls $(BENCH_LOGS)/vm.log $(BENCH_LOGS)/vm-icount.log 2>/dev/null) \
		| tee $(BENCH_LOGS)/table.txt

# Part 3, sustained: the highest rate of application events per thread
# with 0 lost and no backlog (bench/app_rate.c), beside the producers' own
# maximum, into /tmp (disk, as by default) and /dev/shm (no disk).
BENCH_RATE_SECS ?= 5
.PHONY: bench-apprate
bench-apprate: $(BENCH_B)/dial9-apprate
	@mkdir -p $(BENCH_LOGS)
	@echo "bench: part 3, sustained application events (log: $(BENCH_LOGS)/apprate.log)"
	@set -o pipefail; { $(BENCH_B)/dial9-apprate $(BENCH_RATE_SECS) /tmp host-disk && \
		$(BENCH_B)/dial9-apprate $(BENCH_RATE_SECS) /dev/shm host-tmpfs; } \
		| tee $(BENCH_LOGS)/apprate.log

# The product paths, one after the other (never in parallel: the VM's
# -icount figures do not care, the host's idle figures do).
bench-product:
	@$(MAKE) --no-print-directory bench-idle
	@$(MAKE) --no-print-directory bench-sched

# The idle recorder on the host (bench/idle-host.sh): BENCH lines in
# $(BENCH_LOGS)/idle-host.log, the table with bench-sched's.
bench-idle: $(BENCH_B)/dial9-idle $(if $(BENCH_LTTNG),$(BENCH_B)/lttng_bench)
	@mkdir -p $(BENCH_LOGS)
	@echo "bench: the idle recorder on the host, $(BENCH_IDLE_SECS) s each (log: $(BENCH_LOGS)/idle-host.log)"
	@set -o pipefail; bench/idle-host.sh $(BENCH_B) $(BENCH_IDLE_SECS) \
		| tee $(BENCH_LOGS)/idle-host.log | grep -E '^BENCH(-INFO)? '

# Naming stack frames (bench/syms-bench.sh): time and memory per distinct
# address on a generated program of BENCH_SYMS_FUNCS functions (.symtab,
# then stripped with a debug file) and the largest libLLVM here (.dynsym).
BENCH_SYMS_FUNCS ?= 100000
BENCH_SYMS_ADDRS ?= 10000

.PHONY: bench-syms
bench-syms: $(BENCH_B)/syms_bench $(BENCH_B)/symtab_bench
	@mkdir -p $(BENCH_LOGS)
	@set -o pipefail; bench/syms-bench.sh $(BENCH_B) $(BENCH_SYMS_FUNCS) \
		$(BENCH_SYMS_ADDRS) | tee $(BENCH_LOGS)/syms.log

$(BENCH_B)/syms_bench: bench/syms_bench.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -std=gnu11 -O2 -g $(WARN) -o $@ \
		bench/syms_bench.c $(LIB_A) \
		$(LIB_LDLIBS) $(TOOL_LDLIBS)

# A segment's symbol table (lib/symbols/symtab.c), as the worker makes it.
$(BENCH_B)/symtab_bench: bench/symtab_bench.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CPPFLAGS) -std=gnu11 -O2 -g $(WARN) -o $@ \
		bench/symtab_bench.c $(LIB_A) $(LIB_LDLIBS)

$(BENCH_B)/dial9-idle: bench/idle.c $(LIB_A) lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -pthread -o $@ $< $(LIB_A) $(LIB_LDLIBS)

$(BENCH_B)/dial9-e2e: bench/e2e.c bench/bench_time.h $(LIB_A) lib/include/dial9.h \
		tests/lib/proc.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -Itests/lib -o $@ $< $(LIB_A) $(LIB_LDLIBS)

$(BENCH_B)/record_bench: bench/record_bench.c bench/bench_time.h $(LIB_A) \
		lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(LIB_A) $(LIB_LDLIBS)

$(BENCH_B)/dial9-apprate: bench/app_rate.c bench/bench_time.h $(LIB_A) \
		lib/include/dial9.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -pthread -o $@ $< $(LIB_A) $(LIB_LDLIBS)

$(BENCH_B)/lttng_bench: bench/lttng_bench.c bench/lttng_tp.h bench/bench_time.h
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $$(pkg-config --cflags lttng-ust) -o $@ $< \
		$$(pkg-config --libs lttng-ust) -ldl -pthread

lib-clean:
	rm -rf $(LIB_B) $(BUILD)/tools $(LIB_T) $(FUZZ_B) $(BENCH_B)

# The headers each object and test read (DEPFLAGS).
-include $(wildcard $(LIB_PIC_OBJS:.o=.d) $(LIB_OBJS:.o=.d) \
	$(LIB_ASAN_OBJS:.o=.d) $(LIB_TSAN_OBJS:.o=.d) $(FUZZ_CLI_OBJS:.o=.d) \
	$(LIB_TEST_BINS:=.d))
