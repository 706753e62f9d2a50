// SPDX-License-Identifier: MIT
/*
 * macros.c - a program that uses nothing of libdial9 but its recording
 * macros, and starts recording with DIAL9_ENABLED=1 alone (the
 * library's constructor): linked with libdial9.a, it must record as the
 * shared library does (install.sh, nos3.sh).
 */
#include <dial9.h>

int main(void)
{
	dial9_instant("pkgtest.macros");
	dial9_counter("pkgtest.count", "items", 3);
	return 0;
}
