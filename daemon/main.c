/*
 * main.c - vkinrd's entry point: picks the mode from the command line.
 *
 *   vkinrd [--socket PATH] [--state-dir DIR] [--device N|NAME]...
 *          [--pack N] [--log FILE] [-v]
 *       the daemon (daemon.c), in the foreground
 *   vkinrd --fit IMG.png|.jpg [...] one fit in the foreground (fit_cli.c)
 *   vkinrd --fit-task LIST --out OUT [...]   one task of a dataset fit,
 *                                as a Slurm array task runs it (fit_task.c)
 *   vkinrd --devices [--json]    the Vulkan devices it can use
 *
 * It resolves the socket path (util/socket_path.c) and the state folder
 * as docs/INTERFACES.md says (flag, then environment, then the default),
 * creates the folder and resolves its path once (statedir_resolve): the
 * daemon uses only the real path.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon.h"
#include "worker/worker.h"
#include "front/fit_cli.h"
#include "front/fit_task.h"
#include "front/cli_usage.h"
#include "log.h"
#include "proto/protocol.h"
#include "util/socket_path.h"
#include "jobs/statedir.h"
#include "util/path.h"

static const char usage[] =
    "usage: vkinrd [--socket PATH] [--state-dir DIR] [--device N|NAME]...\n"
    "              [--pack N] [--log FILE] [-v]\n"
    "       vkinrd --fit IMG.png|IMG.jpg [--epochs N] [--width NF] [--lr LR] "
    "[--seed S]\n"
    "                            [--model OUT.safetensors] [--recon OUT.png] "
    "[--json]\n"
    "                            (vkinrd --fit x --help lists every option)\n"
    "       vkinrd --fit-task LIST --out OUT [--shard K/N] [...]\n"
    "       vkinrd --devices [--json]\n"
    "       vkinrd --version\n";

/* One line after a bad option, the whole text with --help. */
static const char short_usage[] =
    "usage: vkinrd [--socket PATH] [--state-dir DIR] [--device N|NAME]... "
    "[--pack N] [-v]\n"
    "       vkinrd --fit IMG [options] | --fit-task LIST --out OUT | "
    "--devices";
/* The modes picked before the daemon's options are read. */
static const char *const modes[] = { "fit", "fit-task", "devices", NULL };

static char *default_state_dir(void)
{
	const char *env = getenv("STATE_DIRECTORY");
	if (env && *env) {
		/* systemd may list several, separated by ':' */
		const char *colon = strchr(env, ':');
		return colon ? strndup(env, (size_t)(colon - env))
			     : strdup(env);
	}
	env = getenv("XDG_STATE_HOME");
	if (env && *env)
		return path_join(env, "vkinrd");
	env = getenv("HOME");
	char *local = path_join(env && *env ? env : "/", ".local/state");
	char *dir = local ? path_join(local, "vkinrd") : NULL;
	free(local);
	return dir;
}

static int has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], flag) ||
		    (!strncmp(argv[i], flag, strlen(flag)) &&
		     argv[i][strlen(flag)] == '='))
			return 1;
	return 0;
}

