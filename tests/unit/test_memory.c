/*
 * test_memory.c - the device memory of arenas, carved from shared slabs
 * (daemon/gpu/slab.c, memory.c): many arenas of small buffers of both
 * kinds (device-local, filled by uploads; mapped, written by the host),
 * freed in a shuffled order while new ones are made, keep every byte
 * written to them (no two buffers share memory), give the context's
 * count of bytes back to where it began, and a block too large for a
 * slab still works as an allocation of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support_gpu.h"

enum { ARENAS = 96, BUFFERS = 5 };

struct held {
	struct gpu_arena *arena;
	struct gpu_buffer buf[BUFFERS];
	size_t words[BUFFERS];
	uint32_t seed;
};

static uint32_t word(uint32_t seed, int b, size_t i)
{
	return seed * 2654435761u ^ (uint32_t)b * 40503u ^ (uint32_t)i;
}

/* An arena of BUFFERS buffers of sizes from 4 KiB to 1.5 MiB (so that
 * blocks grow past the first), even ones mapped, each filled. */
static void make(struct held *h, uint32_t seed)
{
	h->seed = seed;
	assert_int_equal(gpu_arena_create(test_gpu, &h->arena), 0);
	for (int b = 0; b < BUFFERS; b++) {
		/* seed 0: the largest, to size the staging buffer */
		size_t words =
		    seed == 0 ? 1024u + 384u * 1024u - 1
			      : 1024u + (seed * 7919u + (unsigned)b * 104729u) %
					    (384u * 1024u);
		int mapped = b % 2 == 0;
		h->words[b] = words;
		assert_int_equal(
		    gpu_buffer_alloc(h->arena, words * 4, mapped, &h->buf[b]),
		    0);
		uint32_t *data =
		    mapped ? h->buf[b].mapped : malloc(words * sizeof(*data));
		assert_non_null(data);
		for (size_t i = 0; i < words; i++)
			data[i] = word(seed, b, i);
		if (!mapped) {
			assert_int_equal(gpu_upload(test_gpu, &h->buf[b], 0,
						    data, words * 4),
					 0);
			free(data);
		}
	}
}

static void check(const struct held *h)
{
	for (int b = 0; b < BUFFERS; b++) {
		size_t words = h->words[b];
		uint32_t *got = malloc(words * sizeof(*got));
		assert_non_null(got);
		if (h->buf[b].mapped)
			memcpy(got, h->buf[b].mapped, words * 4);
		else
			assert_int_equal(gpu_download(test_gpu, &h->buf[b], 0,
						      got, words * 4),
					 0);
		size_t bad = 0;
		for (size_t i = 0; i < words; i++)
			bad += got[i] != word(h->seed, b, i);
		free(got);
		if (bad)
			fail_msg("arena %u buffer %d: %zu of %zu words changed",
				 h->seed, b, bad, words);
	}
}

static void test_arenas_keep_their_bytes(void **state)
{
	(void)state;
	test_need_gpu();
	struct held *h = calloc(ARENAS, sizeof(*h));
	assert_non_null(h);
	/* the staging buffer, kept for the context's life, at its size */
	make(&h[0], 0);
	gpu_arena_destroy(h[0].arena);
	uint64_t before = gpu_bytes_in_use(test_gpu);
	uint32_t seed = 1;
	for (int i = 0; i < ARENAS; i++)
		make(&h[i], seed++);
	/* every third freed, in a shuffled order, and made again */
	for (int round = 0; round < 3; round++) {
		for (int i = (round * 5) % 3; i < ARENAS; i += 3) {
			int j = (i * 37 + round * 11) % ARENAS;
			gpu_arena_destroy(h[j].arena);
			make(&h[j], seed++);
		}
		for (int i = 0; i < ARENAS; i++)
			check(&h[i]);
	}
	for (int i = ARENAS - 1; i >= 0; i -= 2)
		gpu_arena_destroy(h[i].arena);
	for (int i = ARENAS - 2; i >= 0; i -= 2)
		gpu_arena_destroy(h[i].arena);
	free(h);
	assert_int_equal(gpu_bytes_in_use(test_gpu), before);
}

static void test_large_block_of_its_own(void **state)
{
	(void)state;
	test_need_gpu();
	struct gpu_arena *a;
	struct gpu_buffer big, small;
	size_t words = 6u << 20; /* 24 MiB: past what a slab carves */
	assert_int_equal(gpu_arena_create(test_gpu, &a), 0);
	assert_int_equal(gpu_buffer_alloc(a, words * 4, 0, &big), 0);
	assert_int_equal(gpu_buffer_alloc(a, 4096, 1, &small), 0);
	uint32_t *data = malloc(words * 4);
	assert_non_null(data);
	for (size_t i = 0; i < words; i++)
		data[i] = (uint32_t)i * 2654435761u;
	memset(small.mapped, 0x5a, 4096);
	assert_int_equal(gpu_upload(test_gpu, &big, 0, data, words * 4), 0);
	memset(data, 0, words * 4);
	assert_int_equal(gpu_download(test_gpu, &big, 0, data, words * 4), 0);
	size_t bad = 0;
	for (size_t i = 0; i < words; i++)
		bad += data[i] != (uint32_t)i * 2654435761u;
	assert_int_equal(bad, 0);
	assert_int_equal(((unsigned char *)small.mapped)[4095], 0x5a);
	free(data);
	gpu_arena_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arenas_keep_their_bytes),
		cmocka_unit_test(test_large_block_of_its_own),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
