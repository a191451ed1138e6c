/*
 * commit.c - the loop's group commit (commit.h).
 *
 * The group opens at commit_open and ends in on_check, which libuv runs
 * after the turn's I/O callbacks, or earlier in commit_flush when it
 * holds an answer a client waits on (commit_urgent). An idle handle runs
 * while a group is open, so that the loop does not sleep in its poll
 * with answers held.
 */
#include "loop/commit.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "loop/loop_state.h"
#include "loop/server.h"
#include "util/fileio.h"

static void end_group(struct service *svc)
{
	if (!svc->commit_open)
		return;
	svc->commit_open = 0;
	svc->commit_urgent = 0;
	uv_idle_stop(&svc->commit_idle);
	queue_save_next_number(svc->queue); /* the group's new ids */
	if (svc->commit_jobs > 1)
		log_debug("%d jobs stored with one sync", svc->commit_jobs);
	svc->commit_jobs = 0;
	if (fileio_batch_end(svc->queue->jobs_dir))
		log_warn("cannot make the jobs' files in %s durable: %s",
			 svc->queue->jobs_dir, strerror(errno));
	if (svc->server)
		server_cork(svc->server, 0);
}

static void on_check(uv_check_t *h) { end_group(h->data); }

static void on_idle(uv_idle_t *h) { (void)h; }

void commit_init(struct service *svc)
{
	uv_check_init(svc->loop, &svc->commit_check);
	svc->commit_check.data = svc;
	uv_check_start(&svc->commit_check, on_check);
	uv_idle_init(svc->loop, &svc->commit_idle);
	svc->commit_idle.data = svc;
	svc->commit_ready = 1;
}

void commit_open(struct service *svc)
{
	if (!svc->commit_ready || svc->commit_open || fileio_batch_open())
		return; /* without the handles (a test's loop): writes sync */
	svc->commit_open = 1;
	fileio_batch_begin();
	if (svc->server)
		server_cork(svc->server, 1);
	uv_idle_start(&svc->commit_idle, on_idle);
}

void commit_urgent(struct service *svc)
{
	if (svc->commit_open)
		svc->commit_urgent = 1;
}

void commit_flush(struct service *svc)
{
	if (!svc->commit_open || !svc->commit_urgent)
		return;
	end_group(svc);
	commit_open(svc);
}

void commit_finish(struct service *svc)
{
	end_group(svc);
	if (!svc->commit_ready)
		return;
	svc->commit_ready = 0;
	if (!uv_is_closing((uv_handle_t *)&svc->commit_check))
		uv_close((uv_handle_t *)&svc->commit_check, NULL);
	if (!uv_is_closing((uv_handle_t *)&svc->commit_idle))
		uv_close((uv_handle_t *)&svc->commit_idle, NULL);
}
