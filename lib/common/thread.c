// SPDX-License-Identifier: MIT
/*
 * thread.c - the recorder's threads in the background of the program
 * they record.
 */
#include <pthread.h>
#include <sched.h>

#include "common/common.h"

int d9_thread_background(void)
{
	struct sched_param sp = { .sched_priority = 0 };

	/*
	 * SCHED_BATCH keeps the thread's nice and its fair share, but a
	 * wake-up of it never preempts the task on the CPU: it runs at
	 * that task's next block or tick.  Unprivileged, and reversible
	 * (the reader's SCHED_FIFO comes back to it).
	 */
	return -pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
}
