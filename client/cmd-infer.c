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
#include "client.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "util/image.h"
#include "jobs.h"
#include "proto/protocol.h"

enum { OPT_TARGET = OPT_FIRST_COMMAND_OPTION };

#define INFER_MAX_FILE ((size_t)LIMIT_LINE_BYTES / 4 * 3)

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
 * An image (want_image) is a PNG or a JPEG, as job.submit takes, and field
 * is then "png" or "jpeg" after what the file holds.
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
	else if (want_image && !png_has_signature(data, size)) {
		free(data);
		client_warn("%s: not a PNG or JPEG image", path);
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

static int cmd_infer_exec(struct client *cl, const struct cmd_entry *self,
			  int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "force", no_argument, NULL, 'f' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL, *target = NULL, *png;
	cJSON *params, *result = NULL;
	uint8_t *data;
	size_t size;
	double psnr;
	int c, rc, status, force = 0;

	while ((c = cmd_getopt(argc, argv, "fho:", opts)) != -1) {
		if (c == 'f')
			force = 1;
		else if (c == 'o')
			output = optarg;
		else if (c == OPT_TARGET)
			target = optarg;
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
	if ((status = client_may_write(output, force)))
		return status;

	if (!(params = cJSON_CreateObject()))
		return client_fail(cl, ERR_NOMEM, NULL);
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
	free(data);
	if (status) {
		cJSON_Delete(result);
		return status;
	}

	psnr = job_num(result, "psnr", NAN);
	if (cl->json) {
		cJSON *out = cJSON_CreateObject();
		cJSON_AddStringToObject(out, "png", output);
		if (isfinite(psnr))
			cJSON_AddNumberToObject(out, "psnr", psnr);
		client_print_json(out);
		cJSON_Delete(out);
	} else {
		printf("wrote %s", output);
		if (isfinite(psnr))
			printf(" (PSNR %.2f dB against %s)", psnr, target);
		putchar('\n');
	}
	cJSON_Delete(result);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_infer_entry = {
	.name = "infer",
	.alias = "render",
	.args = "MODEL.safetensors -o OUT.png [--target IMG.png|IMG.jpg]",
	.summary = "render a model package to a PNG on the daemon's device",
	.help = "Options:\n"
		"  -o, --output OUT.png  where the rendered image goes "
		"(required)\n"
		"  --target IMG          also print the PSNR of the rendering "
		"against IMG (PNG or JPEG)\n"
		"  -f, --force           replace OUT.png if it exists\n",
	.exec = cmd_infer_exec,
};
