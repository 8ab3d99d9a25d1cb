# Builds mwrap_ext.so, the Ruby side of the Mwrap API.  It only talks to
# libmwrap.so through the C API in preload/mwrap.h, found at run time.
require "mkmf"

$INCFLAGS << " -I#{File.expand_path('../../../preload', __dir__)}"
$CFLAGS << " -Wall -Wextra -Wno-unused-parameter"
have_library("dl", "dlopen")
create_makefile("mwrap_ext")
