/*
 * decode.c - base64, image and model-package decoding on libuv's thread
 * pool (see decode.h). The worker function touches nothing but the
 * decode_job; the after-work callback runs on the loop and hands the job
 * to its done callback.
 *
 * An image may come as PNG, JPEG or WebP. For a job (store_image) it is
 * decoded (a JPEG turned upright as its EXIF orientation says) and its
 * bytes are then replaced by the same pixels as a plain PNG
 * (png_encode_exact: 8 or 16 bits a sample as the decoded values need,
 * grey or RGB), so what the job keeps on disk is the image and nothing
 * else the sender put in the file (private chunks, text, bytes after its
 * end), in one format for everything that reads it back. The samples
 * survive the round trip exactly. When job.submit asks for it
 * (resize), the decoded image is first scaled down (a box filter) to the
 * size asked, or to no side over max_side, and that is what is kept.
 * model.render's target (fit_target), when it is larger than the size
 * the model renders in both directions, is scaled down to that size the
 * same way: the photo a job was fitted to after --max-side measures
 * against its render as the job's PSNR did.
 */
#include "loop/decode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "nn/fit.h"
#include "nn/package.h"

static int decode_base64(struct decode_input *in)
{
	int rc = base64_decode(in->b64, strlen(in->b64), &in->bytes, &in->size);
	free(in->b64);
	in->b64 = NULL;
	in->bad_base64 = rc != 0 && rc != ERR_NOMEM;
	return in->rc = rc;
}

#define EXPORT_FILE_MAX (1u << 30)

/* A file as base64, or NULL (rc says why). */
static char *read_b64(const char *path, int *rc)
{
	uint8_t *data;
	size_t size;
	*rc = fileio_read(path, &data, &size, EXPORT_FILE_MAX);
	if (*rc)
		return NULL;
	char *text = base64_encode(data, size);
	free(data);
	if (!text)
		*rc = ERR_NOMEM;
	return text;
}

/* job.submit's resize, on the decoded image: 0, or ERR_INVALID (err
 * says why) when it would enlarge it. */
static int resize_image(struct decode_job *d)
{
	int w = d->image->width, h = d->image->height, nw = w, nh = h;
	if (d->max_side && (w > d->max_side || h > d->max_side)) {
		double s = (double)d->max_side / (w > h ? w : h);
		nw = (int)(w * s + 0.5), nh = (int)(h * s + 0.5);
		nw = nw < 1 ? 1 : nw, nh = nh < 1 ? 1 : nh;
	} else if (d->resize_w) {
		nw = d->resize_w, nh = d->resize_h;
		if (nw > w || nh > h) {
			snprintf(
			    d->png.err, sizeof(d->png.err),
			    "the image is %dx%d: \"resize\" to %dx%d would "
			    "enlarge it, and it only scales down",
			    w, h, nw, nh);
			return ERR_INVALID;
		}
	}
	if (nw == w && nh == h)
		return 0;
	struct image *small = image_scale_down(d->image, nw, nh);
	if (!small)
		return ERR_NOMEM;
	image_destroy(d->image);
	d->image = small;
	return 0;
}

static void run(uv_work_t *work)
{
	struct decode_job *d = (struct decode_job *)work;
	if (d->read_model) {
		d->model_b64 = read_b64(d->read_model, &d->read_rc);
		if (!d->read_rc)
			d->png_b64 = read_b64(d->read_png, &d->read_rc);
	}
	if (d->png.b64 && !decode_base64(&d->png))
		d->png.rc = image_decode(d->png.bytes, d->png.size, &d->image,
					 d->png.err, sizeof(d->png.err));
	if (d->image && d->store_image) {
		uint8_t *png;
		size_t size;
		if ((d->png.rc = resize_image(d)) ||
		    (d->png.rc = png_encode_exact(d->image, &png, &size))) {
			image_destroy(d->image);
			d->image = NULL;
		} else {
			free(d->png.bytes);
			d->png.bytes = png;
			d->png.size = size;
		}
	}
	if (d->model.b64 && !decode_base64(&d->model)) {
		d->model.rc =
		    st_decode(d->model.bytes, d->model.size, &d->package,
			      d->model.err, sizeof(d->model.err));
		if (!d->model.rc)
			d->model.rc = nn_package_config(
			    d->package, &d->cfg, &d->model_w, &d->model_h,
			    d->model.err, sizeof(d->model.err));
		if (!d->keep_package) {
			st_destroy(d->package);
			d->package = NULL;
		}
	}
	if (d->fit_target && d->image && !d->model.rc && d->model_w > 0 &&
	    d->model_h > 0 && d->image->width >= d->model_w &&
	    d->image->height >= d->model_h &&
	    (d->image->width > d->model_w || d->image->height > d->model_h)) {
		struct image *small =
		    image_scale_down(d->image, d->model_w, d->model_h);
		if (!small) {
			d->png.rc = ERR_NOMEM;
			snprintf(d->png.err, sizeof(d->png.err),
				 "out of memory scaling the target down");
		}
		image_destroy(d->image);
		d->image = small;
	}
}

static void after(uv_work_t *work, int status)
{
	struct decode_job *d = (struct decode_job *)work;
	d->done(d);
}

int decode_is_small(const struct decode_job *d)
{
	static const uint8_t signature[8] = { 0x89, 'P',  'N',  'G',
					      '\r', '\n', 0x1a, '\n' };
	const char *b64 = d->png.b64;
	if (!b64 || d->model.b64 || d->read_model || d->fit_target)
		return 0;
	size_t len = strlen(b64);
	if (len < 32 || len > DECODE_INLINE_B64)
		return 0;
	uint8_t *head = NULL;
	size_t n = 0;
	if (base64_decode(b64, 32, &head, &n) || n < 24) {
		free(head);
		return 0;
	}
	uint32_t w = (uint32_t)head[16] << 24 | (uint32_t)head[17] << 16 |
		     (uint32_t)head[18] << 8 | head[19];
	uint32_t h = (uint32_t)head[20] << 24 | (uint32_t)head[21] << 16 |
		     (uint32_t)head[22] << 8 | head[23];
	int small = !memcmp(head, signature, 8) &&
		    !memcmp(head + 12, "IHDR", 4) && w > 0 && h > 0 &&
		    (uint64_t)w * h <= DECODE_INLINE_PIXELS;
	free(head);
	return small;
}

void decode_run(struct decode_job *d) { run(&d->work); }

int decode_start(uv_loop_t *loop, struct decode_job *d)
{
	int rc = uv_queue_work(loop, &d->work, run, after);
	return rc ? ERR_NOMEM : 0;
}

void decode_finish(struct decode_job *d)
{
	if (!d)
		return;
	free(d->png.b64);
	free(d->png.bytes);
	free(d->model.b64);
	free(d->model.bytes);
	image_destroy(d->image);
	st_destroy(d->package);
	free(d->read_model);
	free(d->read_png);
	free(d->model_b64);
	free(d->png_b64);
	memset(d, 0, sizeof(*d));
}
