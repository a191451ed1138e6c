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

#include "client.h"
#include "conn.h"
#include "protocol.h"

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: vkinrctl [--socket PATH] [--json] COMMAND [ARGS...]\n"
		"\n"
		"Control vkinrd, the daemon that fits a small neural network "
		"to each image\non a Vulkan GPU.\n"
		"\n"
		"Commands:\n");
	for (int i = 0; cmd_table[i]; i++)
		fprintf(out, "  %-8s %s\n", cmd_table[i]->name,
			cmd_table[i]->summary);
	fprintf(out,
		"\n"
		"Options:\n"
		"  --socket PATH   the daemon's socket (else $VKINR_SOCKET, else\n"
		"                  $XDG_RUNTIME_DIR/vkinrd.sock, else "
		CLIENT_DEFAULT_SOCKET ")\n"
		"  --json          print only JSON on stdout; text for people "
		"goes to stderr\n"
		"  -h, --help      this help; `vkinrctl COMMAND --help` for "
		"one command\n"
		"  -V, --version   the client's version and protocol\n"
		"\n"
		"Exit status: 0 ok, 1 a job failed or was cancelled, 2 usage "
		"error,\n3 the daemon refused (or a file was bad), 69 the "
		"daemon cannot be reached.\nSee vkinrctl(1).\n");
}

int main(int argc, char **argv)
{
	static char prog[64];
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"json", no_argument, NULL, OPT_JSON},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{NULL, 0, NULL, 0},
	};
	struct client cl = {.prog = "vkinrctl",
			    .reconnect_s = CLIENT_RECONNECT_S};
	const struct cmd_entry *e;
	int c, status;

	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_usage(stdout);
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
		default:
			fprintf(stderr, "Try 'vkinrctl --help'.\n");
			return CLIENT_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "vkinrctl: a command is missing.\n");
		print_usage(stderr);
		return CLIENT_EXIT_USAGE;
	}
	e = cmd_find(argv[optind]);
	if (!e) {
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
	snprintf(prog, sizeof prog, "vkinrctl %s", e->name);
	argv[0] = prog;
	cmd_getopt_reset();
	status = e->exec(&cl, e, argc, argv);

	fflush(stdout);
	conn_close(cl.conn);
	free(cl.socket_path);
	return status;
}
