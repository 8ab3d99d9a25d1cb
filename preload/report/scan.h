/* SPDX-License-Identifier: MIT */
/* scan.h - "leaked or still referenced?": a conservative pointer scan.
 *
 * Every private writable mapping of the process (data and bss, the
 * malloc heaps, Ruby's heap pages, thread stacks) is read, word by
 * aligned word, through process_vm_readv (a mapping that goes away
 * mid-scan gives EFAULT, never a fault), where its pages are resident
 * (mincore: reading the others would fault them in for good), and each word that points into
 * a tracked live block (its start or inside it) marks that block
 * referenced.  The blocks nothing points to are "unreferenced": leaked,
 * as far as a scan that cannot see registers or tell a pointer from an
 * integer can say.  Blocks only reachable from other leaked blocks count
 * as referenced, so the unreferenced figure is a lower bound.
 */
#ifndef MW_SCAN_H
#define MW_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* Per site: the bytes and blocks the scan saw, and those unreferenced. */
struct mw_scan_site {
	uint64_t scanned_bytes, scanned_count;
	uint64_t unref_bytes, unref_count;
};

struct mw_scan {
	struct mw_scan_site *sites;	/* indexed by site id; mmap'd */
	uint32_t nsites;
	size_t sites_len;		/* bytes mapped for @sites */
	uint64_t blocks;		/* live blocks considered */
	uint64_t memory_bytes;		/* bytes of mappings read */
	uint64_t not_resident_bytes;	/* bytes of mappings left unread */
	uint64_t total_bytes;		/* bytes of mappings to read */
	uint64_t ms;			/* time taken */
	int complete;			/* 0: stopped at the time budget */
};

/* Called about twice a second with the bytes read so far. */
typedef void (*mw_scan_progress_fn)(uint64_t done, uint64_t total,
				    void *arg);

/* Scans for at most @budget_ms milliseconds.  Returns 0 with @scan
 * filled (free it with mw_scan_free), or -ENOMEM / -errno with nothing
 * to free.  Context: the helper thread (reads memory other threads
 * change: the result is an estimate); no malloc. */
int mw_scan_run(struct mw_scan *scan, uint64_t budget_ms,
		mw_scan_progress_fn progress, void *arg);

void mw_scan_free(struct mw_scan *scan);

#endif
