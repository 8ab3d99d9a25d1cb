/* SPDX-License-Identifier: MIT */
/* libc.h - what glibc has and musl lacks, behind one small interface.
 *
 * Each call below is glibc's own function where __GLIBC__ is defined,
 * and musl's way of doing without it otherwise; what musl cannot give
 * says so (-ENOSYS, a size of 0), so that a report can say "not
 * available" rather than print a zero as a figure.  The library and the
 * injector include it; no other file asks which C library it is built
 * for.  The calls are declared where _GNU_SOURCE is defined (before any
 * system header, as the .c files using them do); the rest everywhere.
 */
#ifndef MW_LIBC_H
#define MW_LIBC_H

#include <errno.h>	/* and so <features.h>: __GLIBC__ or not */
#include <stddef.h>

/* The TLS model of the library's per-thread state (core/tls.h).  glibc:
 * initial-exec, one instruction per access in the hooks; a library
 * dlopen'ed late gets it from glibc's static TLS surplus.  musl refuses
 * initial-exec TLS in a library loaded by dlopen ("initial-exec TLS
 * resolves to dynamic definition"): the compiler's default model there,
 * which the musl build makes TLSDESC (-mtls-dialect=gnu2 on x86-64, the
 * default on aarch64); musl's dlopen gives every thread its block up
 * front, so no access allocates. */
#ifdef __GLIBC__
#define MW_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define MW_TLS_MODEL
#endif

#ifndef __GLIBC__
/* musl has no pvalloc: declared for the hook list's type check only.
 * dlsym finds no definition, so its hook never forwards (core/real.h). */
void *pvalloc(size_t size);

#if defined(__x86_64__)
/* The x86-64 signal frame's xstate magics (the kernel's uapi
 * asm/sigcontext.h; glibc's <signal.h> has them, musl's not). */
#include <signal.h>
#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#endif
#endif
#endif

#ifdef _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

/* The message for errno @err, in English, never allocating (glibc's
 * strerror may, to translate it).  Context: any; async-signal-safe. */
static inline const char *mw_strerror(int err)
{
#ifdef __GLIBC__
	const char *s = strerrordesc_np(err);

	return s ? s : "Unknown error";
#else
	return strerror(err);	/* musl's: a table, no allocation */
#endif
}

/* The name of errno @err ("ENOENT"), or NULL if it has none here.
 * Context: any; async-signal-safe. */
static inline const char *mw_strerrorname(int err)
{
#ifdef __GLIBC__
	return strerrorname_np(err);
#else
#define MW_ERRNO_NAME(e) case e: return #e;
	switch (err) {
	MW_ERRNO_NAME(EPERM) MW_ERRNO_NAME(ENOENT) MW_ERRNO_NAME(ESRCH)
	MW_ERRNO_NAME(EINTR) MW_ERRNO_NAME(EIO) MW_ERRNO_NAME(ENXIO)
	MW_ERRNO_NAME(E2BIG) MW_ERRNO_NAME(ENOEXEC) MW_ERRNO_NAME(EBADF)
	MW_ERRNO_NAME(ECHILD) MW_ERRNO_NAME(EAGAIN) MW_ERRNO_NAME(ENOMEM)
	MW_ERRNO_NAME(EACCES) MW_ERRNO_NAME(EFAULT) MW_ERRNO_NAME(EBUSY)
	MW_ERRNO_NAME(EEXIST) MW_ERRNO_NAME(EXDEV) MW_ERRNO_NAME(ENODEV)
	MW_ERRNO_NAME(ENOTDIR) MW_ERRNO_NAME(EISDIR) MW_ERRNO_NAME(EINVAL)
	MW_ERRNO_NAME(ENFILE) MW_ERRNO_NAME(EMFILE) MW_ERRNO_NAME(ENOTTY)
	MW_ERRNO_NAME(EFBIG) MW_ERRNO_NAME(ENOSPC) MW_ERRNO_NAME(ESPIPE)
	MW_ERRNO_NAME(EROFS) MW_ERRNO_NAME(EMLINK) MW_ERRNO_NAME(EPIPE)
	MW_ERRNO_NAME(EDOM) MW_ERRNO_NAME(ERANGE) MW_ERRNO_NAME(EDEADLK)
	MW_ERRNO_NAME(ENAMETOOLONG) MW_ERRNO_NAME(ENOLCK)
	MW_ERRNO_NAME(ENOSYS) MW_ERRNO_NAME(ENOTEMPTY) MW_ERRNO_NAME(ELOOP)
	MW_ERRNO_NAME(EOPNOTSUPP) MW_ERRNO_NAME(EAFNOSUPPORT)
	MW_ERRNO_NAME(EADDRINUSE) MW_ERRNO_NAME(ECONNREFUSED)
	MW_ERRNO_NAME(ETIMEDOUT) MW_ERRNO_NAME(EOVERFLOW)
	MW_ERRNO_NAME(ENOTSOCK) MW_ERRNO_NAME(EPROTONOSUPPORT)
	}
#undef MW_ERRNO_NAME
	return NULL;
#endif
}

