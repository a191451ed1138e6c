/*
 * fit_out.h - what the foreground fits (vkinrd --fit) leave behind: the
 * model package, the reconstruction and checkpoints, written by the rule
 * of util/outfile.h (nothing replaced without --force, no link followed,
 * no folder of another user's); and the stop signals, which end a run at
 * an epoch's end so that it can write what it has. See fit_out.c.
 */
#ifndef VKINR_FIT_OUT_H
#define VKINR_FIT_OUT_H

#include <stddef.h>

#include "util/outfile.h"

struct nn_fit;

/* The exit status of a run whose output was refused (as vkinrctl's). */
#define FIT_OUT_REFUSED_STATUS 3

/* The export (nn_fit_export) to model_path and recon_path (either NULL:
 * not written). 0, OUTFILE_REFUSED or OUTFILE_FAILED with the sentence in
 * err. A reconstruction that cannot be written takes the package just
 * written with it, when there was none before. */
int fit_out_export(struct nn_fit *fit, const char *model_path,
		   const char *recon_path, int force, double *psnr, char *err,
		   size_t errlen);
/* An export made already (model or recon NULL: not written), encoded and
 * written as fit_out_export does; takes (frees) model and recon. */
struct st_file;
struct image;
int fit_out_write(struct st_file *model, struct image *recon,
		  const char *model_path, const char *recon_path, int force,
		  char *err, size_t errlen);
/* A checkpoint of fit at path, by the same rule. */
int fit_out_checkpoint(struct nn_fit *fit, const char *path, int force,
		       char *err, size_t errlen);

/* SIGINT and SIGTERM from now on: the first is noted (fit_out_stopped
 * says which) and said on stderr at once; a second ends the process at
 * once, by that signal. */
void fit_out_catch_stops(void);
int fit_out_stopped(void);
/* "SIGINT", "SIGTERM" */
const char *fit_out_signal_name(int sig);

#endif
