/* SPDX-License-Identifier: MIT */
/* stacks.c - see stacks.h */
#include "core/stacks.h"
#include "base/fmt.h"
#include "core/sizedcache.h"

#include <string.h>

/* --stacks: Ruby stacks seen: a hash of the frames' objects and lines
 * -> site id, the GC generation it was last found true in, and a hash
 * of what its frames were named then (@names: paths, labels, lines).
 * Ruby frees and moves code only in a GC, so within one generation a hit
 * is the site; after a GC the stack is still that site when its frames
 * name the same paths, labels and lines, which the frame memo (below)
 * answers after naming each frame object once per generation (naming a
 * whole stack again on every first hit after a GC cost ~4,000
 * instructions, and with many sites every hit was one).  A difference is
 * a miss.  Any thread holding the GVL writes it; @check (a hash of h,
 * id, gen and names) makes a torn entry a miss.
 * Two-way set-associative, with twice as many entries as there are sites
 * (2^14 to 2^20), so that its hit rate holds as sites are added (a fixed
 * 2^14 missed on most stacks at 100,000 sites; direct-mapped, a quarter
 * of the stacks shared their slot at 10,000; and a miss names every
 * frame): a bigger one replaces it as the sites outgrow it, and the old
 * one is kept, as a reader may still hold it. */
#define STACK_CACHE_MIN_BITS 14
#define STACK_CACHE_MAX_BITS 20
struct stack_cache_entry {
	uint64_t h;
	uint32_t id, check;
	uint64_t gen;
	uint64_t names;
};
struct stack_cache {
	unsigned bits;
	struct stack_cache_entry slot[];
};
/* the first one, static; later ones mapped */
static struct {
	struct stack_cache c;
	struct stack_cache_entry slot[1u << STACK_CACHE_MIN_BITS];
} stack_cache_first = { .c = { .bits = STACK_CACHE_MIN_BITS } };
static struct stack_cache *stack_cache = &stack_cache_first.c;
static uint64_t stack_cache_mapped;	/* bytes, every cache mapped */
/* Which way of a full set a new entry replaces: bumped without atomics
 * (a lost bump only repeats a choice). */
static unsigned stack_cache_victim;

/* The set of two entries hash @h falls in. */
static struct stack_cache_entry *cache_set(struct stack_cache *cache,
					   uint64_t h)
{
	return &cache->slot[(h >> (64 - cache->bits)) & ~(uint64_t)1];
}

/* The entry of @set holding @h, else the one a new entry takes. */
static struct stack_cache_entry *set_entry(struct stack_cache_entry *set,
					   uint64_t h)
{
	if (set[0].h == h)
		return &set[0];
	if (set[1].h == h)
		return &set[1];
	return &set[stack_cache_victim++ & 1];
}
/* The longest stack text kept; frames beyond it are dropped.  A gem's
 * frame in a Rails app is some 130 bytes of text (Debian's
 * rubygems-integration paths): --stacks' default 32 of them fit. */
#define STACK_TEXT_MAX 8192

static uint64_t stack_hash(const struct mw_ruby_stack *st)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)st->n;
	int i;

	for (i = 0; i < st->n; i++) {
		h = (h ^ st->frame[i]) * 0xbf58476d1ce4e5b9ull;
		h = (h ^ (uint64_t)(unsigned)st->line[i]) * 0x94d049bb133111ebull;
		h ^= h >> 29;
	}
	return h;
}

/* The cache to store in: a bigger one once the sites outgrow it (the
 * current one when none can be mapped). */
static struct stack_cache *cache_for_sites(struct stack_cache *cur)
{
	return mw_sized_cache_for((void **)&stack_cache, cur,
				  2 * (uint64_t)mw_sites_count(),
				  sizeof(struct stack_cache),
				  sizeof(struct stack_cache_entry),
				  STACK_CACHE_MIN_BITS, STACK_CACHE_MAX_BITS,
				  &stack_cache_mapped);
}

uint64_t mw_stacks_memory(void)
{
	return __atomic_load_n(&stack_cache_mapped, __ATOMIC_RELAXED);
}

static uint32_t stack_check(uint64_t h, uint32_t id, uint64_t gen,
			    uint64_t names)
{
	return (uint32_t)((((h ^ id ^ gen << 32 ^ gen >> 32) *
			    0x9e3779b97f4a7c15ull ^ names) *
			   0xbf58476d1ce4e5b9ull) >> 32);
}

/* Frames named in a GC generation: frame object -> a hash of its path
 * and label (their bytes).  Within a generation a frame object names one
 * piece of code.  Direct-mapped; written by threads holding the GVL,
 * @check making a torn entry a miss. */
#define FRAME_MEMO_BITS 12
struct frame_memo_entry {
	uintptr_t frame;
	uint64_t gen;
	uint64_t names;
	uint64_t check;
};
static struct frame_memo_entry frame_memo[1u << FRAME_MEMO_BITS];
#define NO_PATH 1	/* a frame without a path (its text stops there) */

static uint64_t memo_check(uintptr_t frame, uint64_t gen, uint64_t names)
{
	return ((frame ^ gen * 0x94d049bb133111ebull) * 0x9e3779b97f4a7c15ull) ^
	       names;
}

