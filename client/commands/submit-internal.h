/*
 * submit-internal.h - what `vkinrctl submit`'s two files share: the call's
 * state (struct submit), and the sending half (submit-send.c: reading the
 * images, naming the jobs, the requests and their answers) that the
 * command's half (cmd-submit.c: options, summary, following) drives.
 */
#ifndef VKINRCTL_SUBMIT_INTERNAL_H
#define VKINRCTL_SUBMIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/client.h"
#include "core/inputs.h"
#include "proto/protocol.h"

/* The largest file worth reading: base64 of it must fit in one line. */
#define SUBMIT_MAX_FILE ((size_t)LIMIT_LINE_BYTES / 4 * 3)

/* What one call submits: the job parameters and where the images are. */
struct submit {
	const struct cmd_entry *self;
	struct client *cl;
	cJSON *common;    /* epochs, width, lr, seed, priority, init, batch,
				target_psnr */
	const char *name; /* --name */
	int quiet;        /* -q */
	int follow;       /* OPT_WATCH, OPT_WAIT or 0 */

	/* the images, folders already expanded; refused inputs counted
	 * (nbad), a folder or a list named (expanded: a batch) */
	struct inputs in;
	int no_batch;    /* the daemon refused the batch parameter */
	int batch_tries; /* new ids chosen: another uid held the first */

	int skip_done;     /* --skip-done */
	const char *after; /* --after */
	/* {KEY: {"job","state","batch"}}: this user's jobs that cover an
	 * image (queued, running, paused or done) */
	cJSON *done_keys;
	int nskipped;
	cJSON *skipped; /* [{"file","job","state","batch"}] */

	cJSON *done;   /* [{"job","file","name","width","height"}] */
	cJSON *errors; /* [{"file","error"}] */
};

/* An input refused: said on stderr, counted, and in the JSON summary;
 * submit_note_refused only notes it (inputs.c says it itself). */
void submit_refuse(struct submit *s, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void submit_note_refused(void *ctx, const char *file, const char *why);
/* Reads a file whole; says why not (and returns NULL) when it can't. */
uint8_t *submit_read_file(struct submit *s, const char *path, size_t *size,
			  const char *what);
/* A new batch id: b + 6 hex digits (cmd-submit.c). */
void submit_new_batch_id(char *buf, size_t n);
/* Sends every image (the jobs numbered in their order). 0, or a
 * transport error. */
int submit_all(struct submit *s);

#endif
