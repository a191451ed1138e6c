/*
 * share.c - which queued job runs next: fair between users.
 *
 * Each uid has an account of the device time its jobs used lately: the
 * seconds of each finished run, decayed with a half-life of
 * SHARE_HALF_LIFE, plus the time its running jobs have run so far. The
 * next job comes from the uid that, in this order, has the fewest jobs
 * running now, the least recent device time, and started a job longest
 * ago (so uids with nothing used take turns); within that uid, its
 * highest priority, then its oldest job. A user's priority thus orders
 * only that user's own jobs. A job whose priority is above
 * SHARE_PRIORITY_USER_MAX (only root and the daemon's user may set that)
 * goes before every other uid's, highest first.
 *
 * share_disk_use adds up what a uid's job folders hold, for the per-uid
 * quota on the state folder that job.submit checks; the walk is done at
 * most once every SHARE_DISK_SECONDS a uid (a flood of submissions would
 * otherwise walk every folder of the uid each time), what the jobs stored
 * meanwhile added to it. Loop thread only.
 */
#include "jobs/share.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobs/queue.h"

struct share_account {
	uid_t uid;
	double used;       /* decayed seconds, as of stamp */
	double stamp;      /* when used was last decayed */
	double last_start; /* when a job of the uid last started */
	/* what its job folders held at disk_stamp (monotonic), plus what
	 * the jobs stored since brought (share_disk_add) */
	long long disk_bytes, disk_files;
	double disk_stamp;
	/* filled by each pick */
	int running;
	double recent;
	struct job *best;
};

struct share {
	struct share_account *a;
	int n, cap;
};

void share_destroy(struct share *s)
{
	if (!s)
		return;
	free(s->a);
	free(s);
}

static struct share_account *account(struct queue *q, uid_t uid)
{
	if (!q->share && !(q->share = calloc(1, sizeof(*q->share))))
		return NULL;
	struct share *s = q->share;
	for (int i = 0; i < s->n; i++)
		if (s->a[i].uid == uid)
			return &s->a[i];
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 8;
		struct share_account *a = realloc(s->a, cap * sizeof(*a));
		if (!a)
			return NULL;
		s->a = a;
		s->cap = cap;
	}
	struct share_account *a = &s->a[s->n++];
	*a = (struct share_account){ .uid = uid };
	return a;
}

static double decayed(const struct share_account *a, double now)
{
	if (a->used <= 0 || now <= a->stamp)
		return a->used;
	return a->used * exp2(-(now - a->stamp) / SHARE_HALF_LIFE);
}

void share_started(struct queue *q, const struct job *job, double now)
{
	struct share_account *a = account(q, job->uid);
	if (a)
		a->last_start = now;
}

void share_ran(struct queue *q, const struct job *job, double seconds,
	       double now)
{
	struct share_account *a = account(q, job->uid);
	if (!a || seconds <= 0)
		return;
	a->used = decayed(a, now) + seconds;
	a->stamp = now;
}

double share_recent(struct queue *q, uid_t uid, double now)
{
	struct share_account *a = account(q, uid);
	double t = a ? decayed(a, now) : 0;
	for (struct job *job = q->head; job; job = job->next)
		if (job->uid == uid && job->state == JOB_RUNNING &&
		    job->run_start > 0 && now > job->run_start)
			t += now - job->run_start;
	return t;
}

/* Whether job comes before best within one uid's jobs (or among the
 * raised ones): higher priority, then older (the list is in submission
 * order, so an equal one found later is younger). */
static int before(const struct job *job, const struct job *best)
{
	return !best || job->p.priority > best->p.priority;
}

/* Whether account a's uid goes before b's. */
static int uid_first(const struct share_account *a,
		     const struct share_account *b)
{
	if (a->running != b->running)
		return a->running < b->running;
	if (fabs(a->recent - b->recent) > 1e-3)
		return a->recent < b->recent;
	if (a->last_start != b->last_start)
		return a->last_start < b->last_start;
	return a->best->number < b->best->number;
}

static int skipped(uid_t uid, const uid_t *skip, int nskip)
{
	for (int i = 0; i < nskip; i++)
		if (skip[i] == uid)
			return 1;
	return 0;
}

int share_running(const struct queue *q, uid_t uid)
{
	int n = 0;
	for (const struct job *job = q->head; job; job = job->next)
		n += job->uid == uid && job->state == JOB_RUNNING;
	return n;
}

struct job *share_next(struct queue *q, double now, const uid_t *skip,
		       int nskip)
{
	struct job *raised = NULL;
	for (struct job *job = q->head; job; job = job->next)
		if (job->state == JOB_QUEUED && !job->held &&
		    !skipped(job->uid, skip, nskip) &&
		    job->p.priority > SHARE_PRIORITY_USER_MAX &&
		    before(job, raised))
			raised = job;
	if (raised)
		return raised;
	/* every uid with a job queued or running gets its account */
	for (struct job *job = q->head; job; job = job->next)
		if (job->state == JOB_QUEUED || job->state == JOB_RUNNING)
			if (!account(q, job->uid))
				return NULL;
	struct share *s = q->share;
	if (!s)
		return NULL;
	for (int i = 0; i < s->n; i++) {
		s->a[i].running = 0;
		s->a[i].best = NULL;
		s->a[i].recent = decayed(&s->a[i], now);
	}
	for (struct job *job = q->head; job; job = job->next) {
		if (job->state != JOB_QUEUED && job->state != JOB_RUNNING)
			continue;
		struct share_account *a = account(q, job->uid);
		if (job->state == JOB_RUNNING) {
			a->running++;
			if (job->run_start > 0 && now > job->run_start)
				a->recent += now - job->run_start;
		} else if (!job->held && !skipped(job->uid, skip, nskip) &&
			   before(job, a->best)) {
			a->best = job;
		}
	}
	struct share_account *pick = NULL;
	for (int i = 0; i < s->n; i++)
		if (s->a[i].best && (!pick || uid_first(&s->a[i], pick)))
			pick = &s->a[i];
	return pick ? pick->best : NULL;
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void share_disk_add(struct queue *q, uid_t uid, long long bytes, int files)
{
	struct share_account *a = account(q, uid);
	if (a && a->disk_stamp > 0) {
		a->disk_bytes += bytes;
		a->disk_files += files;
	}
}

/* Adds up the folders of uid's jobs. */
static void disk_walk(const struct queue *q, uid_t uid, long long *bytes,
		      long long *files)
{
	*bytes = *files = 0;
	for (const struct job *job = q->head; job; job = job->next) {
		char dir[4096];
		if (job->uid != uid ||
		    jobfiles_path(q->jobs_dir, job->id, NULL, dir, sizeof(dir)))
			continue;
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct stat st;
		if (!fstat(fd, &st)) {
			*bytes += (long long)st.st_blocks * 512;
			++*files;
		}
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' &&
			    !fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				*bytes += (long long)st.st_blocks * 512;
				++*files;
			}
		closedir(d);
	}
}

void share_disk_use(struct queue *q, uid_t uid, long long *bytes,
		    long long *files)
{
	struct share_account *a = account(q, uid);
	double now = mono_now();
	if (!a || a->disk_stamp <= 0 ||
	    now - a->disk_stamp > SHARE_DISK_SECONDS) {
		disk_walk(q, uid, bytes, files);
		if (a) {
			a->disk_bytes = *bytes;
			a->disk_files = *files;
			a->disk_stamp = now;
		}
		return;
	}
	*bytes = a->disk_bytes;
	*files = a->disk_files;
}
