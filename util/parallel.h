/*
 * parallel.h - one loop spread over a few threads of the host: fn(arg, i)
 * for i in 0..n-1, each i once, by the caller and up to threads - 1 more,
 * returning when every i is done. For host work of a batch that shares
 * nothing between its items (encoding and writing a pack's outputs, say);
 * fn must not touch the device or the sockets.
 */
#ifndef VKINR_UTIL_PARALLEL_H
#define VKINR_UTIL_PARALLEL_H

/* The threads a batch of host work takes: the cores online, at most 8. */
int parallel_threads(void);
/* Runs the loop; when a thread cannot start, the others (the caller at
 * least) do its share. */
void parallel_for(int n, int threads, void (*fn)(void *arg, int i), void *arg);

#endif
