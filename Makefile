# mwrap-attach — see README.  `make help` lists the targets.
CC ?= gcc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Werror
PREFIX ?= /usr/local
DESTDIR ?=
PYTEST = /usr/bin/python3 -m pytest
# where Debian's ruby looks for site libraries (make install)
RUBY_SITELIB = $(shell ruby -e 'print RbConfig::CONFIG["sitelibdir"]' 2>/dev/null)
RUBY_SITEARCH = $(shell ruby -e 'print RbConfig::CONFIG["sitearchdir"]' 2>/dev/null)

# preload/ by layer, each including only the ones before it
# (scripts/check-layers): base < core < hook < report < control.
LIB_LAYERS = base core hook report control
LIB_SRCS = $(foreach d,$(LIB_LAYERS),$(wildcard preload/$(d)/*.c))
LIB_OBJS = $(LIB_SRCS:preload/%.c=build/preload/%.o)
LIB_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -fPIC -fvisibility=hidden \
	-fno-builtin -D_LGPL_SOURCE -MMD -Ipreload \
	-DMW_VERSION='"$(shell cat VERSION)"'
# liburcu is linked dynamically (Debian's static archive uses local-exec
# TLS, which a shared object cannot hold) with RPATH=$ORIGIN: copied next
# to libmwrap.so, liburcu travels with it into a target (a container)
# that has none.  Our own code never calls malloc; liburcu's calls reach
# the hooks only in preload mode, where the recursion guard passes them
# straight through on the same thread.
URCU_LIBS = -lurcu-cds -lurcu-bp

TEST_TARGETS = build/targets/hello build/targets/storm build/targets/vecloop \
	build/targets/hotsite build/targets/forker \
	build/targets/blocker build/targets/tracer build/targets/deepbind \
	build/targets/libdeep.so build/targets/deepbind-jemalloc \
	build/targets/busycopy build/targets/prelive build/targets/sctarget \
	build/targets/slowerror build/targets/libinhandler.so \
	build/targets/libsclog.so build/targets/libslowctor.so

.PHONY: all build deps deps-build product test test-c test-py test-safety fuzz demo bench clean install help \
	check-hooks check-layers test-debian13 test-ruby34 test-container

all: deps
	@$(MAKE) --no-print-directory build

help:
	@echo "make            install missing Debian packages, build everything"
	@echo "make test       build, then run the C unit tests and the pytest suite"
	@echo "make demo       run the bundled leaking Ruby service under mwrap-attach"
	@echo "make bench      the benchmark: ratios against a baseline (a few minutes)"
	@echo "make test-safety  the injection safety matrix, every case 20 times"
	@echo "make test-debian13  make test inside a Debian 13 root (Ruby 3.3)"
	@echo "make test-ruby34    make test inside a sid root with Ruby 3.4"
	@echo "make test-container attach in podman containers (default and killing seccomp profiles)"
	@echo "make fuzz       libFuzzer on the option and control parsers (FUZZ_SECONDS each)"
	@echo "make install    install into \$$(DESTDIR)\$$(PREFIX) (default /usr/local)"
	@echo "make deps       only install the Debian packages (scripts/install-deps)"
	@echo "make clean      remove build outputs"

deps:
	@scripts/install-deps

# what building the product alone needs (make install on a server)
deps-build:
	@scripts/install-deps build

INJECT_SRCS = inject/mwrap-inject.c inject/inject.c inject/failure.c \
	inject/ptrace.c inject/sigframe.c inject/syscalls.c inject/maps.c \
	inject/elfsym.c inject/gdb.c inject/gdb_script.S inject/seccomp.c \
	inject/bpfeval.c inject/scprobe.c inject/safepoint.c inject/dlerror.c

C_TESTS = build/tests/test_options build/tests/test_control \
	build/tests/test_elfsym build/tests/test_live build/tests/test_live_threads

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

PRODUCT = preload/libmwrap.so inject/mwrap-inject ruby-ext/lib/mwrap_ext.so

build: $(PRODUCT) $(TEST_TARGETS) $(C_TESTS) $(GOTM_BINS) build/bench/libcount.so

product: $(PRODUCT)

# The Ruby extension, built with mkmf against Debian's ruby-dev and put
# next to lib/mwrap.rb, so `ruby -I ruby-ext/lib -rmwrap` finds both.
ruby-ext/lib/mwrap_ext.so: ruby-ext/ext/mwrap_ext/mwrap_ext.c \
		ruby-ext/ext/mwrap_ext/extconf.rb preload/mwrap.h VERSION
	@mkdir -p build/ruby-ext
	cd build/ruby-ext && ruby $(CURDIR)/ruby-ext/ext/mwrap_ext/extconf.rb >/dev/null && \
		$(MAKE) --no-print-directory V=0 >/dev/null
	cp build/ruby-ext/mwrap_ext.so $@

build/bench/libcount.so: bench/count/count.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -ldl

# the version is written once, in VERSION
build/preload/report/dump.o: VERSION

build/preload/%.o: preload/%.c
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

preload/libmwrap.so: $(LIB_OBJS)
	$(CC) -shared -o $@ $(LIB_OBJS) $(URCU_LIBS) \
		-Wl,-soname,libmwrap.so -Wl,-rpath,'$$ORIGIN' \
		-Wl,-z,nodelete -Wl,-z,now \
		-Wl,-z,relro -Wl,--no-undefined -lpthread -ldl
	@ldd $@ | awk '/liburcu/ {print $$1, $$3}' | while read so path; do \
		[ "$$path" -ef "preload/$$so" ] || cp -L "$$path" "preload/$$so"; \
	done

# gdb_script.S embeds inject/gdb/attach.py (.incbin, a path from here)
inject/mwrap-inject: $(INJECT_SRCS) $(wildcard inject/*.h) preload/inject_abi.h \
		inject/gdb/attach.py
	$(CC) $(CFLAGS) $(WARN) -std=gnu11 -o $@ $(INJECT_SRCS)

build/targets/%: tests/targets/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -rdynamic -o $@ $< -lpthread -ldl

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

# each parser's unit test, with the parser's own source
build/tests/test_options: preload/base/options.c
build/tests/test_control: preload/base/command.c
build/tests/test_live build/tests/test_live_threads: preload/core/live.c \
	tests/c/live_fixture.h
build/tests/test_%: tests/c/test_%.c tests/c/tap.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -Ipreload -o $@ $< $(filter preload/%.c,$^)

# inject/elfsym.c, tried on a library built for it, stripped and not
build/tests/libelfsym.so: tests/c/elfsym_lib.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $<

build/tests/libelfsym-stripped.so: build/tests/libelfsym.so
	strip --strip-all -o $@ $<

build/tests/test_elfsym: tests/c/test_elfsym.c inject/elfsym.c inject/elfsym.h \
		tests/c/tap.h build/tests/libelfsym.so build/tests/libelfsym-stripped.so
	$(CC) $(CFLAGS) $(WARN) -Iinject -o $@ $< inject/elfsym.c -ldl

# The hooks and the dump path must not reach stdio or a locking allocator.
check-hooks: preload/libmwrap.so
	@scripts/check-imports preload/libmwrap.so

# preload/'s includes only go down its layers, with no cycle; core/ and
# hook/ objects import only what their allowlists name.
check-layers: preload/libmwrap.so
	@scripts/check-layers

test: all
	@$(MAKE) --no-print-directory test-c check-hooks check-layers test-py

test-c: $(C_TESTS)
	@for t in $(C_TESTS); do echo "== $$t"; $$t || exit 1; done

test-py:
	$(PYTEST) -q tests

# The whole suite on other Rubies, in cached Debian roots (scripts/debian-root).
test-debian13:
	@scripts/install-deps root
	scripts/debian-root trixie make test

test-ruby34:
	@scripts/install-deps root
	scripts/debian-root ruby34 make test

# Containers as a runtime runs them: podman from Debian, an image made
# from a cached debootstrap root (tests/container/image), no registry.
test-container: all
	@scripts/install-deps container
	MWRAP_TEST_CONTAINER=1 $(PYTEST) -q tests/container

fuzz: deps
	@scripts/fuzz

# Every case of tests/safety 20 times (make test runs each twice).
test-safety: all
	MWRAP_SAFETY_REPEAT=20 $(PYTEST) -q tests/safety

demo: all
	@scripts/demo

bench: all
	@bench/run

# Only the build's packages: a server gets no test tools (chromium, clang).
install: deps-build
	@$(MAKE) --no-print-directory product
	install -d $(DESTDIR)$(PREFIX)/lib/mwrap-attach $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 preload/libmwrap.so inject/mwrap-inject \
		$(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	install -m 0644 VERSION $(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	install -m 0644 man/mwrap-attach.1 man/mwrap.1 \
		$(DESTDIR)$(PREFIX)/share/man/man1/
	cp -L $$(ldd preload/libmwrap.so | awk '/liburcu/ {print $$3}') \
		$(DESTDIR)$(PREFIX)/lib/mwrap-attach/
	install -m 0755 scripts/mwrap scripts/mwrap-attach scripts/mwrap-report \
		$(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/bin/lib
	install -m 0644 scripts/lib/*.rb $(DESTDIR)$(PREFIX)/bin/lib/
	install -d $(DESTDIR)$(PREFIX)/bin/lib/mwrap_attach
	install -m 0644 scripts/lib/mwrap_attach/*.rb $(DESTDIR)$(PREFIX)/bin/lib/mwrap_attach/
	install -d $(DESTDIR)$(RUBY_SITELIB) $(DESTDIR)$(RUBY_SITEARCH)
	install -m 0644 ruby-ext/lib/mwrap.rb ruby-ext/lib/mwrap_rack.rb \
		$(DESTDIR)$(RUBY_SITELIB)/
	install -m 0755 ruby-ext/lib/mwrap_ext.so $(DESTDIR)$(RUBY_SITEARCH)/

clean:
	rm -rf build preload/libmwrap.so preload/liburcu* inject/mwrap-inject

-include $(LIB_OBJS:.o=.d)
