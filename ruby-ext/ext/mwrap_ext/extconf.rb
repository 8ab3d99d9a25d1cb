# SPDX-License-Identifier: MIT
# Builds mwrap_ext.so, the Ruby side of the Mwrap API.  It only talks to
# libmwrap.so through the C API in preload/mwrap.h, found at run time.
require "mkmf"

$INCFLAGS << " -I#{File.expand_path('../../../preload', __dir__)}"
$CFLAGS << " -Wall -Wextra -Wno-unused-parameter"
# Mwrap::VERSION, from the one VERSION file at the tree's top
$CFLAGS << %( -DMW_VERSION='"#{File.read(File.expand_path('../../../VERSION', __dir__)).strip}"')
have_library("dl", "dlopen")
create_makefile("mwrap_ext")
