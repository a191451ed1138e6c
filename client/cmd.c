/*
 * cmd.c - the command table of vkinrctl and what commands share to read
 * their own command line.
 *
 * Each command lives in its own cmd-*.c file and exports one
 * `const struct cmd_entry`; the table below is the only list of them, so
 * adding a command is one file and one line here. Options are read with
 * getopt_long, which lets them come before or after the arguments
 * (`submit a.png --epochs 500`); the options every command shares
 * (--help, --json, --socket) are handled by cmd_common_option so that
 * `vkinrctl list --json` means the same as `vkinrctl --json list`.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "proto/params.h"
#include "proto/protocol.h"
#include "util/socket_path.h"

extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_list_entry;
extern const struct cmd_entry cmd_show_entry;
extern const struct cmd_entry cmd_watch_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_pause_entry;
extern const struct cmd_entry cmd_resume_entry;
extern const struct cmd_entry cmd_cancel_entry;
extern const struct cmd_entry cmd_remove_entry;
extern const struct cmd_entry cmd_renice_entry;
extern const struct cmd_entry cmd_export_entry;
extern const struct cmd_entry cmd_infer_entry;
extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_metrics_entry;
extern const struct cmd_entry cmd_plot_entry;
extern const struct cmd_entry cmd_preview_entry;
extern const struct cmd_entry cmd_dashboard_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_completion_entry;

const struct cmd_entry *const cmd_table[] = {
	&cmd_submit_entry, &cmd_list_entry,       &cmd_show_entry,
	&cmd_watch_entry,  &cmd_wait_entry,       &cmd_pause_entry,
	&cmd_resume_entry, &cmd_cancel_entry,     &cmd_remove_entry,
	&cmd_renice_entry, &cmd_export_entry,     &cmd_infer_entry,
	&cmd_status_entry, &cmd_logs_entry,       &cmd_metrics_entry,
	&cmd_plot_entry,   &cmd_preview_entry,    &cmd_dashboard_entry,
	&cmd_help_entry,   &cmd_completion_entry, NULL,
};

const struct cmd_entry *cmd_find(const char *name)
{
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!strcmp(e->name, name) ||
		    (e->alias && !strcmp(e->alias, name)))
			return e;
	}
	return NULL;
}

void cmd_print_usage(FILE *out)
{
	fprintf(out,
		"usage: vkinrctl [--socket PATH] [--call-timeout S] [--json] "
		"COMMAND [ARGS...]\n"
		"\n"
		"Control vkinrd, the daemon that fits a small neural network "
		"to each image\non a Vulkan GPU.\n"
		"\n"
		"Commands:\n");
	for (int i = 0; cmd_table[i]; i++)
		fprintf(out, "  %-11s %s\n", cmd_table[i]->name,
			cmd_table[i]->summary);
	fprintf(
	    out,
	    "\n"
	    "Options:\n"
	    "  --socket PATH   the daemon's socket (else $VKINR_SOCKET, else\n"
	    "                  $XDG_RUNTIME_DIR/vkinrd.sock, "
	    "else " SOCKET_PATH_DEFAULT ")\n"
	    "  --call-timeout S  how long a call waits for the daemon (else\n"
	    "                  $VKINR_CALL_TIMEOUT, else 20; 0: forever)\n"
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

void cmd_print_help(const struct cmd_entry *e, FILE *out)
{
	fprintf(out, "usage: vkinrctl [--socket PATH] [--json] %s %s\n\n%s\n",
		e->name, e->args, e->summary);
	if (e->help && *e->help)
		fprintf(out, "\n%s", e->help);
	if (e->help_table) {
		fprintf(out,
			"\nTraining options (the same names, bounds and "
			"defaults as job.submit,\nvkinrd --fit and --fit-task; "
			"--width, --lr and --warmup also take auto):\n");
		param_print_help(out, 0);
	}
	if (e->help_more)
		fprintf(out, "%s", e->help_more);
	fprintf(out, "\nCommon options:\n"
		     "  --json          print only JSON on stdout\n"
		     "  --socket PATH   the daemon's socket\n"
		     "  --call-timeout S  how long a call waits for the "
		     "daemon\n"
		     "  -h, --help      this help\n");
}

int cmd_usage_error(const struct cmd_entry *e, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "vkinrctl %s: ", e->name);
	va_start(ap, fmt);
	client_vprint(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'vkinrctl %s --help'.\n", e->name);
	return CLIENT_EXIT_USAGE;
}

int cmd_common_option(struct client *cl, const struct cmd_entry *e, int opt)
{
	switch (opt) {
	case 'h':
		cmd_print_help(e, stdout);
		return CLIENT_EXIT_OK;
	case OPT_JSON:
		cl->json = 1;
		return -1;
	case OPT_SOCKET:
		cl->socket_flag = optarg;
		return -1;
	case OPT_CALL_TIMEOUT:
		if (client_set_call_timeout(cl, optarg) == 0)
			return -1;
		return cmd_usage_error(e,
				       "--call-timeout takes seconds from 0 "
				       "(wait forever) to 86400, not '%s'",
				       optarg);
	default:
		/* getopt has already said what was wrong. */
		fprintf(stderr, "Try 'vkinrctl %s --help'.\n", e->name);
		return CLIENT_EXIT_USAGE;
	}
}

void cmd_getopt_reset(void)
{
	optind = 0; /* glibc: a full re-initialisation */
	opterr = 1;
}
