# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make            build BPF objects, libxps (static, shared, pkg-config) and xpsctl
# make test       every test suite (installs what it needs)
# make demo       the main job: a service accelerated by XPS, with statistics
# make test-debug the VM suite on the KASAN + lockdep + kmemleak kernel
#                 (STEPS=kernel|services|step,... for a part: docs/testing.md)
# make fuzz       the fuzzers, FUZZ_SECONDS (60) each
# make vm-run CMD="..."   run a command on the patched kernel in QEMU
# make bench      benchmarks (QUICK=1 for a smoke run)
# make install    into DESTDIR/PREFIX (/usr/local), systemd unit in SYSTEMD_UNITDIR
# make deb        Debian packages xps-tools, libxps0, libxps-dev in $(OUTPUT)/deb
# make deb-kernel the patched kernel as linux-image/linux-headers packages
# V=1             show the commands

XPS_VERSION := 0.2.0
LIBXPS_SOVER := 0

OUTPUT ?= .output
CLANG ?= clang
CC ?= gcc
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
PREFIX ?= /usr/local
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system

include mk/tools.mk

# $(OUTPUT)/include holds the services' shared headers where they are
# installed (<xps/redis.h>), for the tests and benchmarks that use them
INCLUDES := -Iinclude -Iinclude/uapi -I$(OUTPUT)/include -I$(OUTPUT)
# bpf/api is the handler API as installed (<xps/xps.bpf.h>); bpf/ holds
# the libraries (lib/) and protocol parsers (proto/) beside it
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	-I/usr/include/$(ARCH_TRIPLET) $(INCLUDES) -Ibpf/api -Ibpf
USER_CFLAGS := -g -O2 -Wall -Wextra -Wno-unused-parameter -Werror \
	-D_GNU_SOURCE -DXPS_VERSION='"$(XPS_VERSION)"' $(INCLUDES) -Ilibxps
LIBBPF_LIBS := $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz)

# A service is a folder of services/: its handler (NAME.bpf.c), the
# header it shares with user space (NAME.h), its xpsctl kind (service.c)
# and, if it has one, its daemon (xps-*.c) with its man page.
SERVICES := $(sort $(wildcard services/*))
# the framework is embedded in libxps as a skeleton; handlers are files
FRAMEWORK := xps_framework
EXAMPLES := echo verdict upper kv ceiling
HANDLERS := $(EXAMPLES) $(patsubst %.bpf.c,%,$(notdir $(wildcard services/*/*.bpf.c)))
BPF_OBJS := $(addprefix $(OUTPUT)/bpf/,$(addsuffix .bpf.o,$(FRAMEWORK) $(HANDLERS)))
vpath %.bpf.c bpf/framework bpf/examples $(SERVICES)
# the handler API (bpf/api) and what lies behind it, installed with it
API_HDRS := bpf/api/xps.bpf.h $(wildcard bpf/api/internal/*.bpf.h bpf/api/backend/*.bpf.h)
# the headers handlers share with user space, installed as <xps/NAME.h>
SHARED_HDRS := $(wildcard services/*/*.h) bpf/examples/kv.h
STAGED_HDRS := $(addprefix $(OUTPUT)/include/xps/,$(notdir $(SHARED_HDRS)))
BPF_HDRS := $(wildcard bpf/*/*.bpf.h bpf/framework/*.h) $(API_HDRS) $(SHARED_HDRS) \
	$(wildcard include/xps/*.h) include/uapi/linux/bpf_serve.h

LIB_SRCS := $(wildcard libxps/*.c)
LIB_OBJS := $(patsubst libxps/%.c,$(OUTPUT)/libxps/%.o,$(LIB_SRCS))
LIB_PIC_OBJS := $(patsubst libxps/%.c,$(OUTPUT)/libxps/pic/%.o,$(LIB_SRCS))
CLI_SRCS := $(wildcard cli/*.c)
SVC_SRCS := $(wildcard services/*/service.c)
CLI_OBJS := $(patsubst cli/%.c,$(OUTPUT)/cli/%.o,$(CLI_SRCS)) \
	$(patsubst services/%/service.c,$(OUTPUT)/cli/services/%.o,$(SVC_SRCS))

LIBXPS_A := $(OUTPUT)/libxps.a
LIBXPS_SO := $(OUTPUT)/libxps.so.$(XPS_VERSION)
XPSCTL := $(OUTPUT)/xpsctl
DAEMON_SRCS := $(wildcard services/*/xps-*.c)
DAEMONS := $(patsubst %.c,$(OUTPUT)/%,$(notdir $(DAEMON_SRCS)))
DAEMON_MANS := $(wildcard services/*/xps-*.8)
vpath xps-%.c $(SERVICES)
PCFILE := $(OUTPUT)/libxps.pc
UNIT := $(OUTPUT)/xps-service@.service
PREFIX_STAMP := $(OUTPUT)/.prefix
DEPS_STAMP := $(OUTPUT)/.deps-build

