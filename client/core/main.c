/*
 * main.c - vkinrctl's entry point: the global options, then one command
 * from the table in cmd.c.
 *
 * Global options stop at the first word that is not an option (getopt's
 * "+"), which names the command; everything after it belongs to the
 * command, which parses it itself. The process exit status is whatever the
 * command returns (see client.h and vkinrctl(1)).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "core/conn.h"
#include "proto/protocol.h"
#include "util/suggest.h"

int main(int argc, char **argv)
{
	static char prog[64];
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	struct client cl = { .prog = "vkinrctl",
			     .reconnect_s = CLIENT_RECONNECT_S,
			     .call_timeout_s = CLIENT_CALL_TIMEOUT_S };
	const char *env = getenv("VKINR_CALL_TIMEOUT");
	const struct cmd_entry *e;
	int c, status;

	signal(SIGPIPE, SIG_IGN);
	if (env && *env && client_set_call_timeout(&cl, env)) {
		fprintf(stderr,
			"vkinrctl: VKINR_CALL_TIMEOUT takes seconds "
			"from 0 (wait forever) to 86400, not '%s'.\n",
			env);
		return CLIENT_EXIT_USAGE;
	}
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		if (c == '?' && optind > 0 && optind <= argc &&
		    suggest_option(argv[optind - 1], opts))
			fprintf(stderr, "vkinrctl: did you mean --%s?\n",
				suggest_option(argv[optind - 1], opts));
		switch (c) {
		case 'h':
			cmd_print_usage(stdout);
			return CLIENT_EXIT_OK;
		case 'V':
			printf("vkinrctl %s (protocol %d)\n", VKINR_VERSION,
			       PROTOCOL_VERSION);
			return CLIENT_EXIT_OK;
		case OPT_JSON:
			cl.json = 1;
			break;
		case OPT_SOCKET:
			cl.socket_flag = optarg;
			break;
		case OPT_CALL_TIMEOUT:
			if (client_set_call_timeout(&cl, optarg) == 0)
				break;
			fprintf(stderr,
				"vkinrctl: --call-timeout takes seconds "
				"from 0 (wait forever) to 86400, not '%s'.\n",
				optarg);
			return CLIENT_EXIT_USAGE;
		default:
			fprintf(stderr, "Try 'vkinrctl --help'.\n");
			return CLIENT_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "vkinrctl: a command is missing.\n");
		cmd_print_usage(stderr);
		return CLIENT_EXIT_USAGE;
	}
	e = cmd_find(argv[optind]);
	if (!e) {
		const char *near = cmd_suggest(argv[optind]);
		if (near)
			fprintf(stderr,
				"vkinrctl: unknown command '%s'; did you mean "
				"'%s'? Try 'vkinrctl --help'.\n",
				argv[optind], near);
		else
			fprintf(stderr,
				"vkinrctl: unknown command '%s'. Try 'vkinrctl "
				"--help'.\n",
				argv[optind]);
		return CLIENT_EXIT_USAGE;
	}

	argc -= optind;
	argv += optind;
	/* getopt names argv[0] in its messages: "vkinrctl show: invalid
	 * option -- '1'", not "show: ...". */
	snprintf(prog, sizeof(prog), "vkinrctl %s", e->name);
	argv[0] = prog;
	cmd_getopt_reset();
	status = e->exec(&cl, e, argc, argv);

	fflush(stdout);
	conn_close(cl.conn);
	free(cl.socket_path);
	return status;
}
