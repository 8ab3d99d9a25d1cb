# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# `gem build mwrap-attach.gemspec` makes mwrap-attach-VERSION.gem: the
# sources, built at install by gem/extconf.rb with the project's Makefile
# against the system's liburcu (Debian: liburcu-dev, ruby-dev, gcc, make),
# and, where `make build-musl` made it, the musl build as it is (musl
# targets: Alpine's), which a glibc system cannot build at install.
# In a Gemfile: gem "mwrap-attach", require: false
Gem::Specification.new do |s|
  s.name = "mwrap-attach"
  s.version = File.read(File.join(__dir__, "VERSION")).strip
  s.summary = "Attach a malloc tracer to a running Ruby process: which lines hold the memory"
  s.description = <<~TEXT
    mwrap-attach loads its interposer into a live process (no restart),
    attributes every malloc-family call to its Ruby file:line or native
    call site for a window, detaches, and reports which sites hold the
    memory that grew.  Also: mwrap (trace from the start, LD_PRELOAD),
    mwrap-report (leak view, diff, JSON, pprof, HTML) and the Mwrap Ruby
    API of the mwrap gem.  Linux x86-64 with glibc; needs liburcu.
  TEXT
  s.authors = ["mwrap-attach maintainers"]
  s.email = "maintainers@users.noreply.a-seed-72b110ad.example"
  s.license = "MIT"
  s.required_ruby_version = ">= 3.1"
  s.files = Dir.chdir(__dir__) do
    Dir["{VERSION,Makefile,README,LICENSE*,mwrap-attach.gemspec}", "docs/*.md",
        "{common,preload,inject}/**/*.{c,h,S,py,def}",
        "ruby-ext/**/*.{c,h,rb}",
        "scripts/{mwrap,mwrap-attach,mwrap-report}",
        "scripts/lib/**/*.rb",
        "man/*.1",
        "gem/extconf.rb", "gem/bin/*",
        "build/musl/lib/{libmwrap.so,liburcu-*.so.8,liburcu-LICENSE}", "build/musl/bin/mwrap-inject"].sort
  end
  s.bindir = "gem/bin"
  s.executables = %w[mwrap-attach mwrap mwrap-report]
  s.extensions = ["gem/extconf.rb"]
  # mwrap.rb, and mwrap_ext.so where the install builds it (gem/extconf.rb)
  s.require_paths = ["ruby-ext/lib", "build/ruby"]
end
