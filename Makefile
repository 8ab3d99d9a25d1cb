# SPDX-License-Identifier: MIT
# mwrap-attach — see README and docs/.  `make help` lists the targets.
CC ?= gcc
CFLAGS ?= -O2 -g
# CPPFLAGS and LDFLAGS (Debian's hardening flags) reach the product's
# compiles and links
# warnings are errors here and in CI; a user's build (the gem, the
# Debian package) passes WERROR= so that a newer compiler's new warning
# does not stop an install
WERROR = -Werror
WARN = -Wall -Wextra $(WERROR)
PREFIX ?= /usr/local
DESTDIR ?=
PYTEST = /usr/bin/python3 -m pytest
# the Ruby the extension is built for (the gem's install passes its own)
RUBY = ruby
# where Debian's ruby looks for site libraries (make install; the Debian
# package passes ruby's vendor directories instead)
RUBY_SITELIB = $(shell $(RUBY) -e 'print RbConfig::CONFIG["sitelibdir"]' 2>/dev/null)
RUBY_SITEARCH = $(shell $(RUBY) -e 'print RbConfig::CONFIG["sitearchdir"]' 2>/dev/null)

# preload/ by layer, each including only the ones before it
# (dev/check-layers): base < core < hook < report < control.
LIB_LAYERS = base core hook report control
# A file named *_ARCH.c is built only for that CPU (MW_ARCH, below), as
# inject/'s are: hook/trampoline_ARCH.c, core/rbpos_ARCH.c.
LIB_ARCHES = x86_64 aarch64
LIB_SRCS = $(filter-out $(foreach a,$(filter-out $(MW_ARCH),$(LIB_ARCHES)),%_$(a).c),\
	$(foreach d,$(LIB_LAYERS),$(wildcard preload/$(d)/*.c)))
# common/: what the library and the injector both read (ELF files,
# /proc maps, the clock); its objects are the library's lowest layer
COMMON_SRCS = $(wildcard common/*.c)
LIB_OBJS = $(LIB_SRCS:preload/%.c=build/preload/%.o) \
	$(COMMON_SRCS:common/%.c=build/common/%.o)
LIB_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WARN) -std=gnu11 -fPIC -fvisibility=hidden \
	-fno-builtin -D_LGPL_SOURCE -MMD -Ipreload -I. \
	-DMW_VERSION='"$(shell cat VERSION)"'
# liburcu is linked dynamically (Debian's static archive uses local-exec
# TLS, which a shared object cannot hold) with RPATH=$ORIGIN: copied next
# to libmwrap.so, liburcu travels with it into a target (a container)
# that has none.  Our own code never calls malloc; liburcu's calls reach
# the hooks only in preload mode, where the recursion guard passes them
# straight through on the same thread.
URCU_LIBS = -lurcu-cds -lurcu-bp

# What `make` produces, each in one place under build/ (the front end,
# the tests and the packages find them there: scripts/lib/mwrap_attach/
# paths.rb, tests/conftest.py, gem/extconf.rb): the library with its
# liburcu copies, the injector, the Ruby extension.
LIBMWRAP = build/lib/libmwrap.so
INJECTOR = build/bin/mwrap-inject
RUBY_EXT = build/ruby/mwrap_ext.so

# jemalloc linked in (tests/test_allocators.py): built where libjemalloc-dev
# is installed (make setup installs it; the arm64 VM has only the build's
# packages), else that test skips, saying why
DEEPBIND_JEMALLOC = $(if $(filter /%,$(shell $(CC) -print-file-name=libjemalloc.so)),\
	build/targets/deepbind-jemalloc)
TEST_TARGETS = build/targets/hello build/targets/storm build/targets/vecloop \
	build/targets/hotsite build/targets/forker \
	build/targets/blocker build/targets/tracer build/targets/deepbind \
	build/targets/libdeep.so $(DEEPBIND_JEMALLOC) \
	build/targets/busycopy build/targets/prelive build/targets/sctarget \
	build/targets/libsclog.so build/targets/libslowctor.so \
	build/targets/mapchurn \
	build/targets/statics build/targets/statics-stripped \
	build/targets/dlcycle build/targets/libdlalpha.so build/targets/libdlbeta.so \
	build/targets/slowerror build/targets/libinhandler.so \
	build/targets/libkillstep.so

.PHONY: all setup build man deps deps-build product test test-c test-py test-safety fuzz demo bench bench-puma clean install \
	install-product gem deb packages test-packages help \
	check-hooks check-layers test-fast test-versions test-debian13 test-ruby34 test-ruby-src test-container test-rails test-redmine \
	test-speedscope sidecar test-sidecar kube-demo test-arm64 test-musl

# `make` builds into build/ and installs nothing; `make setup` first
# installs the Debian packages that are missing (make test, make demo).
all: build

setup: deps
	@$(MAKE) --no-print-directory build

# Before the product's first compile: liburcu's headers, named with the
# fix, rather than a compiler's "urcu-bp.h: No such file or directory".
build/.build-deps:
	@echo '#include <urcu-bp.h>' | $(CC) $(CPPFLAGS) -E -o /dev/null - 2>/dev/null || { \
		echo "make: liburcu's headers are missing (Debian: liburcu-dev):" \
			"run make setup, or scripts/install-deps build, to install them" >&2; exit 1; }
	@mkdir -p $(@D) && touch $@

help:
	@echo "Building (into build/)"
	@echo "make, make all  build everything into build/: the product, the test targets and C unit tests, the benchmark's helpers"
	@echo "make build      the same"
	@echo "make setup      install the missing Debian packages (make deps), then make build"
	@echo "make product    build only what is installed; installs no package (WERROR= : warnings not fatal)"
	@echo "make build-musl libmwrap.so and mwrap-inject built with musl-gcc into build/musl/, for musl (Alpine) targets"
	@echo "make deps       only install the Debian packages (scripts/install-deps)"
	@echo "make deps-build only install the packages building the product needs (what make install installs)"
	@echo "make man        rewrite the man pages' EXIT STATUS from scripts/lib/mwrap_attach/exit_codes.rb"
	@echo "make clean      remove build outputs"
	@echo "make help       this list"
	@echo
	@echo "Testing"
	@echo "make test       install missing Debian packages, build, run the C unit tests, the import and layer checks and the pytest suite"
	@echo "make test-fast  the fast lane (under 3 min): C unit tests, the import and layer checks, the tests marked fast"
	@echo "make test-c     the C unit tests (tests/c), built first"
	@echo "make test-c-musl   those that read what the C library does, built with musl-gcc (make test runs them where it is installed)"
	@echo "make test-py    the pytest suite alone (builds and installs nothing first)"
	@echo "make check-hooks    libmwrap.so imports only what dev/check-imports allows (no stdio, no malloc)"
	@echo "make check-layers   preload/'s includes only go down its layers, with no cycle (dev/check-layers)"
	@echo "make test-versions  the tests of what differs by Ruby version (attach, preload, stacks, versions)"
	@echo "make test-safety    the injection safety matrix, every case 20 times"
	@echo "make fuzz       libFuzzer on the option and control parsers (FUZZ_SECONDS each)"
	@echo "make demo       install missing Debian packages, build, run the bundled leaking Ruby service under mwrap-attach"
	@echo "make kube-demo  the demo in a pod: the leaking service and the sidecar image under podman kube play (deploy/kube)"
	@echo
	@echo "Longer suites (.ci/run runs them all)"
	@echo "make test-debian13  make test inside a Debian 13 root (Ruby 3.3)"
	@echo "make test-ruby34    the version tests (make test-versions) in a sid root with Ruby 3.4"
	@echo "make test-ruby-src  Rubies built from source as the official images are (RUBIES=3.4.3 4.1.0-dev): the version tests with YJIT, and on 4.x with ZJIT"
	@echo "make test-arm64     in an arm64 Debian 12 VM (qemu): the injector, libmwrap.so, the C unit tests, tests/arm64"
	@echo "make test-container attach in podman containers (default and killing seccomp profiles)"
	@echo "make test-sidecar   the sidecar image attaches to a Ruby service in another podman container"
	@echo "make test-rails     Debian's Rails under a Puma cluster, attached with no flag but the window;"
	@echo "                    a Rack app's flame graph under Puma, in headless Chromium"
	@echo "make test-redmine   Debian's Redmine under a Puma cluster with a leaking plugin, attached with no flag"
	@echo "                    but the window: the plugin's leak line first, a bounded cache below it, pprof"
	@echo "make test-speedscope  --format=speedscope against speedscope's npm package (its schema, its viewer)"
	@echo "make test-musl      a musl Ruby 3.4.3 (YJIT) in an Alpine-like root: attached from the host and from"
	@echo "                    inside by both backends, preloaded under mwrap, --gc, --objects; the sidecar"
	@echo "                    image beside it as a container"
	@echo "make test-packages  the gem and the .deb, installed in fresh minimal Debian 12 and 13 roots, attach to Ruby"
	@echo
	@echo "Benchmarks"
	@echo "make bench      the benchmark: ratios against a baseline (a few minutes)"
	@echo "make bench-puma a Rails app under a 2-worker Puma cluster: throughput and CPU per request"
	@echo "                during a default window (--children-of) against before it (about 2 minutes)"
	@echo
	@echo "Installing, and packages (made in build/pkg/)"
	@echo "make install    install the build's Debian packages, then into \$$(DESTDIR)\$$(PREFIX) (default /usr/local)"
	@echo "make install-product  make install without installing Debian packages"
	@echo "make gem        build/pkg/mwrap-attach-VERSION.gem (gem install builds it)"
	@echo "make deb        build/pkg/mwrap-attach_VERSION_ARCH.deb (dpkg-buildpackage on a copy of the tree)"
	@echo "make packages   both: make gem and make deb"
	@echo "make sidecar    the debug-sidecar image localhost/mwrap-attach-sidecar:VERSION (the .deb, podman)"

deps:
	@scripts/install-deps

# The man pages are committed (man -l man/X.1 reads them from the tree);
# their EXIT STATUS sections are written from the one table of exit codes.
man:
	@dev/man-exit-status

# what building the product alone needs (make install on a server)
deps-build:
	@scripts/install-deps build

# What depends on the CPU is in one file per architecture
# (inject/process/arch.h): those of the compiler's target.
MW_ARCH := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)
# inject/ by layer, as preload/ (dev/check-layers): base < process <
# checks < backends, and mwrap-inject.c, the program, above them.
INJECT_LAYERS = base process checks backends
NOT_THIS_ARCH = $(foreach a,$(filter-out $(MW_ARCH),$(LIB_ARCHES)),%_$(a).c)
inject_srcs = $(filter-out $(NOT_THIS_ARCH),$(foreach d,$(1),$(wildcard inject/$(d)/*.c)))
INJECT_SRCS = inject/mwrap-inject.c $(call inject_srcs,$(INJECT_LAYERS)) \
	inject/backends/gdb_script.S $(COMMON_SRCS)
INJECT_HDRS = $(wildcard inject/*/*.h common/*.h) inject/process/syscalls.def \
	preload/inject_abi.h
INJECT_CFLAGS = -Iinject -I.

C_TESTS = build/tests/test_options build/tests/test_control \
	build/tests/test_elfsym build/tests/test_live build/tests/test_live_threads \
	build/tests/test_maps build/tests/test_symtab build/tests/test_ectls \
	build/tests/test_leaves build/tests/test_scprobe

# The GOT patcher's matrix (tests/test_got_matrix.py), after plthook's:
# an executable and its library built PIE or not, without or with RELRO,
# with lazy or immediate binding (relro + now = full RELRO), calling
# through the PLT or the GOT (-fno-plt).  The variant is the directory.
GOTM_VARIANTS = $(foreach pie,pie nopie,$(foreach relro,norelro relro,\
	$(foreach bind,lazy now,$(foreach plt,plt noplt,\
	$(pie)-$(relro)-$(bind)-$(plt)))))
# and an executable that takes malloc's address (a callback pointer)
GOTM_ADDR_VARIANTS = pie-relro-lazy-plt-addr nopie-relro-lazy-plt-addr
GOTM_BINS = $(foreach v,$(GOTM_VARIANTS) $(GOTM_ADDR_VARIANTS),\
	build/got_matrix/$(v)/libgotlib.so build/got_matrix/$(v)/gotmain)
gotm_has = $(filter $1,$(subst -, ,$2))
gotm_flags = $(if $(call gotm_has,noplt,$1),-fno-plt) \
	-Wl,-z,$(if $(call gotm_has,norelro,$1),norelro,relro) \
	-Wl,-z,$(if $(call gotm_has,now,$1),now,lazy)
gotm_exe = $(if $(call gotm_has,nopie,$1),-fno-pie -no-pie,-fPIE -pie) \
	$(if $(call gotm_has,addr,$1),-DGOTM_TAKE_ADDRESS)

PRODUCT = $(LIBMWRAP) $(INJECTOR) $(RUBY_EXT)

build: $(PRODUCT) $(TEST_TARGETS) $(C_TESTS) $(GOTM_BINS) build/bench/libcount.so \
	build/bench/manysites build/bench/churn

product: $(PRODUCT)

# The Ruby extension, built with mkmf against Debian's ruby-dev:
# `ruby -I ruby-ext/lib -I build/ruby -rmwrap` finds mwrap.rb and it.
$(RUBY_EXT): ruby-ext/ext/mwrap_ext/mwrap_ext.c \
		ruby-ext/ext/mwrap_ext/extconf.rb preload/mwrap.h VERSION
	@mkdir -p build/ruby-ext
	cd build/ruby-ext && $(RUBY) $(CURDIR)/ruby-ext/ext/mwrap_ext/extconf.rb >/dev/null && \
		$(MAKE) --no-print-directory V=0 >/dev/null
	@mkdir -p $(@D)
	cp build/ruby-ext/mwrap_ext.so $@

build/bench/libcount.so: bench/count/count.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -ldl

# bench/callgrind's C target: malloc+free pairs from one call site
build/bench/churn: bench/churn/churn.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $<

# a dump of 100,000 native sites, timed (bench/symbols/manysites.c)
build/bench/manysites: bench/symbols/manysites.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $< -ldl

# the version is written once, in VERSION
build/preload/report/dump.o: VERSION

build/preload/%.o: preload/%.c | build/.build-deps
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

build/common/%.o: common/%.c | build/.build-deps
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

$(LIBMWRAP): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -o $@ $(LIB_OBJS) $(URCU_LIBS) \
		-Wl,-soname,libmwrap.so -Wl,-rpath,'$$ORIGIN' \
		-Wl,-z,nodelete -Wl,-z,now \
		-Wl,-z,relro -Wl,--no-undefined -lpthread -ldl
	@ldd $@ | awk '/liburcu/ {print $$1, $$3}' | while read so path; do \
		[ "$$path" -ef "$(@D)/$$so" ] || cp -L "$$path" "$(@D)/$$so"; \
	done

# gdb_script.S embeds inject/backends/gdb/attach.py (.incbin, a path from here)
$(INJECTOR): $(INJECT_SRCS) $(INJECT_HDRS) inject/backends/gdb/attach.py
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -std=gnu11 $(INJECT_CFLAGS) \
		-o $@ $(INJECT_SRCS)

build/targets/%: tests/targets/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $< -lpthread -ldl

# the same program without .symtab (.dynsym stays: -rdynamic's exports)
build/targets/statics-stripped: build/targets/statics
	strip --strip-all -o $@ $<

# two builds of one library, loaded one after the other by dlcycle
build/targets/libdl%.so: tests/targets/dlcycle_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DNAME=$* -o $@ $<

# a target under a seccomp filter of the test's choosing
build/targets/sctarget: tests/container/sctarget.c tests/container/notiflog.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $< -lpthread

build/targets/libsclog.so: tests/container/sclog.c tests/container/notiflog.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< -lpthread

# a constructor that holds the loader lock for 3 s (test_call_timeout)
build/targets/libslowctor.so: tests/targets/slowctor.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $<

# tells whether a call came inside blocker's SIGUSR1 handler
# (test_signals_in_search)
build/targets/libinhandler.so: tests/targets/inhandler.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $<

# preloaded into mwrap-inject: SIGKILL after a chosen step
# (tests/safety/test_inject_steps.py)
build/targets/libkillstep.so: tests/targets/killstep.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< -ldl

# two allocators in one process (tests/test_allocators.py)
build/targets/libdeepalloc.so: tests/targets/deep_alloc.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fno-builtin -fPIC -shared -o $@ $<

build/targets/libdeep.so: tests/targets/deep_lib.c build/targets/libdeepalloc.so
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< \
		-Lbuild/targets -ldeepalloc -Wl,-rpath,'$$ORIGIN'

# jemalloc linked in, not preloaded
build/targets/deepbind-jemalloc: tests/targets/deepbind.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $< -ldl -ljemalloc

# the matrix's variants (GOTM_VARIANTS above)
build/got_matrix/%/libgotlib.so: tests/got_matrix/gotlib.c tests/got_matrix/sites.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fno-builtin -fPIC -shared $(call gotm_flags,$*) \
		-o $@ $<

build/got_matrix/%/gotmain: tests/got_matrix/gotmain.c tests/got_matrix/sites.h \
		build/got_matrix/%/libgotlib.so
	$(CC) $(CFLAGS) $(WARN) -fno-builtin $(call gotm_exe,$*) \
		$(call gotm_flags,$*) -rdynamic -o $@ $< \
		-L$(@D) -lgotlib -Wl,-rpath,'$$ORIGIN' -ldl

# The sources a C unit test is built with besides its own (the musl
# lane's too: test-c-musl)
TEST_SRCS_options = preload/base/options.c
TEST_SRCS_control = preload/base/command.c
TEST_SRCS_symtab = preload/base/elfsyms.c common/elffile.c
TEST_SRCS_live = preload/core/live.c preload/base/spin.c
TEST_SRCS_elfsym = inject/base/elfsym.c common/elffile.c
# each parser's unit test, with the parser's own source
build/tests/test_options: $(TEST_SRCS_options)
build/tests/test_control: $(TEST_SRCS_control)
# the dump's function tables, read from its own file and from statics
build/tests/test_symtab: $(TEST_SRCS_symtab) \
	build/targets/statics build/targets/statics-stripped
build/tests/test_live build/tests/test_live_threads: $(TEST_SRCS_live) \
	preload/core/live.h preload/base/spin.h \
	preload/base/cpu.h \
	$(wildcard preload/base/cpu_*.h) \
	tests/c/live_fixture.h
# Ruby 3.2+'s EC found in code (core/rbpos_ARCH.c), on a TLS variable of
# a library built the two ways a libruby may be
build/tests/test_ectls: preload/core/rbpos_$(MW_ARCH).c \
	preload/core/rbpos_arch.h build/tests/libectls.so build/tests/libectls-ie.so
build/tests/libectls.so: tests/c/ectls_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $<
build/tests/libectls-ie.so: tests/c/ectls_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -ftls-model=initial-exec -o $@ $<
build/tests/test_%: tests/c/test_%.c tests/c/tap.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -Ipreload -I. -o $@ $< $(filter preload/%.c common/%.c,$^)

# inject/base/elfsym.c, tried on a library built for it, stripped and not
build/tests/libelfsym.so: tests/c/elfsym_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $<

build/tests/libelfsym-stripped.so: build/tests/libelfsym.so
	strip --strip-all -o $@ $<

build/tests/test_elfsym: tests/c/test_elfsym.c $(TEST_SRCS_elfsym) $(INJECT_HDRS) \
		tests/c/tap.h build/tests/libelfsym.so build/tests/libelfsym-stripped.so
	$(CC) $(CFLAGS) $(WARN) $(INJECT_CFLAGS) -o $@ $< $(TEST_SRCS_elfsym) -ldl

# inject/process/maps.c, included whole, against a target whose map never
# holds still
MAPS_SRCS = $(call inject_srcs,base) $(COMMON_SRCS)
build/tests/test_maps: tests/c/test_maps.c inject/process/maps.c $(MAPS_SRCS) \
		$(INJECT_HDRS) tests/c/tap.h build/targets/mapchurn
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(INJECT_CFLAGS) -o $@ $< $(MAPS_SRCS) -ldl

# the seccomp probes (inject/checks/scprobe.c): one for every listed syscall
SCPROBE_SRCS = inject/checks/scprobe.c \
	inject/process/syscalls.c inject/process/syscalls_$(MW_ARCH).c \
	inject/process/maps.c $(MAPS_SRCS)
build/tests/test_scprobe: tests/c/test_scprobe.c $(SCPROBE_SRCS) $(INJECT_HDRS) tests/c/tap.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(INJECT_CFLAGS) -o $@ $< $(SCPROBE_SRCS) -ldl

# the leaves (inject/base/leaves.c) as this CPU's libc picks them: on aarch64
# each one's code walked
build/tests/test_leaves: tests/c/test_leaves.c inject/process/maps.c $(MAPS_SRCS) \
		$(INJECT_HDRS) tests/c/tap.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(INJECT_CFLAGS) -o $@ $< inject/process/maps.c $(MAPS_SRCS) -ldl

# The hooks and the dump path must not reach stdio or a locking allocator.
check-hooks: $(LIBMWRAP)
	@dev/check-imports $(LIBMWRAP)

# preload/'s includes only go down its layers, with no cycle; core/ and
# hook/ objects import only what their allowlists name.
check-layers: $(LIBMWRAP)
	@dev/check-layers

test: setup
	@$(MAKE) --no-print-directory test-c $(if $(HAVE_MUSL_CC),test-c-musl) \
		check-hooks check-layers test-py

# The fast lane (docs/development.md): the C unit tests, the layer and
# import checks, and the tests marked fast (pytest.ini): the report code
# on hand-written dumps, the declarations, one attach per backend.
test-fast: setup
	@$(MAKE) --no-print-directory test-c check-hooks check-layers
	$(PYTEST) -q -m fast tests

test-c: $(C_TESTS)
	@for t in $(C_TESTS); do echo "== $$t"; $$t || exit 1; done

test-py:
	$(PYTEST) -q tests

# What differs by Ruby version (attach, preload, stacks, the version
# tests): the part of the suite sid's 3.4 and 4.x run; the host's Ruby,
# Debian 13's 3.3 and 3.4.3 from source with YJIT run the whole suite.
# What differs by Ruby: its frames, its extension API, its objects and GC
VERSION_TESTS = tests/test_attach.py tests/test_preload.py tests/test_stacks.py \
	tests/test_ruby_versions.py tests/test_ruby_api.py tests/test_objects_scan.py \
	tests/test_gc.py tests/safety/test_objects.py
test-versions: setup
	$(PYTEST) -q $(VERSION_TESTS)

# Other Rubies, in cached Debian roots (dev/debian-root): the whole suite
# runs once per libc and architecture (make test, test-arm64); Debian 13's
# 3.3 and sid's 3.4 run the version tests, after a fresh root's
# install-deps and build.
test-debian13:
	@scripts/install-deps root
	dev/debian-root trixie make test-versions

test-ruby34:
	@scripts/install-deps root
	dev/debian-root ruby34 make test-versions

# Rubies built from ../shared/ruby-src as the official ruby: images build
# them (dev/ruby-src: /usr/local, shared libruby, YJIT, ZJIT on 4.x),
# cached in /var/cache/mwrap-attach/ruby-src; each runs the attach,
# preload, stacks and versions tests with RUBYOPT=--yjit, 4.x also with
# --zjit.  RUBIES=3.2.8 builds and tests 3.2 the same way.
RUBIES = 3.4.3 4.1.0-dev
test-ruby-src:
	@scripts/install-deps root
	dev/ruby-src test $(RUBIES)

# aarch64: an arm64 Debian 12 VM under qemu (TCG, no KVM; cached in
# /var/cache/mwrap-attach/arm64, built once in ~5 min), booted with a
# fresh copy of the tree, running tests/arm64/job.sh: the build of the
# injector and libmwrap.so, the C unit tests, tests/arm64 (attach with
# both backends, preload), seccomp, the suite's core (Ruby lines, stacks,
# the safety matrix) and a Debian 13 chroot (1,542 s from qemu's start
# at host load 5-7, within arm64-vm's 3,600 s).
test-arm64:
	@scripts/install-deps arm64
	dev/arm64-vm run sh tests/arm64/job.sh

# Containers as a runtime runs them: podman from Debian, images made
# from cached debootstrap roots (tests/container/image; ruby-image: the
# source-built Ruby of dev/ruby-src with jemalloc preloaded), no
# registry.
test-container: setup
	@scripts/install-deps container
	MWRAP_TEST_CONTAINER=1 $(PYTEST) -q tests/container

# Debian's Rails under a Puma cluster with keep-alive load; the
# HTML flame graph of a Rack app under Puma in headless Chromium.
test-rails: setup
	@scripts/install-deps rails
	MWRAP_TEST_RAILS=1 $(PYTEST) -q -s tests/rails

# --format=speedscope against the speedscope npm package's schema and
# viewer (fetched once into /var/cache/mwrap-attach/npm; make test skips
# those tests, saying why, until it is there).
# Debian's Redmine (an application nobody here wrote) under a Puma
# cluster with keep-alive load and a plugin of ours that leaks
# (tests/redmine; its prepared database cached in
# /var/cache/mwrap-attach/redmine): the report names the plugin's line first.
test-redmine: setup
	@scripts/install-deps redmine
	tests/redmine/setup.sh
	MWRAP_TEST_REDMINE=1 $(PYTEST) -q -s tests/redmine

# A musl Ruby 3.4.3 with YJIT, built from its source once (dev/ruby-src,
# cached in /var/cache/mwrap-attach/ruby-src/3.4.3-musl), in a root laid
# out as Alpine lays out its files (tests/musl).
# The sidecar image (made by make sidecar after build-musl: its .deb
# carries the musl build) attaches to that root imported as an image.
test-musl: setup build-musl
	@scripts/install-deps container packages
	@$(MAKE) --no-print-directory sidecar
	@root=$$(dev/ruby-src alpine 3.4.3-musl) && \
	sidecar=$$(dev/sidecar-image $(DEB_FILE)) && \
	echo "MWRAP_MUSL_ROOT=$$root MWRAP_TEST_SIDECAR=$$sidecar $(PYTEST) -q tests/musl" && \
	MWRAP_TEST_MUSL=1 MWRAP_MUSL_ROOT=$$root MWRAP_TEST_SIDECAR=$$sidecar \
		$(PYTEST) -q tests/musl

test-speedscope: setup
	@scripts/install-deps speedscope
	$(PYTEST) -q tests/test_speedscope.py

fuzz: deps
	@dev/fuzz

# Every case of tests/safety 20 times (make test runs each twice).
test-safety: setup
	MWRAP_SAFETY_REPEAT=20 $(PYTEST) -q tests/safety

demo: setup
	@scripts/demo

bench: setup
	@bench/run

# A Puma cluster's throughput and CPU per request during a default window
# against before it (bench/puma; Rails, Puma and wrk: the rails group).
bench-puma: setup
	@scripts/install-deps rails
	@bench/puma

# Only the build's packages: a server gets no test tools (chromium, clang).
install: deps-build
	@$(MAKE) --no-print-directory install-product

# The FHS layout: the commands in bin/ (mwrap-attach and mwrap-report are
# links to share/mwrap-attach/, which holds them with their Ruby
# libraries and VERSION), libmwrap.so with its liburcu and mwrap-inject
# in lib/mwrap-attach/ (the musl build, when made, in its musl/), the
# Mwrap Ruby API where ruby finds it.  Nothing
# here installs packages: the gem and the Debian package call it.
install-product: product
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/mwrap-attach \
		$(DESTDIR)$(PREFIX)/share/mwrap-attach/lib/mwrap_attach \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(LIBMWRAP) $(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	install -m 0644 $$(ldd $(LIBMWRAP) | awk '/liburcu/ {print $$3}') \
		$(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	install -m 0755 $(INJECTOR) $(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	@# the musl build, where `make build-musl` made it: for musl targets
	if [ -f $(MUSL_LIB) ]; then \
		install -d $(DESTDIR)$(PREFIX)/lib/mwrap-attach/musl && \
		install -m 0644 $(MUSL_LIB) $(addprefix $(MUSL_BUILD)/lib/,$(MUSL_URCU_SOS) \
			$(MUSL_URCU_LICENSE)) \
			$(DESTDIR)$(PREFIX)/lib/mwrap-attach/musl/ && \
		install -m 0755 $(MUSL_INJECTOR) $(DESTDIR)$(PREFIX)/lib/mwrap-attach/musl/; \
	fi
	install -m 0644 VERSION $(DESTDIR)$(PREFIX)/share/mwrap-attach/
	install -m 0755 scripts/mwrap-attach scripts/mwrap-report \
		$(DESTDIR)$(PREFIX)/share/mwrap-attach/
	install -m 0644 scripts/lib/*.rb $(DESTDIR)$(PREFIX)/share/mwrap-attach/lib/
	install -m 0644 scripts/lib/mwrap_attach/*.rb \
		$(DESTDIR)$(PREFIX)/share/mwrap-attach/lib/mwrap_attach/
	install -m 0755 scripts/mwrap $(DESTDIR)$(PREFIX)/bin/
	ln -sf ../share/mwrap-attach/mwrap-attach $(DESTDIR)$(PREFIX)/bin/mwrap-attach
	ln -sf ../share/mwrap-attach/mwrap-report $(DESTDIR)$(PREFIX)/bin/mwrap-report
	install -m 0644 man/mwrap-attach.1 man/mwrap.1 man/mwrap-report.1 man/mwrap-inject.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(RUBY_SITELIB) $(DESTDIR)$(RUBY_SITEARCH)
	install -m 0644 ruby-ext/lib/mwrap.rb ruby-ext/lib/mwrap_rack.rb \
		$(DESTDIR)$(RUBY_SITELIB)/
	install -m 0644 $(RUBY_EXT) $(DESTDIR)$(RUBY_SITEARCH)/
	@# the layout before the FHS one: the Ruby libraries in bin/lib/
	rm -rf $(DESTDIR)$(PREFIX)/bin/lib/mwrap_*.rb $(DESTDIR)$(PREFIX)/bin/lib/mwrap_attach \
		$(DESTDIR)$(PREFIX)/lib/mwrap-attach/VERSION
	@rmdir $(DESTDIR)$(PREFIX)/bin/lib 2>/dev/null || true

# The gem: the sources, whose install runs gem/extconf.rb, which builds
# the product with this Makefile; and the musl build where make
# build-musl made it (mwrap-attach.gemspec).
PKG = build/pkg
VERSION := $(shell cat VERSION)
gem:
	@mkdir -p $(PKG)
	gem build mwrap-attach.gemspec -o $(PKG)/mwrap-attach-$(VERSION).gem

# The Debian package, for the release and the architecture this machine
# runs: dpkg-buildpackage on a copy of the tree (it writes beside the
# tree and cleans it first), its build dependencies installed first.
ARCH = $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
deb:
	@scripts/install-deps build packages
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || { \
		echo "make deb: debian/changelog is at $$v, VERSION at $(VERSION):" \
			"add an entry (dch -v $(VERSION))" >&2; exit 1; }
	rm -rf $(PKG)/deb $(PKG)/mwrap-attach_*.deb
	mkdir -p $(PKG)/deb/mwrap-attach-$(VERSION)
	tar --exclude=./build --exclude=./.git --exclude='*.o' --exclude='*.so' \
		-cf - . | \
		tar -xf - -C $(PKG)/deb/mwrap-attach-$(VERSION)
	@# the musl build too, where make build-musl made it (debian/rules)
	if [ -f $(MUSL_LIB) ]; then \
		mkdir -p $(PKG)/deb/mwrap-attach-$(VERSION)/debian/musl-build && \
		cp -a $(MUSL_BUILD)/lib $(MUSL_BUILD)/bin \
			$(PKG)/deb/mwrap-attach-$(VERSION)/debian/musl-build/; \
	fi
	cd $(PKG)/deb/mwrap-attach-$(VERSION) && dpkg-buildpackage -us -uc -b
	mv $(PKG)/deb/mwrap-attach_$(VERSION)_*.deb $(PKG)/

packages: gem deb

# The .deb again only when a file it is made of changed (make deb always
# builds it anew): what make sidecar installs.
DEB_FILE = $(PKG)/mwrap-attach_$(VERSION)_$(ARCH).deb
DEB_SOURCES = VERSION Makefile $(shell find preload inject ruby-ext man debian \
	scripts/mwrap scripts/mwrap-attach scripts/mwrap-report scripts/lib \
	-type f ! -name '*.o' ! -name '*.d' ! -name '*.so' ! -name '*.so.*' \
	! -name mwrap-inject 2>/dev/null) \
	$(wildcard build/musl/lib/libmwrap.so build/musl/bin/mwrap-inject)
$(DEB_FILE): $(DEB_SOURCES)
	@$(MAKE) --no-print-directory deb

# The debug-sidecar image (docs/sidecar.md): the .deb installed in a
# minimal Debian root (dev/debian-root sidecar-SUITE, cached),
# imported into podman; made again only when the .deb or its recipe
# changed.
sidecar: $(DEB_FILE)
	timeout 1800 dev/sidecar-image $(DEB_FILE)

# It attaches from beside a Ruby service's container (tests/container's
# app image), as kubectl debug --target does.
test-sidecar: setup
	@scripts/install-deps container packages
	@$(MAKE) --no-print-directory sidecar
	MWRAP_TEST_SIDECAR=$$(dev/sidecar-image $(DEB_FILE)) \
		$(PYTEST) -q tests/container/test_sidecar.py tests/container/test_kube_demo.py

# The demo in a pod (deploy/kube/demo-pod.yaml: the leaking service and the
# sidecar image, shareProcessNamespace, SYS_PTRACE) run by podman kube
# play (dev/kube-demo): the sidecar's report, then the pod goes.
# --foreground: a Ctrl-C from the terminal reaches the harness.
kube-demo: setup
	@scripts/install-deps container packages
	@$(MAKE) --no-print-directory sidecar
	@timeout --foreground 900 dev/kube-demo $$(dev/sidecar-image $(DEB_FILE))

# The gem and the .deb installed in fresh minimal roots (dev/debian-root
# gem-bookworm, gem-trixie, deb-bookworm: built first, once, then cached),
# and lintian.
test-packages:
	@scripts/install-deps packages
	@$(MAKE) --no-print-directory packages
	@for r in gem-bookworm gem-trixie deb-bookworm; do \
		timeout 1800 dev/debian-root $$r true || exit 1; done
	MWRAP_TEST_PACKAGES=1 $(PYTEST) -q tests/packages

# musl (Alpine) --------------------------------------------------------
# What musl taught us, checked on glibc: a C library that lacks some of
# the malloc family (tests/test_musl_resolve.py preloads this before
# libmwrap.so; it hides the functions named in MWTEST_HIDE from dlsym).
build: build/targets/libhidesym.so
build/targets/libhidesym.so: tests/targets/hidesym.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< -ldl

# C targets built with musl-gcc where it is installed (musl-tools, which
# scripts/install-deps and so make setup install), else their tests skip.
MUSL_CC = musl-gcc
HAVE_MUSL_CC := $(shell command -v $(MUSL_CC) 2>/dev/null)
MUSL_TARGETS = build/musl/targets/cleak
build: $(if $(HAVE_MUSL_CC),$(MUSL_TARGETS))
build/musl/targets/%: tests/targets/%.c
	@mkdir -p $(@D)
	$(MUSL_CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $<

# telling C libraries apart (inject/checks/libcmatch.c, maps.c's names)
C_TESTS += build/tests/test_libcmatch
build test-c: build/tests/test_libcmatch
LIBCMATCH_SRCS = inject/checks/libcmatch.c inject/process/maps.c $(MAPS_SRCS)
build/tests/test_libcmatch: tests/c/test_libcmatch.c $(LIBCMATCH_SRCS) \
		$(INJECT_HDRS) tests/c/tap.h $(LIBMWRAP) \
		$(if $(HAVE_MUSL_CC),$(MUSL_TARGETS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(INJECT_CFLAGS) -o $@ $< $(LIBCMATCH_SRCS) -ldl

# make build-musl: libmwrap.so and mwrap-inject built with musl-gcc from
# the same sources, into build/musl/ (lib/ with its liburcu, bin/), for
# targets whose C library is musl (Alpine).  glibc-only calls are behind
# common/libc.h.  Nothing else changes: the glibc build stays as it is.
MUSL_BUILD = build/musl
MUSL_LIB = $(MUSL_BUILD)/lib/libmwrap.so
MUSL_INJECTOR = $(MUSL_BUILD)/bin/mwrap-inject
# liburcu for musl, built once from its source (../shared/liburcu-src:
# Debian's is built for glibc) and cached outside the tree; its stamp
# (the tarball's and musl's checksums, the configure line) is checked
# before every reuse, and a mismatch builds it again.
URCU_VERSION = 0.13.2
MUSL_CACHE = /var/cache/mwrap-attach/musl
# the source beside the tree, else the copy the cache keeps of it (a
# clone elsewhere, e.g. CI's)
URCU_TARBALL_NAME = userspace-rcu-$(URCU_VERSION).tar.xz
URCU_TARBALL = $(firstword $(wildcard $(abspath $(CURDIR)/../shared/liburcu-src/$(URCU_TARBALL_NAME)) \
	$(MUSL_CACHE)/$(URCU_TARBALL_NAME)) $(MUSL_CACHE)/$(URCU_TARBALL_NAME))
MUSL_URCU = $(MUSL_CACHE)/urcu-$(URCU_VERSION)-$(MW_ARCH)
MUSL_LIBC = /lib/ld-musl-$(MW_ARCH).so.1
MUSL_URCU_SOS = liburcu-cds.so.8 liburcu-bp.so.8 liburcu-common.so.8
MUSL_URCU_LICENSE = liburcu-LICENSE
URCU_CONFIGURE = CC=$(MUSL_CC) CFLAGS='-O2 -g' ./configure --prefix=$(MUSL_URCU) \
	--disable-static
# The kernel's headers (linux/, asm/), which musl-gcc's include path
# lacks (Alpine: linux-headers): Debian's, after musl's own.
MUSL_KH = $(MUSL_BUILD)/include
# TLS: musl refuses initial-exec TLS in a library loaded by dlopen, so
# mw_tls is TLSDESC here (core/tls.h; on aarch64 the default dialect);
# glibc's build keeps initial-exec, its hot path
MUSL_TLS = $(if $(filter x86_64,$(MW_ARCH)),-mtls-dialect=gnu2)
MUSL_CFLAGS = $(LIB_CFLAGS) -I$(MUSL_URCU)/include -idirafter $(MUSL_KH) $(MUSL_TLS)
MUSL_LIB_OBJS = $(LIB_SRCS:preload/%.c=$(MUSL_BUILD)/preload/%.o) \
	$(COMMON_SRCS:common/%.c=$(MUSL_BUILD)/common/%.o)

.PHONY: build-musl
build-musl:
	@scripts/install-deps musl
	@[ -r $(URCU_TARBALL) ] || { echo "make: $(URCU_TARBALL): missing" \
		"(liburcu's source, for the musl build)" >&2; exit 1; }
	@want="urcu $$(sha256sum < $(URCU_TARBALL) | cut -d' ' -f1)\
		musl $$(sha256sum < $$(readlink -f $(MUSL_LIBC)) | cut -d' ' -f1)\
		$(URCU_CONFIGURE)"; \
	[ "$$(cat $(MUSL_URCU)/stamp 2>/dev/null)" = "$$want" ] || { \
	echo "make: building liburcu $(URCU_VERSION) for musl into $(MUSL_URCU) (once)"; \
	rm -rf $(MUSL_URCU) $(MUSL_URCU).src $(MUSL_BUILD)/lib && \
	mkdir -p $(MUSL_URCU).src && \
	tar -xJf $(URCU_TARBALL) -C $(MUSL_URCU).src --strip-components=1 && \
	cd $(MUSL_URCU).src && { ./bootstrap && $(URCU_CONFIGURE) && \
		$(MAKE) -j2 && $(MAKE) install; } >$(MUSL_URCU).log 2>&1 || { \
		echo "make: liburcu's build failed: see $(MUSL_URCU).log" >&2; exit 1; }; \
	rm -rf $(MUSL_URCU).src && echo "$$want" > $(MUSL_URCU)/stamp; }
	@[ -e $(MUSL_CACHE)/$(URCU_TARBALL_NAME) ] || cp $(URCU_TARBALL) $(MUSL_CACHE)/
	@$(MAKE) --no-print-directory $(MUSL_LIB) $(MUSL_INJECTOR) $(MUSL_TARGETS) \
		$(MUSL_BUILD)/lib/$(MUSL_URCU_LICENSE)
	@dev/check-imports $(MUSL_LIB)

# make gem and make deb pack build/musl as it is: where it was made,
# they make it again first (a stale one would ship)
gem deb: $(if $(wildcard $(MUSL_LIB)),build-musl)

$(MUSL_KH):
	@mkdir -p $@
	ln -sfn /usr/include/linux $@/linux
	ln -sfn /usr/include/asm-generic $@/asm-generic
	ln -sfn /usr/include/$$($(CC) -print-multiarch)/asm $@/asm

$(MUSL_BUILD)/preload/%.o: preload/%.c | $(MUSL_KH)
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_CFLAGS) -c -o $@ $<

$(MUSL_BUILD)/common/%.o: common/%.c | $(MUSL_KH)
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_CFLAGS) -c -o $@ $<

$(MUSL_BUILD)/preload/report/dump.o: VERSION

# liburcu beside it, as the glibc build's: liburcu-cds and -bp, and
# liburcu-common which both need, each with RUNPATH $$ORIGIN (not the
# cache's path, which libtool wrote) so that they find each other there
$(MUSL_LIB): $(MUSL_LIB_OBJS)
	@mkdir -p $(@D)
	$(MUSL_CC) $(LDFLAGS) -shared -o $@ $(MUSL_LIB_OBJS) \
		-L$(MUSL_URCU)/lib $(URCU_LIBS) \
		-Wl,-soname,libmwrap.so -Wl,-rpath,'$$ORIGIN' \
		-Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro -Wl,--no-undefined
	@for so in $(MUSL_URCU_SOS); do \
		cp -L $(MUSL_URCU)/lib/$$so $(@D)/ && \
		patchelf --set-rpath '$$ORIGIN' $(@D)/$$so || exit 1; done

# liburcu's licence (LGPL-2.1+) goes where its files go (gem, make install;
# the .deb's debian/copyright)
$(MUSL_BUILD)/lib/$(MUSL_URCU_LICENSE): $(MUSL_URCU)/share/doc/userspace-rcu/LICENSE
	@mkdir -p $(@D)
	cp $< $@

$(MUSL_INJECTOR): $(INJECT_SRCS) $(INJECT_HDRS) inject/backends/gdb/attach.py | $(MUSL_KH)
	@mkdir -p $(@D)
	$(MUSL_CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -std=gnu11 $(INJECT_CFLAGS) \
		-idirafter $(MUSL_KH) -o $@ $(INJECT_SRCS)

-include $(MUSL_LIB_OBJS:.o=.d)

# The C unit tests of what reads the C library's own doing (ELF files
# and link maps, /proc maps, the parsers, the live table, the seccomp
# probes), built with musl-gcc into build/musl/tests, their fixtures
# beside them as the glibc ones are: make test runs them where musl-gcc
# is installed.  Not the glibc-only ones: leaves (glibc's string
# routines), ectls (initial-exec TLS, which musl refuses in dlopen),
# libcmatch (it checks the glibc build), live (its RLIMIT_AS trick:
# musl's allocator gives pages back, which leaves the limit room).
MUSL_C_TESTS = $(addprefix $(MUSL_BUILD)/tests/test_,options control symtab \
	live_threads elfsym maps scprobe)
MUSL_TEST_CC = $(MUSL_CC) $(CFLAGS) $(WARN) -Wl,--build-id -idirafter $(MUSL_KH)
# test_NAME from tests/c/test_NAME.c, sources $(2), flags $(3),
# prerequisites $(4)
define musl_c_test
$(MUSL_BUILD)/tests/test_$(1): tests/c/test_$(1).c $(2) tests/c/tap.h $(4) | $(MUSL_KH)
	@mkdir -p $$(@D)
	$(MUSL_TEST_CC) $(3) -o $$@ $$< $(2)
endef
$(eval $(call musl_c_test,options,$(TEST_SRCS_options),-Ipreload -I.))
$(eval $(call musl_c_test,control,$(TEST_SRCS_control),-Ipreload -I.))
$(eval $(call musl_c_test,symtab,$(TEST_SRCS_symtab),-Ipreload -I.,\
	$(MUSL_BUILD)/targets/statics $(MUSL_BUILD)/targets/statics-stripped))
$(eval $(call musl_c_test,live_threads,$(TEST_SRCS_live),-Ipreload -I.,\
	preload/core/live.h tests/c/live_fixture.h))
$(eval $(call musl_c_test,elfsym,$(TEST_SRCS_elfsym),$(INJECT_CFLAGS),\
	$(INJECT_HDRS) $(MUSL_BUILD)/tests/libelfsym.so $(MUSL_BUILD)/tests/libelfsym-stripped.so))
$(eval $(call musl_c_test,maps,$(MAPS_SRCS),$(INJECT_CFLAGS),\
	inject/process/maps.c $(INJECT_HDRS) $(MUSL_BUILD)/targets/mapchurn))
$(eval $(call musl_c_test,scprobe,$(SCPROBE_SRCS),$(INJECT_CFLAGS),$(INJECT_HDRS)))

$(MUSL_BUILD)/targets/statics-stripped: $(MUSL_BUILD)/targets/statics
	strip --strip-all -o $@ $<
$(MUSL_BUILD)/tests/libelfsym.so: tests/c/elfsym_lib.c
	@mkdir -p $(@D)
	$(MUSL_CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,--build-id -o $@ $<
$(MUSL_BUILD)/tests/libelfsym-stripped.so: $(MUSL_BUILD)/tests/libelfsym.so
	strip --strip-all -o $@ $<

.PHONY: test-c-musl
test-c-musl: $(MUSL_C_TESTS)
	@for t in $(MUSL_C_TESTS); do echo "== $$t"; $$t || exit 1; done

# (and the products where they were made before build/)
clean:
	rm -rf build preload/libmwrap.so preload/liburcu* inject/mwrap-inject \
		ruby-ext/lib/mwrap_ext.so

-include $(LIB_OBJS:.o=.d)