.DELETE_ON_ERROR:
.PHONY: all clean tests test test-unit test-integration test-vm test-debug fuzz demo vm-run bench deps install deb deb-kernel FORCE

all: $(STAGED_HDRS) $(BPF_OBJS) $(LIBXPS_A) $(LIBXPS_SO) $(PCFILE) $(UNIT) $(XPSCTL) $(DAEMONS)

# Build dependencies are installed once per checkout (and re-checked when
# the script changes); deps.sh is a no-op when everything is there.
$(DEPS_STAMP): scripts/deps.sh
	$(Q)mkdir -p $(OUTPUT)
	$(Q)scripts/deps.sh build
	$(Q)touch $@

deps:
	scripts/deps.sh all

$(OUTPUT)/include/xps/%.h: %.h
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

vpath %.h $(SERVICES) bpf/examples

$(OUTPUT)/bpf/%.bpf.o: %.bpf.c $(BPF_HDRS) | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/$(FRAMEWORK).skel.h: $(OUTPUT)/bpf/$(FRAMEWORK).bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(FRAMEWORK)_bpf > $@

$(OUTPUT)/libxps/%.o: libxps/%.c libxps/*.h include/xps/*.h $(OUTPUT)/$(FRAMEWORK).skel.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -fvisibility=hidden -c $< -o $@

$(OUTPUT)/libxps/pic/%.o: libxps/%.c libxps/*.h include/xps/*.h $(OUTPUT)/$(FRAMEWORK).skel.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(LIBXPS_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(LIBXPS_SO): $(LIB_PIC_OBJS) libxps/libxps.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,--version-script=libxps/libxps.map \
		-Wl,-soname,libxps.so.$(LIBXPS_SOVER) -o $@ $(LIB_PIC_OBJS) $(LIBBPF_LIBS)
	$(Q)ln -sf libxps.so.$(XPS_VERSION) $(OUTPUT)/libxps.so.$(LIBXPS_SOVER)
	$(Q)ln -sf libxps.so.$(LIBXPS_SOVER) $(OUTPUT)/libxps.so

# files that name PREFIX are made again when it changes
$(PREFIX_STAMP): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' > $@

$(PCFILE): libxps/libxps.pc.in Makefile $(PREFIX_STAMP)
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(XPS_VERSION)|' $< > $@

$(UNIT): contrib/systemd/xps-service@.service.in Makefile $(PREFIX_STAMP)
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@SBINDIR@|$(PREFIX)/sbin|' $< > $@

$(OUTPUT)/cli/%.o: cli/%.c cli/*.h libxps/libxps.h include/xps/*.h | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(OUTPUT)/cli/services/%.o: services/%/service.c cli/*.h libxps/libxps.h \
		include/xps/*.h $(SHARED_HDRS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -Icli -Iservices/$* -c $< -o $@

$(XPSCTL): $(CLI_OBJS) $(LIBXPS_A)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $(CLI_OBJS) $(LIBXPS_A) $(LIBBPF_LIBS)

# what the daemons share (daemons/); unused parts (filler.c in
# xps-clusterd) are dropped by --gc-sections
DAEMON_LIB_SRCS := daemons/daemon.c daemons/reader.c daemons/resp.c daemons/filler.c
$(OUTPUT)/xps-%: xps-%.c $(DAEMON_LIB_SRCS) daemons/*.h $(LIBXPS_A) libxps/*.h include/xps/*.h $(SHARED_HDRS) bpf/proto/*.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Idaemons -Ibpf -ffunction-sections -Wl,--gc-sections -o $@ $< \
		$(DAEMON_LIB_SRCS) $(LIBXPS_A) $(LIBBPF_LIBS)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/xps \
		$(DESTDIR)$(PREFIX)/include/linux $(DESTDIR)$(PREFIX)/sbin \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/lib/xps/bpf
	install -m 644 $(LIBXPS_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBXPS_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libxps.so.$(XPS_VERSION) $(DESTDIR)$(PREFIX)/lib/libxps.so.$(LIBXPS_SOVER)
	ln -sf libxps.so.$(LIBXPS_SOVER) $(DESTDIR)$(PREFIX)/lib/libxps.so
	install -m 644 libxps/libxps.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 libxps/libxps_kv.h $(DESTDIR)$(PREFIX)/include/xps/
	install -m 644 include/xps/*.h $(SHARED_HDRS) $(DESTDIR)$(PREFIX)/include/xps/
	install -m 644 include/uapi/linux/bpf_serve.h $(DESTDIR)$(PREFIX)/include/linux/
	install -d $(DESTDIR)$(PREFIX)/include/xps/internal $(DESTDIR)$(PREFIX)/include/xps/backend
	install -m 644 bpf/api/xps.bpf.h $(DESTDIR)$(PREFIX)/include/xps/
	install -m 644 bpf/api/internal/*.bpf.h $(DESTDIR)$(PREFIX)/include/xps/internal/
	install -m 644 bpf/api/backend/*.bpf.h $(DESTDIR)$(PREFIX)/include/xps/backend/
	install -m 644 $(PCFILE) $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 755 $(XPSCTL) $(DAEMONS) $(DESTDIR)$(PREFIX)/sbin/
	install -m 644 docs/xpsctl.8 $(DAEMON_MANS) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 $(filter-out %/$(FRAMEWORK).bpf.o,$(BPF_OBJS)) $(DESTDIR)$(PREFIX)/lib/xps/bpf/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 contrib/bash-completion/xpsctl \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/xpsctl
	install -d $(DESTDIR)$(SYSTEMD_UNITDIR)
	install -m 644 $(UNIT) $(DESTDIR)$(SYSTEMD_UNITDIR)/

# Debian packages, built from a clean build of the tree with PREFIX=/usr
# staged by `install` (scripts/build-deb.sh says what goes where)
deb:
	$(Q)scripts/deps.sh package
	$(Q)XPS_VERSION=$(XPS_VERSION) LIBXPS_SOVER=$(LIBXPS_SOVER) \
		scripts/build-deb.sh $(OUTPUT)/deb

# the kernel of scripts/build-kernel.sh, packaged by its own bindeb-pkg
deb-kernel:
	$(Q)scripts/deps.sh package
	$(Q)XPS_VERSION=$(XPS_VERSION) scripts/build-deb.sh --kernel $(OUTPUT)/deb

# ---- tests -------------------------------------------------------------

API_TEST := $(OUTPUT)/tests/api_test

$(API_TEST): tests/integration/api_test.c $(STAGED_HDRS) $(LIBXPS_A) libxps/*.h include/xps/*.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -o $@ $< $(LIBXPS_A) $(LIBBPF_LIBS)

CTLBENCH := $(OUTPUT)/bench/ctlbench

$(CTLBENCH): bench/ctlbench.c $(LIBXPS_A) libxps/libxps.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -o $@ $< $(LIBXPS_A) $(LIBBPF_LIBS)

$(OUTPUT)/tests/lossy.bpf.o: tests/integration/lossy.bpf.c | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# what one GET costs the Redis and memcached handlers (BPF_PROG_TEST_RUN)
HANDLER_COST := $(OUTPUT)/bench/handler_cost

$(HANDLER_COST): bench/handler_cost.c $(STAGED_HDRS) $(BPF_HDRS) $(OUTPUT)/bench/handler_cost.bpf.o | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -Ibpf -o $@ $< $(LIBBPF_LIBS)

$(OUTPUT)/bench/handler_cost.bpf.o: bench/handler_cost.bpf.c $(BPF_HDRS) | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

KVLOAD := $(OUTPUT)/bench/kvload

$(KVLOAD): bench/kvload.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -o $@ $<

# the two-threaded server of tests/integration/test_ordering.py
TWOTHREAD_SERVER := $(OUTPUT)/tests/twothread_server

$(TWOTHREAD_SERVER): tests/integration/twothread_server.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -pthread -o $@ $<

tests: $(TWOTHREAD_SERVER)

tests: $(API_TEST) $(CTLBENCH) $(KVLOAD) $(HANDLER_COST) $(OUTPUT)/tests/lossy.bpf.o

test: all tests
	$(Q)scripts/deps.sh test
	$(Q)tests/run-all.sh

test-unit: all tests
	$(Q)tests/run-all.sh unit

test-integration: all tests
	$(Q)tests/run-all.sh integration

test-vm: all tests
	$(Q)tests/run-all.sh vm

# the VM suite on the KASAN + lockdep + kmemleak kernel (not in `make test`:
# see docs/kernel.md for how long it takes)
# the fuzzers (tests/unit): FUZZ_SECONDS each, from the corpora in the tree
fuzz: all
	$(Q)scripts/deps.sh test
	$(Q)$(MAKE) -s -C tests/unit fuzz-smoke FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60)

test-debug: all tests
	$(Q)scripts/deps.sh test
	$(Q)scripts/vm-test.sh --debug $(STEPS)

demo: all $(KVLOAD)
	$(Q)scripts/deps.sh test
	$(Q)scripts/demo.sh

vm-run: all
	$(Q)scripts/vm-run.sh -- "$(CMD)"

bench: all tests
	$(Q)scripts/deps.sh all
	$(Q)python3 scripts/bench.py $(if $(QUICK),--quick) $(if $(PROFILE),--profile)

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
