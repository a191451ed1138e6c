/*
 * cmd-infer.c - `vkinrctl infer`: render a model package into an image on
 * the daemon's device (model.render), and measure it against a target.
 *
 * The model file (and the target PNG, when given) are read here and sent
 * in base64, like submit's images: the daemon never opens a client's path.
 * The rendered PNG comes back in base64 and is written to -o through
 * client_write_file (never over an existing file without --force).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "core/client.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "util/image.h"
#include "core/jobs.h"
#include "proto/protocol.h"

enum { OPT_TARGET = OPT_FIRST_COMMAND_OPTION, OPT_SIZE, OPT_SCALE, OPT_CROP };

#define INFER_MAX_FILE ((size_t)LIMIT_LINE_BYTES / 4 * 3)

static unsigned png_be32(const uint8_t *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 |
	       (unsigned)p[2] << 8 | p[3];
}

/* The start of a safetensors file: an 8-byte little-endian length of a
 * JSON header that fits in the file. The daemon checks the rest. */
static int looks_like_package(const uint8_t *data, size_t size)
{
	uint64_t hlen = 0;

	if (size < 10)
		return 0;
	for (int i = 0; i < 8; i++)
		hlen |= (uint64_t)data[i] << (8 * i);
	return hlen >= 2 && hlen <= size - 8 && data[8] == '{';
}

/*
 * Reads path into {"<field>": B64} under key of params; 0 or exit status.
 * An image (want_image) is a PNG, a JPEG or a WebP, as job.submit takes,
 * and field is then "png", "jpeg" or "webp" after what the file holds.
 */
static int attach(cJSON *params, const char *key, const char *field,
		  const char *path, int want_image)
{
	uint8_t *data;
	size_t size;
	char *b64;
	cJSON *obj;
	int rc;

	if ((rc = fileio_read(path, &data, &size, INFER_MAX_FILE)) < 0) {
		client_warn("%s: cannot read it: %s", path,
			    rc == ERR_IO ? strerror(errno) : error_message(rc));
		return CLIENT_EXIT_DAEMON;
	}
	if (want_image && jpeg_has_signature(data, size))
		field = "jpeg";
	else if (want_image && webp_has_signature(data, size))
		field = "webp";
	else if (want_image && !png_has_signature(data, size)) {
		free(data);
		client_warn("%s: not a PNG, JPEG or WebP image", path);
		return CLIENT_EXIT_DAEMON;
	}
	if (!want_image && !looks_like_package(data, size)) {
		int png = png_has_signature(data, size);
		free(data);
		client_warn("%s: not a model package (a .safetensors file that "
			    "vkinrctl export or the PyTorch peer wrote)%s",
			    path, png ? "; it is a PNG image" : "");
		return CLIENT_EXIT_DAEMON;
	}
	b64 = base64_encode(data, size);
	free(data);
	obj = cJSON_AddObjectToObject(params, key);
	if (!b64 || !obj || !cJSON_AddStringToObject(obj, field, b64)) {
		free(b64);
		client_warn("%s", error_message(ERR_NOMEM));
		return CLIENT_EXIT_DAEMON;
	}
	free(b64);
	return 0;
}

/* "WxH" into *w, *h (each >= 1); the rest of the text in *end. */
static int parse_wh(const char *text, long *w, long *h, char **end)
{
	errno = 0;
	*w = strtol(text, end, 10);
	if (errno || *end == text || (**end != 'x' && **end != 'X'))
		return -1;
	const char *at = *end + 1;
	*h = strtol(at, end, 10);
	if (errno || *end == at || *w < 1 || *h < 1)
		return -1;
	return 0;
}

