/*
 * options.h - the daemon's settings from its command line (main.c), read
 * by daemon_run and the loop's modules (loop/loop_state.h). Data only, so
 * that the loop's header need not include daemon.h, the entry point above
 * it.
 */
#ifndef VKINR_OPTIONS_H
#define VKINR_OPTIONS_H

#define DAEMON_MAX_DEVICES 16

struct daemon_options {
	const char *socket_path; /* resolved by main.c (flag, env, default) */
	const char *state_dir;   /* resolved by main.c, created if missing */
	const char *devices[DAEMON_MAX_DEVICES]; /* selectors; NULL = auto */
	int ndevices; /* 0 means one worker on the preferred one */
	int pack;     /* jobs a worker trains at once at most
				  * (--pack; 0: as its device holds) */
	int verbose;
	const char *log_path; /* --log FILE: stderr goes there; NULL: as is */
};

#endif
