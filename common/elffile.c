/* SPDX-License-Identifier: MIT */
/* elffile.c - see elffile.h */
#define _GNU_SOURCE
#include "common/elffile.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

size_t mw_elf_page_up(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) & ~(pg - 1);
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOEXEC;	/* shorter than it said */
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int mw_elf_read(const struct mw_elf *e, void *buf, size_t len, uint64_t off)
{
	if (!mw_elf_within(off, len, e->fsize))
		return -ENOEXEC;
	return pread_all(e->fd, buf, len, off);
}

int mw_elf_map_copy(const struct mw_elf *e, uint64_t off, size_t len,
		    void **out)
{
	void *m;
	int ret;

	if (!mw_elf_within(off, len, e->fsize))
		return -ENOEXEC;
	m = mmap(NULL, len + 1, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	ret = pread_all(e->fd, m, len, off);
	if (ret) {
		munmap(m, len + 1);
		return ret;
	}
	*out = m;
	return 0;
}

void mw_elf_unmap(void *p, size_t len)
{
	munmap(p, len + 1);
}

static int check_ident(const Elf64_Ehdr *eh)
{
	return memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	       eh->e_ident[EI_CLASS] != ELFCLASS64 ||
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	       eh->e_ident[EI_DATA] != ELFDATA2LSB ||
#else
	       eh->e_ident[EI_DATA] != ELFDATA2MSB ||
#endif
	       (eh->e_phnum && eh->e_phentsize != sizeof(Elf64_Phdr)) ||
	       eh->e_phnum >= PN_XNUM ||
	       (eh->e_shoff && eh->e_shentsize != sizeof(Elf64_Shdr));
}

/* The section count: e_shnum, or sh[0].sh_size with extended numbering. */
static int count_sections(struct mw_elf *e)
{
	Elf64_Shdr first;
	int ret;

	e->shnum = e->eh.e_shoff ? e->eh.e_shnum : 0;
	if (e->shnum || !e->eh.e_shoff)
		return e->shnum > MW_ELF_SHNUM_MAX ? -EFBIG : 0;
	ret = mw_elf_read(e, &first, sizeof(first), e->eh.e_shoff);
	if (ret)
		return ret;
	if (first.sh_size > MW_ELF_SHNUM_MAX)
		return -EFBIG;
	e->shnum = (size_t)first.sh_size;
	return 0;
}

int mw_elf_open(struct mw_elf *e, int fd)
{
	size_t ph_len, sh_len;
	struct stat st;
	int ret;

	memset(e, 0, sizeof(*e));
	e->fd = fd;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	e->fsize = (uint64_t)st.st_size;
	ret = mw_elf_read(e, &e->eh, sizeof(e->eh), 0);
	if (ret)
		return ret;
	if (check_ident(&e->eh))
		return -ENOEXEC;
	ret = count_sections(e);
	if (ret)
		return ret;
	ph_len = e->eh.e_phnum * sizeof(Elf64_Phdr);
	sh_len = e->shnum * sizeof(Elf64_Shdr);
	e->maplen = mw_elf_page_up(ph_len + sh_len + 1);
	e->map = mmap(NULL, e->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		return -ENOMEM;
	}
	e->ph = e->map;
	e->sh = (Elf64_Shdr *)((char *)e->map + ph_len);
	ret = mw_elf_read(e, e->ph, ph_len, e->eh.e_phoff);
	if (!ret && sh_len)
		ret = mw_elf_read(e, e->sh, sh_len, e->eh.e_shoff);
	if (ret)
		mw_elf_close(e);
	return ret;
}

void mw_elf_close(struct mw_elf *e)
{
	if (e->map)
		munmap(e->map, e->maplen);
	e->map = NULL;
	e->ph = NULL;
	e->sh = NULL;
}