/* --crop WxH+X+Y (as ImageMagick's geometry) or X,Y,WxH; 0 or -1. */
static int parse_crop(const char *text, long *box)
{
	long x = 0, y = 0;
	char *end;
	if (strchr(text, ',')) {
		errno = 0;
		x = strtol(text, &end, 10);
		if (errno || end == text || *end != ',')
			return -1;
		const char *at = end + 1;
		y = strtol(at, &end, 10);
		if (errno || end == at || *end != ',' ||
		    parse_wh(end + 1, &box[2], &box[3], &end) || *end)
			return -1;
	} else {
		if (parse_wh(text, &box[2], &box[3], &end))
			return -1;
		if (*end) {
			const char *at = end + 1;
			if (*end != '+')
				return -1;
			x = strtol(at, &end, 10);
			if (end == at || *end != '+')
				return -1;
			at = end + 1;
			y = strtol(at, &end, 10);
			if (end == at || *end)
				return -1;
		}
	}
	box[0] = x;
	box[1] = y;
	return x < 0 || y < 0 ? -1 : 0;
}

/* {"NAME": N, ...} under key of params: n numbers; 0 or -1. */
static int add_box(cJSON *params, const char *key, const char *const *names,
		   const long *v, int n)
{
	cJSON *o = cJSON_AddObjectToObject(params, key);
	for (int i = 0; o && i < n; i++)
		if (!cJSON_AddNumberToObject(o, names[i], (double)v[i]))
			return -1;
	return o ? 0 : -1;
}

/* --json: {"png": OUT, "psnr", "width", "height", "scale", "resampled"} */
static void print_json(const cJSON *result, const char *output)
{
	double psnr = job_num(result, "psnr", NAN);
	cJSON *out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "png", output);
	if (isfinite(psnr))
		cJSON_AddNumberToObject(out, "psnr", psnr);
	const char *same[] = { "width", "height", "scale" };
	for (int i = 0; i < 3; i++)
		if (job_num(result, same[i], NAN) >= 0)
			cJSON_AddNumberToObject(out, same[i],
						job_num(result, same[i], 0));
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(result, "resampled");
	if (cJSON_IsBool(rs))
		cJSON_AddBoolToObject(out, "resampled", cJSON_IsTrue(rs));
	client_print_json(out);
	cJSON_Delete(out);
}

/* "wrote OUT (...)": the view rendered, and the PSNR at the size of what
 * came back (png's IHDR): a target larger than that was scaled down to
 * it. */
static void print_text(const cJSON *result, const char *output,
		       const char *target, const char *crop, const uint8_t *png,
		       size_t size)
{
	double psnr = job_num(result, "psnr", NAN);
	printf("wrote %s", output);
	if (isfinite(job_num(result, "scale", NAN)))
		printf(" (%s of %.0fx%.0f, %s)", crop ? "a region" : "all",
		       job_num(result, "width", 0),
		       job_num(result, "height", 0),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			   result, "resampled"))
			   ? "box-filtered from the next integer scale"
			   : "an exact evaluation on the finer grid");
	if (isfinite(psnr) && size >= 24)
		printf(" (PSNR %.2f dB against %s at %ux%u)", psnr, target,
		       png_be32(png + 16), png_be32(png + 20));
	else if (isfinite(psnr))
		printf(" (PSNR %.2f dB against %s)", psnr, target);
	putchar('\n');
}

