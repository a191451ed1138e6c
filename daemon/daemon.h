/*
 * daemon.h - the long-lived service: entry point called by main.c.
 *
 * daemon_run owns the libuv loop on the calling thread (sockets, the job
 * queue, persistence) and starts one worker thread per device selector;
 * each worker owns its gpu_context and runs one job at a time through the
 * engine (nn/fit.h). It returns when the daemon stops (SIGTERM / SIGINT),
 * after the running jobs have checkpointed.
 */
#ifndef VKINR_DAEMON_H
#define VKINR_DAEMON_H

#include "options.h"

/* Returns the process exit status. */
int daemon_run(const struct daemon_options *opt);

#endif
