/*
 * cmd-export.c - `vkinrctl export`: fetch a job's model package and its
 * reconstruction, and write them here.
 *
 * job.export answers with both files in base64 on one line, tens of MB for
 * a large image; conn.c reads such lines whole. Each file is decoded and
 * written through client_write_file (a temporary file in the target folder,
 * renamed into place), so an interrupted export never leaves a torn file,
 * a link planted under the name is never followed, and nothing that exists
 * is replaced without --force: both names are checked before the job is
 * fetched, so a refused export writes nothing.
 *
 * The names can never be an input's: NAME.safetensors and NAME.recon.png
 * after the job's name (an image is a .png, never a .recon.png unless it
 * is itself an export). One job: --model and --recon may name the files.
 * Several jobs or a batch: the files go into one folder (--dir, by default
 * named after the batch), created when missing; names that would collide
 * get the job id appended.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/base64.h"
#include "core/client.h"
#include "commands/cmd-export-stack.h"
#include "proto/errors.h"
#include "util/fileio.h"
#include "core/jobs.h"
#include "proto/protocol.h"

enum { OPT_MODEL = OPT_FIRST_COMMAND_OPTION, OPT_RECON, OPT_DIR, OPT_STACK };

/* Decodes result.<key>.<field> and writes it to path. */
static int write_part(const cJSON *result, const char *key, const char *field,
		      const char *path, int force)
{
	const cJSON *part = cJSON_GetObjectItemCaseSensitive(result, key);
	const char *b64 = job_str(part, field, NULL);
	uint8_t *data;
	size_t size;
	int rc;

	if (!b64) {
		client_warn("the daemon's export has no %s.%s", key, field);
		return CLIENT_EXIT_DAEMON;
	}
	if ((rc = base64_decode(b64, strlen(b64), &data, &size)) < 0) {
		client_warn("the daemon's %s is not valid base64", key);
		return CLIENT_EXIT_DAEMON;
	}
	rc = client_write_file(path, data, size, force);
	free(data);
	return rc;
}

/* A job's name made safe as a file name: no '/', no leading dot, no
 * control character or escape (the name may be another user's). */
static void file_stem(const char *name, const char *idtext, char *buf, size_t n)
{
	if (!name || !*name)
		snprintf(buf, n, "job-%s", idtext);
	else
		snprintf(buf, n, "%s", name);
	for (char *p = buf; *p; p++)
		if (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20 ||
		    *p == 0x7f || (p == buf && *p == '.'))
			*p = '_';
}

/* Exports one job to model_path and recon_path; adds to out (JSON). */
static int export_one(struct client *cl, const cJSON *id,
		      const char *model_path, const char *recon_path, int force,
		      cJSON *out)
{
	cJSON *result = NULL, *entry;
	char text[128], what[160];
	double psnr;
	int rc;

	if ((rc = client_may_write(model_path, force)) ||
	    (rc = client_may_write(recon_path, force)))
		return rc;
	job_id_text(id, text, sizeof(text));
	snprintf(what, sizeof(what), "export job %s", text);
	if ((rc = client_call(cl, M_JOB_EXPORT, job_params(id), &result)) < 0)
		return client_fail(cl, rc, what);
	struct stat st;
	int model_new = lstat(model_path, &st) < 0;
	if ((rc = write_part(result, "model", "safetensors", model_path,
			     force))) {
		cJSON_Delete(result);
		return rc;
	}
	if ((rc = write_part(result, "recon", "png", recon_path, force))) {
		if (model_new) /* half an export is not left behind */
			unlink(model_path);
		cJSON_Delete(result);
		return rc;
	}
	psnr = job_num(result, "psnr", NAN);
	if (cl->json && (entry = cJSON_CreateObject())) {
		cJSON_AddItemToObject(entry, "job", cJSON_Duplicate(id, 1));
		cJSON_AddStringToObject(entry, "model", model_path);
		cJSON_AddStringToObject(entry, "recon", recon_path);
		if (isfinite(psnr))
			cJSON_AddNumberToObject(entry, "psnr", psnr);
		cJSON_AddItemToArray(out, entry);
	} else if (!cl->json) {
		client_say(cl, "job %s: wrote %s and %s", text, model_path,
			   recon_path);
		if (isfinite(psnr))
			printf(" (PSNR %.2f dB)", psnr);
		putchar('\n');
	}
	cJSON_Delete(result);
	return 0;
}

