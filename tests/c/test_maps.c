/* SPDX-License-Identifier: MIT */
/* Unit tests for the maps reader (inject/process/maps.c), included whole so
 * that its view (passes until two agree, else their union) is checked
 * directly:
 *  - passes that disagree: every line of every pass served once, in
 *    address order; an agreed view: its last pass alone;
 *  - build/targets/mapchurn (../targets/ from this binary), whose map
 *    changes tens of thousands of times a second: what mwi_maps_read
 *    and mwi_maps_find say while it churns is what they say while it is
 *    stopped, READS times.  Then it must exit 0, its mappings intact.
 * The whole run is bounded by alarm(): our death closes the target's
 * stdin, which ends it too. */
#define _GNU_SOURCE
#include "process/maps.c"

#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "tap.h"

/* libc's code and the loader's; musl's libc is its loader: one file */
#ifdef __GLIBC__
#define UNSAFE_MIN 2
#else
#define UNSAFE_MIN 1
#endif

#define READS 200

/* --- the view on hand-written passes ------------------------------------ */

static struct maps_line seen[16];
static int nseen, stop_at;

static int record(const struct maps_line *l, void *arg)
{
	(void)arg;
	if (nseen < 16)
		seen[nseen] = *l;
	return ++nseen == stop_at;
}

static void view_of(struct maps_view *v, const char *const *passes, int n,
		    int agreed)
{
	int i;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < n; i++) {
		v->text[i] = strdup(passes[i]);
		v->len[i] = strlen(passes[i]);
	}
	v->npass = n;
	v->agreed = agreed;
}

static void test_union(void)
{
	/* the middle pass misses a.so's code, the last one shows it grown */
	static const char *const passes[] = {
		"1000-2000 r--p 00000000 08:01 10 /lib/a.so\n"
		"3000-4000 r-xp 00001000 08:01 10 /lib/a.so\n",
		"1000-2000 r--p 00000000 08:01 10 /lib/a.so\n"
		"2000-2800 rw-p 00000000 00:00 0 \n"
		"5000-6000 r-xp 00000000 08:01 11 /lib/libc.so.6\n"
		"not a line of maps\n",
		"1000-2000 r--p 00000000 08:01 10 /lib/a.so\n"
		"3000-4800 r-xp 00001000 08:01 10 /lib/a.so",	/* no newline */
	};
	static const unsigned long lo[] = { 0x1000, 0x2000, 0x3000, 0x3000,
					    0x5000 };
	struct maps_view v;
	int i, in_order = 1;

	view_of(&v, passes, 3, 0);
	nseen = stop_at = 0;
	ok(each_line(&v, record, NULL) == 0 && nseen == 5,
	   "the union of three passes: 5 lines (%d)", nseen);
	for (i = 0; i < 5 && i < nseen; i++)
		in_order &= seen[i].lo == lo[i];
	ok(in_order, "in address order, the one line of all passes once");
	ok(nseen == 5 && seen[2].hi == 0x4000 && seen[3].hi == 0x4800,
	   "both shapes of a line that changed");
	ok(nseen == 5 && !strcmp(seen[4].path, "/lib/libc.so.6") &&
	   !strcmp(seen[1].path, ""), "paths, and none for anonymous memory");
	nseen = 0;
	stop_at = 2;
	each_line(&v, record, NULL);
	ok(nseen == 2, "a callback's non-zero return stops the walk");
	view_free(&v);

	view_of(&v, passes, 3, 1);
	nseen = stop_at = 0;
	each_line(&v, record, NULL);
	ok(nseen == 2 && seen[1].hi == 0x4800,
	   "an agreed view serves its last pass alone");
	view_free(&v);
}

/* --- against a target that churns --------------------------------------- */

static pid_t child = -1;
static int to_child = -1, from_child = -1;

/* Reads from the target's stdout until @want shows (or EOF, or
 * @seconds): 1 when it did. */
