/*
 * webp_codec.c - WebP in through libwebp, for the daemon and its tools;
 * image_codec.c has PNG and picks between the decoders by the first bytes.
 *
 * A WebP comes from anyone who can reach the socket, so, as for PNG and
 * JPEG, what its decoding costs is bounded by the bytes sent, before a
 * pixel buffer is allocated:
 *   - the size the header states (VP8, VP8L or VP8X) is checked against
 *     util/image.h's limits;
 *   - a lossy (VP8) frame is checked against the data: every 16x16
 *     macroblock's modes are coded with fixed probabilities that cost
 *     more than one bit whatever the encoder does (cwebp spends about 4
 *     on a flat colour), so a file shorter than one bit a macroblock is
 *     truncated or lies about its size;
 *   - a lossless (VP8L) frame has no such floor (a single-colour image
 *     codes in a few bytes at any size), so it may state at most
 *     WEBP_LOSSLESS_PIXELS_PER_BYTE pixels for each byte of the file:
 *     the largest image vkinrd takes then needs 64 KiB, as a PNG needs
 *     about 200 (deflate's ratio) and a JPEG 256;
 *   - an animation is refused: a fit takes one picture.
 * libwebp itself refuses a frame whose data ends early ("not enough
 * data") or does not parse; its status comes back inside a sentence.
 * Alpha is dropped (the stored colours are taken, as for PNG); ICC
 * chunks are ignored. An EXIF chunk (found by libwebpdemux) is read for
 * its orientation, as a JPEG's is (orient.c): a phone's photo saved as
 * WebP is fitted upright.
 */
#include "formats/image_codec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/demux.h>

#include "formats/codec_internal.h"
#include "proto/errors.h"

/* A lossless WebP's pixels at most for each byte of the file. */
#define WEBP_LOSSLESS_PIXELS_PER_BYTE 1024

static const char *status_words(VP8StatusCode s)
{
	switch (s) {
	case VP8_STATUS_NOT_ENOUGH_DATA:
		return "truncated (libwebp: not enough data)";
	case VP8_STATUS_BITSTREAM_ERROR:
		return "corrupt (libwebp: bitstream error)";
	case VP8_STATUS_UNSUPPORTED_FEATURE:
		return "of a kind libwebp does not read (libwebp: "
		       "unsupported feature)";
	default:
		return "truncated or corrupt (libwebp: invalid data)";
	}
}

/* What the header says, checked before any pixel is decoded. */
static int check_features(const WebPBitstreamFeatures *f, size_t size,
			  char *err, size_t errlen)
{
	uint32_t w = (uint32_t)f->width, h = (uint32_t)f->height;
	int rc = codec_check_size("WebP", w, h, err, errlen);
	if (rc)
		return rc;
	if (f->has_animation) {
		codec_set_err(err, errlen,
			      "the WebP is an animation, which vkinrd does "
			      "not fit: save one frame of it as a still "
			      "image");
		return ERR_FORMAT;
	}
	uint64_t pixels = (uint64_t)w * h;
	if (f->format == 2) { /* lossless */
		uint64_t least = (pixels + WEBP_LOSSLESS_PIXELS_PER_BYTE - 1) /
				 WEBP_LOSSLESS_PIXELS_PER_BYTE;
		if (size < least) {
			codec_set_err(
			    err, errlen,
			    "the lossless WebP says it is %" PRIu32 "x%" PRIu32
			    " pixels, and vkinrd reads a lossless WebP of "
			    "at least a byte for each %d pixels (%" PRIu64
			    " bytes here), but it has %zu: it is truncated, "
			    "its header is wrong, or it is nearly one "
			    "colour (save that as PNG)",
			    w, h, WEBP_LOSSLESS_PIXELS_PER_BYTE, least, size);
			return ERR_FORMAT;
		}
		return 0;
	}
	uint64_t blocks = (uint64_t)((w + 15) / 16) * ((h + 15) / 16);
	uint64_t least = (blocks + 7) / 8; /* one bit a macroblock */
	if (size < least) {
		codec_set_err(err, errlen,
			      "the WebP says it is %" PRIu32 "x%" PRIu32
			      " pixels, which take at least %" PRIu64
			      " bytes, but it has %zu: it is truncated or its "
			      "header is wrong",
			      w, h, least, size);
		return ERR_FORMAT;
	}
	return 0;
}

/* The EXIF orientation of an extended WebP (VP8X with an EXIF chunk);
 * 1 when it has none. */
static int webp_orientation(const void *data, size_t size)
{
	WebPData whole = { data, size };
	WebPChunkIterator it;
	int o = 1;

	WebPDemuxer *dmux = WebPDemux(&whole);
	if (!dmux)
		return 1;
	if ((WebPDemuxGetI(dmux, WEBP_FF_FORMAT_FLAGS) & EXIF_FLAG) &&
	    WebPDemuxGetChunk(dmux, "EXIF", 1, &it)) {
		o = orient_from_exif(it.chunk.bytes, it.chunk.size);
		WebPDemuxReleaseChunkIterator(&it);
	}
	WebPDemuxDelete(dmux);
	return o;
}

int webp_decode(const void *data, size_t size, struct image **out, char *err,
		size_t errlen)
{
	WebPDecoderConfig config;
	VP8StatusCode s;
	struct image *img;
	uint8_t *rgb;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!webp_has_signature(data, size)) {
		codec_set_err(err, errlen,
			      size ? "not a WebP file (bad signature)"
				   : "the WebP is empty (0 bytes)");
		return ERR_FORMAT;
	}
	if (!WebPInitDecoderConfig(&config)) {
		codec_set_err(err, errlen,
			      "libwebp is not the version built "
			      "against");
		return ERR_FORMAT;
	}
	s = WebPGetFeatures(data, size, &config.input);
	if (s != VP8_STATUS_OK) {
		codec_set_err(err, errlen, "the WebP's header is %s",
			      status_words(s));
		return ERR_FORMAT;
	}
	if ((rc = check_features(&config.input, size, err, errlen)))
		return rc;

	int w = config.input.width, h = config.input.height;
	rgb = malloc((size_t)w * h * 3);
	if (!rgb) {
		codec_set_err(err, errlen,
			      "out of memory while decoding the WebP");
		return ERR_NOMEM;
	}
	config.output.colorspace = MODE_RGB;
	config.output.is_external_memory = 1;
	config.output.u.RGBA.rgba = rgb;
	config.output.u.RGBA.stride = w * 3;
	config.output.u.RGBA.size = (size_t)w * h * 3;
	s = WebPDecode(data, size, &config);
	WebPFreeDecBuffer(&config.output); /* nothing of ours: external */
	if (s != VP8_STATUS_OK) {
		free(rgb);
		if (s == VP8_STATUS_OUT_OF_MEMORY) {
			codec_set_err(err, errlen,
				      "out of memory while decoding the WebP");
			return ERR_NOMEM;
		}
		codec_set_err(err, errlen, "the WebP is %s", status_words(s));
		return ERR_FORMAT;
	}
	img = orient_image(rgb, w, h, webp_orientation(data, size));
	free(rgb);
	if (!img) {
		codec_set_err(err, errlen,
			      "out of memory while decoding the WebP");
		return ERR_NOMEM;
	}
	*out = img;
	return 0;
}

int webp_stated_size(const void *data, size_t size, uint32_t *w, uint32_t *h)
{
	int iw = 0, ih = 0;
	*w = *h = 0;
	if (!webp_has_signature(data, size) ||
	    !WebPGetInfo(data, size, &iw, &ih))
		return 0;
	*w = (uint32_t)iw, *h = (uint32_t)ih;
	return 1;
}
