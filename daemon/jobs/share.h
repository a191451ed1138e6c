/*
 * share.h - the order of the queue between users (share.c): the next job
 * comes from the uid with the fewest jobs running, then the least device
 * time lately, then the one that started a job longest ago; a user's
 * priority orders only that user's jobs; a priority above
 * SHARE_PRIORITY_USER_MAX goes first of all. queue.c keeps the accounts
 * (share_started, share_ran); loop thread only.
 */
#ifndef VKINR_SHARE_H
#define VKINR_SHARE_H

#include <sys/types.h>

struct queue;
struct job;
struct share;

/* Device time older than this counts half. */
#define SHARE_HALF_LIFE 600.0
/* The highest priority every user may give; above it, up to the table's
 * maximum (proto/params.h), only root and the daemon's own user. */
#define SHARE_PRIORITY_USER_MAX 100

/* The queued job to run next, or NULL; the jobs of the nskip uids in
 * skip are passed by (their turn is held: schedule.c). */
struct job *share_next(struct queue *q, double now, const uid_t *skip,
		       int nskip);
/* How many jobs of uid run now. */
int share_running(const struct queue *q, uid_t uid);
/* A job of the uid started running at now. */
void share_started(struct queue *q, const struct job *job, double now);
/* A run of job ended after seconds. */
void share_ran(struct queue *q, const struct job *job, double seconds,
	       double now);
/* The device time of uid lately: decayed past runs and its running jobs
 * so far, seconds. */
double share_recent(struct queue *q, uid_t uid, double now);
void share_destroy(struct share *s);
/* What uid's job folders hold in the state folder: bytes (allocated) and
 * files, the folders counted; walked again when the last walk is older
 * than SHARE_DISK_SECONDS. */
#define SHARE_DISK_SECONDS 2.0
void share_disk_use(struct queue *q, uid_t uid, long long *bytes,
		    long long *files);
/* A job of uid was stored with about this much: counted until the next
 * walk. */
void share_disk_add(struct queue *q, uid_t uid, long long bytes, int files);

#endif
