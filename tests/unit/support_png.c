/*
 * support_png.c - see support_png.h. An allocation failure fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit/support_png.h"

static void mem_write(png_structp png, png_bytep p, size_t n)
{
	struct membuf *b = png_get_io_ptr(png);

	if (b->size + n > b->cap) {
		b->cap = (b->size + n) * 2;
		b->data = realloc(b->data, b->cap);
		assert_non_null(b->data);
	}
	memcpy(b->data + b->size, p, n);
	b->size += n;
}

static void mem_flush(png_structp png) {}

void membuf_attach(png_structp png, struct membuf *b)
{
	png_set_write_fn(png, b, mem_write, mem_flush);
}
