/*
 * fit_out.c - the foreground fits' outputs and stop signals (fit_out.h).
 *
 * The export is nn_fit_export's, encoded here and handed to
 * outfile_write rather than written by nn_fit_save_export (the daemon's
 * way, into its own state folder): the files a user names may lie in a
 * folder others share, and an existing one is replaced only with --force.
 *
 * The first SIGINT or SIGTERM only sets a flag, which the training loops
 * read between two epochs; the handler says so on stderr (write(2), all
 * a handler may do), since an epoch of a large image can take a while. A
 * second one restores the default action and raises it: the process ends
 * at once, killed by it, as a shell expects of ^C twice.
 */
#include "front/fit_out.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/image_codec.h"
#include "formats/safetensors.h"
#include "nn/package.h"
#include "proto/errors.h"

/* Encoded bytes (or a failed encoding, code) written to path. */
static int write_encoded(const char *path, int code, const uint8_t *bytes,
			 size_t size, int mode, int force, char *err,
			 size_t errlen)
{
	if (code) {
		snprintf(err, errlen, "cannot write %s: %s", path,
			 error_message(code));
		return OUTFILE_FAILED;
	}
	return outfile_write(path, bytes, size, mode, force, err, errlen);
}

int fit_out_export(struct nn_fit *fit, const char *model_path,
		   const char *recon_path, int force, double *psnr, char *err,
		   size_t errlen)
{
	struct st_file *model = NULL;
	struct image *recon = NULL;
	int rc = nn_fit_export(fit, model_path ? &model : NULL,
			       recon_path ? &recon : NULL, psnr);
	if (rc) {
		snprintf(err, errlen, "cannot export the fit: %s",
			 error_message(rc));
		return OUTFILE_FAILED;
	}
	return fit_out_write(model, recon, model_path, recon_path, force, err,
			     errlen);
}

int fit_out_write(struct st_file *model, struct image *recon,
		  const char *model_path, const char *recon_path, int force,
		  char *err, size_t errlen)
{
	uint8_t *bytes = NULL;
	size_t size = 0;
	int model_new = 0, rc = 0;
	if (model) {
		model_new = outfile_check(model_path, 0, NULL, 0) == 0;
		rc = st_encode(model, &bytes, &size);
		/* a result, as the reconstruction and vkinrctl export's
		 * package are (0644 less the umask); checkpoints stay 0600 */
		rc = write_encoded(model_path, rc, bytes, size, 0644, force,
				   err, errlen);
		free(bytes);
		bytes = NULL;
	}
	if (rc == 0 && recon) {
		rc = png_encode(recon, &bytes, &size);
		rc = write_encoded(recon_path, rc, bytes, size, 0644, force,
				   err, errlen);
		if (rc && model_new) /* half an export is not left behind */
			unlink(model_path);
	}
	free(bytes);
	st_destroy(model);
	image_destroy(recon);
	return rc;
}

int fit_out_checkpoint(struct nn_fit *fit, const char *path, int force,
		       char *err, size_t errlen)
{
	struct st_file *ck = NULL;
	uint8_t *bytes = NULL;
	size_t size = 0;
	int rc = nn_fit_checkpoint(fit, &ck);
	rc = rc ? rc : st_encode(ck, &bytes, &size);
	rc = write_encoded(path, rc, bytes, size, 0600, force, err, errlen);
	free(bytes);
	st_destroy(ck);
	return rc;
}

/* ------------------------------------------------------------ signals */

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
	static const char first[] =
	    "\nvkinrd: stopping at the end of this epoch to write what it "
	    "has (again to abort at once)\n";
	if (stopped) { /* killed by it, as if never caught */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		signal(sig, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	stopped = sig;
	ssize_t put = write(STDERR_FILENO, first, sizeof(first) - 1);
	(void)put;
}

void fit_out_catch_stops(void)
{
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int fit_out_stopped(void) { return (int)stopped; }

const char *fit_out_signal_name(int sig)
{
	return sig == SIGINT    ? "SIGINT"
	       : sig == SIGTERM ? "SIGTERM"
				: "a signal";
}
