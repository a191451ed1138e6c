/*
 * devwait.c - renders and exports parked while a device opens (see
 * devwait.h).
 *
 * The parked requests are struct pending (methods_common.h), linked
 * through their wait_next in arrival order, each with its deadline (set
 * when it is first parked, so a request taken up and parked again does
 * not wait longer). One timer is armed for the earliest deadline. A
 * request taken up calls its resume function, which picks a worker
 * again: it gets one, parks again (a device is still opening and its
 * time is not up), or is refused through devwait_refusal.
 */
#include "loop/devwait.h"

#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "loop/methods_common.h"
#include "proto/protocol.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int wait_seconds(void)
{
	const char *v = getenv("VKINRD_DEVICE_WAIT_SECONDS");
	int n = v ? atoi(v) : 0;
	return n > 0 && n < DEVWAIT_SECONDS ? n : DEVWAIT_SECONDS;
}

/* Whether a worker is still opening its device. */
static int opening(const struct service *svc)
{
	for (int i = 0; i < svc->nslots; i++)
		if (svc->slots[i].w && !svc->slots[i].ready &&
		    !svc->slots[i].exited)
			return 1;
	return 0;
}

static void on_timer(uv_timer_t *t);

static void arm(struct service *svc)
{
	if (!svc->device_waiters) {
		uv_timer_stop(&svc->device_timer);
		return;
	}
	double first = svc->device_waiters->device_deadline, t = now_s();
	for (struct pending *p = svc->device_waiters; p; p = p->wait_next)
		if (p->device_deadline < first)
			first = p->device_deadline;
	double ms = first > t ? (first - t) * 1e3 + 1 : 0;
	uv_timer_start(&svc->device_timer, on_timer, (uint64_t)ms, 0);
}

void devwait_init(struct service *svc)
{
	uv_timer_init(svc->loop, &svc->device_timer);
	svc->device_timer.data = svc;
	svc->device_timer_on = 1;
}

int devwait_park(struct service *svc, struct pending *pd,
		 void (*resume)(struct pending *pd))
{
	double t = now_s();
	if (svc->stopping || !svc->device_timer_on || !opening(svc))
		return -1;
	if (!pd->device_deadline)
		pd->device_deadline = t + wait_seconds();
	if (t >= pd->device_deadline)
		return -1;
	pd->resume = resume;
	pd->wait_next = NULL;
	struct pending **tail = &svc->device_waiters;
	while (*tail)
		tail = &(*tail)->wait_next;
	*tail = pd;
	log_debug("%s waits for a device still opening", pd->method);
	arm(svc);
	return 0;
}

/* Takes up the parked requests (only those whose time is up, when
 * expired_only); those that park again join the list anew. */
static void take_up(struct service *svc, int expired_only)
{
	struct pending *list = svc->device_waiters, *next;
	double t = now_s();
	svc->device_waiters = NULL;
	for (struct pending *p = list; p; p = next) {
		next = p->wait_next;
		p->wait_next = NULL;
		if (expired_only && p->device_deadline > t) {
			struct pending **tail = &svc->device_waiters;
			while (*tail)
				tail = &(*tail)->wait_next;
			*tail = p;
			continue;
		}
		p->resume(p);
	}
	if (svc->device_timer_on)
		arm(svc);
}

static void on_timer(uv_timer_t *t) { take_up(t->data, 1); }

void devwait_wake(struct service *svc) { take_up(svc, 0); }

int devwait_refusal(struct request *rq, const char *to_do)
{
	struct service *svc = rq->svc;
	if (svc->stopping)
		return methods_fail(
		    rq, RPC_SHUTTING_DOWN,
		    "the daemon is stopping; send it again once it is "
		    "back");
	if (opening(svc))
		return methods_fail(
		    rq, RPC_DEVICE,
		    "no device is available to %s: the device is "
		    "still opening after %d s; try again shortly",
		    to_do, wait_seconds());
	return methods_fail(rq, RPC_DEVICE, "no device is available to %s",
			    to_do);
}

void devwait_finish(struct service *svc)
{
	if (!svc->device_timer_on)
		return;
	svc->device_timer_on = 0;
	take_up(svc, 0); /* stopping: each is refused, or dropped */
	if (!uv_is_closing((uv_handle_t *)&svc->device_timer))
		uv_close((uv_handle_t *)&svc->device_timer, NULL);
}
