/* SPDX-License-Identifier: MIT */
/* arch.h - what the injector needs to know about the CPU, behind one
 * interface with one file per architecture (shared/DESIGN.md):
 * arch_x86_64.c and arch_aarch64.c (with syscalls_ARCH.c, the syscall
 * lists; sigframe_x86_64.c, x86-64's signal frame).  The Makefile builds
 * the one the compiler targets.  Everything else in inject/ goes through
 * these functions: registers, the call and return sequences, syscall
 * restarts, the extended (vector) state, the thread pointer, seccomp's
 * audit arch, and what the safe-point search reads from code. */
#ifndef MWI_ARCH_H
#define MWI_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__x86_64__)
#include <sys/user.h>
/* PTRACE_GETREGS' set */
typedef struct user_regs_struct mwi_regs;
#define MWI_ARCH_NAME "x86_64"
/* syscalls.def's column for this CPU */
#define MWI_SC_COLUMN(x86_64, aarch64) x86_64
#elif defined(__aarch64__)
#include <asm/ptrace.h>
/* NT_PRSTATUS (x0-x30, sp, pc, pstate) and NT_ARM_SYSTEM_CALL: the
 * number of the syscall the thread is in, -1 for none (writing -1 at a
 * syscall-entry stop skips it) */
typedef struct {
	struct user_pt_regs r;
	int syscallno;
} mwi_regs;
#define MWI_ARCH_NAME "aarch64"
#define MWI_SC_COLUMN(x86_64, aarch64) aarch64
#else
#error "inject/: no arch_*.c for this CPU (x86_64 and aarch64 are done)"
#endif

struct mwi_thread;
struct mwi_maps;

/* What the return register shows at a stop inside a syscall that is to
 * be restarted (the kernel's own errnos, never seen by the program) */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* seccomp's AUDIT_ARCH_* for this CPU (bpfeval.c). */
extern const uint32_t mwi_arch_audit;
/* The ELF relocation type of an initial-exec TLS GOT slot (its offset
 * from the thread pointer): dlerror.c. */
extern const uint32_t mwi_arch_tpoff_reloc;
/* The code of the kernel's / libc's signal return trampoline (the
 * rt_sigreturn syscall), searched for in libc: a guarded call returns
 * into it; its syscall instruction ends at its address + the length. */
extern const unsigned char mwi_arch_sigreturn_code[];
extern const size_t mwi_arch_sigreturn_len;

/* 1: mwi_settle skips the rt_sigreturn that ends a guarded call (x86-64:
 * run, it would cancel a pending restart_syscall); 0: lets it run
 * (aarch64: registers written at a syscall stop lose x7, which the
 * kernel puts back as it was at the syscall's entry, so the frame
 * restores them instead, and the restart is already in them). */
extern const int mwi_arch_settle_skips;

/* 1: a guarded call's result is still in the return register at the
 * entry stop of the rt_sigreturn it returns into (aarch64: the vdso's
 * "mov x8, #139; svc #0" leaves x0 alone); 0: overwritten there
 * (x86-64: "mov $15, %rax" before the syscall). */
extern const int mwi_arch_guarded_keeps_result;

/* The gdb backend's guard (gdb/attach.py): code for
 * long guard(fn, a0, a1, area) that saves the thread's whole extended
 * state in @area, calls fn(a0, a1) and restores the state before it
 * returns fn's result.  gdb 13 writes that state back where Intel's CPUs
 * keep it, not where CPUID leaf 0xd says (AMD's Zen 4 has AVX-512 256
 * bytes lower): a call made through the guard, with only the general
 * registers written by gdb, never needs it written.  *@code gets the
 * code, *@area the bytes its save area takes (64-byte aligned, zeroed);
 * returns the code's length, 0 where gdb's own calls restore everything.
 * Context: the injector, on the target's machine. */
size_t mwi_arch_gdb_guard(const unsigned char **code, size_t *area);