/* The job's name, for default file names (NULL when it has none). */
static char *name_of(struct client *cl, const cJSON *id, int *rc)
{
	cJSON *job = NULL;
	char *name = NULL, text[128], what[160];

	*rc = client_call(cl, M_JOB_GET, job_params(id), &job);
	if (*rc < 0) {
		snprintf(what, sizeof(what), "job %s",
			 job_id_text(id, text, sizeof(text)));
		*rc = client_fail(cl, *rc, what);
		return NULL;
	}
	if (job_str(job, "name", NULL))
		name = strdup(job_str(job, "name", ""));
	cJSON_Delete(job);
	return name;
}

/* Whether one of the first n stems is stem already. */
static int stem_taken(char **stems, int n, const char *stem)
{
	for (int i = 0; i < n; i++)
		if (stems[i] && !strcmp(stems[i], stem))
			return 1;
	return 0;
}

static int export_many(struct client *cl, const cJSON *ids, const char *dir,
		       int force, cJSON *out)
{
	int n = cJSON_GetArraySize(ids), i = 0, rc = 0, status = 0;
	char **stems = calloc(n, sizeof(*stems));
	const cJSON *id;

	if (!stems)
		return client_fail(cl, ERR_NOMEM, NULL);
	struct stat st;

	if ((mkdir(dir, 0755) < 0 && errno != EEXIST) ||
	    (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) &&
	     (errno = ENOTDIR))) {
		client_warn("cannot create the folder %s: %s", dir,
			    strerror(errno));
		free(stems);
		return CLIENT_EXIT_DAEMON;
	}
	cJSON_ArrayForEach(id, ids)
	{
		char text[128], stem[256], *model = NULL, *recon = NULL;
		char *name = name_of(cl, id, &rc);
		if (rc == CLIENT_EXIT_UNREACHABLE) {
			status = rc;
			break;
		}
		job_id_text(id, text, sizeof(text));
		file_stem(name, text, stem, sizeof(stem));
		free(name);
		if (stem_taken(stems, i, stem)) {
			size_t k = strlen(stem);
			snprintf(stem + k, sizeof(stem) - k, "-%s", text);
		}
		stems[i++] = strdup(stem);
		/* "fitted/" as given: one slash between, not two */
		const char *sep =
		    dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
		if (asprintf(&model, "%s%s%s.safetensors", dir, sep, stem) <
			0 ||
		    asprintf(&recon, "%s%s%s.recon.png", dir, sep, stem) < 0) {
			status = client_fail(cl, ERR_NOMEM, NULL);
			break;
		}
		rc = export_one(cl, id, model, recon, force, out);
		free(model);
		free(recon);
		if (rc)
			status = rc;
		if (rc == CLIENT_EXIT_UNREACHABLE)
			break;
	}
	for (int k = 0; k < n; k++)
		free(stems[k]);
	free(stems);
	return status;
}

