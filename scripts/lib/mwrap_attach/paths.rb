# SPDX-License-Identifier: MIT
# frozen_string_literal: true

# Where our own files are, and names for the files we make.
module MwrapAttach
  # The directory of the mwrap-attach script, which this file sits two
  # levels below (lib/mwrap_attach/): scripts/ in the source tree and in
  # the installed gem, $(PREFIX)/share/mwrap-attach once `make install`ed
  # (bin/ has links to the scripts there).
  SCRIPT_DIR = File.expand_path("../..", __dir__)
  # The source tree's (or the gem's) top; nil in the installed layout.
  ROOT = (File.dirname(SCRIPT_DIR) if File.basename(SCRIPT_DIR) == "scripts")
  # `make install`'s libmwrap.so, mwrap-inject and liburcu: $(PREFIX)/lib/mwrap-attach.
  LIB_DIR = (File.expand_path("../../lib/mwrap-attach", SCRIPT_DIR) unless ROOT)
  # Where `make` leaves each product in ROOT, by the C library it is
  # built for and by kind: the Makefile's LIBMWRAP and INJECTOR (build/lib
  # with its liburcu, build/bin), `make build-musl`'s under build/musl.
  # The first are built for the C library of the machine that ran make:
  # glibc's on Debian, but musl's where make (or the gem's install) ran
  # on Alpine, so they are where a build for musl is looked for last.
  BUILD_DIRS = {
    glibc: { lib: "build/lib", bin: "build/bin", top: "." },
    musl: { lib: "build/musl/lib", bin: "build/musl/bin", top: "." }
  }.freeze
  # Where `make install` puts each build, in LIB_DIR.
  INSTALL_DIRS = { glibc: ".", musl: "musl" }.freeze
  # The C library this Ruby runs on: the programs we run must be built for it.
  OWN_LIBC = RUBY_PLATFORM.end_with?("-musl") ? :musl : :glibc

  O_PATH = 0o10000000	# Linux, every architecture; Ruby has no constant

  # NAME as `make` leaves it in ROOT (KIND: :lib for libraries, :bin for
  # programs, :top for VERSION), or installed: in LIB_DIR (programs and
  # libraries) or beside the scripts (VERSION); nil when there is none.
  # LIBC: the build for that C library (:glibc, :musl), else the
  # machine's own (see BUILD_DIRS).  TEST is the File predicate the file
  # must pass (:file?, :executable?).
  def self.our_file(kind, name, test: :file?, libc: OWN_LIBC)
    [libc, :glibc].uniq.each do |c|
      dirs = if ROOT
               [File.join(ROOT, BUILD_DIRS.fetch(c).fetch(kind))]
             else
               [File.expand_path(INSTALL_DIRS.fetch(c), LIB_DIR), SCRIPT_DIR]
             end
      found = dirs.map { |d| File.join(d, name) }.find { |f| File.public_send(test, f) }
      return found if found
    end
    nil
  end

  # A name no one can guess in advance (16 hex digits from getrandom).
  def self.random_word
    Random.urandom(8).unpack1("H*")
  end
end
