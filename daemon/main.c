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

int main(int argc, char **argv)
{
	if (has_flag(argc, argv, "--fit-task"))
		return fit_task_run(argc, argv);
	if (has_flag(argc, argv, "--fit"))
		return fit_cli_run(argc, argv);
	if (has_flag(argc, argv, "--devices"))
		return fit_cli_devices(has_flag(argc, argv, "--json"));

	static const struct option longs[] = {
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
	struct daemon_options opt = { 0 };
	char *socket_path = NULL, *state_dir = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "vh", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			free(socket_path);
			socket_path = strdup(optarg);
			break;
		case 'd':
			free(state_dir);
			state_dir = strdup(optarg);
			break;
		case 'D':
			if (opt.ndevices == DAEMON_MAX_DEVICES) {
				fprintf(stderr, "vkinrd: at most %d --device\n",
					DAEMON_MAX_DEVICES);
				return 2;
			}
			opt.devices[opt.ndevices++] = optarg;
			break;
		case 'P': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (end == optarg || *end || n < 1 ||
			    n > WORKER_PACK_MOST) {
				fprintf(stderr,
					"vkinrd: --pack takes a number of "
					"jobs from 1 to %d\n",
					WORKER_PACK_MOST);
				return 2;
			}
			opt.pack = (int)n;
			break;
		}
		case 'L':
			opt.log_path = optarg;
			break;
		case 'v':
			opt.verbose++;
			break;
		case 'V':
			printf("vkinrd %s (protocol %d)\n", VKINR_VERSION,
			       PROTOCOL_VERSION);
			return 0;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			cli_suggest(argc, argv, longs, modes);
			return cli_short_usage(short_usage, "vkinrd --help");
		}
	}
	if (optind != argc) {
		fprintf(stderr, "vkinrd: unexpected argument '%s'%s\n",
			argv[optind],
			argv[optind][0] != '-' ? " (vkinrd --fit IMG fits one)"
					       : "");
		return cli_short_usage(short_usage, "vkinrd --help");
	}
	if ((socket_path && !*socket_path) || (state_dir && !*state_dir) ||
	    (opt.log_path && !*opt.log_path)) {
		fprintf(stderr,
			"vkinrd: %s needs a path; it was given an empty "
			"one\n",
			socket_path && !*socket_path ? "--socket"
			: state_dir && !*state_dir   ? "--state-dir"
						     : "--log");
		free(socket_path);
		free(state_dir);
		return 2;
	}
	if (opt.log_path && log_open(opt.log_path)) {
		fprintf(stderr, "vkinrd: cannot open the log file: %s\n",
			log_open_error());
		free(socket_path);
		free(state_dir);
		return 1;
	}
	if (!socket_path)
		socket_path = socket_path_resolve(NULL);
	if (!state_dir)
		state_dir = default_state_dir();
	if (!socket_path || !state_dir) {
		fprintf(stderr, "vkinrd: out of memory\n");
		return 1;
	}
	if (path_make_dirs(state_dir, 0700)) {
		fprintf(stderr,
			"vkinrd: cannot create the state folder %s: %s\n",
			state_dir, strerror(errno));
		return 1;
	}
	char err[1024];
	char *real = statedir_resolve(state_dir, err, sizeof(err));
	if (!real) {
		fprintf(stderr, "vkinrd: %s\n", err);
		free(socket_path);
		free(state_dir);
		return 1;
	}
	free(state_dir);
	state_dir = real; /* the only path used from here on */
	opt.socket_path = socket_path;
	opt.state_dir = state_dir;
	int status = daemon_run(&opt);
	free(socket_path);
	free(state_dir);
	return status;
}