/* 64-bit FNV-1a of @s's bytes and its NUL, from @h. */
static uint64_t bytes_hash(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	} while (*s++);
	return h;
}

/* The hash of frame @frame's path and label in generation @gen, NO_PATH
 * when it has no path.  Names the frame on a memo miss. */
static uint64_t frame_names(uintptr_t frame, uint64_t gen)
{
	struct frame_memo_entry *m =
		&frame_memo[((uint64_t)frame * 0x9e3779b97f4a7c15ull) >>
			    (64 - FRAME_MEMO_BITS)];
	const char *path, *label;
	uint64_t n;

	if (m->frame == frame && m->gen == gen &&
	    m->check == memo_check(frame, gen, m->names))
		return m->names;
	if (!mw_ruby_frame_names(frame, &path, &label)) {
		n = NO_PATH;
	} else {
		n = bytes_hash(0xcbf29ce484222325ull, path);
		/* no label and an empty one make different texts */
		n = label ? bytes_hash(n ^ 0x5a, label) : n ^ 0xa5;
		n |= 2;		/* never NO_PATH */
	}
	m->frame = frame;
	m->gen = gen;
	m->names = n;
	m->check = memo_check(frame, gen, n);
	return n;
}

/* A hash of what @st's frames are named in generation @gen: their paths,
 * labels and lines, in order.  Two stacks with the same hash have the
 * same text (stack_text is a function of them alone). */
static uint64_t stack_names(const struct mw_ruby_stack *st, uint64_t gen)
{
	uint64_t h = 0x2545f4914f6cdd1dull ^ (uint64_t)st->n;
	int i;

	for (i = 0; i < st->n; i++) {
		h = (h ^ frame_names(st->frame[i], gen)) * 0xbf58476d1ce4e5b9ull;
		h = (h ^ (uint64_t)(unsigned)st->line[i]) *
		    0x94d049bb133111ebull;
		h ^= h >> 29;
	}
	return h;
}

/* Appends @n bytes of @s at *@len in @buf (STACK_TEXT_MAX); 0 if they
 * do not fit. */
static int text_add(char *buf, size_t *len, const char *s, size_t n)
{
	if (*len + n >= STACK_TEXT_MAX)
		return 0;
	memcpy(buf + *len, s, n);
	*len += n;
	return 1;
}

/* "path:line in label" for frame @i of @st, after a '\n' unless first;
 * returns 0 (and leaves *@len as it was) when it has no path or does
 * not fit. */
static int text_frame(char *buf, size_t *len, const struct mw_ruby_stack *st,
		      int i, const char **path0)
{
	const char *path, *label;
	char num[12];
	size_t at = *len;

	if (!mw_ruby_frame_names(st->frame[i], &path, &label))
		return 0;
	if ((at && !text_add(buf, len, "\n", 1)) ||
	    !text_add(buf, len, path, strlen(path)) ||
	    !text_add(buf, len, ":", 1) ||
	    !text_add(buf, len, num,
		      mw_fmt_u64(num, (uint64_t)(unsigned)st->line[i])) ||
	    (label && (!text_add(buf, len, " in ", 4) ||
		       !text_add(buf, len, label, strlen(label))))) {
		*len = at;
		return 0;
	}
	if (i == 0)
		*path0 = path;
	return 1;
}

struct mw_site *mw_site_for_stack(const struct mw_ruby_stack *st,
				  uint64_t gen)
{
	uint64_t h = stack_hash(st), seen;
	struct stack_cache *cache = __atomic_load_n(&stack_cache,
						    __ATOMIC_ACQUIRE);
	struct stack_cache_entry *c = set_entry(cache_set(cache, h), h);
	char text[STACK_TEXT_MAX];
	const char *path0 = NULL;
	struct mw_site *cached = NULL, *s;
	struct stack_cache *bigger;
	size_t len = 0;
	uint64_t names, had;
	uint32_t id;
	int i;

	id = c->id;
	seen = c->gen;
	had = c->names;
	if (c->h == h && c->check == stack_check(h, id, seen, had)) {
		cached = mw_site_get(id);
		if (cached && !cached->stack)
			cached = NULL;
		if (cached && seen == gen)
			return cached;
	}
	/* a GC ran since (or a miss): do the frames still name the same? */
	names = stack_names(st, gen);
	if (cached && names == had) {
		c->gen = gen;
		c->check = stack_check(h, id, gen, had);
		return cached;
	}
	if (!text_frame(text, &len, st, 0, &path0))
		return NULL;
	for (i = 1; i < st->n; i++)
		if (!text_frame(text, &len, st, i, &path0))
			break;	/* the outer frames are dropped */
	text[len] = '\0';
	/* a GC ran since: still the same code? */
	if (cached && cached->stacklen == len &&
	    memcmp(cached->stack, text, len) == 0) {
		s = cached;
	} else {
		s = mw_site_for_stack_text(path0, st->line[0], text, len);
		if (!s)
			return NULL;
	}
	bigger = cache_for_sites(cache);
	if (bigger != cache)
		c = set_entry(cache_set(bigger, h), h);
	c->h = h;
	c->id = s->id;
	c->gen = gen;
	c->names = names;
	c->check = stack_check(h, s->id, gen, names);
	return s;
}
