# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# `gem install mwrap-attach` runs this in the gem's gem/ directory: it
# checks that what the build needs is there, naming the Debian packages
# of what is missing, and writes a Makefile that builds libmwrap.so,
# mwrap-inject and the Ruby extension with the project's own Makefile
# (its `product` target, which installs no package) for the Ruby that
# runs the install.  They stay where that Makefile puts them in the
# gem's directory, build/lib, build/bin and build/ruby, where the front
# end looks (scripts/lib/mwrap_attach/paths.rb); build/ruby (mwrap_ext.so)
# is on the gem's require path beside ruby-ext/lib (mwrap.rb).
require "rbconfig"
require "shellwords"
require "tmpdir"

TOP = File.expand_path("..", __dir__)

def say(msg)
  $stdout.puts "mwrap-attach: #{msg}"
end

def command?(name)
  return File.executable?(name) if name.include?("/")

  ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).any? do |d|
    File.executable?(File.join(d, name)) && !File.directory?(File.join(d, name))
  end
end

# Does CC compile and link SOURCE with FLAGS?  (output and errors hidden)
def builds?(cc, source, flags = [])
  Dir.mktmpdir("mwrap-attach-check") do |d|
    File.write(File.join(d, "t.c"), source)
    system(*cc, "-o", File.join(d, "t"), File.join(d, "t.c"), *flags,
           out: File::NULL, err: File::NULL)
  end
end

cc = Shellwords.split(ENV["CC"] || "cc")
make = Shellwords.split(ENV["MAKE"] || "make")
missing = {}	# Debian package => what of it is missing
missing["make"] = "make" unless command?(make.first)
if !command?(cc.first)
  missing["gcc"] = "a C compiler (#{cc.first})"
elsif !builds?(cc, "#include <stdlib.h>\nint main(void) { return 0; }\n")
  missing["libc6-dev"] = "the C library's headers (stdlib.h)"
elsif !builds?(cc, "#include <urcu-bp.h>\n#include <urcu/rculfhash.h>\n" \
                   "int main(void) { return 0; }\n", %w[-lurcu-cds -lurcu-bp])
  missing["liburcu-dev"] = "liburcu (urcu/rculfhash.h, -lurcu-cds, -lurcu-bp)"
end
hdr = RbConfig::CONFIG["rubyhdrdir"]
unless hdr && File.file?(File.join(hdr, "ruby.h"))
  missing["ruby-dev"] = "Ruby's headers (ruby.h#{" in #{hdr}" if hdr})"
end
unless missing.empty?
  say "cannot build: missing #{missing.values.join(', ')}"
  say "install them (Debian and Ubuntu package names), then install the gem again:"
  say "  apt-get install #{missing.keys.join(' ')}"
  exit 1
end

# The musl build the gem carries (make build-musl before make gem), for
# musl targets, is for the architecture it was made on: elsewhere it goes
# (a musl target is then refused in one line, as with no musl build).
MUSL_BUILD = File.join(TOP, "build", "musl")
ELF_MACHINES = { 62 => "x86_64", 183 => "aarch64" }.freeze
musl_inject = File.join(MUSL_BUILD, "bin", "mwrap-inject")
if File.file?(musl_inject)
  machine = ELF_MACHINES[File.binread(musl_inject, 2, 18).unpack1("S<")]
  if machine == RbConfig::CONFIG["host_cpu"]
    say "carries the musl build (#{machine}) for musl targets"
  else
    say "its musl build is for #{machine || 'another CPU'}, not #{RbConfig::CONFIG['host_cpu']}: " \
        "left out (musl targets need `make build-musl` in the source tree)"
    require "fileutils"
    FileUtils.rm_rf(MUSL_BUILD)
  end
end

# The Makefile RubyGems runs: clean, all, install.  Warnings are not
# errors in a user's build (a newer compiler's new warning must not stop
# an install).  The objects in build/ go once the product is made, and
# clean removes only them: the product (PRODUCT_DIRS, the Makefile's
# LIBMWRAP, INJECTOR and RUBY_EXT) stays, since RubyGems 3.5 runs clean
# after install too; musl/ is the musl build the gem carries.
PRODUCT_DIRS = %w[lib bin ruby musl].freeze
top = Shellwords.escape(TOP)
keep = PRODUCT_DIRS.map { |d| "! -name #{d}" }.join(" ")
ruby = Shellwords.escape(RbConfig.ruby)
File.write("Makefile", <<~MAKE)
  # written by gem/extconf.rb
  all:
  \t$(MAKE) -C #{top} product WERROR= RUBY=#{ruby}
  install: all
  \t$(MAKE) clean
  clean:
  \t[ ! -d #{top}/build ] || find #{top}/build -mindepth 1 -maxdepth 1 #{keep} -exec rm -rf {} +
MAKE
