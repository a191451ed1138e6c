/*
 * client.h - what every part of vkinrctl shares: the exit codes, the
 * per-invocation state (struct client), the command table's entry type and
 * the small helpers that commands use to parse options and to turn an
 * error into a sentence and an exit code.
 *
 * A command is one `const struct cmd_entry` (tmux's shape): its name, the
 * arguments it takes, a one-line summary, a longer help text and its exec
 * function. cmd.c lists them all in one table. exec returns the process
 * exit status directly, one of the CLIENT_EXIT_ codes below; the helpers
 * underneath follow the project's rule (0 or a negative error code) and the
 * command maps their result once, through client_fail().
 */
#ifndef VKINR_CLIENT_H
#define VKINR_CLIENT_H

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* Exit codes, as docs/INTERFACES.md and vkinrctl(1) document them. */
#define CLIENT_EXIT_OK 0
#define CLIENT_EXIT_JOB_FAILED 1   /* a job ended failed or cancelled */
#define CLIENT_EXIT_USAGE 2        /* the command line was wrong */
#define CLIENT_EXIT_DAEMON 3       /* the daemon refused, or a file was bad */
#define CLIENT_EXIT_UNREACHABLE 69 /* EX_UNAVAILABLE: no daemon to talk to */

/* The daemon answered a request with a JSON-RPC error; its code and
 * message are kept in the connection (conn_last_error). Client-only: it
 * never travels on the wire, so it lives here and not in errors.h. */
#define CLIENT_ERR_RPC (-1000)
/* The daemon did not answer a call in time (conn.c says which). */
#define CLIENT_ERR_TIMEOUT (-1001)
/* A job name that several jobs have (jobs.c has said which). */
#define CLIENT_ERR_AMBIGUOUS (-1002)

/* How long a call waits for the daemon (--call-timeout,
 * VKINR_CALL_TIMEOUT; 0 waits forever). */
#define CLIENT_CALL_TIMEOUT_S 20

/* How long watch and wait try to reach a daemon that went away. */
#define CLIENT_RECONNECT_S 60

struct client_conn;

struct client {
	const char *prog;         /* "vkinrctl", for messages */
	const char *socket_flag;  /* --socket, NULL when not given */
	int json;                 /* --json: stdout carries only JSON */
	double reconnect_s;       /* watch, wait: --timeout to reconnect */
	double call_timeout_s;    /* --call-timeout: each call's; 0: none */
	char *socket_path;        /* resolved when first connecting */
	struct client_conn *conn; /* NULL until client_connect */
	char unreachable[512];    /* why connecting failed, for client_fail */
};

struct cmd_entry {
	const char *name;
	const char *alias;   /* another name, or NULL */
	const char *args;    /* synopsis after the name */
	const char *summary; /* one line for `vkinrctl --help` */
	const char *help;    /* the rest of `vkinrctl CMD --help` */
	/* then, when set: the training options (the table of
	 * proto/params.h, printed from it), and what help_more says */
	int help_table;
	const char *help_more;
	int (*exec)(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv);
};

/* ---- the table (cmd.c) ---- */

extern const struct cmd_entry *const cmd_table[];
const struct cmd_entry *cmd_find(const char *name);
void cmd_print_help(const struct cmd_entry *e, FILE *out);
/* `vkinrctl --help`: the commands and the global options. */
void cmd_print_usage(FILE *out);

/*
 * Options every command takes besides its own. Put CMD_COMMON_OPTIONS at
 * the end of a command's getopt_long table (before the zero entry), add
 * "h" to its short options, and hand every option the command does not
 * handle itself to cmd_common_option().
 */
