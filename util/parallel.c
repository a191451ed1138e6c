/*
 * parallel.c - parallel_for: the items of a loop taken in turn, by an
 * atomic counter, by the caller and the threads it starts for the loop
 * (a batch of host work lasts milliseconds or more, so starting threads
 * each time costs little next to it, and no pool outlives the loop).
 */
#include "util/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#define PARALLEL_MOST 8

struct parallel_loop {
	atomic_int next;
	int n;
	void (*fn)(void *arg, int i);
	void *arg;
};

int parallel_threads(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 1)
		return 1;
	return cores < PARALLEL_MOST ? (int)cores : PARALLEL_MOST;
}

static void take(struct parallel_loop *loop)
{
	int i;
	while ((i = atomic_fetch_add(&loop->next, 1)) < loop->n)
		loop->fn(loop->arg, i);
}

static void *take_items(void *p)
{
	prctl(PR_SET_NAME, "vkinr-parallel", 0, 0, 0);
	take(p);
	return NULL;
}

void parallel_for(int n, int threads, void (*fn)(void *arg, int i), void *arg)
{
	struct parallel_loop loop = { .n = n, .fn = fn, .arg = arg };
	pthread_t tid[PARALLEL_MOST];
	int started = 0;
	atomic_init(&loop.next, 0);
	if (threads > PARALLEL_MOST)
		threads = PARALLEL_MOST;
	if (threads > n)
		threads = n;
	while (started < threads - 1 &&
	       pthread_create(&tid[started], NULL, take_items, &loop) == 0)
		started++;
	take(&loop);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}
