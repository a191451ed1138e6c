/*
 * jpeg_codec.c - JPEG in through libjpeg (libjpeg-turbo on Debian), for
 * the daemon and its tools; image_codec.c has PNG and picks between them.
 *
 * A JPEG comes from anyone who can reach the socket, so the work and the
 * memory its decoding costs are bounded by the bytes sent, and libjpeg's
 * leniency is turned off:
 *   - the frame header's size is checked against the limits before any
 *     pixel is decoded;
 *   - the size is checked against the data: a Huffman-coded block takes
 *     at least 2 bits in a sequential file (a DC code and an end of
 *     block) and 1 bit in a progressive one (its first DC scan), so a
 *     file shorter than its blocks need is refused before a pixel buffer
 *     is allocated (a 1 KiB file that says 16384x4096 pixels is refused
 *     at once, instead of decoding 64 Mi grey pixels);
 *   - arithmetic coding, which has no such bound and which almost nothing
 *     writes, is refused;
 *   - a progressive or multi-scan file may have JPEG_MAX_SCANS scans at
 *     most (a progress monitor counts them, as djpeg -maxscans does):
 *     each scan walks every block, so a few bytes a scan could otherwise
 *     cost minutes;
 *   - libjpeg's memory is capped (max_memory_to_use);
 *   - every warning libjpeg gives about corrupt data ("Premature end of
 *     JPEG file", "Corrupt JPEG data: ...", a bad progression) is an
 *     error: libjpeg would fill what is missing with grey, and a file cut
 *     inside its scan is refused as a cut PNG is. Only the two harmless
 *     ones (an unknown JFIF revision, an unknown Adobe transform) pass.
 * libjpeg's errors come back by longjmp as a sentence, with the setjmp
 * arrangement of image_codec.c: its state lives in the caller's frame.
 *
 * Grey and YCbCr frames come out as RGB; CMYK ones are refused. The EXIF
 * orientation tag (APP1, read by libexif: orient.c) is honoured, so a photo taken upright on a phone
 * is fitted upright: the decoded pixels are mirrored or turned as the
 * tag says.
 */
#include "formats/image_codec.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "formats/codec_internal.h"
#include "proto/errors.h"

/* libjpeg may hold this much for one image (a progressive frame keeps
 * every coefficient: 128 bytes a block of 64 pixels, each component). */
#define JPEG_MAX_MEMORY ((long)1 << 30)
/* Scans a file may have: libjpeg's progressive script has 10 for
 * colour, 6 for grey; optimising encoders use a few more. */
#define JPEG_MAX_SCANS 100

struct jpeg_reader {
	struct jpeg_error_mgr pub; /* first: libjpeg's error manager */
	struct jpeg_progress_mgr progress;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
	int too_many_scans; /* the progress monitor stopped it */
	struct jpeg_decompress_struct cinfo;
	uint8_t *pixels;   /* the decoded RGB rows, before turning */
	struct image *img; /* the result, freed by the caller */
	char *err;
	size_t errlen;
};

static void jpeg_on_error(j_common_ptr cinfo)
{
	struct jpeg_reader *r = (struct jpeg_reader *)cinfo->err;
	(*cinfo->err->format_message)(cinfo, r->msg);
	longjmp(r->jump, 1);
}

/* A warning (level -1) about the data is an error; trace messages
 * (level >= 0) are dropped. */
static void jpeg_on_message(j_common_ptr cinfo, int level)
{
	int code = cinfo->err->msg_code;
	if (level >= 0 || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM)
		return;
	jpeg_on_error(cinfo);
}

/* Called as libjpeg reads a multi-scan file, at least once a scan. */
static void jpeg_on_progress(j_common_ptr cinfo)
{
	struct jpeg_reader *r = (struct jpeg_reader *)cinfo->err;
	j_decompress_ptr d = (j_decompress_ptr)cinfo;
	if (d->input_scan_number <= JPEG_MAX_SCANS)
		return;
	r->too_many_scans = 1;
	longjmp(r->jump, 1);
}

/* The least a file with c's frame can take, in bytes: 2 bits a block
 * (sequential) or 1 (progressive), over every component's blocks. */
static uint64_t least_bytes(const struct jpeg_decompress_struct *c)
{
	uint64_t blocks = 0;
	for (int i = 0; i < c->num_components; i++)
		blocks += (uint64_t)c->comp_info[i].width_in_blocks *
			  c->comp_info[i].height_in_blocks;
	return c->progressive_mode ? blocks / 8 : blocks / 4;
}