/* Where else the target has mwi_arch_sigreturn_code when its libc has
 * none (aarch64: the vdso).  0, or -ENOENT.  Context: the injector. */
int mwi_arch_sigreturn_extra(pid_t pid, uintptr_t *addr);

/* Reads / writes the thread's general registers (and, on aarch64, its
 * syscall number).  0 or -errno.  Context: the injector, @tid seized
 * and stopped. */
int mwi_arch_get_regs(pid_t tid, mwi_regs *r);
int mwi_arch_set_regs(pid_t tid, const mwi_regs *r);

/* The program counter, the stack pointer, the return (and syscall
 * result) register. */
uintptr_t mwi_arch_pc(const mwi_regs *r);
void mwi_arch_set_pc(mwi_regs *r, uintptr_t pc);
uintptr_t mwi_arch_sp(const mwi_regs *r);
uint64_t mwi_arch_retval(const mwi_regs *r);

/* Reads / writes the extended state (x86-64: the xsave area,
 * NT_X86_XSTATE; aarch64: NT_PRFPREG, and NT_ARM_SVE where the thread
 * uses it) into @buf of @cap bytes; *@len gets its length.  0 or -errno.
 * The restore is best effort. */
int mwi_arch_save_ext(pid_t tid, unsigned char *buf, size_t cap,
		      size_t *len);
void mwi_arch_restore_ext(pid_t tid, unsigned char *buf, size_t len);

/* @in with an interrupted syscall turned into its own restart (pc back
 * onto the syscall instruction, its number back), and no syscall in
 * progress: what the kernel would have done on resuming it, done once
 * and for all, so that the state can be restored from any stop. */
void mwi_arch_restartable(const mwi_regs *in, mwi_regs *out);
/* Marks @r as in no syscall: set at a syscall-entry stop, the syscall
 * is skipped; set at any stop, no restart happens. */
void mwi_arch_no_syscall(mwi_regs *r);

/* 1 when the thread, stopped with @r, is blocked in (or about to
 * restart) syscall *@nr, else 0.  Context: the injector, @t stopped. */
int mwi_arch_in_syscall(struct mwi_thread *t, const mwi_regs *r, long *nr);

/* The stack pointer a call's callee starts with, at or below @below:
 * aligned as right after a call instruction. */
uintptr_t mwi_arch_call_sp(uintptr_t below);
/* Sets @r up for fn(args...) with its stack at @sp, returning to
 * @ret_addr (x86-64: written at @sp; aarch64: the link register).
 * 0 or -errno. */
int mwi_arch_set_call(struct mwi_thread *t, mwi_regs *r, uintptr_t fn,
		      uintptr_t sp, uint64_t ret_addr, const uint64_t *args,
		      int nargs);

/* The thread pointer of the stopped thread (TLS).  0 or -errno. */
int mwi_arch_thread_pointer(struct mwi_thread *t, uint64_t *tp);

/* 1 when the thread is inside one of libc's lock-free leaf routines
 * (m->leaf) that code outside libc and the loader called (see
 * safepoint.c), else 0. */
int mwi_arch_in_called_leaf(struct mwi_thread *t, const struct mwi_maps *m,
			    const mwi_regs *r);

/* Builds below @top the signal frame of a guarded call (see mwi_guard in
 * ptrace.h): rt_sigreturn on it restores @resume (restartable form),
 * the thread's @sigmask and its extended state @ext (@ext_len bytes,
 * modified).  *@sp gets the frame's address, where the call's stack
 * starts; *@altstack the address of its sigaltstack field.  0, or
 * -errno (-ENOTSUP: no guarded calls on this CPU yet). */
int mwi_arch_sigframe(struct mwi_thread *t, const mwi_regs *resume,
		      uint64_t sigmask, const unsigned char *ext, size_t ext_len,
		      uintptr_t top, uintptr_t floor, uintptr_t *sp,
		      uintptr_t *altstack);

#endif
