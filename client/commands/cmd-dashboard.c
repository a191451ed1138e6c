/*
 * cmd-dashboard.c - `vkinrctl dashboard`: a page in the browser that shows
 * the queue, the curves and the pictures, live.
 *
 * The command is an ordinary client run by the user: it follows the daemon
 * through its socket as that user (dashboard-link.c) and serves the page
 * on 127.0.0.1 only (dashboard-http.c), at a URL with a random token that
 * it prints, as Jupyter does. The daemon opens no network port. It runs
 * until SIGINT or SIGTERM (Ctrl-C); the jobs go on in the daemon.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "views/dashboard.h"
#include "proto/errors.h"
#include "util/socket_path.h"

enum { OPT_PORT = OPT_FIRST_COMMAND_OPTION };

#define DASH_DEFAULT_PORT 8765

static int cmd_dashboard_exec(struct client *cl, const struct cmd_entry *self,
			      int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, OPT_PORT },
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct dash *d;
	char why[300], url[200], *end;
	sigset_t stop;
	int c, rc, port = DASH_DEFAULT_PORT, sig;
	long v;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1) {
		if (c == OPT_PORT) {
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 ||
			    v > 65535)
				return cmd_usage_error(self,
						       "--port takes a port "
						       "from 0 (any free one) "
						       "to 65535, not '%s'",
						       optarg);
			port = (int)v;
		} else if ((rc = cmd_common_option(cl, self, c)) >= 0) {
			return rc;
		}
	}
	if (optind != argc)
		return cmd_usage_error(self, "takes no arguments");
	if (!cl->socket_path &&
	    !(cl->socket_path = socket_path_resolve_client(cl->socket_flag)))
		return client_fail(cl, ERR_NOMEM, NULL);

	/* the threads started below inherit this mask: the signals that
	 * stop the dashboard are taken here alone, by sigwait */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!(d = malloc(sizeof(*d))) ||
	    dash_init(d, cl->socket_path,
		      (int)(cl->call_timeout_s * 1000 + 0.5)) < 0) {
		free(d);
		client_warn("out of memory");
		return CLIENT_EXIT_DAEMON;
	}
	if (dash_http_start(d, port, why, sizeof(why)) < 0) {
		client_warn("%s%s", why,
			    port ? "; choose another with --port N (0: any "
				   "free port)"
				 : "");
		dash_finish(d);
		free(d);
		return CLIENT_EXIT_DAEMON;
	}
	if (dash_link_start(d) < 0) {
		client_warn("cannot start the dashboard's thread");
		dash_http_stop(d);
		dash_finish(d);
		free(d);
		return CLIENT_EXIT_DAEMON;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/?token=%s", d->port,
		 d->token);
	if (cl->json) {
		printf("{\"url\":\"%s\",\"port\":%d,\"socket\":", url, d->port);
		cJSON *s = cJSON_CreateString(cl->socket_path);
		char *text = cJSON_PrintUnformatted(s);
		printf("%s}\n", text ? text : "null");
		free(text);
		cJSON_Delete(s);
	} else {
		printf("vkinrctl dashboard: following vkinrd at %s\n"
		       "Open this URL (it holds the dashboard's token; keep "
		       "it to yourself):\n"
		       "    %s\n"
		       "From another machine: ssh -L %d:127.0.0.1:%d HOST, "
		       "then open the same URL.\n"
		       "Ctrl-C stops the dashboard; the jobs go on in the "
		       "daemon.\n",
		       cl->socket_path, url, d->port, d->port);
	}
	fflush(stdout);

	while (sigwait(&stop, &sig) == EINTR)
		;
	dash_http_stop(d);
	dash_finish(d);
	free(d);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_dashboard_entry = {
	.name = "dashboard",
	.alias = NULL,
	.args = "[--port N]",
	.summary = "serve a live page of the jobs for a browser",
	.help =
	    "Follows the daemon as you and serves a page on 127.0.0.1 "
	    "only: the queue,\neach job's curves, its reconstruction beside "
	    "its target, a batch's\nprogress and spread, and pause, resume "
	    "and cancel buttons. Prints a URL\nwith a random token; every "
	    "request needs it. Runs until Ctrl-C.\n"
	    "\n"
	    "Options:\n"
	    "  --port N         the port on 127.0.0.1 (default 8765; 0: "
	    "any free one)\n",
	.exec = cmd_dashboard_exec,
};