/* What the header says, checked before any pixel is decoded. */
static int check_frame(struct jpeg_reader *r, size_t size)
{
	struct jpeg_decompress_struct *c = &r->cinfo;
	int rc = codec_check_size("JPEG", c->image_width, c->image_height,
				  r->err, r->errlen);
	if (rc)
		return rc;
	if (c->jpeg_color_space == JCS_CMYK ||
	    c->jpeg_color_space == JCS_YCCK) {
		codec_set_err(r->err, r->errlen,
			      "the JPEG is in CMYK, which vkinrd does not "
			      "read: save it as RGB");
		return ERR_FORMAT;
	}
	if (c->arith_code) {
		codec_set_err(r->err, r->errlen,
			      "the JPEG is arithmetic-coded, which vkinrd "
			      "does not read: save it as an ordinary "
			      "(Huffman-coded) JPEG or as a PNG");
		return ERR_FORMAT;
	}
	uint64_t least = least_bytes(c);
	if (size < least) {
		codec_set_err(r->err, r->errlen,
			      "the JPEG says it is %ux%u pixels, which take "
			      "at least %" PRIu64
			      " bytes, but it has %zu: it is "
			      "truncated or its header is wrong",
			      (unsigned)c->image_width,
			      (unsigned)c->image_height, least, size);
		return ERR_FORMAT;
	}
	return 0;
}

/* The steps that may longjmp. Returns 0, or a code with r->err set. */
static int jpeg_steps(struct jpeg_reader *r, const uint8_t *data, size_t size)
{
	struct jpeg_decompress_struct *c = &r->cinfo;
	int orientation = 1, rc;

	jpeg_create_decompress(c);
	c->mem->max_memory_to_use = JPEG_MAX_MEMORY;
	r->progress.progress_monitor = jpeg_on_progress;
	c->progress = &r->progress;
	jpeg_mem_src(c, data, (unsigned long)size);
	jpeg_save_markers(c, JPEG_APP0 + 1, 0xffff);
	jpeg_read_header(c, TRUE);
	if ((rc = check_frame(r, size)))
		return rc;
	for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next)
		if (m->marker == JPEG_APP0 + 1 &&
		    (orientation = orient_from_exif(m->data, m->data_length)) !=
			1)
			break;
	c->out_color_space = JCS_RGB;
	jpeg_start_decompress(c);
	int w = (int)c->output_width, h = (int)c->output_height;
	if (c->output_components != 3) {
		codec_set_err(r->err, r->errlen,
			      "this JPEG layout is not supported "
			      "(%d components after conversion to RGB)",
			      c->output_components);
		return ERR_FORMAT;
	}
	r->pixels = malloc((size_t)w * h * 3);
	if (!r->pixels)
		return ERR_NOMEM;
	while (c->output_scanline < c->output_height) {
		JSAMPROW row = r->pixels + (size_t)c->output_scanline * w * 3;
		jpeg_read_scanlines(c, &row, 1);
	}
	jpeg_finish_decompress(c);

	if (!(r->img = orient_image(r->pixels, w, h, orientation)))
		return ERR_NOMEM;
	return 0;
}

/* Calls setjmp; its only state is *r, which lives in the caller's frame. */
static int jpeg_guarded(struct jpeg_reader *r, const uint8_t *data, size_t size)
{
	if (setjmp(r->jump))
		return ERR_FORMAT;
	return jpeg_steps(r, data, size);
}

int jpeg_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen)
{
	struct jpeg_reader r;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!jpeg_has_signature(data, size)) {
		codec_set_err(err, errlen,
			      size ? "not a JPEG file (bad signature)"
				   : "the JPEG is empty (0 bytes)");
		return ERR_FORMAT;
	}
	memset(&r, 0, sizeof(r));
	r.err = err;
	r.errlen = errlen;
	r.cinfo.err = jpeg_std_error(&r.pub);
	r.pub.error_exit = jpeg_on_error;
	r.pub.emit_message = jpeg_on_message;
	rc = jpeg_guarded(&r, data, size);
	jpeg_destroy_decompress(&r.cinfo);
	free(r.pixels);
	if (rc) {
		image_destroy(r.img);
		if (rc == ERR_NOMEM)
			codec_set_err(err, errlen,
				      "out of memory while decoding the JPEG");
		else if (r.too_many_scans)
			codec_set_err(err, errlen,
				      "the JPEG has more than %d scans, which "
				      "vkinrd does not read (a progressive "
				      "JPEG needs about 10): save it again",
				      JPEG_MAX_SCANS);
		else if (r.msg[0])
			codec_set_err(
			    err, errlen,
			    "the JPEG is truncated or corrupt (libjpeg: %s)",
			    r.msg);
		return rc;
	}
	*out = r.img;
	return 0;
}