static const struct option daemon_longs[] = {
	{ "socket", required_argument, 0, 's' },
	{ "state-dir", required_argument, 0, 'd' },
	{ "device", required_argument, 0, 'D' },
	{ "pack", required_argument, 0, 'P' },
	{ "log", required_argument, 0, 'L' },
	{ "verbose", no_argument, 0, 'v' },
	{ "version", no_argument, 0, 'V' },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

/* The paths the daemon's options name (owned: freed by the caller),
 * NULL where not given. */
struct daemon_paths {
	char *socket_path, *state_dir;
};

/* --pack N: 0, or 2 (said) when N is not a number of jobs from 1 to
 * WORKER_PACK_MOST. */
static int parse_pack(const char *text, int *pack)
{
	char *end;
	long n = strtol(text, &end, 10);
	if (end == text || *end || n < 1 || n > WORKER_PACK_MOST) {
		fprintf(stderr,
			"vkinrd: --pack takes a number of jobs from 1 to %d\n",
			WORKER_PACK_MOST);
		return 2;
	}
	*pack = (int)n;
	return 0;
}

/* One of the daemon's options (c, from getopt_long) into opt and paths;
 * -1 to go on, else the exit status to return now (--version, --help, a
 * bad option or value). */
static int parse_option(int c, int argc, char **argv,
			struct daemon_options *opt, struct daemon_paths *paths)
{
	switch (c) {
	case 's':
		free(paths->socket_path);
		paths->socket_path = strdup(optarg);
		return -1;
	case 'd':
		free(paths->state_dir);
		paths->state_dir = strdup(optarg);
		return -1;
	case 'D':
		if (opt->ndevices == DAEMON_MAX_DEVICES) {
			fprintf(stderr, "vkinrd: at most %d --device\n",
				DAEMON_MAX_DEVICES);
			return 2;
		}
		opt->devices[opt->ndevices++] = optarg;
		return -1;
	case 'P':
		return parse_pack(optarg, &opt->pack) ? 2 : -1;
	case 'L':
		opt->log_path = optarg;
		return -1;
	case 'v':
		opt->verbose++;
		return -1;
	case 'V':
		printf("vkinrd %s (protocol %d)\n", VKINR_VERSION,
		       PROTOCOL_VERSION);
		return 0;
	case 'h':
		fputs(usage, stdout);
		return 0;
	default:
		cli_suggest(argc, argv, daemon_longs, modes);
		return cli_short_usage(short_usage, "vkinrd --help");
	}
}

/* The daemon's command line into opt and paths: every option, no
 * argument left over, no path given empty. -1 to go on, else the exit
 * status. */
static int read_options(int argc, char **argv, struct daemon_options *opt,
			struct daemon_paths *paths)
{
	int c, rc;
	while ((c = getopt_long(argc, argv, "vh", daemon_longs, NULL)) != -1)
		if ((rc = parse_option(c, argc, argv, opt, paths)) >= 0)
			return rc;
	if (optind != argc) {
		fprintf(stderr, "vkinrd: unexpected argument '%s'%s\n",
			argv[optind],
			argv[optind][0] != '-' ? " (vkinrd --fit IMG fits one)"
					       : "");
		return cli_short_usage(short_usage, "vkinrd --help");
	}
	const char *socket_path = paths->socket_path;
	const char *state_dir = paths->state_dir;
	if ((socket_path && !*socket_path) || (state_dir && !*state_dir) ||
	    (opt->log_path && !*opt->log_path)) {
		fprintf(stderr,
			"vkinrd: %s needs a path; it was given an empty "
			"one\n",
			socket_path && !*socket_path ? "--socket"
			: state_dir && !*state_dir   ? "--state-dir"
						     : "--log");
		return 2;
	}
	return -1;
}

/* The paths not given resolved (docs/INTERFACES.md: the environment,
 * then the default), the state folder made and replaced by its real
 * path, the only one used from here on. -1 to go on, else the exit
 * status (1, said). */
static int resolve_paths(struct daemon_paths *paths)
{
	if (!paths->socket_path)
		paths->socket_path = socket_path_resolve(NULL);
	if (!paths->state_dir)
		paths->state_dir = default_state_dir();
	if (!paths->socket_path || !paths->state_dir) {
		fprintf(stderr, "vkinrd: out of memory\n");
		return 1;
	}
	if (path_make_dirs(paths->state_dir, 0700)) {
		fprintf(stderr,
			"vkinrd: cannot create the state folder %s: %s\n",
			paths->state_dir, strerror(errno));
		return 1;
	}
	char err[1024];
	char *real = statedir_resolve(paths->state_dir, err, sizeof(err));
	if (!real) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return 1;
	}
	free(paths->state_dir);
	paths->state_dir = real;
	return -1;
}

int main(int argc, char **argv)
{
	if (has_flag(argc, argv, "--fit-task"))
		return fit_task_run(argc, argv);
	if (has_flag(argc, argv, "--fit"))
		return fit_cli_run(argc, argv);
	if (has_flag(argc, argv, "--devices"))
		return fit_cli_devices(has_flag(argc, argv, "--json"));

	struct daemon_options opt = { 0 };
	struct daemon_paths paths = { 0 };
	int status = read_options(argc, argv, &opt, &paths);
	if (status < 0 && opt.log_path && log_open(opt.log_path)) {
		fprintf(stderr, "vkinrd: cannot open the log file: %s\n",
			log_open_error());
		status = 1;
	}
	if (status < 0)
		status = resolve_paths(&paths);
	if (status < 0) {
		opt.socket_path = paths.socket_path;
		opt.state_dir = paths.state_dir;
		status = daemon_run(&opt);
	}
	free(paths.socket_path);
	free(paths.state_dir);
	return status;
}
