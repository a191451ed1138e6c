/*
 * jobfiles.h - a job's folder on disk: the names of its files, the id that
 * names the folder, and how each file is written, read back and repaired.
 *
 * STATE_DIR/jobs/ID/ holds (all 0600 in a 0700 folder):
 *   request.json            the parameters as submitted (written once)
 *   state.json              state, times, device, error (rewritten atomically)
 *   target.png              the image as decoded, as a plain PNG
 *   init.safetensors        the starting model, when one was given
 *   metrics.ndjson          one line per finished epoch, appended
 *   events.ndjson           one line per job event, appended (events.h)
 *   after.json              the jobs it waits for, and which are done
 *                           (loop/after.h; only when it waits for some)
 *   checkpoint.safetensors  written by the worker (atomically)
 *   model.safetensors, recon.png   written by the worker when the job is done
 *
 * Every whole file goes through fileio_write_atomic (a link planted at a
 * file's name is replaced, never followed). metrics.ndjson is appended one
 * whole line per write(2) while the job runs; a short write is cut off
 * again, and on reload a torn last line is dropped and the caller rewrites
 * the file. Reading back checks what a crash or a hand could have left:
 * the folder must be a real folder of the daemon's user holding regular
 * files only, and a write that kill -9 interrupted (NAME.tmp.DIGITS) is
 * removed.
 *
 * Knows job folders by id alone: no job records, no states (queue.c keeps
 * those). Loop thread, except jobfiles_path, which any thread may call.
 */
#ifndef VKINR_JOBFILES_H
#define VKINR_JOBFILES_H

#include <stddef.h>
#include <stdint.h>

/* cJSON by its struct name: worker.h includes this for the names and
 * JOB_ID_MAX, and the worker stays free of JSON */
struct cJSON;

#include "nn/fit.h"

#define JOBFILE_REQUEST "request.json"
#define JOBFILE_STATE "state.json"
#define JOBFILE_TARGET "target.png"
#define JOBFILE_INIT "init.safetensors"
#define JOBFILE_METRICS "metrics.ndjson"
#define JOBFILE_EVENTS "events.ndjson"
#define JOBFILE_AFTER "after.json"
#define JOBFILE_CHECKPOINT "checkpoint.safetensors"
#define JOBFILE_MODEL "model.safetensors"
#define JOBFILE_RECON "recon.png"

/* A job id is its number in decimal ("1", "2", ... never reused); this
 * many bytes hold one with its NUL. */
#define JOB_ID_MAX 17
/* The largest job number: 2^53 - 1, the largest a client can send as a
 * JSON number exactly (and 16 digits, so an id fits JOB_ID_MAX). */
#define JOB_NUMBER_MAX 9007199254740991ull
/* The number a job folder's name (or next-id's text) holds: decimal
 * digits, no sign, no leading zero, 1 to JOB_NUMBER_MAX; 0 for anything
 * else, which is no job of this daemon's. len: the name's bytes. */
unsigned long long jobfiles_number(const char *name, size_t len);

/* JOBS_DIR/ID/FILE (FILE NULL: the folder) into buf; ERR_TOO_LARGE when
 * it does not fit. */
int jobfiles_path(const char *jobs_dir, const char *id, const char *file,
		  char *buf, size_t len);

/* Creates the folder (0700). 0, or ERR_IO / ERR_NO_SPACE with errno
 * (EEXIST: the folder is there already). */
int jobfiles_make_folder(const char *jobs_dir, const char *id);
/* Removes the folder and everything in it, never following a link (a link
 * in its place is removed, not what it names). */
void jobfiles_remove_folder(const char *jobs_dir, const char *id);

/* Writes a whole file atomically (0600). 0 or a negative error code. */
int jobfiles_write(const char *jobs_dir, const char *id, const char *file,
		   const void *data, size_t size);
/* Writes obj as the file's text, atomically; obj is deleted (ownership
 * passes), NULL counts as out of memory. */
int jobfiles_write_json(const char *jobs_dir, const char *id, const char *file,
			struct cJSON *obj);
/* Reads a JSON file back; NULL with errno ENOENT when it is missing,
 * EINVAL when it is not JSON. */
struct cJSON *jobfiles_read_json(const char *jobs_dir, const char *id,
				 const char *file);
/* Whether the file exists (as anything: a link counts). */
int jobfiles_exists(const char *jobs_dir, const char *id, const char *file);

/*
 * The checks at start. check_folder: the folder is a folder (not a link)
 * of the daemon's uid holding regular files only; -1 with a sentence in
 * why otherwise, *can_save saying whether state.json may still be written.
 * check_inputs: target.png (and init.safetensors when has_init) are there
 * and not empty. remove_interrupted_writes: deletes NAME.tmp.DIGITS, what
 * fileio_write_atomic leaves when a crash interrupts it (the file it was
 * replacing is intact); only at start, when no write can be in flight.
 */
int jobfiles_check_folder(const char *jobs_dir, const char *id, int *can_save,
			  char *why, size_t whylen);
int jobfiles_check_inputs(const char *jobs_dir, const char *id, int has_init,
			  char *why, size_t whylen);
void jobfiles_remove_interrupted_writes(const char *jobs_dir, const char *id);

/* The epoch a checkpoint was taken at (its "epoch" metadata), 0 when the
 * job has none, -1 when it cannot be read (logged). */
int jobfiles_checkpoint_epoch(const char *jobs_dir, const char *id);

/* ---- metrics.ndjson ---- */

/* A line holds an epoch's metrics and "time", the Unix time the daemon
 * recorded it (left out when 0: an epoch kept before it was recorded). */

/* Rewrites the whole history atomically; time: one an epoch. */
int jobfiles_metrics_rewrite(const char *jobs_dir, const char *id,
			     const struct nn_metrics *hist, const double *time,
			     int n);
/* Opens the file for appending (O_APPEND, never through a link); *fd. */
int jobfiles_metrics_open(const char *jobs_dir, const char *id, int *fd);
/* Appends one line in one write(2). On a short write the torn line is cut
 * off again; ERR_NO_SPACE or ERR_IO then, with errno. */
int jobfiles_metrics_append(int fd, const char *id, const struct nn_metrics *m,
			    double time);
/*
 * Reads the lines back in file order into *out and their times into
 * *times (both malloc'ed, *n of them, a time 0 where a line has none; a
 * missing file is none). *torn is set when the last line was cut short
 * (it is dropped). 0, or -1 with a sentence in why when a line other than
 * a torn last one is not an epoch's metrics or the file can't be read.
 */
int jobfiles_metrics_load(const char *jobs_dir, const char *id,
			  struct nn_metrics **out, double **times, int *n,
			  int *torn, char *why, size_t whylen);

#endif
