/* ruby.h - optional Ruby awareness: the source location of the current
 * allocation, when the calling thread may ask Ruby for it.
 *
 * Every symbol is looked up with dlsym at start-up; in a process without
 * libruby all of this reports "no location" and costs one branch.
 */
#ifndef MW_RUBY_H
#define MW_RUBY_H

#include <stdint.h>

/* Looks the Ruby symbols up.  Returns 1 if the process runs Ruby.
 * Context: not a hook (calls dlsym, dlopen(RTLD_NOLOAD), dlinfo). */
int mw_ruby_init(void);

/* 1 once mw_ruby_init found a usable Ruby. */
extern int mw_ruby_present;

/* The GC generation last seen under the GVL (rb_gc_count()). */
extern uint64_t mw_ruby_generation;

/* Current Ruby source location.  Returns 1 and sets *path (owned by Ruby,
 * valid until the next GC compaction: copy it) and *line when the calling
 * thread holds the GVL, has an execution context and runs Ruby code;
 * returns 0 otherwise.  Also refreshes mw_ruby_generation.
 * Context: hook-safe; never allocates. */
int mw_ruby_location(const char **path, int *line);

/* 1 if the calling thread has a Ruby execution context (and holds the
 * GVL when @need_gvl): it may then register a postponed job.
 * Context: async-signal-safe on threads that have run Ruby code (their
 * TLS block for libruby exists). */
int mw_ruby_thread_has_ec_sigsafe(int need_gvl);

#endif
