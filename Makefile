# nccl-net-roce: route-aware NCCL net plugin for multi-NIC RoCE hosts.
# Plain make. `make help` lists the targets.

# The project's version: the one place it is set (plugin, tools, package, man pages), but for
# scripts/nccl-net-roce.spec's Version, which rpmbuild must read from the spec alone (scripts/mkrpm
# and test/netns/package_rpm.t refuse a spec whose Version is not this).
VERSION := 0.3.0

PREFIX ?= /usr/local
# Debian's multiarch directory: the dynamic loader searches $(PREFIX)/lib/<triplet> for
# /usr and /usr/local alike (/etc/ld.so.conf.d/<triplet>.conf), so NCCL's
# dlopen("libnccl-net-roce.so") finds the plugin there without LD_LIBRARY_PATH.
MULTIARCH ?= $(or $(DEB_HOST_MULTIARCH),$(shell $(CC) -print-multiarch 2>/dev/null))
LIBDIR ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/nccl-net-roce
# What other programs read: Prometheus' rules (DATADIR/prometheus), LBNL NHC's check (DATADIR/nhc)
DATADIR ?= $(PREFIX)/share/nccl-net-roce
LDCONFIG ?= ldconfig
DESTDIR ?=
PKG_CONFIG ?= pkg-config
CC ?= cc
CLANG ?= clang
BUILD ?= build
# CI turns warnings into errors; developers get them as warnings unless WERROR=1.
WERROR ?= $(if $(CI),1,0)

ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS := libibverbs libnl-3.0 libnl-route-3.0
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null || echo -lcmocka)
CUDA_HOME ?= /usr/local/cuda

WFLAGS := -Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes -Wstrict-prototypes \
	-Wold-style-definition -Wformat=2 -Wshadow -Wwrite-strings -Wvla \
	-Wmissing-field-initializers
ifeq ($(WERROR),1)
WFLAGS += -Werror
endif

CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WFLAGS) $(CPPFLAGS) $(CFLAGS) -D_GNU_SOURCE -DRN_VERSION='"$(VERSION)"' \
	-Iinclude -Iplugin $(PKG_CFLAGS) \
	-fvisibility=hidden -fPIC -pthread -MMD -MP
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS := $(PKG_LIBS) -pthread -ldl

