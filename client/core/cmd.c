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
 *
 * Every command reads its options through cmd_getopt, which says "did you
 * mean --epochs?" after an option getopt does not know, and which also
 * lets cmd_options learn a command's table from the command itself (for
 * `completion`): it runs the command's exec in a mode where its first
 * cmd_getopt copies the table and jumps straight back, before the command
 * has done anything.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "proto/params.h"
#include "proto/protocol.h"
#include "util/socket_path.h"
#include "util/suggest.h"

extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_list_entry;
extern const struct cmd_entry cmd_show_entry;
extern const struct cmd_entry cmd_watch_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_pause_entry;
extern const struct cmd_entry cmd_resume_entry;
extern const struct cmd_entry cmd_cancel_entry;
extern const struct cmd_entry cmd_remove_entry;
extern const struct cmd_entry cmd_retry_entry;
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
	&cmd_submit_entry,     &cmd_list_entry,
	&cmd_show_entry,       &cmd_watch_entry,
	&cmd_wait_entry,       &cmd_pause_entry,
	&cmd_resume_entry,     &cmd_cancel_entry,
	&cmd_remove_entry,     &cmd_retry_entry,
	&cmd_renice_entry,     &cmd_export_entry,
	&cmd_infer_entry,      &cmd_status_entry,
	&cmd_logs_entry,       &cmd_metrics_entry,
	&cmd_plot_entry,       &cmd_preview_entry,
	&cmd_dashboard_entry,  &cmd_help_entry,
	&cmd_completion_entry, NULL,
};

/* cmd_options: where the first cmd_getopt jumps back to, and the copy of
 * the table it found (the names are the tables' own static strings). */
static jmp_buf *cmd_collect_jump;
static struct option cmd_collected[160];
static int cmd_ncollected;

int cmd_getopt(int argc, char **argv, const char *shorts,
	       const struct option *opts)
{
	int c;

	if (cmd_collect_jump) { /* cmd_options: the names not seen yet */
		for (; opts->name && cmd_ncollected < 159; opts++) {
			int seen = 0;
			for (int i = 0; i < cmd_ncollected && !seen; i++)
				seen =
				    !strcmp(cmd_collected[i].name, opts->name);
			if (!seen)
				cmd_collected[cmd_ncollected++] = *opts;
		}
		memset(&cmd_collected[cmd_ncollected], 0,
		       sizeof(cmd_collected[0]));
		longjmp(*cmd_collect_jump, 1);
	}
	c = getopt_long(argc, argv, shorts, opts, NULL);
	if (c == '?' && optind > 0 && optind <= argc) {
		const char *near = suggest_option(argv[optind - 1], opts);
		if (near)
			fprintf(stderr, "%s: did you mean --%s?\n", argv[0],
				near);
	}
	return c;
}

int cmd_collecting(void) { return cmd_collect_jump != NULL; }

const struct option *cmd_options(struct client *cl, const struct cmd_entry *e)
{
	/* the command alone, then as the options that pick another table
	 * of it would (submit --slurm; list and wait --out) */
	static char slurm[] = "--slurm", out[] = "--out", dir[] = ".";
	char name[64];
	char *argvs[3][4] = { { name, NULL },
			      { name, slurm, NULL },
			      { name, out, dir, NULL } };
	const int argcs[3] = { 1, 2, 3 };
	jmp_buf jump;

	snprintf(name, sizeof(name), "vkinrctl %s", e->name);
	cmd_ncollected = 0;
	for (int k = 0; k < 3; k++) {
		cmd_getopt_reset();
		cmd_collect_jump = &jump;
		if (!setjmp(jump)) /* cannot return before its options */
			e->exec(cl, e, argcs[k], argvs[k]);
		cmd_collect_jump = NULL;
	}
	cmd_getopt_reset();
	memset(&cmd_collected[cmd_ncollected], 0, sizeof(cmd_collected[0]));
	return cmd_ncollected ? cmd_collected : NULL;
}

const char *cmd_suggest(const char *word)
{
	const char *names[64];
	size_t n = 0;

	for (int i = 0; cmd_table[i] && n < 62; i++) {
		names[n++] = cmd_table[i]->name;
		names[n++] = cmd_table[i]->alias;
	}
	return suggest_word(word, names, n);
}

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
	    "                  $XDG_RUNTIME_DIR/vkinrd.sock, else "
	    "/tmp/vkinrd-UID/vkinrd.sock\n"
	    "                  or, for root, " SOCKET_PATH_DEFAULT ")\n"
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

int cmd_reconnect_option(struct client *cl, const struct cmd_entry *e,
			 const char *arg)
{
	char *end;
	errno = 0;
	cl->reconnect_s = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(cl->reconnect_s) ||
	    cl->reconnect_s < 0)
		return cmd_usage_error(e,
				       "--timeout takes seconds (0 or "
				       "more), not '%s'",
				       arg);
	return -1;
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