static int expect(const char *want, int seconds)
{
	static char out[4096];
	static size_t len;
	struct pollfd p = { from_child, POLLIN, 0 };
	ssize_t n;

	while (!strstr(out, want) && len < sizeof(out) - 1) {
		if (poll(&p, 1, seconds * 1000) <= 0)
			return 0;
		n = read(from_child, out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			return 0;
		len += (size_t)n;
		out[len] = '\0';
	}
	return strstr(out, want) != NULL;
}

static int start_churn(const char *path)
{
	int in[2], out[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);	/* its rounds: no mix with our TAP */
		execl(path, path, "4", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_child = in[1];
	from_child = out[0];
	return expect("ready\n", 10) ? 0 : -ETIMEDOUT;
}

/* mwi_maps_read's answers, as compared */
static int same_maps(const struct mwi_maps *a, const struct mwi_maps *b)
{
	return a->libc_base == b->libc_base && a->libc_ino == b->libc_ino &&
	       a->libc_lo == b->libc_lo && a->libc_hi == b->libc_hi &&
	       !strcmp(a->libc_path, b->libc_path) &&
	       a->nunsafe == b->nunsafe && a->nleaf == b->nleaf &&
	       !memcmp(a->unsafe_lo, b->unsafe_lo, sizeof(a->unsafe_lo)) &&
	       !memcmp(a->unsafe_hi, b->unsafe_hi, sizeof(a->unsafe_hi)) &&
	       !memcmp(a->leaf, b->leaf, sizeof(a->leaf));
}

static void test_churn(const char *path)
{
	static struct mwi_maps ref, now;
	char exe[PATH_MAX], shown[PATH_MAX], link[64];
	uintptr_t ref_base = 0, base;
	unsigned long ref_ino = 0, ino;
	int i, st, bad = 0, unions = 0, most = 0, found;
	struct maps_view v;
	ssize_t n;

	if (start_churn(path)) {
		ok(0, "%s starts and says ready", path);
		return;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)child);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	/* stopped, the map holds still: one pass repeats the other */
	kill(child, SIGSTOP);
	ok(waitpid(child, &st, WUNTRACED) == child && WIFSTOPPED(st),
	   "the target stops");
	ok(view_read(child, &v) == 0 && v.agreed && v.npass == 2,
	   "a stopped process: two passes agree (%d)", v.npass);
	view_free(&v);
	ok(mwi_maps_read(child, &ref) == 0 && ref.nunsafe >= UNSAFE_MIN,
	   "libc and %d unsafe ranges while stopped", ref.nunsafe);
	ok(mwi_maps_find(child, exe, &ref_base, &ref_ino, shown,
			 sizeof(shown)) == 0, "the program's mapping, %s", exe);
	kill(child, SIGCONT);

	for (i = 0; i < READS; i++) {
		if (mwi_maps_read(child, &now) || !same_maps(&ref, &now))
			bad++;
		found = !mwi_maps_find(child, exe, &base, &ino, shown,
				       sizeof(shown));
		if (!found || base != ref_base || ino != ref_ino)
			bad++;
		if (view_read(child, &v) == 0) {
			unions += !v.agreed;
			most = v.npass > most ? v.npass : most;
			view_free(&v);
		}
	}
	ok(bad == 0, "%d reads while it churns: %d differ from the stopped "
	   "one's", 2 * READS, bad);
	printf("# views of the churning target: %d of %d their passes' "
	       "union, at most %d passes\n", unions, READS, most);

	close(to_child);
	ok(expect("churn ok sigint=0\n", 30), "the target says its "
	   "mappings are intact");
	ok(waitpid(child, &st, 0) == child && WIFEXITED(st) &&
	   WEXITSTATUS(st) == 0, "and exits 0");
}

int main(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	alarm(120);
	test_union();
	if (n <= 0)
		return 1;
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/../targets/mapchurn", dirname(self));
	test_churn(path);
	return tap_done();
}