CORE_SRCS := $(wildcard src/*.c)
PLUGIN_SRCS := $(wildcard plugin/*.c)
# doctor_mpi.c is roce-doctor-mpi's main: built only where Open MPI is (below).
DOCTOR_MPI_SRC := src/doctor/doctor_mpi.c
DOCTOR_SRCS := $(filter-out $(DOCTOR_MPI_SRC),$(wildcard src/doctor/*.c))
TOOL_COMMON_SRCS := $(filter-out src/tools/driver%.c src/tools/bench.c,$(wildcard src/tools/*.c))
UNIT_SRCS := $(wildcard test/unit/test_*.c)
FAKE_SRCS := $(wildcard test/unit/fake_*.c) $(wildcard test/unit/fixture_*.c)
FUZZ_SRCS := $(wildcard test/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
san = $(patsubst %.c,$(BUILD)/san/%.o,$(1))

PLUGIN := $(BUILD)/libnccl-net-roce.so
CORE_LIB := $(BUILD)/librn.a
SAN_LIB := $(BUILD)/san/librn.a
# The doctor's objects without its main, sanitized: the doctor's unit tests link what they
# do not test from here (a test may #include the one file whose static functions it tests).
SAN_DOCTOR_LIB := $(BUILD)/san/librndoctor.a
DOCTOR := $(BUILD)/roce-doctor
DRIVER := $(BUILD)/nccl-net-driver
BENCH := $(BUILD)/nccl-net-bench
UNIT_BINS := $(patsubst test/unit/%.c,$(BUILD)/test/%,$(UNIT_SRCS))
FUZZ_BINS := $(patsubst test/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
# Small test-only programs the netns tests drive (linked with the core).
NETNS_BINS := $(patsubst test/netns/%.c,$(BUILD)/test/rn-%,$(wildcard test/netns/*.c))

# roce-doctor-mpi (the fleet sweep) needs Open MPI (libopenmpi-dev); the rest never does.
MPICC ?= mpicc
MPI_CFLAGS := $(shell $(PKG_CONFIG) --cflags ompi-c 2>/dev/null || $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS := $(shell $(PKG_CONFIG) --libs ompi-c 2>/dev/null || $(MPICC) --showme:link 2>/dev/null)
DOCTOR_MPI := $(if $(MPI_LIBS),$(if $(wildcard $(DOCTOR_MPI_SRC)),$(BUILD)/roce-doctor-mpi))

TOOLS := $(DOCTOR_MPI) $(if $(DOCTOR_SRCS),$(DOCTOR)) $(if $(wildcard src/tools/driver.c),$(DRIVER)) \
	$(if $(wildcard src/tools/bench.c),$(BENCH))

.PHONY: FORCE all tests fuzz test check check-unit check-abi check-netns check-vm check-fuzz fuzz-long \
	format format-check deps demo bench install uninstall deb rpm srpm clean help
.DEFAULT_GOAL := all

all: $(PLUGIN) $(TOOLS)

FORCE:

# Objects are built with -DRN_VERSION: a changed VERSION rebuilds them (the stamp changes only
# when VERSION does, so ordinary builds stay incremental).
$(BUILD)/version: FORCE
	@mkdir -p $(BUILD)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' > $@

$(BUILD)/obj/%.o: %.c $(BUILD)/version
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/san/%.o: %.c $(BUILD)/version
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC SAN  $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -O1 -c -o $@ $<

$(PLUGIN): $(call obj,$(CORE_SRCS) $(PLUGIN_SRCS)) plugin/plugin.map
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $(call obj,$(CORE_SRCS) $(PLUGIN_SRCS)) \
		-Wl,--no-undefined -Wl,--version-script=plugin/plugin.map -Wl,-soname,libnccl-net-roce.so \
		$(LDLIBS)

$(CORE_LIB): $(call obj,$(CORE_SRCS))
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# Unit tests link the plugin's objects too (ABI shims, lifecycle), sanitized.
$(SAN_LIB): $(call san,$(CORE_SRCS) $(PLUGIN_SRCS))
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(SAN_DOCTOR_LIB): $(call san,$(filter-out src/doctor/doctor_main.c,$(DOCTOR_SRCS)))
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(DOCTOR): $(call obj,$(DOCTOR_SRCS)) $(CORE_LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(call obj,$(DOCTOR_SRCS)) $(CORE_LIB) $(LDLIBS)

# The doctor's objects without its main: doctor_main.c is main and the command table only.
DOCTOR_MPI_OBJS := $(call obj,$(filter-out src/doctor/doctor_main.c,$(DOCTOR_SRCS))) \
	$(BUILD)/obj/mpi/doctor_mpi.o

$(BUILD)/obj/mpi/doctor_mpi.o: $(DOCTOR_MPI_SRC)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC MPI  $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -c -o $@ $<

$(BUILD)/roce-doctor-mpi: $(DOCTOR_MPI_OBJS) $(CORE_LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(DOCTOR_MPI_OBJS) $(CORE_LIB) $(MPI_LIBS) $(LDLIBS)

# The driver and the bench load the plugin as NCCL does: they never link the core.
$(DRIVER): $(call obj,src/tools/driver.c src/tools/driver_rma.c $(TOOL_COMMON_SRCS))
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -pthread -ldl

$(BENCH): $(call obj,src/tools/bench.c $(TOOL_COMMON_SRCS))
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -pthread -ldl -lm

$(BUILD)/test/%: test/unit/%.c $(call san,$(FAKE_SRCS)) $(SAN_DOCTOR_LIB) $(SAN_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -O1 -Itest/unit -o $@ $< $(call san,$(FAKE_SRCS)) \
		$(SAN_DOCTOR_LIB) $(SAN_LIB) $(LDLIBS) $(CMOCKA_LIBS)

# libFuzzer targets (clang). The library and the fakes are compiled once for all of them
# (coverage-instrumented, sanitized: build/fz/), each target's own source with the fuzzer's main.
# A target that includes the transport test bed (fuzz_fx.h, fixture_xfer.h: fake verbs, loopback
# OOB) links the fakes too, and one named fuzz_doctor_* the doctor's wire code.
FUZZ_FLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -DRN_VERSION='"$(VERSION)"' -Iinclude -Iplugin \
	-Itest/unit -Isrc/doctor $(PKG_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_DOCTOR_SRCS := src/doctor/doctor_wire.c src/doctor/doctor_io.c src/doctor/doctor_util.c
fz = $(patsubst %.c,$(BUILD)/fz/%.o,$(1))
fuzz_extra = $(if $(shell grep -lE '"(fuzz_fx|fixture_xfer)[.]h"' $(1) 2>/dev/null),$(FAKE_SRCS)) \
	$(if $(findstring fuzz_doctor_,$(1)),$(FUZZ_DOCTOR_SRCS))
# kept: a pattern rule's objects would otherwise be deleted as intermediates, and rebuilt each time
.PRECIOUS: $(BUILD)/fz/%.o
$(BUILD)/fz/%.o: %.c $(BUILD)/version
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC FUZZ $<")
	$(Q)$(CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
$(BUILD)/fuzz/%: test/fuzz/%.c $(wildcard test/fuzz/*.h) $(call fz,$(CORE_SRCS) $(FAKE_SRCS) \
		$(FUZZ_DOCTOR_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)$(CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer -MMD -MP -MF $(BUILD)/fz/$*.d -o $@ $< \
		$(call fz,$(CORE_SRCS) $(call fuzz_extra,$<)) $(LDLIBS)

$(BUILD)/test/rn-%: test/netns/%.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(CORE_LIB) $(LDLIBS)

tests: all $(UNIT_BINS) $(NETNS_BINS)
fuzz: $(FUZZ_BINS)

# The README's test command: installs what a fresh Debian 12 lacks, builds, runs
# every layer (unit, ABI, fuzz, netns, Soft-RoCE VMs) and prints one summary.
# make test T=doctor_peer: that one test (any layer, by its name), after building what it needs.
# The suite's builds on every CPU (42 s instead of 84 on 2), unless the caller chose its own -j.
PAR = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
test:
ifdef T
	$(Q)$(MAKE) --no-print-directory $(PAR) tests $(if $(filter fuzz_%,$(T)),fuzz)
	$(Q)test/run-tests $(T)
else
	$(Q)scripts/install-deps --test
	$(Q)$(MAKE) --no-print-directory $(PAR) tests fuzz
	$(Q)test/run-tests all
endif

check: tests
	$(Q)test/run-tests unit abi
check-unit: tests
	$(Q)test/run-tests unit
check-abi: tests
	$(Q)test/run-tests abi
check-netns: tests
	$(Q)test/run-tests netns field
check-vm: tests
	$(Q)test/run-tests vm
check-fuzz: fuzz
	$(Q)test/run-tests fuzz
# Every fuzzer for FUZZ_SECONDS (default 600) each instead of the 10 s of `make test`.
fuzz-long: fuzz
	$(Q)FUZZ_SECONDS=$${FUZZ_SECONDS:-600} test/run-tests fuzz

# The C files as .clang-format writes them (clang-format 19): names each that differs. `make test`
# and `make check` run it too, as the ABI layer's test format. `make format` rewrites them.
format-check:
	$(Q)scripts/format-check
format:
	$(Q)scripts/format-check --fix

deps:
	$(Q)scripts/install-deps --test

# The README's main job: the Soft-RoCE demo, broken hosts refused, fixed hosts flowing.
demo:
	$(Q)scripts/install-deps --demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)test/vm/demo

bench: all
	$(Q)test/vm/bench

# Man pages: every man/<name>.<section>, gzipped into man<section>/.
MANS := $(wildcard man/*.[1-8])
# Docs: what a user of the installed plugin reads.
DOCS := README.md $(wildcard CHANGELOG.md LICENSE doc/*.md)
INSTALLED_TOOLS := $(if $(wildcard src/tools/driver.c),$(BINDIR)/nccl-net-driver) \
	$(if $(DOCTOR_MPI),$(BINDIR)/roce-doctor-mpi) \
	$(if $(wildcard src/tools/bench.c),$(BINDIR)/nccl-net-bench) \
	$(if $(DOCTOR_SRCS),$(SBINDIR)/roce-doctor $(SBINDIR)/roce-health-check) \
	$(SBINDIR)/roce-policy-routing
# Prometheus' alerts and recording rules over roce-doctor's series (README, Fleet monitoring)
RULES := doc/prometheus/nccl-net-roce.rules.yml doc/prometheus/nccl-net-roce-mesh.rules.yml
INSTALLED := $(LIBDIR)/libnccl-net-roce.so $(INSTALLED_TOOLS) \
	$(addprefix $(DATADIR)/prometheus/,$(notdir $(RULES))) $(DATADIR)/nhc/roce.nhc \
	$(foreach m,$(MANS),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)).gz) \
	$(addprefix $(DOCDIR)/,$(notdir $(DOCS))) $(if $(DOCTOR_SRCS),$(DOCDIR)/roce-doctor.md)

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(DOCDIR)
	install -m 0644 $(PLUGIN) $(DESTDIR)$(LIBDIR)/libnccl-net-roce.so
	$(if $(DOCTOR_MPI),install -m 0755 $(DOCTOR_MPI) $(DESTDIR)$(BINDIR)/roce-doctor-mpi)
	$(if $(wildcard $(DRIVER)),install -m 0755 $(DRIVER) $(DESTDIR)$(BINDIR)/nccl-net-driver)
	$(if $(wildcard $(BENCH)),install -m 0755 $(BENCH) $(DESTDIR)$(BINDIR)/nccl-net-bench)
	$(if $(wildcard $(DOCTOR)),install -m 0755 $(DOCTOR) $(DESTDIR)$(SBINDIR)/roce-doctor)
	install -m 0755 scripts/roce-policy-routing $(DESTDIR)$(SBINDIR)/roce-policy-routing
	$(if $(wildcard $(DOCTOR)),install -m 0755 scripts/roce-health-check $(DESTDIR)$(SBINDIR)/roce-health-check)
	$(Q)set -e; for m in $(MANS); do \
		sec=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$sec; \
		echo "gzip -9n < $$m > $(DESTDIR)$(MANDIR)/man$$sec/$${m##*/}.gz"; \
		gzip -9n < $$m > $(DESTDIR)$(MANDIR)/man$$sec/$${m##*/}.gz; \
		chmod 0644 $(DESTDIR)$(MANDIR)/man$$sec/$${m##*/}.gz; \
	done
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DATADIR)/prometheus
	install -m 0644 $(RULES) $(DESTDIR)$(DATADIR)/prometheus/
	install -d $(DESTDIR)$(DATADIR)/nhc
	install -m 0644 scripts/roce.nhc $(DESTDIR)$(DATADIR)/nhc/roce.nhc
	$(if $(DOCTOR_SRCS),install -m 0644 src/doctor/README.md $(DESTDIR)$(DOCDIR)/roce-doctor.md)
	$(if $(DESTDIR),,$(LDCONFIG))

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)/prometheus $(DESTDIR)$(DATADIR)/nhc \
		$(DESTDIR)$(DATADIR)
	$(if $(DESTDIR),,$(LDCONFIG))

