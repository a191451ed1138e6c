/*
 * devwait.h - renders and exports that wait for a device still opening.
 *
 * Right after a start (a plain one, or socket activation, where the
 * first request is what started the daemon) the workers are still
 * opening their devices, which takes a while on some drivers. A request
 * that needs a device then waits for one, DEVWAIT_SECONDS at most,
 * instead of failing at once: it is parked here, its connection held,
 * and taken up again when a worker says its device is up (or could not
 * be opened), when the wait is over, or when the daemon stops.
 *
 * Loop thread only.
 */
#ifndef VKINR_DEVWAIT_H
#define VKINR_DEVWAIT_H

#include "loop/loop_state.h"

/* How long a request waits for a device still opening, seconds
 * (VKINRD_DEVICE_WAIT_SECONDS lowers it for tests). */
#define DEVWAIT_SECONDS 30

struct pending;
struct request;

/* Sets up the wait's timer (daemon start). */
void devwait_init(struct service *svc);
/*
 * Parks pd until a device may be there: 0 when parked (resume(pd) is
 * called later, on the loop, and owns pd then), -1 when waiting is of
 * no use (no worker is still opening a device, the daemon stops, or
 * pd's wait is over).
 */
int devwait_park(struct service *svc, struct pending *pd,
		 void (*resume)(struct pending *pd));
/* A worker's device came up or gave up, or the daemon stops: every
 * parked request is taken up again. */
void devwait_wake(struct service *svc);
/* The error for a request that found no device and cannot wait:
 * RPC_SHUTTING_DOWN, or RPC_DEVICE saying whether a device is still
 * opening (after the wait) or none is there; to_do: "render",
 * "render the export". */
int devwait_refusal(struct request *rq, const char *to_do);
/* At stop: what is parked is dropped (its connections are gone), the
 * timer closed. */
void devwait_finish(struct service *svc);

#endif