static int cmd_export_exec(struct client *cl, const struct cmd_entry *self,
			   int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "recon", required_argument, NULL, OPT_RECON },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "stack", required_argument, NULL, OPT_STACK },
		{ "force", no_argument, NULL, 'f' },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *model = NULL, *recon = NULL, *dir = NULL, *stack = NULL;
	char *model_dflt = NULL, *recon_dflt = NULL;
	cJSON *ids = NULL, *out = NULL;
	int c, rc, status, force = 0;

	while ((c = cmd_getopt(argc, argv, "fho:", opts)) != -1) {
		if (c == 'f')
			force = 1;
		else if (c == OPT_MODEL)
			model = optarg;
		else if (c == OPT_RECON)
			recon = optarg;
		else if (c == OPT_DIR || c == 'o')
			dir = optarg;
		else if (c == OPT_STACK)
			stack = optarg;
		else if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(self,
				       "name the job (or batch) to export");
	if (stack && (model || recon || dir))
		return cmd_usage_error(self,
				       "--stack writes one file of every "
				       "network: not with --model, --recon "
				       "or --dir");
	if ((rc = jobs_resolve(cl, argv + optind, argc - optind, &ids)) < 0)
		return client_fail(cl, rc, NULL);
	if (stack) {
		cJSON *obj = cl->json ? cJSON_CreateObject() : NULL;
		status = export_stack(cl, ids, stack, force, obj);
		if (obj && status == 0)
			client_print_json(obj);
		cJSON_Delete(obj);
		cJSON_Delete(ids);
		return status;
	}
	out = cJSON_CreateArray();

	if (cJSON_GetArraySize(ids) > 1 || dir) {
		if (model || recon) {
			cJSON_Delete(ids);
			cJSON_Delete(out);
			return cmd_usage_error(self, "--model and --recon name "
						     "one job's files; for "
						     "several, use --dir");
		}
		status =
		    export_many(cl, ids, dir ? dir : argv[optind], force, out);
	} else {
		const cJSON *id = cJSON_GetArrayItem(ids, 0);
		char text[128], stem[256], *name = NULL;
		status = 0;
		if (!model || !recon) {
			name = name_of(cl, id, &status);
			file_stem(name, job_id_text(id, text, sizeof(text)),
				  stem, sizeof(stem));
			free(name);
			if (asprintf(&model_dflt, "%s.safetensors", stem) < 0 ||
			    asprintf(&recon_dflt, "%s.recon.png", stem) < 0)
				status = client_fail(cl, ERR_NOMEM, NULL);
		}
		if (status == 0)
			status =
			    export_one(cl, id, model ? model : model_dflt,
				       recon ? recon : recon_dflt, force, out);
	}
	if (cl->json && cJSON_GetArraySize(out) > 0) {
		cJSON *obj;
		if (cJSON_GetArraySize(ids) == 1 && !dir) {
			obj = cJSON_DetachItemFromArray(out, 0);
		} else {
			obj = cJSON_CreateObject();
			if (obj) {
				cJSON_AddStringToObject(
				    obj, "dir", dir ? dir : argv[optind]);
				cJSON_AddItemReferenceToObject(obj, "jobs",
							       out);
			}
		}
		client_print_json(obj);
		cJSON_Delete(obj);
	}
	free(model_dflt);
	free(recon_dflt);
	cJSON_Delete(out);
	cJSON_Delete(ids);
	return status;
}

const struct cmd_entry cmd_export_entry = {
	.name = "export",
	.alias = NULL,
	.args = "ID [--model OUT.safetensors] [--recon OUT.png]\n"
		"       vkinrctl export BATCH|ID... [--dir DIR]\n"
		"       vkinrctl export BATCH|ID... --stack FILE.safetensors",
	.summary = "write a job's model package and reconstruction here",
	.help = "One job: the model package goes to --model (default "
		"NAME.safetensors) and\nthe reconstructed image to --recon "
		"(default NAME.recon.png), NAME being the\njob's name. "
		"Several jobs or a batch: NAME.safetensors and NAME.recon.png "
		"of each\njob go into the folder --dir (default: named after "
		"the batch id). Files are\nwritten atomically and never "
		"replace an existing file (or follow a link)\nunless --force "
		"is given.\n"
		"--stack: every network in one file, each tensor with a "
		"leading job\ndimension, and the jobs' ids, names, sources "
		"and PSNRs in its metadata (a\nweight-space dataset; "
		"docs/MODEL.md); the networks must share one shape.\n"
		"\n"
		"Options:\n"
		"  --model PATH     where the .safetensors model package goes\n"
		"  --recon PATH     where the reconstruction (PNG) goes\n"
		"  -o, --dir DIR    the folder for several jobs\n"
		"  --stack FILE     every network in one .safetensors file\n"
		"  -f, --force      replace files that exist\n",
	.exec = cmd_export_exec,
};