# The Debian package build/nccl-net-roce_<version>-<rev>_<arch>.deb (scripts/mkdeb).
deb:
	$(Q)scripts/mkdeb $(VERSION)

# The source RPM build/nccl-net-roce-<version>-1.src.rpm (scripts/mkrpm, scripts/nccl-net-roce.spec),
# and the RPM build/nccl-net-roce-<version>-1.<arch>.rpm that rpmbuild --rebuild makes of it.
srpm:
	$(Q)scripts/mkrpm $(VERSION) srpm
rpm:
	$(Q)scripts/mkrpm $(VERSION)

clean:
	rm -rf $(BUILD)/obj $(BUILD)/san $(BUILD)/test $(BUILD)/fuzz $(PLUGIN) $(CORE_LIB) $(TOOLS) \
		$(BUILD)/roce-doctor-mpi $(BUILD)/deb $(wildcard $(BUILD)/nccl-net-roce_*.deb) \
		$(BUILD)/rpm $(wildcard $(BUILD)/nccl-net-roce-*.rpm)

help:
	@echo "Targets:"
	@echo "  all (default)  build/libnccl-net-roce.so and the tools (roce-doctor, nccl-net-driver, nccl-net-bench;"
	@echo "                 roce-doctor-mpi too where Open MPI's mpicc is installed)"
	@echo "  test           install missing packages, then every test layer with one summary"
	@echo "  test T=NAME    one test of any layer by its name (make test T=doctor_peer)"
	@echo "  check          unit + ABI tests only (no root needed)"
	@echo "  check-unit check-abi check-netns check-vm check-fuzz   one layer"
	@echo "  fuzz-long      every fuzzer for FUZZ_SECONDS each (default 600)"
	@echo "  format-check   the C files as .clang-format writes them (clang-format 19; names each that"
	@echo "                 differs; run by test and check as the ABI test format)"
	@echo "  format         rewrite the C files as .clang-format writes them (scripts/format-check --fix)"
	@echo "  demo           the Soft-RoCE demo: broken hosts refused, fixed hosts carry traffic"
	@echo "  bench          plugin vs ib_write_bw/ib_write_lat on the Soft-RoCE bed"
	@echo "  install        PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) BINDIR=$(BINDIR) SBINDIR=$(SBINDIR)"
	@echo "                 MANDIR=$(MANDIR) DOCDIR=$(DOCDIR) DATADIR=$(DATADIR) DESTDIR=$(DESTDIR);"
	@echo "                 runs ldconfig unless DESTDIR is set"
	@echo "  uninstall      removes exactly what install put there (same variables)"
	@echo "  deb            build/nccl-net-roce_$(VERSION)-1_<arch>.deb (dpkg-deb, dpkg-shlibdeps)"
	@echo "  srpm           build/nccl-net-roce-$(VERSION)-1.src.rpm (rpmbuild -bs)"
	@echo "  rpm            build/nccl-net-roce-$(VERSION)-1.<arch>.rpm (rpmbuild --rebuild of the"
	@echo "                 source RPM; checked by rpmlint)"
	@echo "  deps           install the Debian packages the build and tests need"
	@echo "  clean"
	@echo "Variables: V=1 (show commands), WERROR=1 (default in CI), CC, CFLAGS"

-include $(shell find $(BUILD)/obj $(BUILD)/san $(BUILD)/test $(BUILD)/fz -name '*.d' 2>/dev/null)
