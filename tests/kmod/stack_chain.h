/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A known chain of functions to block in, a() -> b() -> c() -> read(2)
 * (or to wake another from, with write(2)), and the addresses its user
 * stack must show: shared by the module's
 * test (tests/kmod/stack_test.c) and libdial9's (tests/sched/).  Build
 * with -fno-omit-frame-pointer.
 */
#ifndef DIAL9_STACK_CHAIN_H
#define DIAL9_STACK_CHAIN_H

#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>

/* What c() knows of the chain it blocks in: the addresses to expect. */
struct chain {
	long nr;		/* SYS_read (0: the default) or SYS_write */
	int fd;
	pid_t tid;
	uintptr_t site;		/* right after c()'s syscall instruction */
	uintptr_t in_b;		/* c()'s return address, inside b() */
	uintptr_t in_a;		/* b()'s return address, inside a() */
};

/*
 * read(2) or write(2) of one byte by its own syscall instruction, so that
 * the user ip of the thread is inside c() (glibc's read() has no frame
 * pointer).
 */
static __attribute__((noinline, noclone)) long c(struct chain *ch)
{
	uintptr_t site;
	char byte = 'x';
	long ret;

	ch->in_b = (uintptr_t)__builtin_return_address(0);
	asm volatile("lea 1f(%%rip), %1\n\tsyscall\n1:"
		     : "=a"(ret), "=&r"(site)
		     : "0"(ch->nr ? ch->nr : (long)SYS_read),
		       "D"((long)ch->fd), "S"(&byte),
		       "d"(1L)
		     : "rcx", "r11", "memory");
	ch->site = site;
	return ret;
}

static __attribute__((noinline, noclone)) long b(struct chain *ch)
{
	long ret;

	ch->in_a = (uintptr_t)__builtin_return_address(0);
	ret = c(ch);
	asm volatile("" ::: "memory");	/* no tail call */
	return ret;
}

static __attribute__((noinline, noclone)) long a(struct chain *ch)
{
	long ret = b(ch);

	asm volatile("" ::: "memory");
	return ret;
}

#endif /* DIAL9_STACK_CHAIN_H */