enum {
	OPT_JSON = 0x100,
	OPT_SOCKET,
	OPT_CALL_TIMEOUT,
	OPT_FIRST_COMMAND_OPTION
};
#define CMD_COMMON_OPTIONS                                                     \
	{ "help", no_argument, NULL, 'h' },                                    \
	    { "json", no_argument, NULL, OPT_JSON },                           \
	    { "socket", required_argument, NULL, OPT_SOCKET },                 \
	{                                                                      \
		"call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT      \
	}

/* Returns -1 when the option was handled and parsing goes on, else the
 * exit status to return now (0 after --help, 2 after a bad option). */
int cmd_common_option(struct client *cl, const struct cmd_entry *e, int opt);
/* --timeout SECONDS of the commands that follow jobs (watch, logs -f):
 * cl->reconnect_s; -1, or the usage error's exit status. */
int cmd_reconnect_option(struct client *cl, const struct cmd_entry *e,
			 const char *arg);
/* For commands that act on each job named (cmd-control.c): the --json
 * entry {"job": ID, "error": {...}} of the daemon's last refusal, and
 * the {"results": [...]} they print (results freed; nothing printed when
 * the daemon could not be reached). */
cJSON *cmd_refusal(struct client *cl, const cJSON *id);
void cmd_print_results(cJSON *results, int status);
/* Prints "vkinrctl CMD: <message>" and the hint to --help; returns 2. */
int cmd_usage_error(const struct cmd_entry *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Resets getopt for a command's argv (argv[0] is the command's name). */
void cmd_getopt_reset(void);
/* getopt_long for a command (argv[0] its name): after an unknown long
 * option, adds "did you mean --NAME?" when one is near. */
int cmd_getopt(int argc, char **argv, const char *shorts,
	       const struct option *opts);
/* The long options command e reads (its own and the common ones), from
 * its own table, ended by a zero entry; NULL if it reads none. Valid until
 * the next call. */
const struct option *cmd_options(struct client *cl, const struct cmd_entry *e);
/* Whether cmd_options runs the command: its first cmd_getopt jumps back,
 * so what it allocated before would be lost. */
int cmd_collecting(void);
/* The command name (or alias) nearest to word, or NULL. */
const char *cmd_suggest(const char *word);

/* ---- connection and errors (client.c) ---- */

/* Connects if not yet connected. 0, or a negative code (the reason is
 * printed by client_fail). */
int client_connect(struct client *cl);
/* Parses seconds for --call-timeout or VKINR_CALL_TIMEOUT (a number from
 * 0, forever, to a day) into cl; 0, or -1 when text is not one. */
int client_set_call_timeout(struct client *cl, const char *text);
/* After a call failed with lost (ERR_IO, or the daemon saying it is
 * shutting down): whether the daemon went away, so that a command that
 * follows jobs may reconnect. */
int client_lost(const struct client *cl, int rc);
/* Drops the connection and connects again, trying for up to
 * cl->reconnect_s seconds (a restart, an upgrade); 0, or the last
 * connect's code. */
int client_reconnect(struct client *cl);
/* Sends one request and waits for its answer; see conn_call. */
int client_call(struct client *cl, const char *method, cJSON *params,
		cJSON **result);
/*
 * Prints what went wrong (context names the request or file; may be NULL)
 * and returns the exit status for it: 3 for a daemon error (in --json mode
 * an {"error":...} object also goes to stdout), 69 for a lost or missing
 * daemon, 3 for anything else (a request too large, a garbled answer).
 */
int client_fail(struct client *cl, int rc, const char *context);
/* Formats, escapes (text_escape: line breaks stay) and prints: every
 * message for people goes through here. */
void client_vprint(FILE *out, const char *fmt, va_list ap);
/* Prints a message for people: stdout normally, stderr in --json mode. */
void client_say(struct client *cl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "vkinrctl: <message>" to stderr. */
void client_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a JSON value as one line on stdout; the value is not consumed. */
void client_print_json(const cJSON *value);

/* ---- files the client writes (client.c) ---- */

/* Exports, plots, CSV files: mode 0644 before the umask. */
#define CLIENT_FILE_MODE 0644

/*
 * Every file vkinrctl writes goes through client_write_file: a temporary
 * file in the target folder renamed into place (fileio_write_new), never
 * through a symbolic link or into a special file, and never over an
 * existing name unless force (--force). Returns 0, or prints why and
 * returns CLIENT_EXIT_DAEMON.
 */
int client_write_file(const char *path, const void *data, size_t size,
		      int force);
/* Checks beforehand that client_write_file may write path (so that a
 * command writing several files stops before the first): it does not
 * exist (or force and it is a file or a link) and its folder is there and
 * writable; 0 or, having said why (the path and the cause),
 * CLIENT_EXIT_DAEMON. */
int client_may_write(const char *path, int force);

#endif
