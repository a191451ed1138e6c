/*
 * history.h - a job's whole metrics history, one row an epoch, as the
 * daemon keeps it: what `metrics`, `plot` and (for the title) `preview`
 * read.
 */
#ifndef VKINR_CLIENT_HISTORY_H
#define VKINR_CLIENT_HISTORY_H

#include <cjson/cJSON.h>

struct client;

/* psnr: the model's after the epoch, the weights an export writes
 * (job.progress's psnr_best; the epoch's own before a daemon kept one);
 * live_psnr: the epoch's own, measured before its step. */
struct history_row {
	int epoch;
	double psnr, live_psnr, mse, lr, ms;
	double seconds; /* training time up to this epoch (the ms summed) */
	double time;    /* the wall clock's when the daemon recorded it (Unix
			 * seconds); NAN for an epoch kept before that */
};

struct history {
	char idtext[64];
	char name[128];
	/* the job's PSNR as show and list give it (the exported model's once
	 * done); NAN when it has none */
	double psnr;
	/* whether the job had ended (done, failed or cancelled) when read:
	 * its PSNR no longer changes after its last epoch */
	int ended;
	struct history_row *rows;
	int n, cap;
};

/*
 * Reads a job's history: job.subscribe replays every epoch the job has
 * ("replay" of them), then job.unsubscribe. Returns 0 with *out filled
 * (history_finish frees it), or a negative code for client_fail.
 */
int history_fetch(struct client *cl, const cJSON *id, struct history *out);
void history_finish(struct history *h);

#endif
