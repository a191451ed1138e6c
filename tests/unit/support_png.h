/*
 * support_png.h - test PNGs written into memory with libpng's own write
 * API (test_png.c for the daemon's reader, test_png8.c for the client's).
 */
#ifndef VKINR_SUPPORT_PNG_H
#define VKINR_SUPPORT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include <png.h>

/* A growing buffer; data is malloc'ed, freed by the test. */
struct membuf {
	uint8_t *data;
	size_t size, cap;
};

/* Makes png write into b (png_set_write_fn). */
void membuf_attach(png_structp png, struct membuf *b);

#endif
