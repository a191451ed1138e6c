/*
 * fit_task_files.c - a dataset task's results on disk (fit_task.c): each
 * image's OUT/NAME/ folder gets model.safetensors, recon.png and
 * metrics.ndjson, then result.json, the mark that it is done (or failed,
 * with the reason), each written to a temporary name and renamed.
 * OUT itself is checked first as every front end's output is (outfile.h).
 */
#include "front/fit_task_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "proto/errors.h"
#include "util/fileio.h"
#include "util/outfile.h"
#include "util/path.h"
#include "gpu/gpu.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "formats/safetensors.h"
#include "util/image.h"

/* ---------------------------------------------------------------- OUT */

/* OUT is made if missing (as vkinrd --fit --out makes its folder), then
 * opened by the walk from '/' that outfile.h describes: with no folder
 * above it that another user owns or may write to (a sticky one aside),
 * and OUT itself this user's, writable by nobody else, the paths built
 * below it (OUT/NAME/...) mean what they say for the whole task. */
int fit_task_check_out(const char *out)
{
	char err[1024] = "";
	const char *base;
	int dfd = -1, rc;
	if (mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "vkinrd: cannot create %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	char *probe = path_join(out, "result.json"); /* any name in OUT */
	rc = probe ? outfile_open_folder(probe, &dfd, &base, err, sizeof(err))
		   : OUTFILE_FAILED;
	if (rc)
		fprintf(stderr, "vkinrd: --out %s: %s\n", out,
			probe ? err : "out of memory");
	if (dfd >= 0)
		close(dfd);
	free(probe);
	return rc ? 1 : 0;
}

/* ------------------------------------------------------------ results */

static int write_json(const char *dir, const char *file, cJSON *value)
{
	char *text = cJSON_PrintUnformatted(value),
	     *path = path_join(dir, file);
	int rc = text && path ? 0 : ERR_NOMEM;
	if (rc == 0) {
		size_t n = strlen(text);
		text[n] = '\n'; /* over the NUL: one line, newline-ended */
		rc = fileio_write_atomic(path, text, n + 1, 0644);
	}
	free(text);
	free(path);
	return rc;
}

/* Whether OUT/NAME/result.json says done with these settings. */
int fit_task_already_done(const struct task *t, const char *dir)
{
	char *path = path_join(dir, "result.json");
	uint8_t *data = NULL;
	size_t size;
	int done = 0;
	if (path && fileio_read(path, &data, &size, 1 << 20) == 0) {
		cJSON *r = cJSON_Parse((const char *)data);
		const cJSON *state =
		    cJSON_GetObjectItemCaseSensitive(r, "state");
		const cJSON *settings =
		    cJSON_GetObjectItemCaseSensitive(r, "settings");
		done = cJSON_IsString(state) &&
		       !strcmp(state->valuestring, "done") &&
		       cJSON_IsString(settings) &&
		       !strcmp(settings->valuestring, t->settings);
		cJSON_Delete(r);
	}
	free(data);
	free(path);
	return done;
}

static cJSON *result_base(const char *name, const char *file, const char *state)
{
	cJSON *r = cJSON_CreateObject();
	const char *job = getenv("SLURM_ARRAY_JOB_ID"),
		   *task = getenv("SLURM_ARRAY_TASK_ID");
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddStringToObject(r, "file", file);
	cJSON_AddStringToObject(r, "state", state);
	if (job && task) {
		char id[64];
		snprintf(id, sizeof(id), "%s_%s", job, task);
		cJSON_AddStringToObject(r, "slurm_job", id);
	}
	return r;
}

void fit_task_record_failure(struct task *t, const char *dir, const char *name,
			     const char *file, const char *why)
{
	cJSON *r = result_base(name, file, "failed");
	cJSON_AddStringToObject(r, "error", why);
	cJSON_AddStringToObject(r, "settings", t->settings);
	if (write_json(dir, "result.json", r))
		fprintf(stderr, "vkinrd: %s: cannot write result.json\n", dir);
	cJSON_Delete(r);
	fprintf(stderr, "vkinrd: %s: failed: %s\n", file, why);
	t->failed++;
}

/* metrics.ndjson: every epoch of the fit, resumed runs included. */
static int write_metrics(const char *dir, struct nn_fit *fit)
{
	int n;
	const struct nn_metrics *h = nn_fit_history(fit, &n);
	size_t cap = (size_t)n * 160 + 1, used = 0;
	char *text = malloc(cap), *path = path_join(dir, "metrics.ndjson");
	int rc = text && path ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++)
		used += (size_t)snprintf(
		    text + used, cap - used,
		    "{\"epoch\":%d,\"mse\":%.17g,\"psnr\":%.6f,"
		    "\"lr\":%.9g,\"ms\":%.3f,\"psnr_best\":%.6f}\n",
		    h[i].epoch, h[i].mse, h[i].psnr, h[i].lr, h[i].ms,
		    h[i].psnr_best);
	if (rc == 0)
		rc = fileio_write_atomic(path, text, used, 0644);
	free(text);
	free(path);
	return rc;
}

int fit_task_write_result(struct task *t, const char *dir, const char *name,
			  const char *file, struct nn_fit *fit,
			  const struct image *target, int resumed_from,
			  struct nn_export *ex)
{
	double psnr = 0, seconds = 0;
	char *model_path = path_join(dir, "model.safetensors");
	char *recon_path = path_join(dir, "recon.png");
	int n, rc = model_path && recon_path ? 0 : ERR_NOMEM;
	const struct nn_metrics *h = nn_fit_history(fit, &n);

	if (ex && (rc || ex->rc)) { /* made, not to be written */
		st_destroy(ex->model);
		image_destroy(ex->recon);
		rc = rc ? rc : ex->rc;
	} else if (ex) {
		psnr = ex->psnr;
		rc = nn_export_save(ex->model, ex->recon, model_path,
				    recon_path, 0644, NULL);
	} else if (rc == 0) {
		rc = nn_fit_save_export(fit, model_path, recon_path, 0644,
					&psnr, NULL);
	}
	rc = rc ? rc : write_metrics(dir, fit);
	for (int i = 0; i < n; i++)
		seconds += h[i].ms / 1000;
	if (rc == 0) {
		cJSON *r = result_base(name, file, "done");
		cJSON_AddNumberToObject(r, "width", target->width);
		cJSON_AddNumberToObject(r, "height", target->height);
		cJSON_AddNumberToObject(r, "epochs", nn_fit_epoch(fit));
		cJSON_AddNumberToObject(r, "psnr", psnr);
		cJSON_AddNumberToObject(r, "seconds", seconds);
		cJSON_AddStringToObject(r, "device", gpu_info(t->gpu)->name);
		cJSON_AddNumberToObject(r, "net_width", nn_fit_config(fit)->nf);
		cJSON_AddNumberToObject(r, "resumed_from", resumed_from);
		cJSON_AddStringToObject(r, "settings", t->settings);
		rc = write_json(dir, "result.json", r);
		cJSON_Delete(r);
	}
	free(model_path);
	free(recon_path);
	if (rc == 0 && !t->quiet)
		fprintf(stderr,
			"vkinrd: %s: done, %d epochs, PSNR %.2f dB "
			"(%.1f s)\n",
			name, nn_fit_epoch(fit), psnr, seconds);
	return rc;
}
