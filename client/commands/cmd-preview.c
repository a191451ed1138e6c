/*
 * cmd-preview.c - `vkinrctl preview`: a job's current reconstruction, on
 * the terminal as `make demo` shows it (image_print_blocks: two pixel rows
 * a character, 24-bit colour), or into a PNG file (--png, written through
 * client_write_file).
 *
 * job.export gives the reconstruction of a running job from its current
 * weights (the device renders it, in turn with the jobs), and a finished
 * job's as exported.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/base64.h"
#include "core/client.h"
#include "proto/errors.h"
#include "core/format.h"
#include "pictures/png8.h"
#include "core/jobs.h"
#include "proto/protocol.h"

enum { OPT_PNG = OPT_FIRST_COMMAND_OPTION };

#define PREVIEW_COLUMNS 64 /* when stdout is not a terminal */

static int show(struct client *cl, const cJSON *id, const uint8_t *png,
		size_t size, double psnr, int cols)
{
	struct image *img = NULL;
	char err[256], text[64], num[32];

	if (png8_decode(png, size, &img, err, sizeof(err)) < 0) {
		client_warn("the daemon's reconstruction: %s", err);
		return CLIENT_EXIT_DAEMON;
	}
	image_print_blocks(stdout, (const struct image *const *)&img, 1, cols);
	printf("job %s: %dx%d, PSNR %s dB\n",
	       job_id_text(id, text, sizeof(text)), img->width, img->height,
	       fmt_number("%.2f", psnr, num, sizeof(num)));
	image_destroy(img);
	return CLIENT_EXIT_OK;
}

static int cmd_preview_exec(struct client *cl, const struct cmd_entry *self,
			    int argc, char **argv)
{
	static const struct option opts[] = {
		{ "png", required_argument, NULL, OPT_PNG },
		{ "width", required_argument, NULL, 'w' },
		{ "force", no_argument, NULL, 'f' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *png_path = NULL, *b64;
	cJSON *ids = NULL, *result = NULL;
	const cJSON *id;
	uint8_t *png = NULL;
	size_t size;
	int c, rc, force = 0, status, cols = 0;
	char text[64], what[96];

	while ((c = cmd_getopt(argc, argv, "fhw:", opts)) != -1) {
		if (c == OPT_PNG)
			png_path = optarg;
		else if (c == 'f')
			force = 1;
		else if (c == 'w' && (cols = atoi(optarg)) < 4)
			return cmd_usage_error(self,
					       "--width takes at least 4 "
					       "columns, not '%s'",
					       optarg);
		else if (c != 'w' && (rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, "name one job");
	if (png_path && (status = client_may_write(png_path, force)))
		return status;
	if ((rc = jobs_resolve(cl, argv + optind, 1, &ids)) < 0)
		return client_fail(cl, rc, NULL);
	id = cJSON_GetArrayItem(ids, 0);
	snprintf(what, sizeof(what), "preview job %s",
		 job_id_text(id, text, sizeof(text)));
	if ((rc = client_call(cl, M_JOB_EXPORT, job_params(id), &result)) < 0) {
		cJSON_Delete(ids);
		return client_fail(cl, rc, what);
	}
	b64 = job_str(cJSON_GetObjectItemCaseSensitive(result, "recon"), "png",
		      NULL);
	if (!b64 || base64_decode(b64, strlen(b64), &png, &size) < 0) {
		client_warn("%s: the daemon's answer holds no valid PNG", what);
		status = CLIENT_EXIT_DAEMON;
	} else if (png_path) {
		status = client_write_file(png_path, png, size, force);
		if (status == CLIENT_EXIT_OK && cl->json) {
			cJSON *out = cJSON_CreateObject();
			cJSON *files = cJSON_AddArrayToObject(out, "files");
			cJSON_AddItemToArray(files,
					     cJSON_CreateString(png_path));
			cJSON_AddStringToObject(out, "job", text);
			client_print_json(out);
			cJSON_Delete(out);
		} else if (status == CLIENT_EXIT_OK) {
			client_say(cl, "wrote %s\n", png_path);
		}
	} else {
		if (!cols)
			cols = fmt_terminal_columns(STDOUT_FILENO) > 8
				   ? fmt_terminal_columns(STDOUT_FILENO) - 2
				   : PREVIEW_COLUMNS;
		status =
		    show(cl, id, png, size, job_num(result, "psnr", NAN), cols);
	}
	free(png);
	cJSON_Delete(result);
	cJSON_Delete(ids);
	return status;
}

const struct cmd_entry cmd_preview_entry = {
	.name = "preview",
	.alias = NULL,
	.args = "ID [--png FILE] [--width COLS]",
	.summary = "show a job's current reconstruction",
	.help = "On the terminal (24-bit colour, two pixel rows a character, "
		"scaled down to\nthe terminal's width or --width), or into a "
		"PNG file with --png. A running\njob is rendered from its "
		"current weights.\n"
		"\n"
		"Options:\n"
		"  --png FILE       write the reconstruction there instead\n"
		"  -w, --width N    columns to scale to\n"
		"  -f, --force      replace FILE if it exists\n",
	.exec = cmd_preview_exec,
};