/* dladdr(@addr), and the size of the symbol it names in *@size: 0 when
 * the C library does not say (musl has no dladdr1), and then the name
 * is sure to cover @addr only at its very start.  Returns dladdr's
 * result.  Context: not a signal handler (the loader's lock). */
static inline int mw_dladdr_size(const void *addr, Dl_info *info, size_t *size)
{
#ifdef __GLIBC__
	const ElfW(Sym) *sym = NULL;
	int ret = dladdr1(addr, info, (void **)&sym, RTLD_DL_SYMENT);

	*size = ret && sym ? (size_t)sym->st_size : 0;
	return ret;
#else
	*size = 0;
	return dladdr(addr, info);
#endif
}

/* Whether @fn is a program's PLT entry standing in for a function
 * defined elsewhere: a non-PIE program that takes the function's address
 * makes that entry its address for every object, and dladdr names it by
 * the program's undefined symbol.  0 where the C library does not say
 * (musl has no dladdr1).  Context: not a signal handler. */
static inline int mw_dl_is_plt_stand_in(const void *fn)
{
#ifdef __GLIBC__
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	return dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
	       sym->st_shndx == SHN_UNDEF && info.dli_saddr == fn;
#else
	(void)fn;
	return 0;
#endif
}

/* What the C library's allocator says of its heap, all arenas. */
struct mw_mallinfo {
	size_t arena_bytes;	/* obtained from the system */
	size_t in_use_bytes;	/* in blocks handed out */
	size_t free_bytes;	/* free inside it */
};

/* Fills @mi from glibc's mallinfo2.  Returns 0, or -ENOSYS where the C
 * library has no such figures (musl: mallocng keeps none): they are
 * then not available, never zero.  Context: not a hook (glibc takes
 * each arena's lock). */
int mw_mallinfo(struct mw_mallinfo *mi);

/* The TLS module id and this thread's block of the library @handle
 * (glibc's dlinfo RTLD_DI_TLS_MODID and RTLD_DI_TLS_DATA).  Returns 0,
 * or -ENOSYS (musl's dlinfo has only RTLD_DI_LINKMAP), or -ENOENT (no
 * TLS, or no block yet in this thread).  For core/rbabi.c's Ruby 3.1 EC
 * lookup, which on musl then takes the profiling API's path, as on
 * 3.2 and later.  Context: not a hook. */
int mw_dl_tls(void *handle, size_t *modid, void **block);

/* Whether @path names musl's C library: its loader is its libc
 * (ld-musl-ARCH.so.1, and Alpine's libc.musl-ARCH.so.1 links to it), or
 * Debian's musl packages' /usr/lib/ARCH-linux-musl/libc.so.  This is
 * the name maps and dladdr give it.  Context: any. */
static inline int mw_libc_musl_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "ld-musl-", 8) == 0 ||
	       strncmp(base, "libc.musl-", 10) == 0 ||
	       strstr(path, "-linux-musl/") != NULL;
}

/* Whether @info (from dl_iterate_phdr) is the vdso: its headers follow
 * the ELF header the kernel gives as AT_SYSINFO_EHDR (glibc names it
 * linux-vdso.so.1, musl "").  Context: any. */
static inline int mw_dl_is_vdso(const struct dl_phdr_info *info)
{
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);

	return vdso && (uintptr_t)info->dlpi_phdr - vdso < 4096;
}

/* Whether @info (from dl_iterate_phdr) is the main program.  glibc
 * names it "" and musl as it was run (argv[0]: "./prog" too).  The
 * kernel's AT_PHDR is the main program's headers; a program the loader
 * ran as a command has other headers, and the name "" says it on glibc
 * (musl's vdso is "" too).  Context: any. */
static inline int mw_dl_is_main(const struct dl_phdr_info *info)
{
	if ((uintptr_t)info->dlpi_phdr == getauxval(AT_PHDR))
		return 1;
	if (mw_dl_is_vdso(info))
		return 0;
	return !info->dlpi_name || !info->dlpi_name[0];
}

#endif /* _GNU_SOURCE */

#endif
