/* SPDX-License-Identifier: MIT */
/* options.h - the MWRAP= option string (also the option string given to
 * mw_attach): comma-separated key:value pairs.
 *
 *   dump_path:FILE   append the dump to FILE (wins over dump_fd)
 *   dump_fd:N        0 none, 1 stdout, 2 stderr, else that fd
 *   dump_min:N       skip sites whose total is <= N bytes
 *   dump_heap:MASK   1 heap-page stats, 2 one line per page, 4 no site dump
 *   dump_format:F    text (mwrap's three columns, default) or json
 *   sample:BYTES     record about one allocation per BYTES bytes (Poisson
 *                    by bytes) and scale counts to estimates; 0 = all
 *   stacks:N         a Ruby site is the chain of up to N Ruby frames
 *                    (1 to MW_STACKS_MAX), innermost first; 0 = the
 *                    innermost line only (default)
 *   stack_sample:BYTES  with stacks and without sample: every allocation
 *                    is counted exactly at its line, and about one per
 *                    BYTES bytes also at its stack, scaled (the callers
 *                    of a line, cheaply); 0 = every allocation's site is
 *                    its stack (default)
 *   lease:SECONDS    attach only: detach by itself unless a control
 *                    command arrives at least every SECONDS (a window
 *                    whose front end died); 0 (default) = no lease
 *   staged:1         attach only: this library is a copy mwrap-attach
 *                    made for this process (control/staged.h), to be
 *                    removed when it exits; 0 (default) = not a copy
 *
 * A value runs to the next comma, so a path cannot contain one (as in
 * mwrap). Keys may come in any order.
 */
#ifndef MW_OPTIONS_H
#define MW_OPTIONS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum mw_format { MW_FORMAT_TEXT = 0, MW_FORMAT_JSON = 1 };

struct mw_options {
	char dump_path[PATH_MAX];	/* "" when not given */
	int dump_fd;			/* -1 when not given */
	uint64_t dump_min;
	unsigned dump_heap;
	enum mw_format format;
	uint64_t sample;		/* mean bytes between samples; 0: all */
	unsigned lease;			/* seconds; 0: none */
	unsigned stacks;		/* Ruby frames per site; 0: one line */
	uint64_t stack_sample;		/* mean bytes between stacks; 0: all */
	int staged;			/* a copy made for this process */
};

#define MW_STACKS_MAX 64

/* Context: any; no allocation. */
void mw_options_default(struct mw_options *o);

/* Parses @s (NULL or "" means defaults) into @o.
 * Returns 0, or -EINVAL with a one-line reason in @err (NUL-terminated,
 * at most @errlen bytes); @o then holds defaults only.
 * Context: no allocation, no stdio; safe in a constructor. */
int mw_options_parse(const char *s, struct mw_options *o,
		     char *err, size_t errlen);

/* True when the options ask for a dump at exit.
 * Context: any; no allocation. */
int mw_options_want_dump(const struct mw_options *o);

#endif
