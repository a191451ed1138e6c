/*
 * workevents.h - what the workers report, turned into queue changes and
 * news: a device opened (or not), a job started, an epoch, a checkpoint,
 * a job let go, a reply. daemon.c drains each worker's events in order
 * and hands them here one by one. Loop thread only.
 */
#ifndef VKINR_WORKEVENTS_H
#define VKINR_WORKEVENTS_H

#include "loop/loop_state.h"

/* One event of worker index (ownership stays the caller's; a reply's
 * request is taken: ev->req NULL after). */
void workevents_handle(struct service *svc, int index, struct work_event *ev);
/* After a drain of the workers' events: the state.json of each job that
 * checkpointed in it and whose state no later event of it wrote. */
void workevents_saved(struct service *svc);
/* Tells systemd (Type=notify) and the log that the daemon is ready, once
 * every worker has opened its device or given up on it (at once when no
 * worker could even start). */
void workevents_maybe_ready(struct service *svc);

#endif