static int cmd_infer_exec(struct client *cl, const struct cmd_entry *self,
			  int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "scale", required_argument, NULL, OPT_SCALE },
		{ "crop", required_argument, NULL, OPT_CROP },
		{ "force", no_argument, NULL, 'f' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *target = NULL, *png;
	const char *size_arg = NULL, *scale = NULL, *crop = NULL;
	cJSON *params, *result = NULL;
	uint8_t *data;
	size_t size;
	int c, rc, status, force = 0;

	while ((c = cmd_getopt(argc, argv, "fho:", opts)) != -1) {
		if (c == 'f')
			force = 1;
		else if (c == 'o')
			output = optarg;
		else if (c == OPT_TARGET)
			target = optarg;
		else if (c == OPT_SIZE)
			size_arg = optarg;
		else if (c == OPT_SCALE)
			scale = optarg;
		else if (c == OPT_CROP)
			crop = optarg;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(self, "name the model package "
					     "(.safetensors) to render");
	if (optind + 1 < argc)
		return cmd_usage_error(self, "one model at a time, not '%s'",
				       argv[optind + 1]);
	if (!output)
		return cmd_usage_error(self, "-o OUT.png is missing");
	if (size_arg && scale)
		return cmd_usage_error(self, "--size or --scale, not both");
	if (target && (size_arg || scale || crop))
		return cmd_usage_error(self, "--target measures the render at "
					     "the model's own size: leave out "
					     "--size, --scale and --crop");
	long scale_n = 0, wh[2], box[4];
	char *end = NULL;
	if (scale) {
		errno = 0;
		scale_n = strtol(scale, &end, 10);
		if (errno || end == scale || *end || scale_n < 1)
			return cmd_usage_error(self,
					       "--scale takes an integer "
					       "from 1, not '%s'",
					       scale);
	}
	if (size_arg && (parse_wh(size_arg, &wh[0], &wh[1], &end) || *end))
		return cmd_usage_error(self,
				       "--size takes WxH (e.g. 1920x1080), "
				       "not '%s'",
				       size_arg);
	if (crop && parse_crop(crop, box))
		return cmd_usage_error(self,
				       "--crop takes WxH+X+Y or X,Y,WxH (in "
				       "the render's pixels), not '%s'",
				       crop);
	if (!(params = cJSON_CreateObject()))
		return client_fail(cl, ERR_NOMEM, NULL);
	static const char *const wh_names[] = { "width", "height" };
	static const char *const crop_names[] = { "x", "y", "width", "height" };
	if ((scale &&
	     !cJSON_AddNumberToObject(params, "scale", (double)scale_n)) ||
	    (size_arg && add_box(params, "size", wh_names, wh, 2)) ||
	    (crop && add_box(params, "crop", crop_names, box, 4))) {
		cJSON_Delete(params);
		return client_fail(cl, ERR_NOMEM, NULL);
	}
	if ((status =
		 attach(params, "model", "safetensors", argv[optind], 0)) ||
	    (target && (status = attach(params, "target", "png", target, 1)))) {
		cJSON_Delete(params);
		return status;
	}
	if ((rc = client_call(cl, M_MODEL_RENDER, params, &result)) < 0)
		return client_fail(cl, rc, "model.render");

	png = job_str(result, "png", NULL);
	if (!png || base64_decode(png, strlen(png), &data, &size) < 0) {
		cJSON_Delete(result);
		client_warn("the daemon's answer holds no valid PNG");
		return CLIENT_EXIT_DAEMON;
	}
	status = client_write_file(output, data, size, force);
	if (status) {
		free(data);
		cJSON_Delete(result);
		return status;
	}

	if (cl->json)
		print_json(result, output);
	else
		print_text(result, output, target, crop, data, size);
	free(data);
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_infer_entry = {
	.name = "infer",
	.alias = "render",
	.args = "MODEL.safetensors -o OUT.png [--target IMG.png|IMG.jpg]\n"
		"       vkinrctl infer MODEL.safetensors -o OUT.png "
		"[--scale S | --size WxH] [--crop WxH+X+Y]",
	.summary = "render a model package to a PNG on the daemon's device",
	.help = "Options:\n"
		"  -o, --output OUT.png  where the rendered image goes "
		"(required)\n"
		"  --target IMG          also print the PSNR of the rendering "
		"against IMG (PNG, JPEG\n"
		"                        or WebP; one larger than the model's "
		"size, as after\n"
		"                        submit --max-side, is scaled down to "
		"it first)\n"
		"  --scale S             render S times the fitted size "
		"(an integer): every\n"
		"                        pixel an exact evaluation of the "
		"network\n"
		"  --size WxH            render at any size: the next integer "
		"scale, then\n"
		"                        box-filtered down to WxH\n"
		"  --crop WxH+X+Y        only that region of the render (its "
		"pixels; also\n"
		"                        X,Y,WxH)\n"
		"  -f, --force           replace OUT.png if it exists\n",
	.exec = cmd_infer_exec,
};
