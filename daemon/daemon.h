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

#define DAEMON_MAX_DEVICES 16

struct daemon_options {
	const char *socket_path; /* resolved by main.c (flag, env, default) */
	const char *state_dir;   /* resolved by main.c, created if missing */
	const char *devices[DAEMON_MAX_DEVICES]; /* selectors; NULL = auto */
	int ndevices;            /* 0 means one worker on the preferred one */
	int pack;                /* jobs a worker trains at once at most
				  * (--pack; 0: as its device holds) */
	int verbose;
	const char *log_path;    /* --log FILE: stderr goes there; NULL: as is */
};

/* Returns the process exit status. */
int daemon_run(const struct daemon_options *opt);

#endif
