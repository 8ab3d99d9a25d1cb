/* SPDX-License-Identifier: MIT */
/* stacks.h - the site of a Ruby stack (--stacks, MWRAP=stacks:N): a
 * cache from the frames just taken (mw_ruby_stack) to their site, and
 * the naming of the frames ("path:line in label" each) on a miss.
 */
#ifndef MW_STACKS_H
#define MW_STACKS_H

#include <stdint.h>

#include "core/rbstack.h"
#include "core/sample.h"
#include "core/sites.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* --stacks: the site for the Ruby frames @st (mw_ruby_stack, just taken
 * on this thread, st->n > 0) in GC generation @gen.  A cache keyed on the
 * frames' objects and lines answers while no GC ran (Ruby frees and
 * moves code only in a GC); a miss names each frame (path, line, label)
 * and looks the text up.  Returns NULL when the innermost frame has no
 * path (the caller then falls back to the line) or the table is full.
 * Context: hook-safe, on a thread holding the GVL, recursion guard
 * raised; never allocates.  Uses about 9 KiB of the caller's stack. */
struct mw_site *mw_site_for_stack(const struct mw_ruby_stack *st,
				  uint64_t gen);

/* Bytes of the stack caches mapped beyond the first (static) one.
 * Context: any. */
uint64_t mw_stacks_memory(void);

/* Under stack_sample a stack's site is not a site of its own: its
 * blocks are counted exactly at their line too, and it only says, scaled,
 * which callers that line's blocks came from.  Totals leave it out; JSON
 * dumps write it as a "stack" record.  Context: any; pure. */
static inline int mw_site_is_stack_record(const struct mw_site *s)
{
	return s->stack && mw_stack_sample_bytes;
}

/* The site whose exact counts hold a block recorded at site @id: the
 * line of a stack record, else @id itself.
 * Context: any, hooks included; never allocates. */
static inline uint32_t mw_site_exact_id(uint32_t id)
{
	const struct mw_site *s = mw_site_get(id);

	return s && mw_site_is_stack_record(s) && s->line_id ? s->line_id : id;
}

#pragma GCC visibility pop

#endif
