/*
 * schedule.h - which worker does what: the queued jobs handed to idle
 * workers, a worker chosen for a render or an export, and a job's
 * parameters turned into the engine's config.
 *
 * Loop thread only.
 */
#ifndef VKINR_SCHEDULE_H
#define VKINR_SCHEDULE_H

#include "nn/fit.h"
#include "jobs/queue.h"
#include "loop/loop_state.h"

/* A job that no worker admits lets the jobs of uids behind it in the
 * fair share pass it for this long, then holds them (schedule.c). */
#define SCHEDULE_PASS_SECONDS 60.0
/* uids whose next job is tried in one round, at most */
#define SCHEDULE_PASS_UIDS 64

/* Hands the best queued job to each idle worker whose device is open
 * (nothing while the daemon stops). */
void schedule_jobs(struct service *svc);
/* A worker for a render or an export of a job that is not running: an
 * idle one if there is, else any that has its device; NULL when none. */
struct worker_slot *schedule_pick_worker(struct service *svc);
/* The width a job left to the daemon would get now: the default of the
 * open devices when they agree (all CPUs, or none), else 0 (not known
 * until a worker takes it, or no device is open yet). */
int schedule_default_width(const struct service *svc);

#endif
