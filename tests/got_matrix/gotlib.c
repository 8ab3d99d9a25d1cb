/* SPDX-License-Identifier: MIT */
/* gotlib.c - the shared library half of the GOT matrix target: the same
 * allocation sites as the executable, reached through this library's own
 * GOT (built with the same PLT, RELRO and binding flags). */
#define SITE_PREFIX lib_
#include "sites.h"
