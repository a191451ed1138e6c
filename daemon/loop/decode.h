/*
 * decode.h - the heavy part of a request, off the loop thread.
 *
 * A job.submit or model.render carries base64 text: an image (PNG, JPEG
 * or WebP; kept as PNG), a
 * model package (.safetensors); a job.export of a done job sends two
 * files as base64. Decoding and validating the former can take seconds (a
 * small PNG may declare a huge image), reading and encoding the latter
 * too for a big model, so it runs on libuv's thread pool while the loop
 * goes on answering everyone else; the request's connection waits
 * (server_conn_hold) meanwhile, so its requests still act in order.
 *
 * The pool thread sees only the decode_job: no loop data, no sockets.
 */
#ifndef VKINR_DECODE_H
#define VKINR_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "formats/image_codec.h"
#include "nn/model.h"
#include "formats/safetensors.h"

/* One input: base64 text in, bytes and what they decode to out. */
struct decode_input {
	char *b64;      /* owned; NULL when the request had none */
	uint8_t *bytes; /* decoded */
	size_t size;
	int rc;         /* 0, or why it was refused (errors.h) */
	int bad_base64; /* rc came from base64 itself */
	char err[512];  /* the decoder's sentence, if any */
};

struct decode_job {
	uv_work_t work;            /* first: the work's address is the job's */
	struct decode_input png;   /* a PNG or JPEG: decoded into image;
				    * bytes are a PNG after (store_image) */
	struct decode_input model; /* a model package: into package, cfg */
	struct image *image;
	struct st_file *package;
	struct nn_config cfg;   /* the package's */
	int model_w, model_h;   /* the size the package renders */
	int keep_package;       /* hand package over (render) or drop it */
	int store_image;        /* png.bytes become image as a plain PNG
				      * (job.submit keeps them) */
	int resize_w, resize_h; /* job.submit's resize: scaled down to
				      * this size first, or ... */
	int max_side;           /* ... to no side over this (0: none) */
	int fit_target; /* model.render: a target larger than the model's
			 * size is scaled down to it (as resize does) */
	char *read_model, *read_png; /* export: files to send (owned paths) */
	char *model_b64, *png_b64;   /* ... read and encoded */
	int read_rc;                 /* 0, or why they could not be */
	void (*done)(struct decode_job *d); /* on the loop thread */
	void *ctx;                          /* the caller's */
};

/* Queues d on the loop's thread pool; done runs on the loop after. */
int decode_start(uv_loop_t *loop, struct decode_job *d);
/* Whether d's image is a PNG small enough to be decoded on the loop at
 * once (job.submit of a dataset's small images: no hold of the
 * connection, so a window of them is stored in one turn, with one sync):
 * no model with it, at most DECODE_INLINE_B64 bytes of base64 and, as its
 * header declares, at most DECODE_INLINE_PIXELS pixels, which bounds the
 * inflating. */
#define DECODE_INLINE_B64 (96 * 1024)
#define DECODE_INLINE_PIXELS (256 * 256)
int decode_is_small(const struct decode_job *d);
/* The decoding, here and now (what decode_start does on the pool); the
 * done callback is not called. */
void decode_run(struct decode_job *d);
/* Frees what d holds (not d itself). */
void decode_finish(struct decode_job *d);

#endif
